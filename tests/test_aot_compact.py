"""Ahead-of-time kernels of method compact (rodlab.aot): a compact cantilever through the AOT
entries (the serial driver, the frame fill, the model's kernels) is bitwise the JIT's; the entries
run through their numba dispatchers (rodlab.aot.seed), numba compiling nothing for their signatures,
and a read-only array gets numba's own compilation.

The module exists only after ``pip install`` (or ``python setup.py build_ext --inplace``); the
tests that need it skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (set by ``.ci/run``) makes
that a failure."""
from __future__ import annotations

import numpy as np

from rodlab import aot
from rodlab.aot import spec
from rodlab.compact import batch as CB
from rodlab.compact.chain import frames_from_polyline
from rodlab.compact.sqp import alignment_violation
from rodlab.solvers import simulator_class
from rodlab.world import WorldBuilder, shapes

from aot_helpers import entry_ran, fresh, jit_ran, require_module, restore_aot  # noqa: F401 (a fixture)

DRIVER = tuple(spec.ENTRIES[("rodlab.compact.batch", "advance_rods_serial")][0].args)
FILL = tuple(spec.ENTRIES[("rodlab.compact.batch", "write_frames")][0].args)


def cantilever(n: int = 16, rods: int = 1):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    for r in range(rods):
        b.add_rod(shapes.straight(n, 0.4, start=(0.0, 0.1 * r, 0.0)), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
        b.clamp(r, "start")
    return b.build()


def run_cantilever():
    """A compact cantilever: a static solve, 12 calls of one step, a read (the deferred frame fill),
    one call of 10 steps, a numpy int64 step count; every state array after each phase, the
    alignment metric."""
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
    return arrays, align


def test_cantilever_bitwise_the_same_through_aot_and_jit(restore_aot):
    require_module()
    fresh(CB.advance_rods_serial, CB.write_frames)
    with_aot, align_aot = run_cantilever()
    assert entry_ran(CB.advance_rods_serial, DRIVER) and entry_ran(CB.write_frames, FILL)
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    fresh(CB.advance_rods_serial, CB.write_frames)
    with_jit, align_jit = run_cantilever()
    assert jit_ran(CB.advance_rods_serial, DRIVER) and jit_ran(CB.write_frames, FILL)
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


def test_a_read_only_array_gets_numbas_own_compilation():
    """Several rods take the parallel driver (no entry); a frame fill whose positions were made
    read-only after the call that deferred it is compiled by numba for that signature, with the
    entry's bits."""
    require_module()
    fresh(CB.write_frames)
    two = simulator_class("compact")(cantilever(6, rods=2))
    assert two._driver is CB.advance_rods and aot.seeded(CB.advance_rods) == ()
    sim = simulator_class("compact")(cantilever(6))
    s = sim.initial_state()
    sim.advance(s, 2)
    s.edge_theta  # noqa: B018 (the read fills the deferred frames: the entry's fill)
    assert entry_ran(CB.write_frames, FILL)
    sim.advance(s, 2)
    pending = s.deferred_by(sim)  # the frame arrays, not yet written (the twist unwraps against them)
    d1, theta, twist_aot = (pending[k].copy() for k in ("edge_ref_d1", "edge_theta", "joint_ref_twist"))
    s.vertex_x.flags.writeable = False  # read by the fill, not written
    twist = s.joint_ref_twist  # the fill, compiled by numba for a read-only vertex_x
    assert len(CB.write_frames.overloads) == 1 and entry_ran(CB.write_frames, FILL)
    x, q = s.vertex_x.copy(), s.solver["q"]
    CB.write_frames(sim._vstart, sim._estart, sim._jstart, x, q, d1, theta, twist_aot)  # the entry, same inputs
    assert entry_ran(CB.write_frames, FILL)
    assert twist.tobytes() == twist_aot.tobytes() and d1.tobytes() == s.edge_ref_d1.tobytes()
    assert np.isfinite(twist).all()


def test_jit_only_env_turns_the_compact_entries_off(restore_aot):
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    simulator_class("compact")(cantilever(6))
    assert aot.seed(CB.advance_rods_serial) == 0 and aot.seeded(CB.write_frames) == ()
