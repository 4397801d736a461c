"""der-implicit keeps nothing outside the State: whether a step may take the state's reference
frames as they are is recorded in ``state.solver["vertex_x_frames"]``, and the arena's kept
assembly is used only for the very state it belongs to. So a step's result depends on the state
alone, bit for bit: not on other states stepped in between, energy evaluations, warm-up steps on
copies, how the steps are split into calls, or whether the simulator is a fresh one."""
import numpy as np

from rodlab.solvers import make_simulator
from rodlab.world import State, WorldBuilder, shapes

FIELDS = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")


def _world(rods=1):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    for r in range(rods):
        b.add_rod(shapes.straight(12, 1.0, start=(0.0, 0.2 * r, 0.0)), E=1e8, G=1e8 / 3, rho=1000.0, radius=0.01)
        b.clamp(r, "start")
    return b.build()


def _assert_same(a: State, b: State):
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.solver["edge_theta_v"], b.solver["edge_theta_v"])
    assert a.t == b.t


def test_steps_depend_on_the_state_alone(tmp_path):
    for rods in (1, 3):  # one rod steps in the arena's own buffers, several copy the kept assembly
        world = _world(rods)
        sim = make_simulator(world, "der-implicit")
        start = sim.initial_state()
        sim.advance(start, 25)
        ref = start.copy()
        sim.advance(ref, 9)  # continued at once, in one call
        assert np.abs(ref.vertex_x - start.vertex_x).max() > 1e-4  # it moves
        # the same 9 steps in three calls, with another state stepped, energies and a warm-up in between
        b = start.copy()
        other = sim.initial_state()
        sim.advance(other, 2)
        sim.energies(b)
        sim.advance(b.copy(), 1)
        sim.advance(b, 4)
        sim.advance(other, 1)
        sim.advance(b, 1)
        sim.energies(other)
        sim.advance(b, 4)
        _assert_same(ref, b)
        # a fresh simulator continuing a saved state (a resumed checkpoint)
        start.save(tmp_path / f"s{rods}.npz")
        c = State.load(tmp_path / f"s{rods}.npz")
        make_simulator(world, "der-implicit").advance(c, 9)
        _assert_same(ref, c)


def test_a_state_changed_by_hand_is_stepped_as_a_fresh_simulator_would():
    world = _world()
    sim = make_simulator(world, "der-implicit")
    s = sim.initial_state()
    sim.advance(s, 5)
    s.vertex_x[4, 2] += 1e-3  # moved by hand: its frames no longer belong to its positions
    fresh = s.copy()
    sim.advance(s, 3)
    make_simulator(world, "der-implicit").advance(fresh, 3)
    _assert_same(s, fresh)
    # the record says so: the positions the frames were last transported to are the state's own
    np.testing.assert_array_equal(s.solver["vertex_x_frames"], s.vertex_x)
    assert np.all(np.isnan(sim.initial_state().solver["vertex_x_frames"]))
