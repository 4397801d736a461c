"""Ahead-of-time compiled kernels of method galpha (rodlab.aot): a galpha run gives the same
results through the AOT entries as through numba's JIT, bitwise; ``advance_rods``' entry runs through
its numba dispatcher (rodlab.aot.seed), numba compiling nothing for its signature.

The module exists only after ``pip install`` (or ``python setup.py build_ext --inplace``); the
tests that need it skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (set by ``.ci/run``) makes
that a failure."""
from __future__ import annotations

import numpy as np

from rodlab import aot
from rodlab.aot import spec
from rodlab.galpha.batch import advance_rods
from rodlab.solvers import simulator_class
from rodlab.solvers.galpha import rest_geometry, rest_polyline
from rodlab.world import WorldBuilder, shapes

from aot_helpers import entry_ran, fresh, jit_ran, require_module, restore_aot  # noqa: F401 (a fixture)

ADVANCE = tuple(spec.ENTRIES[("rodlab.galpha.batch", "advance_rods")][0].args)


def cantilever(n: int = 12):
    """A clamped rod under gravity with a tip force (galpha's TipLoad)."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 0.5), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
    b.clamp(0, "start")
    b.add_point_force(0, n - 1, (0.0, 0.02, 0.0))
    return b.build()


def run_galpha():
    """20 calls of one step, a read, one call of 15 steps, the energies: every state array after
    each phase."""
    sim = simulator_class("galpha")(cantilever())
    s = sim.initial_state()
    out = []
    for _ in range(20):
        sim.advance(s, 1)
    out.append(s.copy())  # reads the common fields (fills the deferral)
    sim.advance(s, 15)
    out.append(s.copy())
    arrays = [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                    st.joint_ref_twist, st.solver["x"], st.solver["xdot"],
                                                    st.solver["R"], st.solver["r_vel"])]) for st in out]
    arrays.append(np.array(list(sim.energies(s).values())))
    return arrays


def test_galpha_bitwise_the_same_through_aot_and_jit(restore_aot):
    require_module()
    fresh(advance_rods)
    with_aot = run_galpha()
    assert entry_ran(advance_rods, ADVANCE)  # the deferred calls, the fill, the 15-step call
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    fresh(advance_rods)
    with_jit = run_galpha()
    assert jit_ran(advance_rods, ADVANCE)
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


def test_rest_geometry_bitwise_the_same_through_aot_and_jit(restore_aot):
    """A helix's rest geometry (matrix_to_quat, the Cayley map, quat_to_matrix) and its inverse."""
    require_module()
    s = np.linspace(0.0, 3.0, 25)
    points = np.stack([0.2 * np.cos(s), 0.2 * np.sin(s), 0.05 * s], axis=1)
    t = np.diff(points, axis=0)
    d1 = np.cross(t, [0.0, 0.0, 1.0])

    def geometry():
        ds, kh, root_R = rest_geometry(points, d1)
        p, q = rest_polyline(kh, ds, root_R)
        return np.concatenate([[ds], kh.ravel(), root_R.ravel(), p.ravel(), q.ravel()])

    aot.refresh()
    with_aot = geometry()
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    assert with_aot.tobytes() == geometry().tobytes()


def test_jit_only_env_seeds_nothing(restore_aot):
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    simulator_class("galpha")(cantilever(6))
    assert aot.seed(advance_rods) == 0 and aot.seeded(advance_rods) == ()
