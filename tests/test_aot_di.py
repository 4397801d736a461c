"""der-implicit's ahead-of-time kernels (rodlab.aot): the rest state's kernels (rodlab.aot.kernel) and
the one-rod serial driver (rodlab.aot.seed: the entry inserted into numba's dispatcher) give bitwise
the JIT's results on every path a run takes (deferred calls, a read's fill, a stepwise world through
RodBatch.advance, BDF2); a read-only array still gets the JIT's error; RODLAB_JIT_ONLY=1 inserts nothing.

The tests that need the module skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (.ci/run)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from numba.core.errors import TypingError

from rodlab import aot
from rodlab.aot import spec
from rodlab.der_implicit import batch as B
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

from aot_helpers import entry_ran, fresh, jit_ran, require_module, restore_aot  # noqa: F401 (a fixture)

DRIVER_ARGS = tuple(spec.ENTRIES[("rodlab.der_implicit.batch", "advance_serial")][0].args)


def cantilever(n: int = 14, timed_force: bool = False):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 0.5), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
    b.clamp(0, "start")
    if timed_force:  # evaluated at every step: the simulator steps through RodBatch.advance
        b.add_point_force(0, -1, lambda t: (0.0, 0.02 * np.sin(40.0 * t), 0.0))
    return b.build()


def fields(s) -> np.ndarray:
    return np.concatenate([s.vertex_x.ravel(), s.vertex_v.ravel(), s.edge_theta, s.edge_ref_d1.ravel(),
                           s.joint_ref_twist, s.solver["edge_theta_v"], s.solver["vertex_x_frames"].ravel(), [s.t]])


def run(world, **opts):
    """12 calls of one step (deferred, each going on from the last), a read (the fill), a call of 9
    steps, a read; every field after each read, and the rest model's arrays."""
    sim = make_simulator(world, "der-implicit", **opts)
    s = sim.initial_state()
    out = []
    for _ in range(12):
        sim.advance(s, 1)
    out.append(fields(s))
    sim.advance(s, 9)
    out.append(fields(s))
    model = sim.models[0]
    out.append(np.concatenate([model.wbar.ravel(), model.mbar, sim._rest[0].a1.ravel(), sim._rest[0].mref]))
    return out


def fresh_driver():
    """The serial driver without any compilation of this process, decided again (rodlab.aot.refresh)."""
    B.advance_serial._reset_overloads()
    aot.refresh()


def both_paths(restore_aot, world, **opts):
    fresh_driver()
    with_aot = run(world, **opts)
    assert aot.seeded(B.advance_serial) == (DRIVER_ARGS,)  # the entry was inserted ...
    assert DRIVER_ARGS not in B.advance_serial.overloads  # ... and ran: numba compiled nothing for it
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    fresh_driver()
    with_jit = run(world, **opts)
    assert aot.seeded(B.advance_serial) == () and DRIVER_ARGS in B.advance_serial.overloads  # numba's own
    return with_aot, with_jit


@pytest.mark.parametrize("case", ["plain", "timed-force", "bdf2"])
def test_bitwise_the_same_through_aot_and_jit(restore_aot, case):
    """The deferred per-call path and its fill (plain), RodBatch.advance one step at a time (a timed
    force), and BDF2's previous-step array from the state: the same bits either way."""
    require_module()
    world = cantilever(timed_force=case == "timed-force")
    opts = {"integrator": "bdf2"} if case == "bdf2" else {}
    with_aot, with_jit = both_paths(restore_aot, world, **opts)
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


def test_rest_state_kernels_match_the_jit(restore_aot):
    """rod_model's frames and rest curvature through the entries (rodlab.aot.kernel handles, which
    seed the dispatchers) and through numba's own compilations (RODLAB_JIT_ONLY=1)."""
    require_module()
    from rodlab.der_implicit.energies import (
        material_curvature_all,
        pack_dofs,
        update_frames,
    )

    rng = np.random.default_rng(5)
    nv = 9
    x = np.cumsum(rng.normal(size=(nv, 3)), axis=0)
    q = pack_dofs(x, rng.normal(size=nv - 1))
    e = np.diff(x, axis=0)
    tan = e / np.linalg.norm(e, axis=1)[:, None]
    a1 = np.cross(tan, rng.normal(size=3))
    a1 /= np.linalg.norm(a1, axis=1)[:, None]
    mref = rng.normal(size=nv - 2)
    results = []
    signatures = [tuple(spec.ENTRIES[("rodlab.der_implicit.energies", k)][0].args)
                  for k in ("update_frames", "material_curvature_all")]
    for jit_only in (False, True):
        if jit_only:
            restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
        fresh(update_frames, material_curvature_all)
        frames, curvature = aot.kernel(update_frames), aot.kernel(material_curvature_all)
        tan2, elen, a1c, mrefc = np.empty_like(tan), np.empty(nv - 1), np.empty_like(a1), np.empty(nv - 2)
        frames(q, tan, a1, mref, tan2, elen, a1c, mrefc)
        w, m = np.zeros((nv, 4)), np.zeros(nv)
        curvature(q, tan2, elen, a1c, mrefc, w, m)
        results.append(np.concatenate([tan2.ravel(), elen, a1c.ravel(), mrefc, w.ravel(), m]))
        ran = jit_ran if jit_only else entry_ran
        assert ran(update_frames, signatures[0]) and ran(material_curvature_all, signatures[1])
    assert results[0].tobytes() == results[1].tobytes()


def test_a_read_only_array_gets_the_jits_error(restore_aot):
    """numba's dispatcher types a read-only array as another signature: not the entry's, so the JIT
    compiles it and refuses the driver's writes, as without the module."""
    require_module()
    fresh_driver()
    sim = make_simulator(cantilever(6), "der-implicit")
    s = sim.initial_state()
    sim.advance(s, 2)
    assert aot.seeded(B.advance_serial) == (DRIVER_ARGS,)
    v = s.vertex_v  # (the read fills the deferred output)
    v.flags.writeable = False
    with pytest.raises(TypingError, match="readonly"):
        sim.advance(s, 1)


def test_unpickled_simulator_matches():
    require_module()
    sim = make_simulator(cantilever(6), "der-implicit")
    s = sim.initial_state()
    sim.advance(s, 3)
    copy = pickle.loads(pickle.dumps(sim))
    sc = s.copy()
    copy.advance(sc, 2)
    sim.advance(s, 2)
    assert fields(sc).tobytes() == fields(s).tobytes()


def test_jit_only_env_inserts_nothing(restore_aot):
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    make_simulator(cantilever(6), "der-implicit")
    assert aot.seed(B.advance_serial) == 0 and aot.seeded(B.advance_serial) == ()
