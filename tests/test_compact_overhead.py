"""compact's per-call path (issue #13 item 3): the compiled driver reads and writes the state's
arrays at the addresses the simulator recorded when it checked them (rodlab.compact.batch
``_state_views``), so it must re-check and re-record them whenever a state holds other arrays,
and refuse arrays it may not write."""
import re

import numpy as np
import pytest

from rodlab.compact.batch import F_RESIDUAL
from rodlab.model import ModelError
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

FIELDS = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")


def two_rods():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    for k, n in enumerate((9, 13)):
        b.add_rod(shapes.straight(n, 0.6, start=(0.0, 0.3 * k, 0.0)), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
        b.clamp(k, "start")
    return b.build()


def one_rod():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(10, 1.0), E=1e8, G=1e8 / 3, rho=1000.0, radius=0.01)
    b.clamp(0, "start")
    return b.build()


def _same(a, b):
    for name in FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for key in ("s", "qref", "q", "omega"):
        assert np.array_equal(a.solver[key], b.solver[key]), key


@pytest.mark.parametrize("world", [one_rod, two_rods])
def test_replaced_arrays_are_stepped_and_the_old_ones_left_alone(world):
    """Each field of the state replaced by a copy between two calls: the next call steps the new
    array (the same numbers as a reference run) and never writes the one it replaced."""
    w = world()
    sim, ref_sim = make_simulator(w, "compact"), make_simulator(w, "compact")
    state, ref = sim.initial_state(), ref_sim.initial_state()
    for name in FIELDS + ("s", "qref", "q", "omega"):
        sim.advance(state, 2)
        ref_sim.advance(ref, 2)
        if name in FIELDS:
            old = getattr(state, name)
            setattr(state, name, old.copy())
        else:
            old = state.solver[name]
            state.solver[name] = old.copy()
        kept = old.copy()
        sim.advance(state, 1)
        ref_sim.advance(ref, 1)
        assert np.array_equal(old, kept), f"the replaced {name} was written"
        _same(state, ref)
    assert np.abs(state.vertex_x - w.vertex_rest_x).max() > 1e-4  # it moved


def test_two_states_on_one_simulator_step_as_on_their_own():
    """Alternating calls with two states (each call re-records the other state's arrays) give what
    one simulator per state gives, bit for bit."""
    w = two_rods()
    sim = make_simulator(w, "compact")
    a = sim.initial_state()
    sim.advance(a, 3)
    b = a.copy()
    sim_a, sim_b = make_simulator(w, "compact"), make_simulator(w, "compact")
    ra, rb = a.copy(), b.copy()
    for k in range(4):
        sim.advance(a, 1 + k)
        sim.advance(b, 2)
        sim_a.advance(ra, 1 + k)
        sim_b.advance(rb, 2)
    _same(a, ra)
    _same(b, rb)
    assert not np.array_equal(a.vertex_x, b.vertex_x)


@pytest.mark.parametrize("where", ["vertex_v", "joint_ref_twist", "q"])
def test_a_read_only_array_is_refused_by_name(where):
    """A state holding a read-only array (a new state, or an array replaced by a read-only one)
    is refused before the driver could write it, naming the array; nothing was stepped."""
    sim = make_simulator(one_rod(), "compact")
    state = sim.initial_state()
    sim.advance(state, 1)
    frozen = (state.solver[where] if where == "q" else getattr(state, where)).copy()
    frozen.setflags(write=False)
    if where == "q":
        state.solver[where] = frozen
    else:
        setattr(state, where, frozen)
    before = state.copy()
    label = "state.solver['q']" if where == "q" else f"state.{where}"
    with pytest.raises(ModelError, match=re.escape(label) + " must be a writeable, aligned array"):
        sim.advance(state, 1)
    _same(state, before)
    fresh = make_simulator(one_rod(), "compact")
    with pytest.raises(ModelError, match=re.escape(label) + " must be a writeable, aligned array"):
        fresh.advance(state, 1)


def test_report_of_a_call_matches_last_call():
    """The driver returns the call's sums; the report and ``last_call`` (read from the arena)
    agree, and a zero-step call reports nothing done."""
    sim = make_simulator(two_rods(), "compact")
    state = sim.initial_state()
    rep = sim.advance(state, 5)
    last = sim.last_call
    assert rep.steps == last.steps == 5 and rep.success
    assert rep.newton_iters >= 5 and rep.linear_iters > 0 and last.linear_solves == rep.newton_iters
    assert rep.residual == sim._fb[F_RESIDUAL] and rep.residual > 0
    rep0 = sim.advance(state, 0)
    assert rep0.steps == 0 and rep0.newton_iters == 0 and rep0.linear_iters == 0 and rep0.residual == 0.0


# ---- deferred frame fields (State.defer): a loop of advance(state, 1) pays no O(n) output per call --------
FRAMES = ("edge_ref_d1", "edge_theta", "joint_ref_twist")


def helix_rod():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.3)
    b.add_rod(shapes.helix(16, 0.05, 0.04, 1.0), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
    b.clamp(0, "start")
    return b.build()


def _read_all(state):
    return tuple(np.array(getattr(state, name)) for name in FIELDS)


@pytest.mark.parametrize("world", [helix_rod, two_rods])
def test_frames_are_deferred_and_read_as_if_written_every_call(world):
    """After a time step the frame fields are left to their first read; whether a state is read
    after every call, after some, or only at the end, every field and the solver's unknowns are
    bitwise those of the others, and of one call of as many steps."""
    w = world()
    sim = make_simulator(w, "compact")
    start = sim.initial_state()
    eager, lazy, mixed, one = start.copy(), start.copy(), start.copy(), start.copy()
    for k in range(12):
        sim.advance(eager, 1)
        _read_all(eager)
        sim.advance(lazy, 1)
        assert set(lazy.deferred_by(sim)) == set(FRAMES)
        sim.advance(mixed, 1)
        if k % 5 == 2:
            assert np.isfinite(mixed.joint_ref_twist).all()
    sim.advance(one, 12)
    for other in (lazy, mixed, one):
        _same(eager, other)
    assert np.abs(eager.edge_ref_d1 - start.edge_ref_d1).max() > 1e-6
    if world is helix_rod:  # a non-planar rod: the reference twist moves
        assert np.abs(eager.joint_ref_twist - start.joint_ref_twist).max() > 1e-6


def test_unread_frames_are_not_filled_between_calls():
    """The fill runs on a read, not at every call: a marker left in the unwritten ``edge_theta``
    survives further calls; the first read replaces it (theta = 0 for compact's frames)."""
    sim = make_simulator(one_rod(), "compact")
    state = sim.initial_state()
    sim.advance(state, 1)
    pending = state.deferred_by(sim)
    pending["edge_theta"][...] = 7.0
    for _ in range(5):
        sim.advance(state, 1)
        assert state.deferred_by(sim) is pending and np.all(pending["edge_theta"] == 7.0)
    assert np.all(state.edge_theta == 0.0) and state.deferred_by(sim) is None
    sim.advance(state, 1)
    assert state.deferred_by(sim) is not None


def test_an_in_place_edit_between_unread_calls_is_taken():
    """Positions and velocities edited in place between calls, frames unread, ``state.method = ""``
    (docs/world.md "The state"): the next call starts from the edit, bitwise as a state read before
    the edit and as a new simulator given a copy of the edited state."""
    w = two_rods()
    sim = make_simulator(w, "compact")
    lazy = sim.initial_state()
    sim.advance(lazy, 4)
    eager = lazy.copy()  # read: filled
    for st in (lazy, eager):
        st.vertex_x[:, 2] += 2e-3
        st.vertex_v[3:6, 1] = 0.05
        st.method = ""
    fresh, fresh_sim = eager.copy(), make_simulator(w, "compact")
    for _ in range(3):
        sim.advance(lazy, 1)
        sim.advance(eager, 1)
        fresh_sim.advance(fresh, 1)
    _same(eager, lazy)
    _same(eager, fresh)
    moved = make_simulator(w, "compact")
    ref = moved.initial_state()
    moved.advance(ref, 4)
    moved.advance(ref, 3)
    assert not np.array_equal(ref.vertex_x, lazy.vertex_x)  # the edit was taken


def test_solver_edit_in_place_with_method_kept_is_stepped():
    """An in-place edit of compact's own unknowns (``state.solver``, method kept) while the frames
    are unread is stepped by the next call, and the frames read afterwards follow the new state."""
    sim = make_simulator(one_rod(), "compact")
    a = sim.initial_state()
    sim.advance(a, 3)
    b = a.copy()
    a.solver["omega"][4, 0] += 0.3
    b.solver["omega"][4, 0] += 0.3
    sim.advance(a, 2)
    ref_sim = make_simulator(one_rod(), "compact")
    ref_sim.advance(b, 2)
    _same(a, b)


@pytest.mark.parametrize("integrator", ["backward-euler", "bdf2"])
def test_a_non_finite_step_puts_every_array_back(integrator):
    """A rod whose step turns non-finite mid-call: the other rod, stepped in the same step, is put
    back too (backward Euler from the step's start copies ``p_t``, ``q_t``; BDF2 from its
    backups), every array bitwise the state after the last good step."""
    from rodlab.solvers import SimulationError

    w = two_rods()
    sim = make_simulator(w, "compact", integrator=integrator)
    state = sim.initial_state()
    sim.advance(state, 3)
    good = state.copy()
    state.solver["omega"][2, 0] = 1e300  # rod 0's rotation blows up in the next step
    with pytest.raises(SimulationError, match="step 1 of this call is not finite"):
        sim.advance(state, 3)
    state.solver["omega"][2, 0] = good.solver["omega"][2, 0]
    _same(state, good)
    assert state.t == good.t
