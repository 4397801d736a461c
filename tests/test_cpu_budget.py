"""The benchmarks' CPU-limited child runs (rodlab.bench_adapters.cpu_budget) and the dynamics benchmark's
use of them (bench/bench_dynamics.py): a trial that passes its CPU limit is stopped and reported as over
budget, never left to hang, whether it spins in Python, swallows exceptions, ignores SIGXCPU (killed at the
hard limit) or sleeps (killed at the wall limit). Each case spends about a second of CPU.
"""
from __future__ import annotations

import importlib.util
import math
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from rodlab.bench_adapters.cpu_budget import rearm_cpu_limit, report_progress, run_with_cpu_limit

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGXCPU"), reason="POSIX CPU limits only")


def _spin_forever():
    report_progress(t=0.25, cpu_s=0.5, per_step_s=1e-3)
    while True:
        try:
            sum(range(1000))
        except Exception:  # noqa: BLE001 - a peer that swallows its errors must still be stopped
            pass


def _ignore_sigxcpu_and_spin():
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # like a long call in compiled code: no Python handler runs
    while True:
        pass


def test_done_returns_the_value_and_child_cpu():
    out = run_with_cpu_limit(lambda: {"x": [1, 2, 3]}, cpu_limit_s=5.0, wall_limit_s=60.0)
    assert out.status == "done", out.message
    assert out.value == {"x": [1, 2, 3]}
    assert out.cpu_s >= 0.0 and math.isnan(out.progress["t"])


def test_python_spin_is_stopped_at_the_soft_limit_with_its_progress():
    w0 = time.perf_counter()
    out = run_with_cpu_limit(_spin_forever, cpu_limit_s=1.0, wall_limit_s=120.0)
    assert out.status == "cpu_limit", (out.status, out.message)
    assert out.message == "stopped at the CPU limit"  # SIGXCPU handled in Python, not a kill
    assert 0.9 <= out.cpu_s < 4.0, out.cpu_s
    assert out.progress == {"t": 0.25, "cpu_s": 0.5, "per_step_s": 1e-3}
    assert time.perf_counter() - w0 < 100.0


def test_a_child_ignoring_sigxcpu_is_killed_at_the_hard_limit():
    out = run_with_cpu_limit(_ignore_sigxcpu_and_spin, cpu_limit_s=1.0, wall_limit_s=120.0, grace_s=1.0)
    assert out.status == "cpu_limit", (out.status, out.message)
    assert "SIGKILL" in out.message
    assert 1.5 <= out.cpu_s < 4.0, out.cpu_s


def test_a_sleeping_child_is_killed_at_the_wall_limit():
    out = run_with_cpu_limit(lambda: time.sleep(60), cpu_limit_s=5.0, wall_limit_s=1.0)
    assert out.status == "wall_limit", (out.status, out.message)
    assert out.wall_s < 10.0


def _spin_then_rearm():
    c0 = time.process_time()
    while time.process_time() - c0 < 0.3:
        pass
    rearm_cpu_limit(1.0)     # from 3 s down to ~1.3 s of CPU
    rearm_cpu_limit(100.0)   # past the current limit: kept
    report_progress(cpu_s=time.process_time())
    while True:
        pass


def test_rearm_lowers_the_limit_from_now():
    out = run_with_cpu_limit(_spin_then_rearm, cpu_limit_s=30.0, wall_limit_s=300.0, grace_s=1.0)
    assert out.status == "cpu_limit", (out.status, out.message)
    assert 0.25 <= out.progress["cpu_s"] < 1.0, out.progress
    assert 1.0 <= out.cpu_s < 4.5, out.cpu_s  # the soft limit ceil(0.3 + 1) = 2 s, not 30 s


def test_errors_and_bad_limits():
    def boom():
        raise ValueError("no such rod")
    out = run_with_cpu_limit(boom, cpu_limit_s=5.0, wall_limit_s=60.0)
    assert out.status == "error" and out.message == "ValueError: no such rod"
    with pytest.raises(ValueError, match="cpu_limit_s"):
        run_with_cpu_limit(lambda: 0, cpu_limit_s=math.inf, wall_limit_s=60.0)
    with pytest.raises(ValueError, match="wall_limit_s"):
        run_with_cpu_limit(lambda: 0, cpu_limit_s=1.0, wall_limit_s=0.0)
    with pytest.raises(ValueError, match="unknown field"):
        report_progress(steps=3)
    with pytest.raises(ValueError, match="seconds"):
        rearm_cpu_limit(-1.0)
    report_progress(t=1.0)  # in the parent: no-ops
    rearm_cpu_limit(1.0)


@pytest.fixture(scope="module")
def bench_dynamics():
    path = Path(__file__).resolve().parents[1] / "bench" / "bench_dynamics.py"
    spec = importlib.util.spec_from_file_location("bench_dynamics_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the dataclass Run resolves its module by name
    saved = dict(os.environ)
    try:
        spec.loader.exec_module(module)
    finally:
        # the bench pins NUMBA_NUM_THREADS=1 and the BLAS threads for its own process; left in this
        # worker's environment, numba's next compile re-reads it and refuses a thread count that
        # differs from the launched pool's (a later test file in the same pytest worker failed)
        os.environ.clear()
        os.environ.update(saved)
    yield module
    del sys.modules[spec.name]


def test_a_peer_stuck_in_one_blocking_call_is_skipped_for_budget(bench_dynamics, monkeypatch):
    """A peer whose run never returns (one long call, no sample reaches the budget check) stops at the
    budget; the row says ``skipped: budget``, projected from the cost per step it reported."""
    def make(n, scene):  # noqa: ARG001 - a maker's signature
        def run(dt):  # noqa: ARG001
            report_progress(per_step_s=0.5)
            _ignore_sigxcpu_and_spin()
        return run, 0.01, 0  # ladder starts at dt = 0.01 s: 200 steps of 2 s
    monkeypatch.setattr(bench_dynamics, "CHILD_GRACE_S", 1.0)
    row = bench_dynamics.measure("stuck peer", bench_dynamics._isolated(make), 50, "released", {}, 1.0, lambda s: None)
    assert row["status"] == "skipped: budget", row
    assert "projected 100 s" in row["why"], row["why"]  # 0.5 s per step x 200 steps
    assert "0.01 s passed 1 s CPU" in row["why"], row["why"]


def test_a_peer_over_budget_between_samples_projects_from_its_time(bench_dynamics):
    """A peer that reports its progress (the probe of the drivers): stopped by the in-child budget check,
    projected from the simulated time reached."""
    def make(n, scene):  # noqa: ARG001
        def run(dt):
            def call(probe):
                t = 0.0
                while True:
                    c0 = time.process_time()
                    while time.process_time() - c0 < 0.05:
                        pass
                    t += dt
                    probe(t, (1.0, 0.0))
            return bench_dynamics._peer_run(call, dt)
        return run, 0.01, 0
    row = bench_dynamics.measure("slow peer", bench_dynamics._isolated(make), 50, "released", {}, 1.0, lambda s: None)
    assert row["status"] == "skipped: budget", row
    assert "passed 1 s CPU at t = " in row["why"], row["why"]
    projected = float(row["why"].split("projected ")[1].split(" s")[0])
    assert 5.0 <= projected <= 15.0, row["why"]  # ~0.05 s CPU per 0.01 s step: ~10 s for 2 s
