"""Ahead-of-time compiled kernels (rodlab.aot): the same results as numba's JIT, bitwise; the entries
run through their own numba dispatchers (rodlab.aot.seed), which compile every call of other argument
types as before; RODLAB_JIT_ONLY=1 and a stale build turn the module off, rodlab.aot.refresh takes the
entries out again.

The module exists only after ``pip install`` (or ``python setup.py build_ext --inplace``); the
tests that need it skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (set by ``.ci/run``) makes
that a failure."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from rodlab import aot
from rodlab.aot import spec
from rodlab.der import batch as B
from rodlab.geometry import curves as C
from rodlab.solvers import simulator_class
from rodlab.world import WorldBuilder, shapes

from aot_helpers import entry_ran, fresh, jit_ran, require_module, restore_aot  # noqa: F401 (a fixture)

UNDRIVEN = tuple(spec.ENTRIES[("rodlab.der.batch", "advance_undriven_serial")][0].args)
EDGES, EDGES_READ_ONLY = (tuple(sig.args) for sig in spec.ENTRIES[("rodlab.geometry.curves", "compute_edges")])
TANGENTS = tuple(spec.ENTRIES[("rodlab.geometry.curves", "compute_tangents")][0].args)


def cantilever(n: int = 24):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 0.5), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
    b.clamp(0, "start")
    return b.build()


def run_cantilever():
    """A der cantilever: 20 calls of one step, a read (the deferred frames' fill), one call of 15
    steps; every state array after each phase."""
    sim = simulator_class("der")(cantilever())
    s = sim.initial_state()
    out = []
    for _ in range(20):
        sim.advance(s, 1)
    out.append(s.copy())  # reads the frames (fills the deferred rebuild)
    sim.advance(s, 15)
    out.append(s.copy())
    return [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                st.joint_ref_twist)]) for st in out]


def test_cantilever_bitwise_the_same_through_aot_and_jit(restore_aot):
    """The serial driver's entry runs every call (numba compiles nothing for it), bitwise the JIT."""
    require_module()
    fresh(B.advance_undriven_serial)
    with_aot = run_cantilever()
    assert entry_ran(B.advance_undriven_serial, UNDRIVEN)
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    fresh(B.advance_undriven_serial)
    with_jit = run_cantilever()
    assert jit_ran(B.advance_undriven_serial, UNDRIVEN)
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


def test_kernel_seeds_its_dispatcher_and_raises_the_jits_errors(restore_aot):
    """A rodlab.aot.kernel handle seeds its dispatcher at its first call: the entry runs (no JIT
    compilation) with the JIT's bits and its errors."""
    require_module()
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(size=(9, 3)), axis=0)
    fresh(C.compute_edges, C.compute_tangents)
    e_aot, e_jit = np.empty((8, 3)), np.empty((8, 3))
    aot.kernel(C.compute_edges)(x, False, e_aot)
    assert aot.seeded(C.compute_edges) == (EDGES, EDGES_READ_ONLY) and entry_ran(C.compute_edges, EDGES)
    with pytest.raises(ValueError, match="zero-length"):
        aot.kernel(C.compute_tangents)(np.zeros((3, 3)), np.empty(3), np.empty((3, 3)))
    assert entry_ran(C.compute_tangents, TANGENTS)
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    fresh(C.compute_edges)
    aot.kernel(C.compute_edges)(x, False, e_jit)
    assert jit_ran(C.compute_edges, EDGES)
    assert e_aot.tobytes() == e_jit.tobytes()


def test_other_argument_types_compile_as_before():
    """Only an entry's exact signature runs it: a Fortran-ordered array, a read-only array where the
    entry takes a writeable one, a float32 array get numba's own compilation (and its results)."""
    require_module()
    fresh(C.compute_edges, C.compute_tangents)
    assert aot.seed(C.compute_edges) == 2 and aot.seed(C.compute_tangents) == 1
    x = np.arange(12.0).reshape(4, 3) ** 2
    out_c, out_f, out_s = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    C.compute_edges(x, False, out_c)
    assert entry_ran(C.compute_edges, EDGES)
    C.compute_edges(np.asfortranarray(x), False, out_f)
    C.compute_edges(x.astype(np.float32), False, out_s)
    assert len(C.compute_edges.overloads) == 2  # the F-ordered and the float32 call, compiled by numba
    assert out_f.tobytes() == out_c.tobytes() and np.array_equal(out_s, out_c)
    edges = out_c.copy()
    edges.flags.writeable = False  # the entry takes writeable edges: this call is compiled
    t_jit, t_aot, lengths = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
    C.compute_tangents(edges, lengths, t_jit)
    assert len(C.compute_tangents.overloads) == 1 and entry_ran(C.compute_tangents, TANGENTS)
    C.compute_tangents(out_c, lengths, t_aot)
    assert t_jit.tobytes() == t_aot.tobytes()


def test_refresh_takes_the_entries_out(restore_aot):
    """After rodlab.aot.refresh a seeded dispatcher holds nothing of the module: with
    RODLAB_JIT_ONLY=1 its calls compile (or load from numba's cache) as without the module."""
    require_module()
    fresh(C.compute_edges)
    x, e = np.ones((4, 3)), np.empty((3, 3))
    assert aot.seed(C.compute_edges) == 2
    C.compute_edges(x, False, e)
    assert entry_ran(C.compute_edges, EDGES)
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    assert aot.seeded(C.compute_edges) == () and aot.seed(C.compute_edges) == 0
    C.compute_edges(x, False, e)
    assert jit_ran(C.compute_edges, EDGES)


def test_jit_only_env_turns_the_module_off(restore_aot):
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    assert aot.module() is None
    assert aot.JIT_ONLY_ENV in aot.unavailable_reason()
    simulator_class("der")(cantilever(6))
    assert aot.seed(B.advance_undriven_serial) == 0 and aot.seeded(B.advance_undriven_serial) == ()


def test_a_stale_build_is_not_used(restore_aot):
    """A module built from other sources (an edited kernel after the install) is refused."""
    require_module()
    real = aot.build_info()
    restore_aot.setattr(aot, "build_info", lambda: {**real, "source_sha256": "0" * 64})
    aot.refresh()
    assert aot.module() is None
    assert "source_sha256" in aot.unavailable_reason()


def test_unpickled_simulator_seeds_the_entry(restore_aot):
    """A der simulator unpickled where nothing is seeded (a fresh process: ``fresh``) seeds the serial
    driver's entry at unpickling: its calls run the entry, bitwise the pickled simulator's steps."""
    require_module()
    sim = simulator_class("der")(cantilever())
    s = sim.initial_state()
    sim.advance(s, 3)
    blob = pickle.dumps(sim)
    fresh(B.advance_undriven_serial)
    assert aot.seeded(B.advance_undriven_serial) == ()
    copy = pickle.loads(blob)
    assert aot.seeded(B.advance_undriven_serial) == (UNDRIVEN,)
    sc = s.copy()
    for _ in range(4):
        copy.advance(sc, 1)
    assert entry_ran(B.advance_undriven_serial, UNDRIVEN)
    for _ in range(4):
        sim.advance(s, 1)
    for name in ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist"):
        assert getattr(sc, name).tobytes() == getattr(s, name).tobytes(), name
