"""Ahead-of-time compiled kernels (rodlab.aot): the same results as numba's JIT, bitwise; every
call whose arguments the AOT signature does not describe goes to the JIT; RODLAB_JIT_ONLY=1 and a
stale build turn the module off.

The module exists only after ``pip install`` (or ``python setup.py build_ext --inplace``); the
tests that need it skip without it, unless ``RODLAB_REQUIRE_AOT=1`` (set by ``.ci/run``) makes
that a failure."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from rodlab import aot
from rodlab.aot import spec
from rodlab.der import batch as B
from rodlab.geometry import curves as C
from rodlab.solvers import simulator_class
from rodlab.world import WorldBuilder, shapes

from aot_helpers import require_module, restore_aot  # noqa: F401 (a fixture)


def cantilever(n: int = 24):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 0.5), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
    b.clamp(0, "start")
    return b.build()


def run_cantilever():
    """A der cantilever: 20 calls of one step, a read, one call of 15 steps; every state array
    after each phase, and which driver the simulator used."""
    sim = simulator_class("der")(cantilever())
    s = sim.initial_state()
    out = []
    for _ in range(20):
        sim.advance(s, 1)
    out.append(s.copy())  # reads the frames (fills the deferred rebuild)
    sim.advance(s, 15)
    out.append(s.copy())
    arrays = [np.concatenate([a.ravel() for a in (st.vertex_x, st.vertex_v, st.edge_theta, st.edge_ref_d1,
                                                    st.joint_ref_twist)]) for st in out]
    return arrays, sim._undriven_jit or sim._driver  # the dispatcher where no AOT entry exists, else the one used


def test_cantilever_bitwise_the_same_through_aot_and_jit(restore_aot):
    require_module()
    aot.refresh()
    with_aot, driver = run_cantilever()
    assert driver is not B.advance_undriven_serial  # the AOT entry ran
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    with_jit, driver = run_cantilever()
    assert driver is B.advance_undriven_serial
    for a, b in zip(with_aot, with_jit):
        assert a.tobytes() == b.tobytes()


def test_kernel_matches_jit_and_raises_its_errors():
    require_module()
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(size=(9, 3)), axis=0)
    e_aot, e_jit = np.empty((8, 3)), np.empty((8, 3))
    kernel = aot.kernel(C.compute_edges)
    kernel(x, False, e_aot)
    assert len(kernel._entries) == 2  # writeable and read-only x
    C.compute_edges(x, False, e_jit)
    assert e_aot.tobytes() == e_jit.tobytes()
    with pytest.raises(ValueError, match="zero-length"):
        aot.kernel(C.compute_tangents)(np.zeros((3, 3)), np.empty(3), np.empty((3, 3)))


def test_other_argument_types_go_to_the_jit():
    """A Fortran-ordered or float32 array, a bool for an int, an int for a bool: not the AOT
    signature, so the dispatcher runs (and gives its own results)."""
    fits = aot.signature_check(spec.ENTRIES[("rodlab.geometry.curves", "compute_edges")][0])
    x, e = np.ones((4, 3)), np.empty((3, 3))
    assert fits((x, False, e))
    assert not fits((np.asfortranarray(x), False, e))
    assert not fits((x.astype(np.float32), False, e))
    assert not fits((x, 0, e))
    assert not fits((x, False))
    kernel = aot.kernel(C.compute_edges)
    f_order = np.asfortranarray(np.arange(12.0).reshape(4, 3) ** 2)
    out_k, out_j = np.empty((3, 3)), np.empty((3, 3))
    kernel(f_order, False, out_k)
    C.compute_edges(f_order, False, out_j)
    assert out_k.tobytes() == out_j.tobytes()


VALUES = [
    np.ones((3, 3)), np.ones(3), np.ones((3, 3), dtype=np.float32), np.ones(3, dtype=np.int64), np.ones(3, dtype=bool),
    np.asfortranarray(np.ones((3, 2))), np.ones((3, 4))[:, ::2], np.ones((2, 2, 3), dtype=np.float32),
    np.zeros((2, 2, 3), dtype=np.uint8), 1, -(2 ** 63), 2 ** 63, 1.5, True, np.int64(2), np.int32(2), np.float64(1.0),
    np.float32(1.0), np.bool_(False), None, "1",
]


def read_only(a):
    a = a.copy()
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("ty", sorted({ty for sigs in spec.ENTRIES.values() for sig in sigs for ty in sig.args}, key=str))
def test_argument_checks_agree_with_numba_typeof(ty):
    """Each exported argument type's check accepts exactly the values numba's dispatcher types
    as that type (numba.typeof), read-only arrays included."""
    check = aot._argument_check(ty)
    values = VALUES + [read_only(v) for v in VALUES if isinstance(v, np.ndarray)]
    for v in values:
        try:
            typed = numba.typeof(v)
        except ValueError:
            typed = None
        assert check(v) == (typed == ty), (ty, v, typed)


def test_jit_only_env_turns_the_module_off(restore_aot):
    restore_aot.setenv(aot.JIT_ONLY_ENV, "1")
    aot.refresh()
    assert aot.module() is None
    assert aot.JIT_ONLY_ENV in aot.unavailable_reason()
    assert aot.entries(B.advance_undriven_serial) == []
    assert simulator_class("der")(cantilever(6))._undriven_aot == []


def test_a_stale_build_is_not_used(restore_aot):
    """A module built from other sources (an edited kernel after the install) is refused."""
    require_module()
    real = aot.build_info()
    restore_aot.setattr(aot, "build_info", lambda: {**real, "source_sha256": "0" * 64})
    aot.refresh()
    assert aot.module() is None
    assert "source_sha256" in aot.unavailable_reason()
