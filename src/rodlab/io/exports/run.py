"""A finished run read back for export: frames, rods, radii and per-vertex fields.

:func:`load_run` reads a run folder written by ``rodlab run`` (``trajectory.npz``: ``t`` (F,) [s],
``x`` (F, N, 3) [m], optional ``rod_offsets`` (R + 1,), ``rod_closed`` (R,) and other arrays; and
``metrics.json`` when present) into a :class:`RunData`, whose methods give each frame's per-vertex
fields in SI units:

* ``velocity`` [m/s]: the stored ``v`` / ``vertex_v`` (F, N, 3) where the trajectory has one, else
  finite differences of ``x`` over ``t`` (second order on non-uniform frames, first order at the
  two ends; omitted when there is one frame or ``t`` is not strictly increasing).
* ``radius`` [m]: per vertex, from (in this order) the ``radius`` argument, the trajectory's
  ``vertex_radius`` (N,) or ``rod_radius`` (R,), the run's parameter ``radius``, the scene file's
  ``rod.radius``, ``metrics.json``'s ``radius``, else :data:`DEFAULT_RADIUS`.
* ``curvature`` [1/m]: ``|kb_i| / l_i`` with ``kb_i = 2 t_{i-1} x t_i / (1 + t_{i-1} . t_i)`` the
  discrete curvature binormal (Bergou et al. 2008, "Discrete Elastic Rods", Eq. 1) and
  ``l_i = (|e_{i-1}| + |e_i|) / 2`` the frame's Voronoi length; 0 at the two ends of an open rod.
* ``twist`` [rad/m]: twist density per vertex where the trajectory says it: ``twist_density``
  (F, J) per joint, ``twist`` (J,) or (F, J) integrated per joint [rad] (divided by the Voronoi
  length), the recorded material directors ``edge_m1`` (F, E, 3) (every run of
  :func:`rodlab.experiment.record` keeps them), or edge angles ``theta`` with their reference
  directors ``ref_d1`` ((E,) and (E, 3), or with a leading frame axis): the signed angle between
  the parallel-transported material director ``m1`` of one edge and that of the next. A joint's value sits on the vertex between its two
  edges; the ends of an open rod get 0. Arrays without a frame axis belong to the last frame.
* ``contact_force`` [N]: the trajectory's ``contact_force`` (F, N, 3) where there is one.

What is left out, and why, is listed in :attr:`RunData.notes`.
"""
from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...model import ModelError

DEFAULT_RADIUS = 1e-3
"""radius [m] drawn when neither the caller nor the run says one (1 mm)"""


class ExportError(ModelError):
    """Bad input to an export (missing or malformed run folder, unknown format, frame out of
    range, a missing optional package); the message names the parameter and what is allowed."""


@dataclass
class RunData:
    """The frames of a run: ``t`` (F,) [s], ``x`` (F, N, 3) [m], rods as ``rod_offsets`` (R + 1,)
    with ``rod_closed`` (R,), per-vertex ``vertex_radius`` (N,) [m], the other trajectory
    ``arrays``, the ``scene`` name and ``notes`` on what could not be exported."""

    t: np.ndarray
    x: np.ndarray
    rod_offsets: np.ndarray
    rod_closed: np.ndarray
    vertex_radius: np.ndarray
    radius_source: str
    scene: str = "rods"
    arrays: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def n_frames(self) -> int:
        return int(self.x.shape[0])

    @property
    def n_vertices(self) -> int:
        return int(self.x.shape[1])

    @property
    def n_rods(self) -> int:
        return int(self.rod_offsets.shape[0] - 1)

    @property
    def rod_vertex_count(self) -> np.ndarray:
        return np.diff(self.rod_offsets)

    def frame_index(self, frame) -> int:
        """``frame`` as an index in [0, F); negative counts from the end; None is the last frame."""
        f = self.n_frames
        if frame is None:
            return f - 1
        if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)):
            raise ExportError(f"frame must be an integer in [{-f}, {f - 1}] (got {frame!r})")
        if not -f <= int(frame) < f:
            raise ExportError(f"frame must be in [{-f}, {f - 1}]: the run has {f} frames (got {frame})")
        return int(frame) % f

    def rod_points(self, k: int) -> list[np.ndarray]:
        """Frame ``k``'s vertices split per rod (views)."""
        return [self.x[k, a:b] for a, b in zip(self.rod_offsets[:-1], self.rod_offsets[1:])]

    # ---- per-vertex fields -------------------------------------------------------------------
    def velocity(self, k: int) -> np.ndarray | None:
        """Vertex velocities of frame ``k`` (N, 3) [m/s], or None where they cannot be known."""
        v = self._per_frame(("v", "vertex_v"), (self.n_vertices, 3))
        if v is not None:
            return v[k]
        t, x, f = self.t, self.x, self.n_frames
        if f < 2 or not np.all(np.diff(t) > 0):
            return None
        if k == 0:
            return (x[1] - x[0]) / (t[1] - t[0])
        if k == f - 1:
            return (x[-1] - x[-2]) / (t[-1] - t[-2])
        h1, h2 = t[k] - t[k - 1], t[k + 1] - t[k]
        return (h1 * h1 * x[k + 1] - h2 * h2 * x[k - 1] + (h2 * h2 - h1 * h1) * x[k]) / (h1 * h2 * (h1 + h2))

    def velocity_note(self) -> str | None:
        if self._per_frame(("v", "vertex_v"), (self.n_vertices, 3)) is not None:
            return None
        if self.n_frames < 2:
            return "velocity omitted: one frame and no stored velocity"
        if not np.all(np.diff(self.t) > 0):
            return "velocity omitted: t is not strictly increasing and no velocity is stored"
        return None

    def curvature(self, k: int) -> np.ndarray:
        """Discrete curvature per vertex of frame ``k`` (N,) [1/m] (see the module docstring)."""
        x = self.x[k]
        out = np.zeros(self.n_vertices)
        e = x[1:] - x[:-1]                      # edges, including the bogus ones between rods
        starts, ends = self.rod_offsets[:-1], self.rod_offsets[1:]
        inner = np.ones(self.n_vertices, dtype=bool)  # vertices with an edge on each side in their rod
        inner[starts] = False
        inner[ends - 1] = False
        idx = np.flatnonzero(inner)
        if idx.size:
            self._joint_curvature(k, e[idx - 1], e[idx], idx, out)
        for r in np.flatnonzero(self.rod_closed):  # a closed rod's joint at its first vertex
            a, b = int(starts[r]), int(ends[r])
            ea, eb = x[a] - x[b - 1], x[a + 1] - x[a]
            self._joint_curvature(k, ea[None], eb[None], np.array([a]), out)
            if b - a >= 3:
                # its last vertex joins edge (b-2 -> b-1) to the closing edge (b-1 -> a)
                self._joint_curvature(k, (x[b - 1] - x[b - 2])[None], ea[None], np.array([b - 1]), out)
        return out

    def _joint_curvature(self, k, ea, eb, idx, out) -> None:
        la, lb = np.linalg.norm(ea, axis=1), np.linalg.norm(eb, axis=1)
        if np.any(la == 0) or np.any(lb == 0):
            j = int(idx[np.flatnonzero((la == 0) | (lb == 0))[0]])
            raise ExportError(f"frame {k}: vertex {j} has a zero-length edge: curvature undefined")
        ta, tb = ea / la[:, None], eb / lb[:, None]
        denom = 1.0 + np.einsum("ij,ij->i", ta, tb)
        if np.any(denom <= 1e-12):
            j = int(idx[np.flatnonzero(denom <= 1e-12)[0]])
            raise ExportError(f"frame {k}: the edges at vertex {j} fold back on each other: curvature undefined")
        kb = 2.0 * np.cross(ta, tb) / denom[:, None]
        out[idx] = np.linalg.norm(kb, axis=1) / (0.5 * (la + lb))

    def twist(self, k: int) -> np.ndarray | None:
        """Twist density per vertex of frame ``k`` (N,) [rad/m], or None where the run has none."""
        counts, closed = self.rod_vertex_count, self.rod_closed.astype(np.int64)
        nj, ne = int(np.sum(counts - 2 + 2 * closed)), int(np.sum(counts - 1 + closed))
        dens = self._frame_of(("twist_density",), (nj,), k)
        if dens is not None:
            return self._joints_to_vertices(dens)
        integrated = self._frame_of(("twist",), (nj,), k)
        if integrated is None:
            m1 = self._frame_of(("edge_m1",), (ne, 3), k)
            if m1 is None:
                theta = self._frame_of(("theta", "edge_theta"), (ne,), k)
                d1 = self._frame_of(("ref_d1", "edge_ref_d1"), (ne, 3), k)
                if theta is None or d1 is None:
                    return None
                m1 = self._material_d1(k, theta, d1)
            integrated = self._twist_from_m1(k, np.asarray(m1, dtype=np.float64))
        return self._joints_to_vertices(integrated) / self._voronoi(k)

    def twist_note(self) -> str | None:
        last = self.n_frames - 1
        if self.twist(last) is not None:
            if last > 0 and self.twist(0) is None:
                return "twist written for the last frame only (the trajectory keeps it for that frame only)"
            return None
        keys = set(self.arrays)
        if keys & {"theta", "edge_theta"}:
            return "twist omitted: edge angles theta without their reference directors ref_d1 do not define it"
        return "twist omitted: the trajectory has no twist, twist_density, edge_m1 or theta"

    def contact_force(self, k: int) -> np.ndarray | None:
        f = self._per_frame(("contact_force",), (self.n_vertices, 3))
        return None if f is None else f[k]

    def point_fields(self, k: int) -> dict:
        """Frame ``k``'s per-vertex fields, name -> (N,) or (N, 3) float64, in a fixed order."""
        out = {}
        v = self.velocity(k)
        if v is not None:
            out["velocity"] = v
        out["radius"] = self.vertex_radius
        out["curvature"] = self.curvature(k)
        tw = self.twist(k)
        if tw is not None:
            out["twist"] = tw
        cf = self.contact_force(k)
        if cf is not None:
            out["contact_force"] = cf
        for name, value in out.items():
            if not np.all(np.isfinite(value)):
                raise ExportError(f"frame {k}: field {name} has non-finite values")
        return out

    # ---- helpers -----------------------------------------------------------------------------
    def _per_frame(self, names, shape):
        for n in names:
            a = self.arrays.get(n)
            if a is not None and a.shape == (self.n_frames, *shape):
                return np.asarray(a, dtype=np.float64)
        return None

    def _frame_of(self, names, shape, k):
        """Frame ``k`` of an array stored per frame (F, *shape), or the array itself (*shape) when
        it is stored for the last frame only."""
        for n in names:
            a = self.arrays.get(n)
            if a is None:
                continue
            if a.shape == (self.n_frames, *shape):
                return np.asarray(a[k], dtype=np.float64)
            if a.shape == tuple(shape) and k == self.n_frames - 1:
                return np.asarray(a, dtype=np.float64)
        return None

    def _joint_vertex(self) -> np.ndarray:
        """The vertex of each joint (J,): joint j of a rod joins its edges j and j + 1."""
        out = []
        for r, (a, n) in enumerate(zip(self.rod_offsets[:-1], self.rod_vertex_count)):
            nj = n if self.rod_closed[r] else n - 2
            out.append(a + (np.arange(nj) + 1) % n)
        return np.concatenate(out).astype(np.intp)

    def _joints_to_vertices(self, joint_values) -> np.ndarray:
        out = np.zeros(self.n_vertices)
        out[self._joint_vertex()] = joint_values
        return out

    def _voronoi(self, k) -> np.ndarray:
        """Voronoi length per vertex of frame ``k`` [m] (1 at open ends, where the twist is 0)."""
        out = np.ones(self.n_vertices)
        x = self.x[k]
        for r, (a, b) in enumerate(zip(self.rod_offsets[:-1], self.rod_offsets[1:])):
            p = x[a:b]
            if self.rod_closed[r]:
                l = np.linalg.norm(np.roll(p, -1, axis=0) - p, axis=1)   # edge i: vertex i -> i + 1
                out[a:b] = 0.5 * (l + np.roll(l, 1))
            else:
                l = np.linalg.norm(p[1:] - p[:-1], axis=1)
                out[a + 1:b - 1] = 0.5 * (l[:-1] + l[1:])
        return out

    def _tangents(self, k: int) -> list[np.ndarray]:
        """Unit edge tangents of frame ``k``, one (E_r, 3) array per rod."""
        out, x = [], self.x[k]
        for r, (a, b) in enumerate(zip(self.rod_offsets[:-1], self.rod_offsets[1:])):
            p = x[a:b]
            e = (np.roll(p, -1, axis=0) - p) if self.rod_closed[r] else (p[1:] - p[:-1])
            out.append(e / np.linalg.norm(e, axis=1)[:, None])
        return out

    def _material_d1(self, k, theta, ref_d1) -> np.ndarray:
        """Material directors m1 (E, 3) of frame ``k`` from edge angles and reference directors:
        ``m1 = cos(theta) d1 + sin(theta) t x d1``."""
        t = np.concatenate(self._tangents(k))
        d1 = ref_d1 - np.einsum("ij,ij->i", ref_d1, t)[:, None] * t   # keep d1 normal to its edge
        d1 /= np.linalg.norm(d1, axis=1)[:, None]
        return np.cos(theta)[:, None] * d1 + np.sin(theta)[:, None] * np.cross(t, d1)

    def _twist_from_m1(self, k, m1) -> np.ndarray:
        """Integrated twist per joint [rad] from the material directors ``m1`` (E, 3) of frame ``k``
        (the recording's ``edge_m1``, or built from ``theta`` and ``ref_d1``): the signed angle,
        about the next tangent, from the parallel-transported m1 of edge j to that of edge j + 1
        (independent of any reference frame's own twist)."""
        out, e0 = [], 0
        for r, t in enumerate(self._tangents(k)):
            ne = t.shape[0]
            m = m1[e0:e0 + ne]
            m = m - np.einsum("ij,ij->i", m, t)[:, None] * t   # m1 normal to its edge (float32 recordings)
            m /= np.linalg.norm(m, axis=1)[:, None]
            nxt = np.arange(ne if self.rod_closed[r] else ne - 1)
            ta, tb, ma, mb = t[nxt], t[(nxt + 1) % ne], m[nxt], m[(nxt + 1) % ne]
            c = np.einsum("ij,ij->i", ta, tb)
            bvec = np.cross(ta, tb)
            moved = ma * c[:, None] + np.cross(bvec, ma) + bvec * (np.einsum("ij,ij->i", bvec, ma) / (1.0 + c))[:, None]
            out.append(np.arctan2(np.einsum("ij,ij->i", np.cross(moved, mb), tb), np.einsum("ij,ij->i", moved, mb)))
            e0 += ne
        return np.concatenate(out)


def _scene_name(meta: dict, metrics: dict) -> str:
    name = str(metrics.get("scene") or meta.get("scene") or "rods")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "rods"


def _radius(arrays, meta, metrics, n_rods, counts, radius) -> tuple[np.ndarray, str]:
    n = int(counts.sum())
    if radius is not None:
        if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not (math.isfinite(radius) and radius > 0):
            raise ExportError(f"radius must be a finite number > 0 m (got {radius!r})")
        return np.full(n, float(radius)), "given"
    a = arrays.get("vertex_radius")
    if a is not None and a.shape == (n,):
        return np.asarray(a, dtype=np.float64), "trajectory vertex_radius"
    a = arrays.get("rod_radius")
    if a is not None and a.shape == (n_rods,):
        return np.repeat(np.asarray(a, dtype=np.float64), counts), "trajectory rod_radius"
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    if isinstance(params.get("radius"), (int, float)):
        return np.full(n, float(params["radius"])), "run parameter radius"
    if isinstance(meta.get("scene_file"), str):
        try:
            rods = tomllib.loads(meta["scene_file"]).get("rod", [])
        except tomllib.TOMLDecodeError:
            rods = []
        if len(rods) == n_rods and all(isinstance(r.get("radius"), (int, float)) for r in rods):
            return np.repeat(np.array([float(r["radius"]) for r in rods]), counts), "scene file rod.radius"
    if isinstance(metrics.get("radius"), (int, float)):
        return np.full(n, float(metrics["radius"])), "metrics radius"
    return np.full(n, DEFAULT_RADIUS), f"default {DEFAULT_RADIUS:g} m (the run does not say)"


def load_run(run_dir, *, radius: float | None = None) -> RunData:
    """Read ``run_dir/trajectory.npz`` (and ``metrics.json`` when present) into a :class:`RunData`.

    ``radius`` [m] overrides the run's radius. Raises :class:`ExportError` naming the file and
    what is wrong (missing, unreadable, wrong shapes, non-finite values, bad rod offsets).
    """
    from ...state import load_arrays

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ExportError(f"run folder {run_dir} does not exist (expected a folder written by rodlab run --out)")
    path = run_dir / "trajectory.npz"
    if not path.is_file():
        raise ExportError(f"{path} is missing: the run folder must hold the trajectory.npz that rodlab run writes")
    try:
        arrays, meta = load_arrays(path)
    except (OSError, ValueError, json.JSONDecodeError) as exc:
        raise ExportError(f"{path}: cannot read ({exc})") from None
    metrics = {}
    mpath = run_dir / "metrics.json"
    if mpath.is_file():
        try:
            metrics = json.loads(mpath.read_text())
        except (OSError, ValueError) as exc:
            raise ExportError(f"{mpath}: not valid JSON ({exc})") from None
        if not isinstance(metrics, dict):
            raise ExportError(f"{mpath}: expected a JSON object")
    if "t" not in arrays or "x" not in arrays:
        raise ExportError(f"{path}: needs arrays t (F,) and x (F, N, 3) (has {sorted(arrays)})")
    t, x = np.asarray(arrays.pop("t"), dtype=np.float64), np.asarray(arrays.pop("x"), dtype=np.float64)
    if x.ndim != 3 or x.shape[2] != 3 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ExportError(f"{path}: x must have shape (F >= 1, N >= 2, 3) (got {x.shape})")
    if t.shape != (x.shape[0],):
        raise ExportError(f"{path}: t must have shape ({x.shape[0]},), one time per frame of x (got {t.shape})")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(t))):
        raise ExportError(f"{path}: t and x must be finite")
    n = x.shape[1]
    offsets = np.asarray(arrays.pop("rod_offsets", np.array([0, n])), dtype=np.int64)
    counts = np.diff(offsets)
    if offsets.ndim != 1 or offsets.shape[0] < 2 or offsets[0] != 0 or offsets[-1] != n or np.any(counts < 2):
        raise ExportError(f"{path}: rod_offsets must rise from 0 to N = {n} by at least 2 vertices per rod (got {offsets.tolist()[:8]}...)")
    closed = np.asarray(arrays.pop("rod_closed", np.zeros(counts.shape[0], dtype=bool)), dtype=bool)
    if closed.shape != counts.shape or np.any(counts[closed] < 3):
        raise ExportError(f"{path}: rod_closed must have one flag per rod ({counts.shape[0]}), closed rods >= 3 vertices")
    vertex_radius, source = _radius(arrays, meta, metrics, counts.shape[0], counts, radius)
    if not (np.all(np.isfinite(vertex_radius)) and np.all(vertex_radius > 0)):
        raise ExportError(f"radius from {source} must be finite and > 0 m")
    run = RunData(t, x, offsets, closed, vertex_radius, source, _scene_name(meta, metrics), arrays)
    for note in (run.velocity_note(), run.twist_note()):
        if note:
            run.notes.append(note)
    if run.contact_force(0) is None:
        run.notes.append("contact_force omitted: the trajectory has none")
    if source.startswith("default"):
        run.notes.append(f"radius: {source}; pass --radius to set it")
    return run
