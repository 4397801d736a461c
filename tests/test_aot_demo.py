"""Ahead-of-time kernels of ``rodlab demo`` (rodlab.aot): the der serial driver of driven worlds
(moving clamps, time-dependent forces), the call of the demo's perversion scene, gives bitwise
the JIT's results, and so does der's coupled driver of a welded body (``serial`` True with the module,
None without); the entries run through their numba dispatchers (rodlab.aot.seed), numba compiling
nothing for their signatures.

The module exists only after ``pip install`` (or ``python setup.py build_ext --inplace``); the
tests that need it skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (``.ci/run``) makes that a
failure."""
from __future__ import annotations

import math

import numpy as np

from rodlab import aot
from rodlab.aot import spec
from rodlab.der import batch as B
from rodlab.der import bodies as BD
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

from aot_helpers import entry_ran, fresh, jit_ran, require_module, restore_aot  # noqa: F401 (a fixture)

DRIVEN = tuple(spec.ENTRIES[("rodlab.der.batch", "advance_rods_serial")][0].args)
WORLD = tuple(spec.ENTRIES[("rodlab.der.bodies", "advance_world")][0].args)


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


def singles_then_one_call(sim, s, singles: int, steps: int) -> list:
    """``singles`` calls of one step, then one call of ``steps``: copies of the state after each phase."""
    for _ in range(singles):
        sim.advance(s, 1)
    after_singles = s.copy()
    sim.advance(s, steps)
    return [after_singles, s.copy()]


def run_driven():
    """12 calls of one step, one of 9 steps, then 5 calls on a copy of the state (other arrays):
    every state array after each phase."""
    sim = make_simulator(coil_between_clamps(), "der", dt=2e-5)
    s = sim.initial_state()
    rng = np.random.default_rng(1)
    s.vertex_x[2:-2, 1:] += 1e-6 * rng.standard_normal((s.vertex_x.shape[0] - 4, 2))  # off the symmetric path
    out = singles_then_one_call(sim, s, 12, 9)
    s2 = s.copy()
    for _ in range(5):
        sim.advance(s2, 1)
    out.append(s2)
    return [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                st.joint_ref_twist)] + [np.array([st.t])]) for st in out]


def test_driven_world_bitwise_the_same_through_aot_and_jit(restore_aot):
    require_module()
    fresh(B.advance_rods_serial)
    with_aot = run_driven()
    assert entry_ran(B.advance_rods_serial, DRIVEN)  # every call, the copy's arrays too
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    fresh(B.advance_rods_serial)
    with_jit = run_driven()
    assert jit_ran(B.advance_rods_serial, DRIVEN)
    assert np.all(np.isfinite(with_jit[-1]))
    assert not np.array_equal(with_jit[0], with_jit[1])  # the run moved
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


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
    ``serial`` argument the simulator passes its coupled driver."""
    sim = make_simulator(pendulum_with_bob(), "der")
    s = sim.initial_state()
    out = singles_then_one_call(sim, s, 10, 8)
    arrays = [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                    st.joint_ref_twist, st.body_x, st.body_q, st.body_v, st.body_w)])
              for st in out]
    return arrays, sim._world_serial


def test_welded_body_bitwise_the_same_through_aot_and_jit(restore_aot):
    """The AOT entry loops over the coupled rods' chunks serially (``serial`` True), the JIT's driver
    in parallel (``serial`` None; one chunk here): the same results, bitwise."""
    require_module()
    fresh(BD.advance_world)
    with_aot, serial = run_welded()
    assert serial is True and entry_ran(BD.advance_world, WORLD)
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    fresh(BD.advance_world)
    with_jit, serial = run_welded()
    assert serial is None and aot.seeded(BD.advance_world) == ()
    assert (*WORLD[:-1], spec.NONE) in BD.advance_world.overloads and WORLD not in BD.advance_world.overloads
    assert np.all(np.isfinite(with_jit[-1])) and not np.array_equal(with_jit[0], with_jit[1])
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


def test_welded_worlds_of_several_chunks_keep_the_parallel_driver(restore_aot):
    """Two coupled rods (two chunks where numba has two threads): ``serial`` None, the JIT's
    parallel driver, whether or not the module holds the one-chunk entry; RODLAB_JIT_ONLY=1: None."""
    require_module()
    import numba

    fresh(BD.advance_world)
    two = make_simulator(pendulum_with_bob(8, rods=2), "der")
    assert (two._world_serial is None) == (numba.config.NUMBA_NUM_THREADS > 1)
    assert make_simulator(pendulum_with_bob(8), "der")._world_serial is True
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    assert make_simulator(pendulum_with_bob(8), "der")._world_serial is None
