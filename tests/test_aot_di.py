"""der-implicit's ahead-of-time kernels (rodlab.aot): the rest state's kernels and the one-rod serial
driver give bitwise the JIT's results on every path a run takes (deferred calls, a read's fill, a
stepwise world through RodBatch.advance, BDF2), a read-only array goes to the JIT, and a pickled
simulator finds the entries again.

The tests that need the module skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (.ci/run)."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from rodlab import aot
from rodlab.der_implicit import batch as B
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes


@pytest.fixture
def restore_aot(monkeypatch):
    """Let a test set RODLAB_JIT_ONLY; the module is decided again after."""
    yield monkeypatch
    monkeypatch.undo()
    aot.refresh()


def require_module():
    if aot.module() is None:
        if os.environ.get("RODLAB_REQUIRE_AOT") == "1":  # set by .ci/run: the module must build there
            pytest.fail(f"RODLAB_REQUIRE_AOT=1 but the AOT kernels are not usable: {aot.unavailable_reason()}")
        pytest.skip(f"AOT kernels not usable: {aot.unavailable_reason()} (pip install -e . builds them)")


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
    steps, a read; every field after each read, and the driver the batch used."""
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
    return out, sim.batch


def both_paths(restore_aot, world, **opts):
    aot.refresh()
    with_aot, batch = run(world, **opts)
    assert batch.serial_function is batch.serial_aot[0][1]  # the ahead-of-time entry ran
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    with_jit, batch = run(world, **opts)
    assert batch.serial_aot == [] and batch.serial_function in (None, B.advance_serial)  # the dispatcher ran
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


def test_rest_state_kernels_match_the_jit():
    """rod_model's frames and rest curvature through the entries and through the dispatchers."""
    require_module()
    from rodlab.der_implicit.energies import material_curvature_all, pack_dofs, update_frames

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
    kernels = (aot.kernel(update_frames), aot.kernel(material_curvature_all))
    for frames, curvature in (kernels, (update_frames, material_curvature_all)):
        tan2, elen, a1c, mrefc = np.empty_like(tan), np.empty(nv - 1), np.empty_like(a1), np.empty(nv - 2)
        frames(q, tan, a1, mref, tan2, elen, a1c, mrefc)
        w, m = np.zeros((nv, 4)), np.zeros(nv)
        curvature(q, tan2, elen, a1c, mrefc, w, m)
        results.append(np.concatenate([tan2.ravel(), elen, a1c.ravel(), mrefc, w.ravel(), m]))
    assert all(k._entries for k in kernels)  # the entries ran (resolved by the calls above)
    assert results[0].tobytes() == results[1].tobytes()


def test_read_only_or_other_arrays_go_to_the_jit():
    """The remembered entry holds only while the same arrays stay writeable; an array of another
    type (float32, Fortran order, read-only) gets numba's dispatcher."""
    require_module()
    sim = make_simulator(cantilever(6), "der-implicit")
    s = sim.initial_state()
    sim.advance(s, 2)
    b = sim.batch
    tv, fx = s.solver["edge_theta_v"], s.solver["vertex_x_frames"]
    arrays = [s.vertex_x, s.vertex_v, s.edge_theta, tv, s.edge_ref_d1, s.joint_ref_twist, fx, b.no_prev]
    entry = b.serial_driver(*arrays)
    assert entry is b.serial_aot[0][1] and b.serial_function is entry
    s.vertex_v.flags.writeable = False
    assert b.serial_driver(*arrays) is B.advance_serial and b.serial_function is None  # (not remembered)
    s.vertex_v.flags.writeable = True
    assert b.serial_driver(*arrays) is entry
    for other in (s.vertex_x.astype(np.float32), np.asfortranarray(s.vertex_x), s.vertex_x[:, :2]):
        assert b.serial_driver(other, *arrays[1:]) is B.advance_serial
    assert b.serial_driver(*arrays) is entry


def test_unpickled_simulator_uses_the_entries():
    require_module()
    sim = make_simulator(cantilever(6), "der-implicit")
    s = sim.initial_state()
    sim.advance(s, 3)
    copy = pickle.loads(pickle.dumps(sim))
    sc = s.copy()
    copy.advance(sc, 2)
    sim.advance(s, 2)
    assert copy.batch.serial_function is copy.batch.serial_aot[0][1]
    assert fields(sc).tobytes() == fields(s).tobytes()


def test_jit_only_env_turns_the_entries_off(restore_aot):
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    sim = make_simulator(cantilever(6), "der-implicit")
    assert sim.batch.serial_aot == []
