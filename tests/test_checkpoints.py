"""Checkpoints and resume (docs/checkpoints.md): a run interrupted after a checkpoint and resumed
equals the uninterrupted run bit for bit, per method; corrupt and foreign checkpoints are refused;
a crash between writing and renaming leaves the previous checkpoint valid."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rodlab import checkpoint as ckpt
from rodlab.experiment import record
from rodlab.scenes.cantilever_world import cantilever_world
from rodlab.solvers import make_simulator

PARAMS = dict(n=6, length=0.1, radius=0.001, E=1e7, G=1e7 / 3, rho=1000.0, g=9.81, damping=0.0)
IDENTITY = ckpt.scene_identity("test-cantilever", {"n": 6})


class _Stop(Exception):
    pass


class _StopAfter:
    """A progress that raises once ``steps`` steps are done (an interruption at a chunk boundary)."""

    def __init__(self, steps):
        self.steps = steps

    def update(self, done, total):
        if done >= self.steps:
            raise _Stop


def _run(method, out, *, nsteps=23, every_steps=5, stop_after=None, resume=False):
    sim = make_simulator(cantilever_world(PARAMS, method), method)
    state = sim.initial_state()
    probes = {"tip_z": lambda s: float(s.vertex_x[-1, 2]), "v": lambda s: s.vertex_v.copy()}
    loaded = ckpt.load(out) if resume else None
    ck = ckpt.Checkpointer(out, every_steps * sim.dt, IDENTITY, resume=loaded)
    ck.chunk_steps = 3 if loaded is None else ck.chunk_steps  # several chunks per frame and interval
    progress = _StopAfter(stop_after) if stop_after else None
    rec = record(sim, state, nsteps, frames=3, probes=probes, checkpoint=ck, progress=progress)
    return rec, state


@pytest.mark.parametrize("method", ["der", "der-implicit", "compact", "galpha"])
def test_resumed_run_is_bit_identical(method, tmp_path):
    ref, ref_state = _run(method, tmp_path / "a")
    with pytest.raises(_Stop):
        _run(method, tmp_path / "b", stop_after=12)  # stopped after the checkpoint at step 10 (mid-frame: frames at 0, 7, 14, 21, 23)
    index = json.loads((tmp_path / "b" / "checkpoint" / "checkpoint.json").read_text())
    assert index["loop"]["done"] == 10 and index["loop"]["n_frames_kept"] == 2
    rec, state = _run(method, tmp_path / "b", resume=True)
    assert rec.steps == ref.steps == 23
    assert np.array_equal(rec.t, ref.t) and np.array_equal(rec.x, ref.x)
    for k in ref.probes:
        assert np.array_equal(rec.probes[k], ref.probes[k]), k
    assert rec.newton_iters == ref.newton_iters and rec.linear_iters == ref.linear_iters
    assert state.t == ref_state.t and np.array_equal(state.vertex_v, ref_state.vertex_v)
    assert np.array_equal(state.edge_theta, ref_state.edge_theta)
    for k in ref_state.solver:
        assert np.array_equal(state.solver[k], ref_state.solver[k]), k


@pytest.fixture
def saved(tmp_path):
    with pytest.raises(_Stop):
        _run("der", tmp_path, stop_after=12)
    return tmp_path


def test_corrupt_checkpoint_refused(saved):
    index = json.loads((saved / "checkpoint" / "checkpoint.json").read_text())
    path = saved / "checkpoint" / index["files"]["state"]
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(ckpt.CheckpointError, match="checksum mismatch"):
        ckpt.load(saved)
    (saved / "checkpoint" / "checkpoint.json").write_text('{"format": "rodlab.checkpoint", ')
    with pytest.raises(ckpt.CheckpointError, match="corrupt checkpoint index"):
        ckpt.load(saved)


def test_foreign_checkpoint_refused(saved, tmp_path_factory):
    path = saved / "checkpoint" / "checkpoint.json"
    index = json.loads(path.read_text())
    path.write_text(json.dumps({**index, "format_version": 99}))
    with pytest.raises(ckpt.CheckpointError, match="format version 99"):
        ckpt.load(saved)
    other = ckpt.scene_identity("other", {})  # the index names another run than its files
    path.write_text(json.dumps({**index, "identity": other, "run_key": ckpt.run_key(other)}))
    with pytest.raises(ckpt.CheckpointError, match="foreign checkpoint"):
        ckpt.load(saved)
    path.write_text(json.dumps(index))
    with pytest.raises(ckpt.CheckpointError, match="nsteps"):  # the checkpoint of another run length
        _run("der", saved, nsteps=40, resume=True)
    with pytest.raises(ckpt.CheckpointError, match="method"):
        _run("compact", saved, resume=True)


def test_crash_before_rename_keeps_previous_checkpoint(saved, monkeypatch):
    before = (saved / "checkpoint" / "checkpoint.json").read_text()

    def fail(*args):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(ckpt.os, "replace", fail)
    with pytest.raises(OSError, match="simulated crash"):
        _run("der", saved, resume=True)
    monkeypatch.undo()
    assert (saved / "checkpoint" / "checkpoint.json").read_text() == before
    loaded = ckpt.load(saved)
    assert loaded["index"]["loop"]["done"] == 10
    assert not list((saved / "checkpoint").glob(".*tmp*"))  # no temporary file left


def test_refusals():
    with pytest.raises(ckpt.CheckpointError, match="scene sagfree-strand does not support.*optimization"):
        ckpt.check_scene("sagfree-strand")
    with pytest.raises(ckpt.CheckpointError, match="scene no-such-scene does not support"):
        ckpt.check_scene("no-such-scene")
    with pytest.raises(ckpt.CheckpointError, match="--checkpoint-every"):
        ckpt.check_interval(-1.0)


# ---- registered scenes: one recording loop each, resumed bit for bit -----------------------------
SCENES = {  # name: (parameters, checkpoint interval [s], stop once the progress reports this much done)
    "cantilever": ({"method": "der-implicit", "n": 6, "t_end": 0.1, "dt": 0.01}, 0.03, 5),
    "capstan": ({"segments": 6, "t_ramp": 0.02, "dt": 0.002}, 0.004, 5),
    "flipped-frames": ({"n": 6, "t_end": 0.05, "model": "4d"}, 3 / 240, 0.4),  # progress: runs done
    "galpha-torque": ({"n": 6, "t_end": 0.3, "frames": 4}, 0.1, 4),
    "galpha-tress": ({"n": 6, "t_end": 0.3, "fibers": 2, "extension": 0.01, "speed": 0.02, "frames": 5}, 0.1, 5),
    "galpha-tress-gravity": ({"n": 6, "t_end": 0.2, "settings": "0.3:0.7", "frames": 3}, 2 / 30, 3),
}
TIMING = ("wall_s", "us_per", "ms_per", "cpu_s", "opt_wall")


def _scene_run(name, params, out, every, *, stop_after=None, resume=False):
    from rodlab import runctl
    from rodlab.scenes.registry import get_scene, run_scene

    resolved = get_scene(name).resolve(params)
    ck = ckpt.Checkpointer(out, every, ckpt.scene_identity(name, resolved), resume=ckpt.load(out) if resume else None)
    with runctl.session(checkpoint=ck, spinner=False):
        return run_scene(name, progress=_StopAfter(stop_after) if stop_after else None, **resolved)


@pytest.mark.parametrize("name", sorted(SCENES))
def test_scene_resumed_bit_identical(name, tmp_path):
    """The scenes moved onto one recording loop (cantilever, capstan, flipped-frames, the galpha
    scenes): stopped after a checkpoint and resumed, their trajectory and physics metrics equal the
    uninterrupted run's bit for bit; the interruption itself carries the frames up to there."""
    params, every, stop = SCENES[name]
    ref = _scene_run(name, params, tmp_path / "a", every)
    with pytest.raises(_Stop) as info:
        _scene_run(name, params, tmp_path / "b", every, stop_after=stop)
    partial = info.value.recording  # the frames so far and the last good state (issue #16)
    kept = len(partial.t) - 1
    assert kept >= 1 and np.array_equal(partial.t[:kept], ref.trajectory["t"][:kept]) and partial.t[-1] > partial.t[-2]
    assert np.array_equal(partial.x[:kept], ref.trajectory["x"][:kept])
    index = json.loads((tmp_path / "b" / "checkpoint" / "checkpoint.json").read_text())
    assert 0 < index["loop"]["done"] < index["loop"]["nsteps"]
    res = _scene_run(name, params, tmp_path / "b", every, resume=True)
    assert sorted(res.trajectory) == sorted(ref.trajectory)
    for k, v in ref.trajectory.items():
        assert np.array_equal(np.asarray(res.trajectory[k]), np.asarray(v)), k
    for k, v in ref.metrics.items():
        if not any(w in k for w in TIMING):
            assert res.metrics[k] == v or (v != v and res.metrics[k] != res.metrics[k]), k


def test_scene_refusals_before_stepping(tmp_path):
    """Parameter values whose run is not one loop are refused (with the reason) before any step."""
    cases = [("cantilever", {"static": True, "n": 6}, "static=true"),
             ("flipped-frames", {"n": 6, "t_end": 0.02, "model": "2d-average"}, "two runs"),
             ("galpha-tress-gravity", {"n": 6, "t_end": 0.1}, "4 settings")]
    for name, params, why in cases:
        with pytest.raises(ckpt.CheckpointError, match=f"scene {name} does not support --checkpoint-every.*{why}"):
            _scene_run(name, params, tmp_path / name, 0.01, stop_after=1)


def test_cli_sigkill_and_resume(tmp_path):
    """``rodlab run FILE --checkpoint-every`` killed with SIGKILL, then ``rodlab resume``: the same
    trajectory and physics metrics as the uninterrupted run."""
    scene = Path(__file__).resolve().parents[1] / "examples" / "cantilever-der.toml"
    args = [str(scene), "--no-plot", "--set", "simulation.t_end=3", "--set", "rod[0].n=12", "--checkpoint-every", "0.01"]
    env = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", "/tmp/numba_ckpt")}
    cli = [sys.executable, "-m", "rodlab.cli"]
    a, b = tmp_path / "a", tmp_path / "b"
    subprocess.run([*cli, "run", *args, "--out", str(a)], check=True, env=env, capture_output=True)
    proc = subprocess.Popen([*cli, "run", *args, "--out", str(b)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    index = b / "checkpoint" / "checkpoint.json"
    deadline = time.time() + 60
    while not index.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (b / "metrics.json").exists()
    res = subprocess.run([*cli, "resume", str(b)], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    ta, tb = np.load(a / "trajectory.npz"), np.load(b / "trajectory.npz")
    assert np.array_equal(ta["t"], tb["t"]) and np.array_equal(ta["x"], tb["x"])
    ma, mb = json.loads((a / "metrics.json").read_text()), json.loads((b / "metrics.json").read_text())
    for k in ("tip_x", "tip_z", "kinetic_energy", "inextensibility", "steps", "t_end"):
        assert ma[k] == mb[k], k
    assert not (b / "checkpoint").exists()  # a finished run drops its checkpoint
    # a corrupt checkpoint: exit 2 with the reason
    (b / "checkpoint").mkdir()
    (b / "checkpoint" / "checkpoint.json").write_text("{")
    res = subprocess.run([*cli, "resume", str(b)], env=env, capture_output=True, text=True)
    assert res.returncode == 2 and "corrupt checkpoint index" in res.stderr
    res = subprocess.run([*cli, "run", "sagfree-strand", "--checkpoint-every", "0.1", "--out", str(tmp_path / "c")],
                         env=env, capture_output=True, text=True)
    assert res.returncode == 2 and "scene sagfree-strand does not support --checkpoint-every" in res.stderr
