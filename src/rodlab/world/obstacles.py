"""Static obstacles a world can hold: plane, sphere, capsule, cylinder, triangle mesh.

Each is a frozen description in world coordinates [m] with a signed distance ``distance(x)``
(positive outside) used by the contact solvers and by tests. Friction coefficients live with
the contact model (issue "Contact and friction"), not here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..model import require


def _vec3(value, name: str) -> np.ndarray:
    a = np.array(value, dtype=float).reshape(-1)
    require(a.shape == (3,) and bool(np.all(np.isfinite(a))), f"{name} must be a finite 3-vector (got {value})")
    a.setflags(write=False)
    return a


def _unit(value, name: str) -> np.ndarray:
    a = np.array(_vec3(value, name))
    n = float(np.linalg.norm(a))
    require(n > 0, f"{name} must be nonzero")
    a /= n
    a.setflags(write=False)
    return a


def _positive(value, name: str) -> float:
    v = float(value)
    require(math.isfinite(v) and v > 0, f"{name} must be > 0 m (got {value})")
    return v


@dataclass(frozen=True, eq=False)
class Plane:
    """Half-space ``n . (x - point) >= 0`` is free; ``normal`` points out of the solid."""

    point: np.ndarray
    normal: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "point", _vec3(self.point, "plane point"))
        object.__setattr__(self, "normal", _unit(self.normal, "plane normal"))

    def distance(self, x) -> np.ndarray:
        return (np.asarray(x, dtype=float) - self.point) @ self.normal


@dataclass(frozen=True, eq=False)
class Sphere:
    center: np.ndarray
    radius: float

    def __post_init__(self):
        object.__setattr__(self, "center", _vec3(self.center, "sphere center"))
        object.__setattr__(self, "radius", _positive(self.radius, "sphere radius"))

    def distance(self, x) -> np.ndarray:
        return np.linalg.norm(np.asarray(x, dtype=float) - self.center, axis=-1) - self.radius


@dataclass(frozen=True, eq=False)
class Capsule:
    """Points within ``radius`` of the segment ``a``-``b``."""

    a: np.ndarray
    b: np.ndarray
    radius: float

    def __post_init__(self):
        object.__setattr__(self, "a", _vec3(self.a, "capsule a"))
        object.__setattr__(self, "b", _vec3(self.b, "capsule b"))
        require(float(np.linalg.norm(self.b - self.a)) > 0, "capsule a and b must differ")
        object.__setattr__(self, "radius", _positive(self.radius, "capsule radius"))

    def distance(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        ab = self.b - self.a
        s = np.clip(((x - self.a) @ ab) / float(ab @ ab), 0.0, 1.0)
        closest = self.a + s[..., None] * ab
        return np.linalg.norm(x - closest, axis=-1) - self.radius


@dataclass(frozen=True, eq=False)
class Cylinder:
    """An infinite circular cylinder of ``radius`` about the line through ``point`` along ``axis``."""

    point: np.ndarray
    axis: np.ndarray
    radius: float

    def __post_init__(self):
        object.__setattr__(self, "point", _vec3(self.point, "cylinder point"))
        object.__setattr__(self, "axis", _unit(self.axis, "cylinder axis"))
        object.__setattr__(self, "radius", _positive(self.radius, "cylinder radius"))

    def distance(self, x) -> np.ndarray:
        d = np.asarray(x, dtype=float) - self.point
        radial = d - (d @ self.axis)[..., None] * self.axis
        return np.linalg.norm(radial, axis=-1) - self.radius


@dataclass(frozen=True, eq=False)
class TriangleMesh:
    """A triangle mesh: ``vertices`` (V, 3) [m], ``triangles`` (T, 3) vertex indices. Its
    ``distance`` is unsigned (a mesh need not be closed)."""

    vertices: np.ndarray
    triangles: np.ndarray

    def __post_init__(self):
        v = np.array(self.vertices, dtype=float)
        f = np.array(self.triangles)
        require(v.ndim == 2 and v.shape[1] == 3 and v.shape[0] >= 3 and bool(np.all(np.isfinite(v))),
                f"mesh vertices must be a finite (V, 3) array with V >= 3 (got shape {v.shape})")
        require(f.ndim == 2 and f.shape[1] == 3 and f.shape[0] >= 1 and np.issubdtype(f.dtype, np.integer),
                f"mesh triangles must be an integer (T, 3) array (got shape {f.shape}, dtype {f.dtype})")
        require(bool(np.all((f >= 0) & (f < v.shape[0]))), f"mesh triangle indices must be in [0, {v.shape[0] - 1}]")
        area2 = np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
        require(bool(np.all(area2 > 0)), "mesh has a degenerate (zero-area) triangle")
        f = f.astype(np.int64)
        for name, a in (("vertices", v), ("triangles", f)):
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    def distance(self, x) -> np.ndarray:
        """Unsigned distance of each point to the nearest triangle (brute force; the contact
        code uses a BVH)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        best = np.full(x.shape[0], np.inf)
        for tri in self.triangles:
            best = np.minimum(best, _point_triangle_distance(x, *self.vertices[tri]))
        return best


def _point_triangle_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Distance of points ``p`` (K, 3) to triangle ``abc``: the nearest of the face (when the
    projection falls inside) and the three edges."""
    n = np.cross(b - a, c - a)
    n = n / np.linalg.norm(n)
    d_plane = (p - a) @ n
    q = p - d_plane[:, None] * n
    inside = np.ones(p.shape[0], dtype=bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(v - u, q - u) @ n) >= 0
    best = np.where(inside, np.abs(d_plane), np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        uv = v - u
        s = np.clip(((p - u) @ uv) / float(uv @ uv), 0.0, 1.0)
        best = np.minimum(best, np.linalg.norm(p - (u + s[:, None] * uv), axis=1))
    return best


Obstacle = Plane | Sphere | Capsule | Cylinder | TriangleMesh
OBSTACLE_KINDS = {"plane": Plane, "sphere": Sphere, "capsule": Capsule, "cylinder": Cylinder, "mesh": TriangleMesh}


def obstacle_record(obstacle) -> dict:
    """A JSON-ready description of ``obstacle``: ``kind`` (plane, sphere, capsule, cylinder, mesh:
    the scene-file kinds) and its fields in SI units, as a scene file's ``[[obstacle]]`` table."""
    if isinstance(obstacle, Plane):
        return {"kind": "plane", "point": obstacle.point.tolist(), "normal": obstacle.normal.tolist()}
    if isinstance(obstacle, Sphere):
        return {"kind": "sphere", "center": obstacle.center.tolist(), "radius": float(obstacle.radius)}
    if isinstance(obstacle, Capsule):
        return {"kind": "capsule", "a": obstacle.a.tolist(), "b": obstacle.b.tolist(), "radius": float(obstacle.radius)}
    if isinstance(obstacle, Cylinder):
        return {"kind": "cylinder", "point": obstacle.point.tolist(), "axis": obstacle.axis.tolist(),
                "radius": float(obstacle.radius)}
    if isinstance(obstacle, TriangleMesh):
        return {"kind": "mesh", "vertices": np.asarray(obstacle.vertices).tolist(),
                "triangles": np.asarray(obstacle.triangles).tolist()}
    raise TypeError(f"not an obstacle: {type(obstacle).__name__}")

