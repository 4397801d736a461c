"""The tube picture of a scene run (its main figure) and its animation, from what a scene returns
(:class:`rodlab.scenes.registry.SceneResult`): the world when the scene hands it over (real
radii and sections, obstacles, bodies; the final state's material frames), else the trajectory
with the radius of the scene's parameters (``radius``, ``trunk_radius``, ...)."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

RADIUS_PARAMS = ("radius", "rod_radius", "trunk_radius", "strand_radius", "a1")
"""Scene parameters read as the rod radius [m] (in this order) when a scene hands over no world."""


def _frames_of(result) -> tuple[np.ndarray, np.ndarray] | None:
    x = np.asarray(result.trajectory.get("x", np.zeros(0)))
    t = np.asarray(result.trajectory.get("t", np.zeros(0)), dtype=float).reshape(-1)
    if x.ndim != 3 or x.shape[2] != 3 or x.shape[0] < 1 or x.shape[1] < 2 or t.shape != (x.shape[0],) \
            or not np.all(np.isfinite(x)):
        return None
    return x.astype(float), t


def render_scene_of(result, params: dict | None, n_vertices: int):
    """The :class:`rodlab.render.RenderScene` of a scene result with ``n_vertices`` per frame."""
    from ..render import RenderScene

    world = getattr(result, "world", None)
    if world is not None and world.n_vertices == n_vertices:
        return RenderScene.from_world(world)
    offsets = np.asarray(result.trajectory.get("rod_offsets", [0, n_vertices]), dtype=np.int64)
    if offsets.ndim != 1 or len(offsets) < 2 or offsets[0] != 0 or offsets[-1] != n_vertices or np.any(np.diff(offsets) < 2):
        offsets = np.array([0, n_vertices])
    closed = result.trajectory.get("rod_closed", result.extra.get("closed", False))
    params = params or {}
    for name in RADIUS_PARAMS:
        value = params.get(name, result.metrics.get(name))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return RenderScene.from_arrays(offsets, float(value), rod_closed=closed, radius_note=f"radius = parameter {name}")
    x = np.asarray(result.trajectory["x"], dtype=float).reshape(-1, 3)
    guess = 0.005 * max(float(np.ptp(x, axis=0).max()), 1e-9)
    return RenderScene.from_arrays(offsets, guess, rod_closed=closed, radius_note="radius unknown: drawn at 0.5 % of the scene size")


def final_d1(result, scene) -> np.ndarray | None:
    """Material directors (E, 3) of the final frame: from ``result.state`` when the scene hands
    it over with matching positions (:meth:`rodlab.world.State.material_frames`)."""
    state = getattr(result, "state", None)
    x = np.asarray(result.trajectory["x"])
    if state is None or state.vertex_x.shape != x.shape[1:] or not np.allclose(state.vertex_x, x[-1], rtol=0, atol=1e-12):
        return None
    m1, _ = state.material_frames()
    return m1


def m1_frames(trajectory, scene, n_frames: int) -> np.ndarray | None:
    """The recorded material directors ``edge_m1`` (F, E, 3) of a trajectory (dict or npz), where
    they match the frames and the scene's edges (``rodlab.experiment.record`` keeps them); None for
    a run that has none (an older run folder): the pictures then follow transported frames."""
    if "edge_m1" in trajectory:
        m1 = trajectory["edge_m1"]
    else:  # a scene that hands its recording's frames on: the directors recorded with them
        from ..experiment import recorded_m1

        m1 = recorded_m1(trajectory["x"]) if "x" in trajectory else None
    if m1 is None:
        return None
    m1 = np.asarray(m1, dtype=float)
    n_e = int(scene.n_edges) if hasattr(scene, "n_edges") else None
    if m1.ndim != 3 or m1.shape[0] != n_frames or m1.shape[2] != 3 or (n_e is not None and m1.shape[1] != n_e) \
            or not np.all(np.isfinite(m1)):
        return None
    return m1


def _bodies(result, scene, frame: int | slice):
    """Body positions and orientations of ``frame`` where the trajectory has them."""
    if not len(scene.body_half):
        return None, None
    bx = result.trajectory.get("body_x")
    bq = result.trajectory.get("body_q")
    bx = np.asarray(bx)[frame] if bx is not None and np.asarray(bx).ndim == 3 else None
    bq = np.asarray(bq)[frame] if bq is not None and np.asarray(bq).ndim == 3 else None
    return bx, bq


def plot_tubes(result, out_dir, *, scene_name: str = "", params: dict | None = None, name: str = "scene.png",
               width: int = 960, height: int = 720, label: str | None = None) -> Path | None:
    """Write ``out_dir/name``: the final frame as tubes beside the run's time series
    (:func:`rodlab.render.figure.scene_figure`), seen from the scene's view
    (:data:`rodlab.render.views.SCENE_VIEWS`), titled ``label`` (default the scene name) and the
    time; ``None`` (and a log line) when the trajectory has no drawable frames."""
    from ..model import ModelError
    from ..render import render_frame
    from ..render.figure import scene_figure, series_from_run
    from ..render.views import view_for

    frames = _frames_of(result)
    if frames is None:
        log.info("scene %s: no (F, N, 3) frames to draw as tubes", scene_name)
        return None
    x, t = frames
    try:
        scene = render_scene_of(result, params, x.shape[1])
        body_x, body_q = _bodies(result, scene, -1)
        m1 = final_d1(result, scene)
        if m1 is not None and len(scene.body_half):  # the final state itself: bodies turned as they are
            body_x, body_q = result.state.body_x, result.state.body_q
        if m1 is None:
            recorded = m1_frames(result.trajectory, scene, x.shape[0])
            m1 = None if recorded is None else recorded[-1]
        image, info = render_frame(scene, x[-1], edge_m1=m1, body_x=body_x, body_q=body_q,
                                   view=view_for(scene_name), width=width, height=height)
    except ModelError as exc:  # a layout the renderer cannot draw: the scene's other pictures still come
        log.warning("scene %s: no tube picture: %s", scene_name, exc)
        return None
    series = series_from_run(t, result.trajectory, x=x, world=getattr(result, "world", None))
    caption = "; ".join(p for p in (info.caption(), scene.radius_note) if p)
    label = scene_name if label is None else label
    title = f"{label}: t = {t[-1]:.4g} s" if label else f"t = {t[-1]:.4g} s"
    return scene_figure(image, Path(out_dir) / name, series=series, title=title, caption=caption)


def with_tubes(painter, scene_name: str, params: dict):
    """A painter ``(result, out_dir) -> [paths]`` that writes the tube picture first (the main
    figure) and then ``painter``'s pictures (the scene's own, or the default line plots)."""

    def paint(result, out_dir):
        from .plots import plot_trajectory

        first = plot_tubes(result, out_dir, scene_name=scene_name, params=params)
        rest = list((painter or plot_trajectory)(result, out_dir))
        return ([first] if first is not None else []) + rest

    return paint


def animate_result(result, out_dir, fmt: str = "mp4", *, scene_name: str = "", params: dict | None = None) -> Path:
    """Write ``out_dir/animation.FMT`` (:func:`rodlab.render.animate.write_animation`) from a
    scene result's frames."""
    from ..model import ModelError
    from ..render.animate import write_animation
    from ..render.views import view_for

    frames = _frames_of(result)
    if frames is None:
        raise ModelError(f"scene {scene_name}: its trajectory has no (F, N, 3) frames to animate")
    x, t = frames
    scene = render_scene_of(result, params, x.shape[1])
    body_x, body_q = _bodies(result, scene, slice(None))
    if body_x is not None and body_x.shape[0] != x.shape[0]:
        body_x = body_q = None
    if body_q is not None and body_q.shape[0] != x.shape[0]:
        body_q = None
    return write_animation(Path(out_dir) / f"animation.{fmt}", scene, x, t, fmt=fmt, body_x=body_x, body_q=body_q,
                           edge_m1_frames=m1_frames(result.trajectory, scene, x.shape[0]),
                           view=view_for(scene_name), title=scene_name)


def animate_run_dir(run_dir, fmt: str = "mp4", *, radius: float | None = None, out=None) -> Path:
    """Film a run folder written earlier (``trajectory.npz``): the rods as tubes of the radius
    :func:`rodlab.io.exports.load_run` finds (``radius`` [m] overrides it, as ``rodlab export
    --radius`` does: the run's ``vertex_radius`` / ``rod_radius``, the scene's ``radius``
    parameter, ...), the stripe along the recorded material directors ``edge_m1`` (a run folder
    written before they were recorded: parallel-transported frames, said in each picture). Writes
    ``out`` (default ``RUN_DIR/animation.FMT``) and returns it."""
    from ..io.exports import load_run
    from ..render import RenderScene
    from ..render.animate import write_animation
    from ..render.views import view_for

    run = load_run(run_dir, radius=radius)
    starts = run.rod_offsets[:-1]
    scene = RenderScene.from_arrays(run.rod_offsets, run.vertex_radius[starts], rod_closed=run.rod_closed,
                                    radius_note=f"radius: {run.radius_source}")
    path = Path(out) if out is not None else Path(run_dir) / f"animation.{fmt}"
    with np.load(Path(run_dir) / "trajectory.npz", allow_pickle=False) as npz:
        m1 = m1_frames(npz, scene, run.x.shape[0])
    return write_animation(path, scene, run.x, run.t, fmt=fmt, view=view_for(run.scene), title=run.scene,
                           edge_m1_frames=m1)
