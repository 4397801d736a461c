"""Pictures of a multi-rod world: the main figure, the final frame drawn as tubes by
:mod:`rodlab.render` beside the run's time series, and the side views, the final frame in 3D and in
three projections, each rod its own polyline (closed rods drawn closed), the initial frame faint
behind it, bodies as dots."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .plots import _set_equal_3d, figure_module


def _rod_polylines(x: np.ndarray, rod_offsets, rod_closed) -> list[np.ndarray]:
    lines = []
    for r in range(len(rod_offsets) - 1):
        p = x[int(rod_offsets[r]):int(rod_offsets[r + 1])]
        lines.append(np.vstack([p, p[:1]]) if rod_closed is not None and rod_closed[r] else p)
    return lines


def plot_world_frame(x, rod_offsets, path, *, rod_closed=None, x_initial=None, body_x=None, title: str = "") -> Path:
    """Draw one frame ``x`` (N, 3) [m] of a world whose rod ``r`` owns vertices
    ``rod_offsets[r]:rod_offsets[r + 1]``: 3D view plus x-z, y-z and x-y projections, one colour
    per rod (cycled), ``x_initial`` (N, 3) in light grey, ``body_x`` (B, 3) as black dots.
    Writes ``path`` (PNG) and returns it."""
    plt = figure_module()
    x = np.asarray(x, dtype=float)
    offsets = np.asarray(rod_offsets, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] != 3 or offsets[-1] != x.shape[0]:
        raise ValueError(f"x must be (N, 3) with N = rod_offsets[-1] (got x {x.shape}, rod_offsets[-1] = {offsets[-1]})")
    lines = _rod_polylines(x, offsets, rod_closed)
    first = _rod_polylines(np.asarray(x_initial, dtype=float), offsets, rod_closed) if x_initial is not None else []
    bodies = np.asarray(body_x, dtype=float).reshape(-1, 3) if body_x is not None else np.zeros((0, 3))
    colors = plt.get_cmap("tab10").colors
    many = len(lines) > 12
    fig = plt.figure(figsize=(11, 8.5))
    ax3 = fig.add_subplot(2, 2, 1, projection="3d")
    views = [(fig.add_subplot(2, 2, k), a, b) for k, (a, b) in ((2, (0, 2)), (3, (1, 2)), (4, (0, 1)))]
    lw = 0.8 if many else 1.6
    for p in first:
        ax3.plot(p[:, 0], p[:, 1], p[:, 2], color="0.8", lw=0.8)
        for ax, a, b in views:
            ax.plot(p[:, a], p[:, b], color="0.8", lw=0.8)
    for r, p in enumerate(lines):
        c = colors[r % len(colors)]
        label = None if many else f"rod {r}"
        ax3.plot(p[:, 0], p[:, 1], p[:, 2], color=c, lw=lw, label=label)
        for ax, a, b in views:
            ax.plot(p[:, a], p[:, b], color=c, lw=lw)
    if len(bodies):
        ax3.scatter(bodies[:, 0], bodies[:, 1], bodies[:, 2], color="k", s=30)
        for ax, a, b in views:
            ax.plot(bodies[:, a], bodies[:, b], "ko", ms=5)
    everything = np.vstack([x, bodies] + ([np.asarray(x_initial, dtype=float)] if x_initial is not None else []))
    _set_equal_3d(ax3, everything)
    ax3.set_xlabel("x [m]")
    ax3.set_ylabel("y [m]")
    ax3.set_zlabel("z [m]")
    if not many and len(lines) > 1:
        ax3.legend(fontsize=7, loc="upper left")
    names = "xyz"
    for ax, a, b in views:
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel(f"{names[a]} [m]")
        ax.set_ylabel(f"{names[b]} [m]")
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_world_recording(world, recording, out_dir, *, name: str = "world.png", title: str = "", state=None,
                         view: dict | None = None) -> list[Path]:
    """Pictures of ``recording`` (:class:`rodlab.experiment.Recording`) of ``world``: ``name``,
    the main figure, the final frame as tubes (:mod:`rodlab.render`; the stripe follows the
    material director of ``state``, the final :class:`rodlab.world.State`, when given) beside the
    run's time series (probes, energies, tip); and ``*_views.png``, the centreline over its
    first frame in 3D and three side views (:func:`plot_world_frame`). Returns the written paths."""
    from ..render import RenderScene, render_frame
    from ..render.figure import scene_figure, series_from_run

    x = np.asarray(recording.x)
    t = float(recording.t[-1])
    body = recording.probes.get("body_x")
    label = f"{title}, t = {t:.4g} s" if title else f"t = {t:.4g} s"
    scene = RenderScene.from_world(world)
    m1 = None
    if state is not None and np.allclose(state.vertex_x, x[-1], rtol=0, atol=1e-12):
        m1, _ = state.material_frames()
    body_q = recording.probes.get("body_q")
    bx = state.body_x if state is not None and world.n_bodies else (None if body is None else body[-1])
    bq = state.body_q if state is not None and world.n_bodies else (None if body_q is None else body_q[-1])
    image, info = render_frame(scene, x[-1], edge_m1=m1, body_x=bx, body_q=bq, view=view, width=960, height=720)
    series = series_from_run(recording.t, recording.probes, x=x, world=world)
    main = scene_figure(image, Path(out_dir) / name, series=series, title=label, caption=info.caption())
    views = Path(out_dir) / (Path(name).stem + "_views.png")
    path = plot_world_frame(x[-1], world.rod_vertex_start, views, rod_closed=world.rod_closed,
                            x_initial=x[0] if len(x) > 1 else None, body_x=None if body is None else body[-1], title=label)
    return [main, path]


def animate_world_recording(world, recording, out_dir, fmt: str = "mp4", *, title: str = "", view: dict | None = None) -> Path:
    """Write ``out_dir/animation.FMT`` (MP4 or GIF): one tube picture per frame of ``recording``
    (:func:`rodlab.render.animate.write_animation`), bodies where the probes have ``body_x``."""
    from ..render import RenderScene
    from ..render.animate import write_animation

    x = np.asarray(recording.x)
    body_x, body_q = recording.probes.get("body_x"), recording.probes.get("body_q")
    ok = lambda a, k: a is not None and np.asarray(a).shape == (x.shape[0], world.n_bodies, k)
    return write_animation(Path(out_dir) / f"animation.{fmt}", RenderScene.from_world(world), x, recording.t, fmt=fmt,
                           body_x=body_x if ok(body_x, 3) else None, body_q=body_q if ok(body_q, 4) else None,
                           view=view, title=title)
