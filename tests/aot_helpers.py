"""Shared pieces of the ahead-of-time kernel tests (tests/test_aot*.py, rodlab.aot)."""
from __future__ import annotations

import os

import pytest

from rodlab import aot


@pytest.fixture
def restore_aot(monkeypatch):
    """Let a test set RODLAB_JIT_ONLY or change the build record; the module is decided again after."""
    yield monkeypatch
    monkeypatch.undo()
    aot.refresh()


def require_module():
    """Skip a test that needs the compiled module where it is not usable, unless
    ``RODLAB_REQUIRE_AOT=1`` (set by ``.ci/run``: the module must build there) makes that a failure."""
    if aot.module() is None:
        if os.environ.get("RODLAB_REQUIRE_AOT") == "1":
            pytest.fail(f"RODLAB_REQUIRE_AOT=1 but the AOT kernels are not usable: {aot.unavailable_reason()}")
        pytest.skip(f"AOT kernels not usable: {aot.unavailable_reason()} (pip install -e . builds them)")


def fresh(*dispatchers):
    """These numba dispatchers without any compilation of this process (a JIT compilation of an
    entry's signature would keep :func:`rodlab.aot.seed` from inserting it), and the module decided
    again (:func:`rodlab.aot.refresh`)."""
    for dispatcher in dispatchers:
        dispatcher._reset_overloads()
    aot.refresh()


def entry_ran(dispatcher, signature) -> bool:
    """Whether the calls so far of ``dispatcher`` with argument types ``signature`` (a tuple of numba
    types) ran its seeded ahead-of-time entry: the entry was inserted (:func:`rodlab.aot.seeded`) and
    numba has no compilation of its own for those types (a JIT compile or a cache load would be
    listed in ``dispatcher.overloads``)."""
    return signature in aot.seeded(dispatcher) and signature not in dispatcher.overloads


def jit_ran(dispatcher, signature) -> bool:
    """Whether numba's own compilation of ``signature`` ran (nothing seeded for it)."""
    return signature not in aot.seeded(dispatcher) and signature in dispatcher.overloads
