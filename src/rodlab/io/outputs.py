"""Write a scene run to a folder: metrics.json, trajectory.npz, pictures."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..state import save_arrays
from .jsonsafe import dumps


def write_scene_outputs(scene_name: str, params: dict, result, out_dir, *, plot: bool = True) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    path = out / "metrics.json"
    path.write_text(dumps({"scene": scene_name, **result.metrics}, indent=2) + "\n")
    written.append(path)
    path = out / "trajectory.npz"
    save_arrays(path, {k: np.asarray(v) for k, v in result.trajectory.items()}, {"scene": scene_name, "params": params})
    written.append(path)
    if plot:
        from ..viz.plots import plot_trajectory

        painter = result.plot or plot_trajectory
        written.extend(Path(p) for p in painter(result, out))
    return written
