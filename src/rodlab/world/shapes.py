"""Rest polylines for common rod shapes: straight, helix, circle. ``n`` is always the number of
vertices (a closed circle of ``n`` vertices has ``n`` edges)."""
from __future__ import annotations

import math

import numpy as np

from ..geometry.curves import any_perpendicular
from ..model import require


def _unit3(value, name: str) -> np.ndarray:
    a = np.asarray(value, dtype=float).reshape(-1)
    require(a.shape == (3,) and bool(np.all(np.isfinite(a))) and np.linalg.norm(a) > 0,
            f"{name} must be a nonzero finite 3-vector (got {value})")
    return a / np.linalg.norm(a)


def _point3(value, name: str) -> np.ndarray:
    a = np.asarray(value, dtype=float).reshape(-1)
    require(a.shape == (3,) and bool(np.all(np.isfinite(a))), f"{name} must be a finite 3-vector (got {value})")
    return a


def straight(n: int, length: float, start=(0.0, 0.0, 0.0), direction=(1.0, 0.0, 0.0)) -> np.ndarray:
    """``n`` equally spaced vertices from ``start`` along ``direction`` over ``length`` [m]."""
    require(int(n) == n and n >= 2, f"n must be an integer >= 2 vertices (got {n})")
    require(math.isfinite(length) and length > 0, f"length must be > 0 m (got {length})")
    s = np.linspace(0.0, float(length), int(n))
    return _point3(start, "start")[None, :] + s[:, None] * _unit3(direction, "direction")[None, :]


def helix(n: int, helix_radius: float, pitch: float, turns: float, start=(0.0, 0.0, 0.0),
          axis=(0.0, 0.0, 1.0)) -> np.ndarray:
    """``n`` vertices on a right-handed helix of ``helix_radius`` [m] and ``pitch`` [m per turn]
    around ``axis`` through ``start`` (the axis point below the first vertex), ``turns`` turns,
    equally spaced in angle (hence in arc length)."""
    require(int(n) == n and n >= 3, f"n must be an integer >= 3 vertices (got {n})")
    require(math.isfinite(helix_radius) and helix_radius > 0, f"helix_radius must be > 0 m (got {helix_radius})")
    require(math.isfinite(pitch) and pitch >= 0, f"pitch must be >= 0 m (got {pitch})")
    require(math.isfinite(turns) and turns > 0, f"turns must be > 0 (got {turns})")
    a = _unit3(axis, "axis")
    u = any_perpendicular(a)
    v = np.cross(a, u)
    phi = np.linspace(0.0, 2.0 * math.pi * float(turns), int(n))
    pts = (helix_radius * (np.cos(phi)[:, None] * u + np.sin(phi)[:, None] * v)
           + (pitch * phi / (2.0 * math.pi))[:, None] * a)
    return _point3(start, "start")[None, :] + pts


def circle(n: int, length: float, center=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)) -> np.ndarray:
    """``n`` vertices of a closed regular polygon of perimeter ``length`` [m] (``n`` equal edges)
    around ``center`` in the plane normal to ``normal``. Use with ``closed=True``."""
    require(int(n) == n and n >= 3, f"n must be an integer >= 3 vertices (got {n})")
    require(math.isfinite(length) and length > 0, f"length must be > 0 m (got {length})")
    a = _unit3(normal, "normal")
    u = any_perpendicular(a)
    v = np.cross(a, u)
    radius = float(length) / (2.0 * int(n) * math.sin(math.pi / int(n)))
    phi = 2.0 * math.pi * np.arange(int(n)) / int(n)
    return _point3(center, "center")[None, :] + radius * (np.cos(phi)[:, None] * u + np.sin(phi)[:, None] * v)
