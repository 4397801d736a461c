"""The viewer's page: a run folder's frames, radii, obstacles and metrics in one self-contained HTML
file (three.js inlined, frame data as base64 float32), opened from ``file://`` or served locally.

What the page shows (docs/viewer.md): the rods as tubes of their radius (``rodlab export``'s radius
rule, :func:`rodlab.io.exports.load_run`) with a stripe along the recorded material director d1
(``edge_m1``; parallel-transported frames for a run that records none, said in the notes), the
rigid bodies as boxes (metadata ``bodies``), the obstacles of a scene-file run (the ``[[obstacle]]``
tables of the scene file recorded in ``trajectory.npz``'s metadata; a registry scene records none
and the page says so), play/pause, a time slider, the frame index and time, and ``metrics.json``
as a table. Position data above ``max_mb`` MB is decimated: vertices first (every s-th vertex of
each rod plus its last) while even 50 frames would not fit, then frames (evenly spaced, the first
and last kept); the page states what it shows.
"""
from __future__ import annotations

import base64
import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .three import THREE_VERSION, ViewerError, _static, three_script

DEFAULT_MAX_MB = 32.0
"""default size limit [MB, 1e6 bytes] of the float32 positions a page holds"""
MIN_FRAMES = 50
"""vertices are decimated while fewer than this many frames (or all the run's) would fit"""


@dataclass
class Decimation:
    """Which frames (F',) and vertices (N',) of the run a page shows; ``rod_offsets`` (R + 1,)
    index the kept vertices."""

    frames: np.ndarray
    vertices: np.ndarray
    rod_offsets: np.ndarray
    vertex_stride: int


def decimate(n_frames: int, rod_offsets: np.ndarray, max_bytes: float) -> Decimation:
    """Pick frames and vertices so that ``F' x N' x 3`` float32 values fit in ``max_bytes``.

    Every rod keeps its first and last vertex (at least 2); frames are evenly spaced indices
    with the first and last frame kept.
    """
    if not (isinstance(max_bytes, (int, float)) and math.isfinite(max_bytes) and max_bytes > 0):
        raise ViewerError(f"max_mb must be a finite number > 0 (got {max_bytes!r})")
    offsets = np.asarray(rod_offsets, dtype=np.int64)

    def keep(stride: int) -> tuple[np.ndarray, np.ndarray]:
        idx, out = [], [0]
        for a, b in zip(offsets[:-1], offsets[1:]):
            v = np.arange(a, b, stride)
            if v[-1] != b - 1:
                v = np.append(v, b - 1)
            idx.append(v)
            out.append(out[-1] + v.size)
        return np.concatenate(idx), np.array(out, dtype=np.int64)

    stride = 1
    vertices, kept_offsets = keep(stride)
    want = min(n_frames, MIN_FRAMES)
    while vertices.size * 12 * want > max_bytes and vertices.size > 2 * (offsets.size - 1):
        stride *= 2
        vertices, kept_offsets = keep(stride)
    n_keep = int(min(n_frames, max(1, max_bytes // (vertices.size * 12))))
    if vertices.size * 12 * n_keep > max_bytes:
        raise ViewerError(f"max_mb {max_bytes / 1e6:g} is too small: one frame of the run's {offsets.size - 1} rods "
                          f"needs {vertices.size * 12 / 1e6:.3g} MB even at 2 vertices per rod")
    if n_keep >= n_frames:
        frames = np.arange(n_frames)
    elif n_keep == 1:
        frames = np.array([n_frames - 1])
    else:
        frames = np.unique(np.round(np.linspace(0, n_frames - 1, n_keep)).astype(np.int64))
    return Decimation(frames, vertices, kept_offsets, stride)


def _floats(values, n: int, what: str) -> list[float]:
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ViewerError(f"scene file {what} must be {n} finite numbers (got {values!r})")
    return a.tolist()


def obstacles_of(meta: dict) -> tuple[list[dict], str]:
    """The obstacles a run records: ``trajectory.npz``'s metadata ``obstacles`` (a named scene's
    world, :func:`rodlab.world.obstacles.obstacle_record`) or the ``[[obstacle]]`` tables of its
    scene file (the TOML text in the metadata ``scene_file``), as dicts with SI lengths; and a note
    saying where they came from or why there are none."""
    text = meta.get("scene_file")
    source = "the recorded scene file"
    if isinstance(meta.get("obstacles"), list):  # a named scene's world (rodlab.io.outputs)
        tables, source = meta["obstacles"], "the scene's world"
    elif not isinstance(text, str):
        return [], "obstacles: none drawn (the run folder does not record obstacles)"
    else:
        try:
            tables = tomllib.loads(text).get("obstacle", [])
        except tomllib.TOMLDecodeError as exc:
            return [], f"obstacles: none drawn (the recorded scene file does not parse: {exc})"
    out = []
    for i, o in enumerate(tables):
        kind = o.get("kind")
        what = f"obstacle[{i}]"
        if kind == "plane":
            out.append({"kind": kind, "point": _floats(o.get("point", [0, 0, 0]), 3, what + ".point"),
                        "normal": _floats(o["normal"], 3, what + ".normal")})
        elif kind == "sphere":
            out.append({"kind": kind, "center": _floats(o["center"], 3, what + ".center"),
                        "radius": _floats([o["radius"]], 1, what + ".radius")[0]})
        elif kind == "capsule":
            out.append({"kind": kind, "a": _floats(o["a"], 3, what + ".a"), "b": _floats(o["b"], 3, what + ".b"),
                        "radius": _floats([o["radius"]], 1, what + ".radius")[0]})
        elif kind == "cylinder":
            out.append({"kind": kind, "point": _floats(o["point"], 3, what + ".point"),
                        "axis": _floats(o["axis"], 3, what + ".axis"), "radius": _floats([o["radius"]], 1, what + ".radius")[0]})
        elif kind == "mesh":
            v = np.asarray(o["vertices"], dtype=np.float64)
            tri = np.asarray(o["triangles"], dtype=np.int64)
            if v.ndim != 2 or v.shape[1] != 3 or tri.ndim != 2 or tri.shape[1] != 3 or tri.min() < 0 or tri.max() >= len(v):
                raise ViewerError(f"scene file {what}: vertices (V, 3) and triangles (T, 3) indexing them expected")
            out.append({"kind": kind, "vertices": v.reshape(-1).tolist(), "triangles": tri.reshape(-1).tolist()})
        else:
            raise ViewerError(f"scene file {what}.kind must be plane, sphere, capsule, cylinder or mesh (got {kind!r})")
    note = f"obstacles: {len(out)} from {source}" if out else f"obstacles: none ({source} has none)"
    return out, note


def _finite(value):
    """``value`` (parsed JSON) with non-finite floats replaced by None (strict JSON for the page)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


def vertex_m1(edge_m1: np.ndarray, rod_offsets: np.ndarray, rod_closed) -> np.ndarray:
    """Per-vertex material directors (F, N, 3) from per-edge ones ``edge_m1`` (F, E, 3): vertex i
    of a rod takes its edge i (the last vertex of an open rod its last edge). The page turns each
    tube ring so that its stripe (ring point 0) points along this director projected off the
    tangent."""
    offsets = np.asarray(rod_offsets, dtype=np.int64)
    closed = np.broadcast_to(np.asarray(rod_closed, dtype=bool), (offsets.size - 1,))
    idx, e0 = [], 0
    for r in range(offsets.size - 1):
        nv = int(offsets[r + 1] - offsets[r])
        ne = nv if closed[r] else nv - 1
        idx.append(e0 + np.minimum(np.arange(nv), ne - 1))
        e0 += ne
    return np.asarray(edge_m1)[:, np.concatenate(idx)]


def _stripe(run) -> tuple[np.ndarray | None, str]:
    """The recorded ``edge_m1`` (F, E, 3) of ``run`` where it matches its frames and rods (else
    None) and the note saying what the stripe follows."""
    m1 = run.arrays.get("edge_m1")
    n_e = int(np.sum(np.where(np.asarray(run.rod_closed, dtype=bool), 0, -1) + np.diff(run.rod_offsets)))
    if m1 is not None:
        m1 = np.asarray(m1, dtype=np.float64)
        if m1.shape == (run.n_frames, n_e, 3) and np.all(np.isfinite(m1)):
            return m1, "stripe: d1 of the recorded material frames (edge_m1): twist shows"
    return None, ("stripe: d1 of parallel-transported frames: the run records no material frames (edge_m1), "
                  "so its twist is not shown")


def bodies_of(meta: dict, arrays: dict, n_frames: int) -> tuple:
    """The rigid bodies a run records: boxes (``trajectory.npz`` metadata ``bodies``: half sizes,
    axes, initial position and orientation, :func:`rodlab.render.scene.body_records`), placed per
    frame by the trajectory's ``body_x`` (F, B, 3) and ``body_q`` (F, B, 4) where it has them.
    Returns ``(bodies, note, body_x or None, body_q or None)``."""
    records = meta.get("bodies")
    if not isinstance(records, list) or not records:
        return [], "", None, None
    bx, bq = arrays.get("body_x"), arrays.get("body_q")
    nb = len(records)
    bx = np.asarray(bx, dtype=np.float64) if bx is not None and np.shape(bx) == (n_frames, nb, 3) else None
    bq = np.asarray(bq, dtype=np.float64) if bq is not None and np.shape(bq) == (n_frames, nb, 4) else None
    out = []
    for i, rec in enumerate(records):
        out.append({"half": _floats(rec["half"], 3, f"body[{i}].half"), "axes": _floats(rec["axes"], 9, f"body[{i}].axes"),
                    "x0": _floats(rec["position"], 3, f"body[{i}].position"),
                    "q0": _floats(rec["orientation"], 4, f"body[{i}].orientation")})
    moving = "moving with the recorded body_x" + (" and body_q" if bq is not None else " (orientation as at the start)")
    note = f"bodies: {nb} boxes of their mass and inertia, " + (moving if bx is not None else "at their initial pose "
                                                                  "(the run records no body_x)")
    return out, note, bx, bq


def page_data(run_dir, *, radius: float | None = None, max_mb: float = DEFAULT_MAX_MB) -> dict:
    """Everything the page draws, as a JSON-ready dict (see the module docstring).

    Parameters
    ----------
    run_dir : path
        A folder written by ``rodlab run --out`` (``trajectory.npz``, ``metrics.json``).
    radius : float, optional
        Tube radius [m] instead of the run's (``rodlab export --radius``).
    max_mb : float
        Size limit of the positions in the page [MB]; above it frames and vertices are decimated.
    """
    from ..io.exports import ExportError, load_run

    if isinstance(max_mb, bool) or not isinstance(max_mb, (int, float)) or not (math.isfinite(max_mb) and max_mb > 0):
        raise ViewerError(f"max_mb must be a finite number > 0 MB (got {max_mb!r})")
    try:
        run = load_run(run_dir, radius=radius)
    except ExportError as exc:
        raise ViewerError(str(exc)) from None
    run_dir = Path(run_dir)
    with np.load(run_dir / "trajectory.npz", allow_pickle=False) as npz:
        meta = json.loads(str(npz["__metadata__"])) if "__metadata__" in npz.files else {}
    metrics = {}
    if (run_dir / "metrics.json").is_file():
        metrics = _finite(json.loads((run_dir / "metrics.json").read_text()))
    obstacles, obstacle_note = obstacles_of(meta)
    m1, stripe_note = _stripe(run)
    # positions and (where recorded) directors share the size limit
    dec = decimate(run.n_frames, run.rod_offsets, max_mb * 1e6 / (2 if m1 is not None else 1))
    x = run.x[np.ix_(dec.frames, dec.vertices)]
    bodies = _bodies_data(meta, run, dec)
    lo, hi = run.x.reshape(-1, 3).min(axis=0), run.x.reshape(-1, 3).max(axis=0)
    r_max = float(run.vertex_radius.max())
    notes = [f"radius: {run.radius_source}", obstacle_note, stripe_note] + ([bodies["note"]] if bodies["note"] else [])
    if dec.frames.size < run.n_frames or dec.vertices.size < run.n_vertices:
        how = f" (every {dec.vertex_stride}th vertex of each rod and its last)" if dec.vertex_stride > 1 else ""
        notes.append(f"decimated to stay under {max_mb:g} MB of positions: showing {dec.frames.size} of {run.n_frames} "
                     f"frames and {dec.vertices.size} of {run.n_vertices} vertices{how}")
    return {
        "scene": run.scene,
        "method": meta.get("method", metrics.get("method")),
        "n_frames_run": run.n_frames,
        "n_vertices_run": run.n_vertices,
        "frame_index": dec.frames.tolist(),
        "t": run.t[dec.frames].tolist(),
        "rod_offsets": dec.rod_offsets.tolist(),
        "rod_closed": [bool(c) for c in run.rod_closed],
        "radius_b64": _b64(run.vertex_radius[dec.vertices]),
        "x_b64": _b64(x),
        "stripe": "material" if m1 is not None else "transported",
        "m1_b64": _b64(vertex_m1(m1, run.rod_offsets, run.rod_closed)[np.ix_(dec.frames, dec.vertices)])
        if m1 is not None else None,
        "bodies": bodies["bodies"],
        "body_x_b64": bodies["x"],
        "body_q_b64": bodies["q"],
        "bbox": [(lo - r_max).tolist(), (hi + r_max).tolist()],
        "obstacles": obstacles,
        "metrics": metrics,
        "notes": notes,
        "max_mb": max_mb,
        "three_version": THREE_VERSION,
    }


def _bodies_data(meta: dict, run, dec: Decimation) -> dict:
    found = bodies_of(meta, run.arrays, run.n_frames)
    if not found[0]:
        return {"bodies": [], "x": None, "q": None, "note": ""}
    bodies, note, bx, bq = found
    return {"bodies": bodies, "x": None if bx is None else _b64(bx[dec.frames]),
            "q": None if bq is None else _b64(bq[dec.frames]), "note": note}


def _json_for_script(data: dict) -> str:
    text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_html(data: dict) -> str:
    """The self-contained HTML page (str) for ``data`` from :func:`page_data`."""
    title = f"rodlab view: {data['scene']}".replace("&", "&amp;").replace("<", "&lt;")
    parts = {"TITLE": title, "STYLE": _static("viewer.css"), "DATA": _json_for_script(data),
             "THREE": three_script(), "APP": _static("viewer.js")}
    return re.sub(r"\{\{(TITLE|STYLE|DATA|THREE|APP)\}\}", lambda m: parts[m.group(1)], _static("page.html"))


def write_html(run_dir, out, *, radius: float | None = None, max_mb: float = DEFAULT_MAX_MB) -> Path:
    """Write the page of the run in ``run_dir`` to the file ``out`` (parents created); returns its path."""
    out = Path(out)
    if out.exists() and out.is_dir():
        raise ViewerError(f"html {out} is a folder; give a file name such as {out / 'view.html'}")
    html = page_html(page_data(run_dir, radius=radius, max_mb=max_mb))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out
