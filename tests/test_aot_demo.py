"""Ahead-of-time kernels of ``rodlab demo`` (rodlab.aot): the der serial driver of driven worlds
(moving clamps, time-dependent forces), the call of the demo's perversion scene, gives bitwise
the JIT's results; the simulator checks a call's arguments once per set of state arrays and sends
argument types the entry does not have to the dispatcher.

The module exists only after ``pip install`` (or ``python setup.py build_ext --inplace``); the
tests that need it skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (``.ci/run``) makes that a
failure."""
from __future__ import annotations

import math

import numpy as np

from rodlab import aot
from rodlab.der import batch as B
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

from aot_helpers import require_module, restore_aot  # noqa: F401 (a fixture)


def coil_between_clamps(n: int = 16):
    """The perversion scene's world, small: a naturally curved rod held straight between a fixed
    clamp and one that moves in (a driven world: per-step clamp inputs)."""
    length = 0.3
    rest_curvature = np.zeros((n - 2, 4))
    rest_curvature[:, [0, 2]] = 2 * math.tan(0.5 * 20.0 * length / (n - 1))
    b = WorldBuilder(damping=8.0)
    r = b.add_rod(shapes.straight(n, length), E=2e7, G=8e6, rho=1100.0, radius=0.003, rest_curvature=rest_curvature)
    b.clamp(r, "start")
    b.clamp(r, "end", motion=lambda t: (np.eye(3), np.array([-0.3 * length * min(t / 0.01, 1.0), 0.0, 0.0])))
    return b.build()


def run_driven():
    """12 calls of one step, one of 9 steps, then 5 calls on a copy of the state (other arrays):
    every state array after each phase, and the drivers the simulator picked."""
    sim = make_simulator(coil_between_clamps(), "der", dt=2e-5)
    s = sim.initial_state()
    rng = np.random.default_rng(1)
    s.vertex_x[2:-2, 1:] += 1e-6 * rng.standard_normal((s.vertex_x.shape[0] - 4, 2))  # off the symmetric path
    out, drivers = [], []
    for _ in range(12):
        sim.advance(s, 1)
    out.append(s.copy())
    sim.advance(s, 9)
    out.append(s.copy())
    drivers.append(sim._driven_jit or sim._driven_driver)  # the dispatcher where no AOT entry exists, else the one used
    s2 = s.copy()
    for _ in range(5):
        sim.advance(s2, 1)
    assert sim._driven_jit or sim._driven_key[0] is s2.vertex_x  # the copy's arrays were checked anew
    drivers.append(sim._driven_jit or sim._driven_driver)
    out.append(s2)
    arrays = [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                    st.joint_ref_twist)] + [np.array([st.t])]) for st in out]
    return arrays, drivers


def test_driven_world_bitwise_the_same_through_aot_and_jit(restore_aot):
    require_module()
    aot.refresh()
    with_aot, drivers = run_driven()
    assert all(d is not B.advance_rods_serial for d in drivers)  # the AOT entry ran
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    with_jit, drivers = run_driven()
    assert all(d is B.advance_rods_serial for d in drivers)
    assert np.all(np.isfinite(with_jit[-1]))
    assert not np.array_equal(with_jit[0], with_jit[1])  # the run moved
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


def test_argument_types_without_an_entry_go_to_the_jit():
    """Per-step inputs None (a world with wind only), read-only state arrays or RATTLE's
    ``symplectic=True``: not the entry's signature, so the dispatcher is picked (and read-only
    arrays are checked again on every call)."""
    require_module()
    aot.refresh()
    sim = make_simulator(coil_between_clamps(8), "der", dt=2e-5)
    s = sim.initial_state()
    x, v, theta, d1, tw = s.vertex_x, s.vertex_v, s.edge_theta, s.edge_ref_d1, s.joint_ref_twist
    steps = np.zeros((1, 1, 3))
    assert sim._driven_serial_driver(1, x, v, theta, d1, tw, steps, steps, steps) is not B.advance_rods_serial
    assert sim._driven_key == (x, v, theta, d1, tw, False)
    assert sim._driven_serial_driver(1, x, v, theta, d1, tw, None, None, None) is B.advance_rods_serial
    assert sim._driven_key[5] is True
    frozen = x.copy()
    frozen.flags.writeable = False
    assert sim._driven_serial_driver(1, frozen, v, theta, d1, tw, steps, steps, steps) is B.advance_rods_serial
    assert sim._driven_key == (None,) * 6
    rattle = make_simulator(coil_between_clamps(8), "der", dt=2e-5, projection="symplectic")
    assert rattle._driven_serial_driver(1, x, v, theta, d1, tw, steps, steps, steps) is B.advance_rods_serial


# ---- examples/weld-body.toml: der with a rigid body welded to the rod ----------------------------
def pendulum_with_bob(n: int = 12, rods: int = 1):
    """``rods`` clamped rods, each with a rigid bob welded to its lower end (weld-body's world)."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    for k in range(rods):
        direction = np.array([0.4, 0.0, -1.0]) / np.linalg.norm([0.4, 0.0, -1.0])
        start = np.array([0.0, 0.3 * k, 0.0])
        r = b.add_rod(shapes.straight(n, 0.5, start=tuple(start), direction=tuple(direction)), E=1e8, G=3.3e7,
                      rho=1000.0, radius=0.004)
        b.clamp(r, "start")
        body = b.add_body(0.2, (1e-4, 1e-4, 1e-4), position=tuple(start + 0.5 * direction))
        b.weld(r, "end", body)
    return b.build()


def run_welded():
    """10 calls of one step and one of 8: every rod and body array after each phase, and the
    driver's AOT entry (None where the dispatcher ran)."""
    sim = make_simulator(pendulum_with_bob(), "der")
    s = sim.initial_state()
    out = []
    for _ in range(10):
        sim.advance(s, 1)
    out.append(s.copy())
    sim.advance(s, 8)
    out.append(s.copy())
    arrays = [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                    st.joint_ref_twist, st.body_x, st.body_q, st.body_v, st.body_w)])
              for st in out]
    return arrays, sim._world_entry


def test_welded_body_bitwise_the_same_through_aot_and_jit(restore_aot):
    """The AOT entry loops over the coupled rods' chunks serially, the JIT's driver in parallel
    (one chunk here): the same results, bitwise."""
    require_module()
    aot.refresh()
    with_aot, entry = run_welded()
    assert entry is not None  # the AOT entry ran
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    with_jit, entry = run_welded()
    assert entry is None
    assert np.all(np.isfinite(with_jit[-1])) and not np.array_equal(with_jit[0], with_jit[1])
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


def test_welded_worlds_the_entry_does_not_describe_go_to_the_jit():
    """Two coupled rods (two chunks where numba has two threads) or read-only body arrays: the
    parallel dispatcher, not the serial AOT entry."""
    require_module()
    aot.refresh()
    import numba

    two = make_simulator(pendulum_with_bob(8, rods=2), "der")
    assert (two._world_aot == []) == (numba.config.NUMBA_NUM_THREADS > 1)
    sim = make_simulator(pendulum_with_bob(8), "der")
    s = sim.initial_state()
    assert sim._world_driver(s, 1) is not None
    s.body_q.flags.writeable = False
    assert sim._world_driver(s, 1) is None
    assert sim._world_key == (None,) * 9
