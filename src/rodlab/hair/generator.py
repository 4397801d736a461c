"""Synthetic hairstyles: strands rooted on a scalp patch, straight, wavy or curly, so tests and demos
need no download.

Every strand is a polyline of ``n`` vertices of equal arc length; its first edge leaves the scalp
along the surface normal (that edge is the clamped root edge of the sag-free optimization), then the
strand bends towards gravity (``droop``) and carries waves (a planar sine across the strand) or curls
(a helix about the strand's direction). All lengths in metres.
"""
from __future__ import annotations

import math

import numpy as np

STYLES = ("straight", "wavy", "curly")


def strand_polyline(n: int, length: float, *, root=(0.0, 0.0, 0.0), direction=(0.0, 0.0, -1.0), style: str = "straight",
                    amplitude: float = 0.01, wavelength: float = 0.05, phase: float = 0.0, side=None) -> np.ndarray:
    """One strand (n, 3): from ``root`` along unit ``direction``, with waves/curls of ``amplitude`` [m]
    and ``wavelength`` [m] (pitch for curls), arc length ``length``, vertices at equal arc-length
    spacing (so edges are equal up to the chord/arc difference). The amplitude ramps in over the
    first two edges, so the root edge leaves along ``direction``."""
    if n < 3:
        raise ValueError(f"n must be >= 3 vertices (got {n})")
    if not (length > 0 and math.isfinite(length)):
        raise ValueError(f"length must be > 0 m (got {length})")
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)} (got {style!r})")
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    if side is None:
        trial = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        side = trial - trial.dot(d) * d
    side = np.asarray(side, dtype=float)
    side = side / np.linalg.norm(side)
    other = np.cross(d, side)
    # parameter along the axis, stretched until the curve's arc length is `length`
    m = 40 * n
    k = 2.0 * math.pi / wavelength
    axial = length
    for _ in range(8):
        s = np.linspace(0.0, axial, m)
        ramp = np.clip(s / (2.0 * length / (n - 1)), 0.0, 1.0) ** 2
        pts = np.outer(s, d)
        if style == "wavy":
            pts += np.outer(ramp * amplitude * np.sin(k * s + phase), side)
        elif style == "curly":
            pts += np.outer(ramp * amplitude * (np.cos(k * s + phase) - math.cos(phase)), side)
            pts += np.outer(ramp * amplitude * np.sin(k * s + phase), other)
        arc = np.linalg.norm(np.diff(pts, axis=0), axis=1).sum()
        if abs(arc - length) <= 1e-12 * length:
            break
        axial *= length / arc
    pts += np.asarray(root, dtype=float)
    # resample to n vertices of equal arc length, scaled so the strand length is `length`
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    cum = np.r_[0.0, np.cumsum(seg)]
    target = np.linspace(0.0, cum[-1], n)
    out = np.empty((n, 3))
    for c in range(3):
        out[:, c] = np.interp(target, cum, pts[:, c])
    return out


def synthetic_hairstyle(n_strands: int = 50, n_vertices: int = 30, *, length: float = 0.25, style: str = "wavy",
                        scalp_radius: float = 0.1, patch_angle: float = 1.0, seed: int = 0,
                        amplitude: float = 0.01, wavelength: float = 0.06) -> list[np.ndarray]:
    """``n_strands`` strands rooted on a spherical-cap scalp patch (radius ``scalp_radius``, polar half-angle
    ``patch_angle`` [rad] about +z). Each strand leaves the scalp along its normal, turns smoothly (over about
    10 % of its length) towards a direction that points outward and down, and carries waves or curls;
    lengths vary by +-10 %, phases at random (``seed``)."""
    if n_strands < 1:
        raise ValueError(f"n_strands must be >= 1 (got {n_strands})")
    if n_vertices < 3:
        raise ValueError(f"n_vertices must be >= 3 (got {n_vertices})")
    if not (0 < patch_angle <= math.pi):
        raise ValueError(f"patch_angle must be in (0, pi] (got {patch_angle})")
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)} (got {style!r})")
    rng = np.random.default_rng(seed)
    strands = []
    golden = math.pi * (3.0 - math.sqrt(5.0))
    for k in range(n_strands):
        # quasi-uniform points on the cap (Fibonacci lattice)
        z = 1.0 - (1.0 - math.cos(patch_angle)) * (k + 0.5) / n_strands
        r = math.sqrt(max(0.0, 1.0 - z * z))
        phi = golden * k
        normal = np.array([r * math.cos(phi), r * math.sin(phi), z])
        root = scalp_radius * normal
        outward = np.array([math.cos(phi), math.sin(phi), 0.0])
        direction = 0.6 * outward + np.array([0.0, 0.0, -1.0])
        direction /= np.linalg.norm(direction)
        side = np.cross(direction, outward)
        side /= np.linalg.norm(side)
        other = np.cross(direction, side)
        ln = length * (1.0 + 0.1 * (2.0 * rng.random() - 1.0))
        ph = 2.0 * math.pi * rng.random()
        m = 40 * n_vertices
        sgrid = np.linspace(0.0, ln, m)
        w = np.exp(-sgrid / (0.1 * ln))
        tang = w[:, None] * normal + (1.0 - w[:, None]) * direction
        tang /= np.linalg.norm(tang, axis=1)[:, None]
        ds = ln / (m - 1)
        center = root + np.vstack([np.zeros(3), np.cumsum(0.5 * (tang[1:] + tang[:-1]) * ds, axis=0)])
        ramp = (1.0 - w) ** 2
        kk = 2.0 * math.pi / wavelength
        pts = center.copy()
        if style == "wavy":
            pts += (ramp * amplitude * np.sin(kk * sgrid + ph))[:, None] * side
        elif style == "curly":
            pts += (ramp * amplitude * np.cos(kk * sgrid + ph))[:, None] * side
            pts += (ramp * amplitude * np.sin(kk * sgrid + ph))[:, None] * other
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        cum = np.r_[0.0, np.cumsum(seg)]
        target = np.linspace(0.0, cum[-1], n_vertices)
        strand = np.empty((n_vertices, 3))
        for c in range(3):
            strand[:, c] = np.interp(target, cum, pts[:, c])
        # first edge exactly along the scalp normal (the clamped root edge)
        e0 = np.linalg.norm(strand[1] - strand[0])
        strand[1:] += root + normal * e0 - strand[1]
        strands.append(strand)
    return strands
