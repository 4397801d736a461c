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
