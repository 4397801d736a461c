"""The public contract: `rodlab ...` / `python -m rodlab ...`, exit status 2 on bad input."""
import json
import subprocess
import sys

import numpy as np
import pytest

import rodlab
from rodlab.cli import main


def _run(*args):
    return subprocess.run([sys.executable, "-m", "rodlab", *args], capture_output=True, text=True, timeout=600)


def test_scenes_lists_one_name_per_line(capsys):
    assert main(["scenes"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.strip().splitlines()]
    for required in ("cantilever", "helical-buckling", "michell", "uniform-twist", "twist-asymmetry", "perversion"):
        assert required in names


@pytest.mark.parametrize("args,needle", [
    (["run", "no-such-scene"], "unknown scene 'no-such-scene'"),
    (["run", "cantilever", "--set", "bogus=1"], "has no parameter 'bogus'"),
    (["run", "cantilever", "--set", "n=2"], "n=2 out of range: expected int in [4, 20000]"),
    (["run", "cantilever", "--set", "E=-5"], "E=-5.0 out of range"),
    (["run", "cantilever", "--set", "n=abc"], "expected int"),
    (["run", "cantilever", "--set", "method=nope"], "expected one of der"),
    (["run", "michell", "--set", "static=maybe"], "has no parameter 'static'"),
])
def test_bad_input_exits_2_and_names_the_parameter(args, needle, capsys):
    assert main(args) == 2
    assert needle in capsys.readouterr().err


def test_run_writes_metrics_trajectory_and_picture(tmp_path):
    out = tmp_path / "cant"
    proc = _run("run", "cantilever", "--set", "n=12", "--set", "t_end=0.2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    for key in ("tip_x", "tip_y", "tip_z", "inextensibility", "steps", "wall_s", "us_per_step"):
        assert isinstance(metrics[key], (int, float))
    with np.load(out / "trajectory.npz") as traj:
        t, x = traj["t"], traj["x"]
    assert x.ndim == 3 and x.shape[0] == t.shape[0] and x.shape[1:] == (12, 3)
    assert (out / "frames.png").stat().st_size > 1000
    assert "tip_z" in proc.stdout and "wrote" in proc.stdout


def test_run_scene_from_python_returns_metrics_and_trajectory():
    res = rodlab.run_scene("uniform-twist", n=10)
    assert set(res.trajectory) >= {"t", "x"}
    assert res.metrics["max_twist_deviation"] < 1e-9
    with pytest.raises(rodlab.SceneError, match="turns"):
        rodlab.run_scene("uniform-twist", turns="many")
