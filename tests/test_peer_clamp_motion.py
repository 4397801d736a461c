"""The peers' prescribed clamp motion (rodlab.bench_adapters.peers, bench/bench_dynamics.py's ``shaken``).

Each installed peer driver runs a few steps with the clamp shaken sideways, y(t) = A (1 - cos(2 pi f t)),
and the clamped node, read back from the library's own state, must sit at its rest position plus y(t) at
every step (1e-9 m), its other coordinates unmoved; the tip must have started to follow (a driver that
ignored the motion would leave the clamp at y = 0 and fail). A peer that is not installed is skipped.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from rodlab.bench_adapters import peers as P

A, F = 0.02, 3.0      # [m], [Hz]: the benchmark's shake
DT, STEPS = 1e-3, 12  # [s]: y(12 ms) = 5.0e-4 m


def motion(t: float):
    w = 2.0 * math.pi * F
    return np.array([0.0, A * (1.0 - math.cos(w * t)), 0.0]), np.array([0.0, A * w * math.sin(w * t), 0.0])


def _scene(n: int) -> P.Scene:
    return P.Scene(n=n, t_end=STEPS * DT, damping=0.5)


def _check(run: P.CantileverRun, rest: np.ndarray, tips: list) -> None:
    assert run.ok, run.message
    t, x = run.extra["clamp_t"], run.extra["clamp_x"]
    assert t.size >= 10, t.size
    assert t[-1] == pytest.approx(STEPS * DT, abs=1e-12)
    expected = rest + np.array([motion(ti)[0] for ti in t])
    assert np.abs(x - expected).max() <= 1e-9, np.abs(x - expected).max()
    assert x[-1, 1] > 4e-4  # the clamp really moved (y(12 ms) = 5.0e-4 m)
    tip = np.asarray(tips[-1])
    assert tip.shape == (3,) and np.all(np.isfinite(tip))
    assert np.abs(tip - [1.0, 0.0, 0.0]).max() < 0.01, tip  # stable: the tip has barely moved in 12 ms
    assert tip[1] != 0.0  # the rod was dragged sideways (exactly 0 without the motion: a planar problem)


def _probe():
    tips = []
    return tips, lambda t, xyz: tips.append(np.array(xyz, dtype=float))


def test_pyelastica_clamp_follows_motion():
    pytest.importorskip("elastica", reason="pyelastica not installed")
    n = 12
    h = 1.0 / (n - 1.5)
    tips, probe = _probe()
    # explicit: its stable step is ~3e-5 s here; sampled every 1 ms (its 5 warm-up steps are not)
    run = P.run_pyelastica(_scene(n), 2e-5, check_every=50, probe=probe, clamp_motion=motion)
    _check(run, np.array([-0.5 * h, 0.0, 0.0]), tips)


def test_pypbd_clamp_follows_motion():
    pytest.importorskip("pypbd", reason="pypbd not installed")
    tips, probe = _probe()
    run = P.run_pypbd(_scene(12), DT, check_every=1, probe=probe, clamp_motion=motion)
    _check(run, np.zeros(3), tips)  # the clamp segment's centre, at x = 0


def test_dismech_newton_clamp_follows_motion():
    try:
        P.import_dismech_newton()
    except P.PeerUnavailable as exc:
        pytest.skip(str(exc))
    n = 12
    h = 1.0 / (n - 1.5)
    tips, probe = _probe()
    run = P.run_dismech_newton(_scene(n), DT, warmup=1, probe=probe, probe_every=1, clamp_motion=motion)
    _check(run, np.array([-0.5 * h, 0.0, 0.0]), tips)  # node 0 (float32 DOFs: exact to ~1e-11 m here)


def test_fixed_clamp_unchanged_without_motion():
    """Without ``clamp_motion`` the probe still gets (x, z) and no clamp samples are recorded."""
    pytest.importorskip("pypbd", reason="pypbd not installed")
    tips, probe = _probe()
    run = P.run_pypbd(_scene(12), DT, check_every=1, probe=probe)
    assert run.ok and "clamp_x" not in run.extra
    assert len(tips) == STEPS and tips[-1].shape == (2,)
