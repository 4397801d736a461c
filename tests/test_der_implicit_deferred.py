"""der-implicit's deferred output (State.defer): a call leaves the state's fields in its buffers, the
next call on the same state goes on from them, and nobody ever reads a stale value.

Every test runs a deferring simulator beside one that writes eagerly (``_defers = False``, the code
before) and compares every field bitwise: the deferral changes when values are written, never what."""
import pickle

import numpy as np
import pytest

from rodlab.solvers import SimulationError, make_simulator
from rodlab.world import WorldBuilder, shapes
from rodlab.world.state import State

ROD = {"E": 1e8, "G": 4e7, "rho": 1000.0, "radius": 0.01}


def _world(nrod):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    for r in range(nrod):
        b.add_rod(shapes.straight(12, 1.0) + np.array([0.0, 0.3 * r, 0.0]), **ROD)
        b.clamp(r, "start")
    return b.build()


def _pair(nrod=1, **opts):
    """A deferring simulator and an eager one on one world, and a state for each."""
    w = _world(nrod)
    a, e = make_simulator(w, "der-implicit", **opts), make_simulator(w, "der-implicit", **opts)
    assert a._defers
    e._defers = False
    return a, e, a.initial_state(), e.initial_state()


def _fields(s: State) -> np.ndarray:
    return np.concatenate([s.vertex_x.ravel(), s.vertex_v.ravel(), s.edge_theta, s.edge_ref_d1.ravel(),
                           s.joint_ref_twist, s.solver["edge_theta_v"], s.solver["vertex_x_frames"].ravel(), [s.t]])


@pytest.mark.parametrize("nrod", [1, 3])
def test_unread_calls_equal_eager_calls(nrod):
    a, e, sa, se = _pair(nrod)
    for _ in range(25):
        a.advance(sa, 1)
        e.advance(se, 1)
        assert sa._deferred is not None  # left in the buffers, not read
    a.advance(sa, 5)
    e.advance(se, 5)
    assert np.array_equal(_fields(sa), _fields(se))  # (the read fills)
    assert sa._deferred is None


@pytest.mark.parametrize("nrod", [1, 3])
def test_edits_between_calls_are_stepped_from(nrod):
    a, e, sa, se = _pair(nrod)
    edits = (lambda s: s.vertex_x.__setitem__((5, 2), s.vertex_x[5, 2] + 1e-3),
             lambda s: s.rod_theta(0).__iadd__(0.01),
             lambda s: s.vertex_v.__setitem__((7, 0), 0.2),
             lambda s: setattr(s, "edge_ref_d1", s.edge_ref_d1.copy()),  # a re-bound field
             lambda s: setattr(s, "edge_theta", np.full(s.rod_edge_start[-1], 0.01)),  # re-bound, never read
             lambda s: s.joint_ref_twist.__setitem__(1, s.joint_ref_twist[1] + 1e-6))
    for k in range(20):
        a.advance(sa, 1)
        e.advance(se, 1)
        if k % 4 == 0:
            edit = edits[(k // 4) % len(edits)]
            edit(sa)
            edit(se)
    a.advance(sa, 3)
    e.advance(se, 3)
    assert np.array_equal(_fields(sa), _fields(se))


def test_two_states_on_one_simulator():
    a, e, sa, se = _pair()
    ta, te = sa.copy(), se.copy()
    for _ in range(4):
        a.advance(ta, 1)
        e.advance(te, 1)
    for k in range(12):  # interleaved: each call's buffers hold the other state's pending output
        a.advance(sa, 1)
        a.advance(ta, 2)
        e.advance(se, 1)
        e.advance(te, 2)
        if k == 5:
            assert np.array_equal(_fields(sa), _fields(se))
    assert np.array_equal(_fields(ta), _fields(te))
    assert np.array_equal(_fields(sa), _fields(se))


def test_copy_save_assign_pickle_and_energy_see_the_pending_output(tmp_path):
    a, e, sa, se = _pair()
    a.advance(sa, 6)
    e.advance(se, 6)
    assert np.array_equal(_fields(sa.copy()), _fields(se))
    a.advance(sa, 1)
    e.advance(se, 1)
    sa.save(tmp_path / "s.npz")
    assert np.array_equal(_fields(State.load(tmp_path / "s.npz")), _fields(se))
    a.advance(sa, 1)
    e.advance(se, 1)
    assert np.array_equal(_fields(pickle.loads(pickle.dumps(sa))), _fields(se))
    a.advance(sa, 1)
    e.advance(se, 1)
    other = a.initial_state()
    other.assign(sa)  # the source is filled first
    assert np.array_equal(_fields(other), _fields(se))
    a.advance(sa, 1)
    e.advance(se, 1)
    fresh = a.initial_state()
    assert a.elastic_energy(fresh) == e.elastic_energy(e.initial_state())  # the buffers were in use: filled first
    assert np.array_equal(_fields(sa), _fields(se))
    a.advance(sa, 1)
    e.advance(se, 1)
    sa.assign(fresh)  # the target: its pending output is dropped, every field overwritten
    se.assign(e.initial_state())
    a.advance(sa, 2)
    e.advance(se, 2)
    assert np.array_equal(_fields(sa), _fields(se))


def test_pickled_simulator_carries_no_pending_output():
    a, e, sa, se = _pair()
    a.advance(sa, 3)
    b = pickle.loads(pickle.dumps(a))
    assert b._pending is None and sa._deferred is None  # filled before pickling
    sb = sa.copy()
    b.advance(sb, 2)
    e.advance(se, 3)
    e.advance(se, 2)
    assert np.array_equal(_fields(sb), _fields(se))


@pytest.mark.parametrize("nrod", [1, 3])
def test_failed_resumed_call_leaves_the_last_good_state(nrod):
    a, e, sa, se = _pair(nrod)
    for sim, s in ((a, sa), (e, se)):
        sim.advance(s, 4)
        sim.batch.dof_fext[7] = np.nan  # not a state field: the next call resumes, then fails
        with pytest.raises(SimulationError):
            sim.advance(s, 2)
    assert sa._deferred is None and a._pending is None
    assert np.array_equal(_fields(sa), _fields(se))
    for sim, s in ((a, sa), (e, se)):
        sim.batch.dof_fext[7] = 0.0
        sim.advance(s, 3)
    assert np.array_equal(_fields(sa), _fields(se))


def test_another_simulator_reads_the_pending_output():
    a, e, sa, se = _pair()
    a.advance(sa, 5)
    e.advance(se, 5)
    for s in (sa, se):
        make_simulator(_world(1), "der-implicit").advance(s, 2)  # another owner: the fill runs first
    assert np.array_equal(_fields(sa), _fields(se))


def test_options_that_write_eagerly():
    """BDF2, per-step loads (a clamp that moves, a timed force, wind) and contact keep the eager write."""
    w = _world(1)
    assert not make_simulator(w, "der-implicit", integrator="bdf2")._defers
    sim = make_simulator(w, "der-implicit")
    s = sim.initial_state()
    sim.advance(s, 1)
    assert s._deferred is not None and s.deferred_by(sim) is not None


def test_outputs_read_at_once_make_the_next_calls_write_eagerly():
    """A deferred output read before any call went on from it saved nothing: the simulator then writes
    eagerly for 1, 2, 4, ... (at most EAGER_AFTER_FILL) calls before it defers again; a deferral some
    call went on from resets that. Every way steps as the eager simulator does."""
    from rodlab.solvers.der_implicit import EAGER_AFTER_FILL

    a, e, sa, se = _pair()
    deferred = []
    for _ in range(40):
        a.advance(sa, 1)
        e.advance(se, 1)
        deferred.append(sa._deferred is not None)
        assert np.array_equal(sa.vertex_x, se.vertex_x)  # a read after every call
    # deferring calls, each followed by 1, 2, 4, 8, 16 eager ones
    expect = []
    for k in (1, 2, 4, 8, 16, 32):
        expect += [True] + [False] * min(k, EAGER_AFTER_FILL)
    assert deferred == expect[:40]
    for _ in range(a._eager_left + 4):  # the eager rest, then a deferral gone on from (resumed) three times
        a.advance(sa, 1)
        e.advance(se, 1)
    assert a._resumed == 3
    _ = sa.vertex_x  # a read: fills
    a.advance(sa, 1)
    e.advance(se, 1)
    assert sa._deferred is not None and a._eager_streak == 0
    assert np.array_equal(_fields(sa), _fields(se))
