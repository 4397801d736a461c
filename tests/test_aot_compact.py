"""Ahead-of-time kernels of method compact (rodlab.aot): a compact cantilever through the AOT
entries (the serial driver, the frame fill, the model's kernels) is bitwise the JIT's; calls of
other argument types (a read-only frame array, a numpy int32 step count, several rods) go to the
JIT dispatchers.

The module exists only after ``pip install`` (or ``python setup.py build_ext --inplace``); the
tests that need it skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (set by ``.ci/run``) makes
that a failure."""
from __future__ import annotations

import numpy as np

from rodlab import aot
from rodlab.compact import batch as CB
from rodlab.compact.chain import frames_from_polyline
from rodlab.compact.sqp import alignment_violation
from rodlab.solvers import simulator_class
from rodlab.world import WorldBuilder, shapes

from aot_helpers import require_module, restore_aot  # noqa: F401 (a fixture)


def cantilever(n: int = 16, rods: int = 1):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    for r in range(rods):
        b.add_rod(shapes.straight(n, 0.4, start=(0.0, 0.1 * r, 0.0)), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
        b.clamp(r, "start")
    return b.build()


def run_cantilever():
    """A compact cantilever: a static solve, 12 calls of one step, a read (the deferred frame fill),
    one call of 10 steps, a numpy int64 step count; every state array after each phase, the
    alignment metric, and which driver and fill the simulator used."""
    sim = simulator_class("compact")(cantilever())
    s = sim.initial_state()
    out = [s.copy()]
    sim.solve_static(s)
    out.append(s.copy())
    for _ in range(12):
        sim.advance(s, 1)
    out.append(s.copy())  # reads the frames (fills the deferred output)
    sim.advance(s, 10)
    sim.advance(s, np.int64(3))
    out.append(s.copy())
    arrays = [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                    st.joint_ref_twist, st.solver["q"], st.solver["omega"],
                                                    st.solver["s"], np.array([st.t]))]) for st in out]
    align = alignment_violation(s.vertex_x, s.solver["q"])
    return arrays, align, sim._driver_aot, sim._fill


def test_cantilever_bitwise_the_same_through_aot_and_jit(restore_aot):
    require_module()
    aot.refresh()
    with_aot, align_aot, driver, fill = run_cantilever()
    assert driver is not CB.advance_rods_serial and fill is not CB.write_frames  # the AOT entries ran
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    with_jit, align_jit, driver, fill = run_cantilever()
    assert driver is CB.advance_rods_serial and fill is CB.write_frames
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()
    assert np.float64(align_aot).tobytes() == np.float64(align_jit).tobytes()


def test_rest_frames_bitwise_the_same_through_aot_and_jit(restore_aot):
    """frames_from_polyline (matrix_to_quat per segment) of a helix: AOT entry and JIT agree."""
    require_module()
    p = shapes.helix(12, 0.05, 0.04, 1.0)
    aot.refresh()
    q_aot = frames_from_polyline(p)
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    assert q_aot.tobytes() == frames_from_polyline(p).tobytes()


def test_other_argument_types_go_to_the_jit(monkeypatch):
    """Several rods take the parallel driver (no entry); an int32 step count and a frame array
    made read-only after the call that deferred it go to the dispatchers."""
    require_module()
    assert simulator_class("compact")(cantilever(6, rods=2))._driver_aot is CB.advance_rods
    sim = simulator_class("compact")(cantilever(6))
    s = sim.initial_state()
    used = []
    real_fill = CB.write_frames
    # the dispatcher would compile an int32 specialization (half a minute): a stand-in that steps nothing
    monkeypatch.setattr(sim, "_driver", lambda *a: used.append("driver-jit") or (int(a[0]), 0, 0, 0, 0.0))
    sim.advance(s, np.int32(2))
    assert used == ["driver-jit"]
    sim.advance(s, 2)
    assert used == ["driver-jit"]  # a Python int: the AOT entry
    import rodlab.solvers.compact as SC

    monkeypatch.setattr(SC, "write_frames", lambda *a: used.append("fill-jit") or real_fill(*a))
    s.vertex_x.flags.writeable = False  # read by the fill, not written: the dispatcher compiles it read-only
    twist = s.joint_ref_twist  # reads the deferred frames
    assert used == ["driver-jit", "fill-jit"]
    assert np.isfinite(twist).all()


def test_jit_only_env_turns_the_compact_entries_off(restore_aot):
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    sim = simulator_class("compact")(cantilever(6))
    sim.advance(sim.initial_state(), 1)
    assert sim._driver_aot is CB.advance_rods_serial and sim._fill is CB.write_frames
