"""Robust runs from the command line (issue #16, items 1-3 and 6): Ctrl-C, run-size limits, the
failure contract, --out checked first and written atomically, the compile message, CLI consistency."""
import json
import re
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from rodlab import runctl
from rodlab.cli import main
from rodlab.experiment import record

METHODS = ("der", "der-implicit", "compact", "galpha")


def _cli(*args, env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "rodlab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, **kw)


# ---- Ctrl-C --------------------------------------------------------------------------------------
def test_sigint_stops_a_long_run_within_2_s_and_writes_partial_output(tmp_path):
    out = tmp_path / "long"
    proc = _cli("run", "cantilever", "--set", "n=12", "--set", "t_end=1e5", "--no-plot", "--out", str(out))
    seen, err = threading.Event(), []

    def read():
        while chunk := proc.stderr.read1(4096) if hasattr(proc.stderr, "read1") else proc.stderr.read(1):
            err.append(chunk.decode(errors="replace"))
            # stepping (not compiling or loading kernels): the bar has passed 0 %
            if re.search(r"cantilever: +[1-9]\d*%", "".join(err[-3:])):
                seen.set()
        seen.set()

    threading.Thread(target=read, daemon=True).start()
    assert seen.wait(300), "no progress past 0 % within 300 s"
    assert proc.poll() is None, "".join(err)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=30)
    stopped = time.perf_counter() - t0
    assert rc == 130, "".join(err)
    assert stopped < 2.0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["success"] is False and metrics["error"] == "interrupted"
    with np.load(out / "trajectory.npz") as traj:
        t, x = traj["t"], traj["x"]
    assert t.size >= 2 and x.shape == (t.size, 12, 3) and np.all(np.isfinite(x))
    assert metrics["t_reached"] == pytest.approx(t[-1]) and 0 < t[-1] < 1e5
    assert "Traceback" not in "".join(err)


class _SlowSim:
    """advance(state, k) sleeps 4 ms per step; records the size of every call."""

    dt = 1e-3

    def __init__(self):
        self.calls = []

    def advance(self, state, k):
        from rodlab.solvers.base import StepReport

        self.calls.append(k)
        time.sleep(0.004 * k)
        state.t += k * self.dt
        state.vertex_x += float(k)
        return StepReport(k)


class _Flat:
    def __init__(self, n=3):
        self.t, self.vertex_x = 0.0, np.zeros((n, 3))

    def copy(self):
        c = _Flat(self.vertex_x.shape[0])
        c.t, c.vertex_x = self.t, self.vertex_x.copy()
        return c


def test_record_chunks_stay_short_and_frames_stay_at_their_steps():
    sim, state = _SlowSim(), _Flat()
    rec = record(sim, state, 200, frames=2)  # the warm-up step (on a copy) measures a step's cost
    sim.calls.pop(0)
    assert rec.steps == 200 and np.allclose(rec.t, [0.0, 0.1, 0.2])  # frames at steps 0, 100, 200
    assert np.allclose(rec.x[:, 0, 0], [0, 100, 200])
    assert max(sim.calls) * 0.004 <= 1.5 * runctl.CHUNK_S  # no call much over 0.2 s (a frame is 0.4 s)
    assert len(sim.calls) >= 4


def test_interrupt_flag_stops_record_with_the_frames_up_to_there():
    sim, state = _SlowSim(), _Flat()
    with runctl.session(spinner=False) as ctl:
        timer = threading.Timer(0.3, lambda: setattr(ctl, "interrupt_requested", True))
        timer.start()
        with pytest.raises(runctl.Interrupted) as info:
            record(sim, state, 10_000, frames=10, warmup=False)
    rec = info.value.recording
    assert 0 < rec.steps < 10_000 and rec.t[-1] == pytest.approx(state.t) and rec.x.shape[0] == rec.t.size


# ---- size limits -----------------------------------------------------------------------------------
def test_t_end_1e12_is_refused_with_an_estimate(tmp_path, capsys):
    rc = main(["run", "cantilever", "--set", "n=6", "--set", "t_end=1e12", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "run too large" in err and "steps" in err and "--force" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_check_run_size_limits():
    runctl.check_run_size(runctl.MAX_STEPS, 1000)
    with pytest.raises(runctl.RunTooLarge, match=r"more than 1e\+08 steps.*about"):
        runctl.check_run_size(runctl.MAX_STEPS + 1, 1000, seconds_per_step=1e-6)
    with pytest.raises(runctl.RunTooLarge, match="more memory than is available"):
        runctl.check_run_size(10, 2**70)
    runctl.check_run_size(runctl.MAX_STEPS + 1, 2**70, force=True)


# ---- failure contract ------------------------------------------------------------------------------
DIVERGING = {  # a run per method that fails at its first step
    "der": ["g=1e300"],  # non-finite state
    "der-implicit": ["g=1e300"],  # Newton step fails (non-finite unknowns)
    "galpha": ["g=1e300"],  # Newton does not converge
    "compact": ["E=1e300", "G=1e300"],  # SQP stops on PCG / line-search failures (compact keeps such steps)
}


@pytest.mark.parametrize("method", METHODS)
def test_a_diverging_run_exits_3_with_metrics_and_trajectory(method, tmp_path, capsys):
    out = tmp_path / method
    (out).mkdir()
    (out / "frames.png").write_bytes(b"old run")  # a previous run's picture must not survive
    sets = [a for kv in [f"method={method}", "n=6", "t_end=0.05", *DIVERGING[method]] for a in ("--set", kv)]
    rc = main(["run", "cantilever", *sets, "--no-plot", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 3
    lines = [ln for ln in err.splitlines() if ln.startswith("rodlab:")]
    assert len(lines) == 1 and " failed" in lines[0] and "t = " in lines[0] and "try" in lines[0]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["success"] is False and metrics["error"] and metrics["t_reached"] is not None
    with np.load(out / "trajectory.npz") as traj:
        assert traj["t"].size >= 1 and np.all(np.isfinite(traj["x"]))
        assert traj["t"][-1] == pytest.approx(metrics["t_reached"])
        m1 = traj["edge_m1"]   # the twist of every kept frame: unit directors normal to their edges
        assert m1.shape == (traj["t"].size, 5, 3) and np.allclose(np.linalg.norm(m1, axis=2), 1.0, atol=1e-6)
        e = np.diff(traj["x"], axis=1)
        assert np.abs(np.einsum("fei,fei->fe", m1, e / np.linalg.norm(e, axis=2)[..., None])).max() < 1e-5
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "trajectory.npz"]


# ---- --out ------------------------------------------------------------------------------------------
@pytest.fixture
def no_stepping(monkeypatch):
    import importlib

    registry = importlib.import_module("rodlab.scenes.registry")

    def boom(*a, **k):
        raise AssertionError("the scene ran before --out was checked")

    monkeypatch.setattr(registry, "run_scene", boom)


def test_out_that_is_a_file_is_refused_before_stepping(tmp_path, capsys, no_stepping):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["run", "cantilever", "--out", str(f)]) == 2
    assert "is a file" in capsys.readouterr().err


def test_read_only_out_is_refused_before_stepping(tmp_path, capsys, no_stepping):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert main(["run", "cantilever", "--out", str(ro)]) == 2
        assert "read-only" in capsys.readouterr().err
        assert main(["run", "cantilever", "--out", str(ro / "sub")]) == 2
        assert "read-only" in capsys.readouterr().err
    finally:
        ro.chmod(0o755)


def test_a_crash_while_writing_leaves_the_previous_run_whole(tmp_path, monkeypatch, capsys):
    out = tmp_path / "o"
    assert main(["run", "uniform-twist", "--set", "n=8", "--no-plot", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"metrics.json", "trajectory.npz"} <= set(before)

    import importlib

    outputs = importlib.import_module("rodlab.io.outputs")

    def disk_full(path, *a, **k):  # metrics.json is written by then; the trajectory is not
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs, "save_arrays", disk_full)
    with pytest.raises(OSError):
        main(["run", "uniform-twist", "--set", "n=9", "--no-plot", "--out", str(out)])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["o"]  # no temporary folder left behind


# ---- compile message -----------------------------------------------------------------------------
def test_compile_message_on_a_cold_cache(tmp_path):
    script = tmp_path / "cold.py"
    script.write_text("import numba\nfrom rodlab import runctl\n"
                      "with runctl.session():\n"
                      "    f = numba.njit(cache=True)(lambda a: a * 2.0 + 1.0)\n"
                      "    assert f(1.0) == 3.0\n"
                      "print('compiled', runctl.compile_seconds() > 0)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "compiling kernels (first run only)" in proc.stderr
    assert "compiled kernels in" in proc.stderr and "compiled True" in proc.stdout
    again = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert "compiled False" in again.stdout and "compiling kernels" not in again.stderr  # loaded from the cache


def test_wall_s_of_record_leaves_out_compile_time():
    import numba

    from rodlab.solvers.base import StepReport

    class Compiling(_SlowSim):
        def advance(self, state, k):
            before = runctl.compile_seconds()
            numba.njit(lambda a: a + 1.0)(1.0)  # a fresh compile inside the stepping call
            assert runctl.compile_seconds() > before
            state.t += k * self.dt
            return StepReport(k)

    rec = record(Compiling(), _Flat(), 3, frames=3, warmup=False)
    assert rec.wall_s < 0.05


# ---- CLI consistency -------------------------------------------------------------------------------
def test_set_without_equals_exits_2(capsys):
    assert main(["run", "cantilever", "--set", "n"]) == 2
    assert "--set expects NAME=VALUE (got 'n')" in capsys.readouterr().err


def test_verbose_before_or_after_the_command(capsys):
    assert main(["-v", "scenes"]) == 0
    assert main(["scenes", "-v"]) == 0
    assert main(["params", "cantilever", "--verbose"]) == 0


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("scenes", "params", "run", "export", "demo", "validate", "warmup", "sagfree"):
        assert command in out
    assert "130" in out and "3 the simulation failed" in out


def test_warmup_command(capsys):
    assert main(["warmup", "--method", "der"]) == 0
    out = capsys.readouterr().out
    assert "warmup der:" in out and "ready in" in out and "1 method(s) ready" in out
