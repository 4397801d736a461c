"""DER's per-call fast path (issue #13 item 3): the serial driver chosen for small calls gives
bitwise the results of the parallel one, and the fast path's checks still refuse bad input."""
import numpy as np
import pytest

from rodlab.der import batch as B
from rodlab.model import ModelError
from rodlab.solvers import make_simulator
from rodlab.solvers.base import StepReport
from rodlab.world import WorldBuilder, shapes

from der_helpers import SMALL_ROD_MATERIAL as MAT, rods_side_by_side  # noqa: E402


def three_rods():
    return rods_side_by_side((8, 11, 14), 0.4)


def _call(driver, sim, state, nsteps, inputs=None, symplectic=None):
    """One call of a compiled driver; the serial one's per-step ``inputs`` (``None``: their code
    left out of the compilation, else the empty arrays) and ``symplectic`` argument."""
    p, z = sim._packed, sim._no_input
    args = (p.f, p.i, p.b, p.layout, nsteps, sim.dt, state.vertex_x, state.vertex_v, state.edge_theta,
            state.edge_ref_d1, state.joint_ref_twist)
    if driver is B.advance_rods:
        return driver(*args, z, z, z)
    return driver(*args, inputs, inputs, inputs, symplectic)


def _assert_same_state(a, b):
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_serial_and_parallel_drivers_agree_bitwise():
    sim = make_simulator(three_rods(), "der")
    start = sim.initial_state()
    sim.advance(start, 7)
    a, b = start.copy(), start.copy()
    assert _call(B.advance_rods, sim, a, 30) == 0
    assert _call(B.advance_rods_serial, sim, b, 30) == 0
    assert np.abs(a.vertex_x - start.vertex_x).max() > 1e-6  # it moved
    _assert_same_state(a, b)


@pytest.mark.parametrize("projection", ["fast", "symplectic"])
def test_serial_driver_specialisations_agree_bitwise(projection):
    """The serial driver compiled without the per-step inputs' code (``None``) and with it (empty
    inputs), and without RATTLE's code (``symplectic`` None) or with it (``symplectic`` true or
    false), step the same: bit for bit, and like the parallel driver (which reads the option)."""
    sim = make_simulator(three_rods(), "der", projection=projection)
    start = sim.initial_state()
    sim.advance(start, 3)
    rattle = projection == "symplectic"
    states = [start.copy() for _ in range(4)]
    assert _call(B.advance_rods, sim, states[0], 20) == 0
    assert _call(B.advance_rods_serial, sim, states[1], 20, None, True if rattle else None) == 0
    assert _call(B.advance_rods_serial, sim, states[2], 20, sim._no_input, rattle) == 0
    assert _call(B.advance_rods_serial, sim, states[3], 20, None, rattle) == 0
    assert np.abs(states[0].vertex_x - start.vertex_x).max() > 1e-6  # it moved
    for s in states[1:]:
        _assert_same_state(states[0], s)


def test_advance_picks_a_driver_without_changing_results(monkeypatch):
    """``advance`` runs calls of ``SERIAL_WORK`` vertex-steps or fewer on the serial driver: the
    same calls forced onto the parallel driver give the same trajectory, bit for bit."""
    import rodlab.solvers.der as der

    def run():
        sim = make_simulator(three_rods(), "der")
        state = sim.initial_state()
        reports = []
        for _ in range(25):
            reports.append(sim.advance(state, 1))
            state.resolve()  # read after each call: the serial driver's deferred frames are written
        return state, reports

    a, reports = run()
    monkeypatch.setattr(der, "SERIAL_WORK", -1)
    b, _ = run()
    assert reports[-1] == StepReport(1, wall_s=reports[-1].wall_s) and reports[-1].success
    assert reports[-1].contacts_sum == 0 and reports[-1].contact_min_gap == np.inf
    assert np.abs(a.vertex_x - three_rods_x0()).max() > 1e-6  # it moved
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.t == b.t


def three_rods_x0():
    return make_simulator(three_rods(), "der").initial_state().vertex_x


def test_fast_path_still_checks_its_input():
    sim = make_simulator(three_rods(), "der")
    state = sim.initial_state()
    with pytest.raises(ModelError, match="nsteps"):
        sim.advance(state, -1)
    with pytest.raises(ModelError, match="nsteps"):
        sim.advance(state, 2.5)
    assert sim.advance(state, np.int64(2)).steps == 2
    other = make_simulator(_one_rod(), "der").initial_state()
    with pytest.raises(ModelError, match="vertices"):
        sim.advance(other, 1)
    with pytest.raises(ModelError, match="State"):
        sim.advance(object(), 1)


def _one_rod():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(shapes.straight(6, 0.3), **MAT)
    b.clamp(0, "start")
    return b.build()
