"""A scene's main picture: the rendered 3D view beside small time series of the run's own
metrics (energy terms, contacts, tip position, twist), laid out with matplotlib.

:func:`series_from_run` picks the series from what a run recorded (a
:class:`rodlab.experiment.Recording`'s probes or a scene's trajectory arrays) and, with the world,
adds the gravity potential and the kinetic energy (from frame-to-frame velocities) per frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Series:
    """One small plot: ``values`` (F, k) against ``t`` (F,) [s], a label per column, a title
    (with its unit)."""

    title: str
    t: np.ndarray
    values: np.ndarray
    labels: tuple[str, ...]


SKIP = {"t", "x", "v", "vertex_v", "rod_offsets", "rod_closed", "body_x", "body_q", "theta", "ref_d1", "edge_theta",
        "edge_ref_d1", "m1", "contact_force"}
PRIORITY = ("energy", "contact", "tip", "twist", "gap", "force", "error")


def _rank(name: str) -> int:
    low = name.lower()
    for k, word in enumerate(PRIORITY):
        if word in low:
            return k
    return len(PRIORITY)


def series_from_run(t, arrays: dict, *, x=None, world=None, max_series: int = 4) -> list[Series]:
    """Up to ``max_series`` time series of a run with frame times ``t`` (F,): every numeric
    array of ``arrays`` with F rows and at most 6 columns (names with energy, contact, tip,
    twist, gap, force, error first; ``energy`` split by ``energy_columns`` when given), then,
    from positions ``x`` (F, N, 3): with ``world`` the rods' kinetic energy and the gravity
    potential [J] (:func:`_energy_series`, each where no series has it yet), and the first rod's
    tip position [m] where no series is a tip. Energies are plotted as their change from the
    first frame."""
    t = np.asarray(t, dtype=float)
    F = len(t)
    out: list[Series] = []
    cols = arrays.get("energy_columns")
    names = sorted((k for k in arrays if k not in SKIP and not k.endswith("_columns")), key=lambda k: (_rank(k), k))
    for name in names:
        a = np.asarray(arrays[name])
        if a.dtype.kind not in "fiu" or a.ndim == 0 or a.shape[0] != F or F < 2:
            continue
        a = a.reshape(F, -1).astype(float)
        if a.shape[1] > 6 or not np.all(np.isfinite(a)):
            continue
        labels = tuple(str(c) for c in cols) if name == "energy" and cols is not None and len(cols) == a.shape[1] else \
            tuple(f"{name}[{i}]" for i in range(a.shape[1])) if a.shape[1] > 1 else (name,)
        title = name.replace("_", " ")
        if "energy" in name and np.any(a[0] != 0):  # energies change by little against a large offset
            a, title = a - a[0], title + " - initial"
        out.append(Series(title, t, a, labels))
    have = " ".join(s.title for s in out)
    if x is not None and F >= 2:
        x = np.asarray(x, dtype=float)
        if world is not None and "energy" not in arrays:
            out.extend(_energy_series(world, t, x, arrays, have))
        if "tip" not in have:
            offsets = world.rod_vertex_start if world is not None else arrays.get("rod_offsets")
            tip = x[:, int(np.asarray(offsets)[1]) - 1] if offsets is not None else x[:, -1]
            out.append(Series("tip of rod 0 [m]", t, tip, ("x", "y", "z")))
    out.sort(key=lambda s: _rank(s.title))
    return out[:max_series]


def _energy_series(world, t: np.ndarray, x: np.ndarray, arrays: dict, have: str) -> list[Series]:
    """The rods' kinetic energy (velocities from second-order differences of the frames; the
    bodies' motion not included) and the gravity potential (bodies at ``arrays["body_x"]`` where
    recorded), each through its one definition in :mod:`rodlab.metrics`, where no series has it."""
    from .. import metrics
    from ..world import State

    want_kinetic = "kinetic" not in have
    want_gravity = bool(np.any(np.asarray(world.loads.gravity) != 0)) and "gravity" not in have
    if not (want_kinetic or want_gravity) or x.shape[1] != world.n_vertices:
        return []
    if np.all(np.diff(t) > 0):  # second order everywhere (exact for uniform acceleration)
        v = np.gradient(x, t, axis=0, edge_order=2 if len(t) >= 3 else 1)
    else:
        v = np.zeros_like(x)
    body_x = np.asarray(arrays.get("body_x", np.zeros((0,))))
    body_ok = body_x.shape == (len(t), world.n_bodies, 3)
    state = State.zeros_for(world)
    kinetic, gravity = np.empty(len(t)), np.empty(len(t))
    for f in range(len(t)):
        state.vertex_x[...] = x[f]
        state.vertex_v[...] = v[f]
        if body_ok:
            state.body_x[...] = body_x[f]
        kinetic[f] = metrics.kinetic_energy(world, state)
        gravity[f] = metrics.gravity_potential(world, state)
    cols, labels = [], []
    if want_kinetic:
        cols.append(kinetic)
        labels.append("kinetic, rods (frame differences)")
    if want_gravity:
        cols.append(gravity - gravity[0])
        labels.append("gravity - initial")
    return [Series("energy [J]", t, np.stack(cols, axis=1), tuple(labels))]


def scene_figure(image: np.ndarray, path, *, series: list[Series] = (), title: str = "", caption: str = "",
                 dpi: int = 100) -> Path:
    """Write ``path`` (PNG): ``image`` (H, W, 3) on the left (no axes), ``series`` as small plots
    stacked on the right, ``title`` above, ``caption`` below the image."""
    from ..viz.plots import figure_module

    plt = figure_module()
    h, w = image.shape[:2]
    img_w = 8.0
    img_h = img_w * h / w
    if series:
        fig = plt.figure(figsize=(img_w + 4.6, max(img_h + 0.8, 1.7 * len(series) + 0.8)))
        grid = fig.add_gridspec(len(series), 2, width_ratios=(img_w, 3.6), wspace=0.32, hspace=0.55,
                                left=0.01, right=0.97, top=0.92, bottom=0.09)
        ax = fig.add_subplot(grid[:, 0])
        for k, s in enumerate(series):
            sub = fig.add_subplot(grid[k, 1])
            for c in range(s.values.shape[1]):
                sub.plot(s.t, s.values[:, c], lw=1.2, label=s.labels[c] if c < len(s.labels) else None)
            sub.set_title(s.title, fontsize=8)
            sub.tick_params(labelsize=7)
            sub.grid(alpha=0.3)
            if s.values.shape[1] > 1 or (s.labels and s.labels[0].replace("_", " ") not in s.title):
                sub.legend(fontsize=6, loc="best")
            if k == len(series) - 1:
                sub.set_xlabel("t [s]", fontsize=8)
    else:
        fig = plt.figure(figsize=(img_w, img_h + 0.8))
        ax = fig.add_axes((0.0, 0.06, 1.0, 0.86))
    ax.imshow(image, interpolation="nearest")
    ax.set_axis_off()
    if caption:
        ax.text(0.5, -0.01, caption, transform=ax.transAxes, ha="center", va="top", fontsize=7, color="0.3")
    if title:
        fig.suptitle(title, fontsize=10)
    path = Path(path)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
