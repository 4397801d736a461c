"""Default pictures of a scene: the centerline at a few frames, in 3D and in three projections."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def figure_module():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _set_equal_3d(ax, pts):
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    c = 0.5 * (lo + hi)
    r = 0.5 * max(float((hi - lo).max()), 1e-9)
    ax.set_xlim(c[0] - r, c[0] + r)
    ax.set_ylim(c[1] - r, c[1] + r)
    ax.set_zlim(c[2] - r, c[2] + r)


def plot_trajectory(result, out_dir, *, name: str = "frames.png", frames: int = 6, closed: bool | None = None) -> list[Path]:
    """Centerline at ``frames`` evenly spaced times, faint to solid; 3D view plus x-z and x-y."""
    plt = figure_module()
    x = np.asarray(result.trajectory["x"])
    t = np.asarray(result.trajectory["t"])
    closed = bool(result.extra.get("closed", False)) if closed is None else closed
    idx = np.unique(np.linspace(0, len(x) - 1, min(frames, len(x))).round().astype(int))
    fig = plt.figure(figsize=(12, 4))
    ax3 = fig.add_subplot(1, 3, 1, projection="3d")
    axz = fig.add_subplot(1, 3, 2)
    axy = fig.add_subplot(1, 3, 3)
    for rank, i in enumerate(idx):
        p = np.vstack([x[i], x[i][:1]]) if closed else x[i]
        alpha = 0.25 + 0.75 * (rank + 1) / len(idx)
        label = f"t = {t[i]:.3g} s"
        ax3.plot(p[:, 0], p[:, 1], p[:, 2], alpha=alpha, label=label)
        axz.plot(p[:, 0], p[:, 2], alpha=alpha)
        axy.plot(p[:, 0], p[:, 1], alpha=alpha)
    _set_equal_3d(ax3, x[idx].reshape(-1, 3))
    ax3.set_xlabel("x [m]")
    ax3.set_ylabel("y [m]")
    ax3.set_zlabel("z [m]")
    ax3.legend(fontsize=7, loc="upper left")
    for ax, (a, b) in ((axz, ("x", "z")), (axy, ("x", "y"))):
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel(f"{a} [m]")
        ax.set_ylabel(f"{b} [m]")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(out_dir) / name
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
