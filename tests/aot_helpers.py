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
