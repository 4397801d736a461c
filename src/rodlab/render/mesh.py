"""Triangle meshes of what a picture shows: rods as tubes (elliptical cross-sections, a stripe
along the material director d1), obstacles (plane, sphere, capsule, cylinder, triangle mesh) and
rigid bodies (boxes with the body's inertia).

A :class:`Mesh` holds vertices (V, 3) [m], unit normals (V, 3), triangles (T, 3) and one RGB
colour per triangle; ``two_sided`` meshes (planes, open triangle meshes) are lit from whichever
side faces the camera. Everything is vectorised over all rods at once (flat arrays with per-rod
offsets, as in :class:`rodlab.world.World`), so 1000 strands cost one pass, not 1000.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..model import require


@dataclass
class Mesh:
    """Triangles to draw: ``vertices`` (V, 3) [m], ``normals`` (V, 3), ``triangles`` (T, 3),
    ``colors`` (T, 3) RGB in [0, 1], ``two_sided`` (light both faces), ``closed``: a closed
    surface wound counter-clockwise seen from outside, whose back faces are skipped (culled)."""

    vertices: np.ndarray
    normals: np.ndarray
    triangles: np.ndarray
    colors: np.ndarray
    two_sided: bool = False
    closed: bool = False


def merge(meshes: list[Mesh]) -> Mesh:
    """One mesh of several; the merged mesh keeps ``two_sided`` per vertex and ``closed`` per
    triangle (arrays)."""
    meshes = [m for m in meshes if len(m.triangles)]
    if not meshes:
        return Mesh(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros((0, 3)), False)
    if len(meshes) == 1:  # nothing to copy
        m = meshes[0]
        return Mesh(m.vertices, m.normals, m.triangles, m.colors, m.two_sided, m.closed)
    offs = np.cumsum([0] + [len(m.vertices) for m in meshes])
    tri = np.concatenate([m.triangles + o for m, o in zip(meshes, offs[:-1])])
    merged = Mesh(np.concatenate([m.vertices for m in meshes]), np.concatenate([m.normals for m in meshes]), tri,
                  np.concatenate([m.colors for m in meshes]), False)
    merged.closed = np.concatenate([np.broadcast_to(np.asarray(m.closed, dtype=bool), (len(m.triangles),)) for m in meshes])
    merged.two_sided = np.concatenate([np.broadcast_to(np.asarray(m.two_sided, dtype=bool), (len(m.vertices),))
                                       for m in meshes])
    return merged


# ---- rod layout ------------------------------------------------------------------------------
def edge_layout(rod_offsets: np.ndarray, rod_closed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per edge its two vertex indices ``(edge_v0, edge_v1)`` and the per-rod edge offsets
    ``rod_edge_start`` (R + 1,), in the world's edge order (a closed rod's last edge closes it)."""
    offsets = np.asarray(rod_offsets, dtype=np.int64)
    counts = np.diff(offsets)
    closed = np.asarray(rod_closed, dtype=bool)
    n_edges = np.where(closed, counts, counts - 1)
    edge_start = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(n_edges, out=edge_start[1:])
    rod_of_edge = np.repeat(np.arange(len(counts)), n_edges)
    local = np.arange(edge_start[-1]) - edge_start[rod_of_edge]
    v0 = offsets[rod_of_edge] + local
    v1 = offsets[rod_of_edge] + (local + 1) % counts[rod_of_edge]
    return v0, v1, edge_start


@njit(cache=True)
def _transport_d1(x, edge_start, v0, v1, out):  # pragma: no cover - compiled
    for r in range(edge_start.shape[0] - 1):
        p0 = p1 = p2 = 0.0
        for e in range(edge_start[r], edge_start[r + 1]):
            t0 = x[v1[e], 0] - x[v0[e], 0]
            t1 = x[v1[e], 1] - x[v0[e], 1]
            t2 = x[v1[e], 2] - x[v0[e], 2]
            n = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
            if n > 0:
                t0, t1, t2 = t0 / n, t1 / n, t2 / n
            else:
                t0, t1, t2 = 0.0, 0.0, 1.0
            if e == edge_start[r]:  # up if it can, else +x
                d0, d1, d2 = (0.0, 0.0, 1.0) if abs(t2) < 0.9 else (1.0, 0.0, 0.0)
            else:  # rotate the previous director by the turn from the previous tangent to this one
                d0, d1, d2 = out[e - 1, 0], out[e - 1, 1], out[e - 1, 2]
                b0, b1, b2 = p1 * t2 - p2 * t1, p2 * t0 - p0 * t2, p0 * t1 - p1 * t0
                s = math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)
                c = p0 * t0 + p1 * t1 + p2 * t2
                if s > 1e-14:
                    k0, k1, k2 = b0 / s, b1 / s, b2 / s
                    kd = k0 * d0 + k1 * d1 + k2 * d2
                    c0, c1, c2 = k1 * d2 - k2 * d1, k2 * d0 - k0 * d2, k0 * d1 - k1 * d0
                    d0 = d0 * c + c0 * s + k0 * kd * (1.0 - c)
                    d1 = d1 * c + c1 * s + k1 * kd * (1.0 - c)
                    d2 = d2 * c + c2 * s + k2 * kd * (1.0 - c)
            dt = d0 * t0 + d1 * t1 + d2 * t2
            d0, d1, d2 = d0 - dt * t0, d1 - dt * t1, d2 - dt * t2
            n = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            out[e, 0], out[e, 1], out[e, 2] = d0 / n, d1 / n, d2 / n
            p0, p1, p2 = t0, t1, t2


def transported_d1(x: np.ndarray, rod_offsets, rod_closed) -> np.ndarray:
    """A director per edge (E, 3) parallel-transported along each rod from a chosen
    perpendicular of its first edge (+z, or +x for a near-vertical first edge, made normal to it;
    a Bishop frame: Bergou et al. 2008, "Discrete Elastic Rods",
    Sec. 4.2): what a picture shows when only positions were stored, so the stripe then shows the
    frame's geometric rotation only, not the rod's twist."""
    v0, v1, edge_start = edge_layout(rod_offsets, rod_closed)
    out = np.empty((len(v0), 3))
    _transport_d1(np.ascontiguousarray(x, dtype=float), edge_start, v0, v1, out)
    return out


def _normalize(a: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(a, axis=-1, keepdims=True)
    return a / np.where(n > 0, n, 1.0)


def tube_mesh(x: np.ndarray, rod_offsets, rod_closed, edge_m1: np.ndarray, rod_a1, rod_a2, rod_color,
              stripe_color, *, sides: int = 12, caps: bool = True) -> Mesh:
    """Tubes around every rod's centreline ``x`` (N, 3) [m]: at each vertex a ring of ``sides``
    points ``x + g (a1 cos(phi) m1 + a2 sin(phi) m2)`` (``a1``, ``a2`` the rod's semi-axes [m] along
    the material directors m1, m2 = t x m1; a vertex takes the mean of its edges' directors;
    ``g = 2 / (1 + cos(pi / sides))`` puts the ellipse midway between the polygon's corners and
    its faces' middles, so its width on screen is right to within 1 - cos(pi / sides) / 2).
    The ring angles are ``phi_k = 2 pi (k + 1/2) / sides``, so one face of every edge is centred
    on ``+m1``: those faces get ``stripe_color``, the rest ``rod_color[r]`` (R, 3). Open rods get
    flat end caps. ``edge_m1`` (E, 3) directors per edge."""
    require(sides >= 3, f"tube sides must be >= 3 (got {sides})")
    x = np.asarray(x, dtype=float)
    offsets = np.asarray(rod_offsets, dtype=np.int64)
    closed = np.asarray(rod_closed, dtype=bool)
    v0, v1, edge_start = edge_layout(offsets, closed)
    n_v, n_e, n_r = x.shape[0], len(v0), len(offsets) - 1
    rod_of_vertex = np.repeat(np.arange(n_r), np.diff(offsets))
    rod_of_edge = np.repeat(np.arange(n_r), np.diff(edge_start))
    t_edge = _normalize(x[v1] - x[v0])
    m1e = np.asarray(edge_m1, dtype=float)
    # per vertex: the sum of its (up to two) edges' tangents and directors
    tv = _normalize(_vertex_sum(t_edge, v0, v1, n_v))
    mv = _vertex_sum(m1e, v0, v1, n_v)
    mv -= np.sum(mv * tv, axis=1, keepdims=True) * tv
    bad = np.linalg.norm(mv, axis=1) < 1e-9  # a cusp or opposite directors: take the next edge's
    if np.any(bad):
        first_edge = np.full(n_v, -1)
        first_edge[v0[::-1]] = np.arange(n_e)[::-1]
        first_edge[first_edge < 0] = 0
        fallback = m1e[first_edge[bad]] if n_e else np.tile([1.0, 0.0, 0.0], (int(bad.sum()), 1))
        mv[bad] = fallback - np.sum(fallback * tv[bad], axis=1, keepdims=True) * tv[bad]
    m1 = _normalize(mv)
    m2 = np.cross(tv, m1)
    a1 = np.asarray(rod_a1, dtype=float)[rod_of_vertex][:, None]
    a2 = np.asarray(rod_a2, dtype=float)[rod_of_vertex][:, None]
    phi = 2.0 * np.pi * (np.arange(sides) + 0.5) / sides
    c, s = np.cos(phi)[None, :, None], np.sin(phi)[None, :, None]
    grow = 2.0 / (1.0 + math.cos(math.pi / sides))  # the polygon's corners and face middles straddle the ellipse
    ring = x[:, None, :] + grow * (a1[:, :, None] * c * m1[:, None, :] + a2[:, :, None] * s * m2[:, None, :])
    normal = _normalize((c / a1[:, :, None]) * m1[:, None, :] + (s / a2[:, :, None]) * m2[:, None, :])
    verts = ring.reshape(-1, 3)
    norms = normal.reshape(-1, 3)
    k = np.arange(sides)
    kn = (k + 1) % sides
    i0 = (v0[:, None] * sides + k[None, :])
    i1 = (v0[:, None] * sides + kn[None, :])
    j0 = (v1[:, None] * sides + k[None, :])
    j1 = (v1[:, None] * sides + kn[None, :])
    tris = np.stack([np.stack([i0, i1, j1], axis=-1), np.stack([i0, j1, j0], axis=-1)], axis=2).reshape(-1, 3)
    rod_color = np.asarray(rod_color, dtype=float).reshape(-1, 3)
    face_color = np.repeat(rod_color[rod_of_edge][:, None, :], sides, axis=1)
    face_color[:, sides - 1] = stripe_color  # the face from phi_{K-1} to phi_0, centred on +m1
    colors = np.repeat(face_color.reshape(-1, 3), 2, axis=0)
    meshes = [Mesh(verts, norms, tris, colors, closed=True)]
    if caps:
        opened = np.flatnonzero(~closed & (np.diff(offsets) >= 2))
        if len(opened):
            meshes.append(_caps(x, offsets, opened, verts, tv, sides, rod_color))
    return merge(meshes)


def _vertex_sum(edge_values: np.ndarray, v0: np.ndarray, v1: np.ndarray, n_v: int) -> np.ndarray:
    """Per vertex the sum of its (one or two) edges' values: ``bincount`` per component (far
    faster than ``np.add.at``)."""
    idx = np.concatenate([v0, v1])
    vals = np.concatenate([edge_values, edge_values])
    return np.stack([np.bincount(idx, weights=vals[:, k], minlength=n_v) for k in range(vals.shape[1])], axis=1)


def ribbon_mesh(x: np.ndarray, rod_offsets, rod_closed, toward_eye: np.ndarray, rod_half_width, rod_color) -> Mesh:
    """Rods too thin on screen for a tube (a few pixels): a strip facing the camera, its two
    sides at -/+ ``half_width`` [m] from the centreline with normals turned 45 degrees out from
    the eye direction (so the interpolated light falls off across the strip as on a tube), two
    triangles per edge instead of 2 x sides. ``toward_eye`` (N, 3) or (1, 3): unit vectors from
    the vertices to the eye."""
    x = np.asarray(x, dtype=float)
    offsets = np.asarray(rod_offsets, dtype=np.int64)
    v0, v1, edge_start = edge_layout(offsets, rod_closed)
    n_v, n_r = x.shape[0], len(offsets) - 1
    rod_of_vertex = np.repeat(np.arange(n_r), np.diff(offsets))
    rod_of_edge = np.repeat(np.arange(n_r), np.diff(edge_start))
    tv = _normalize(_vertex_sum(x[v1] - x[v0], v0, v1, n_v))
    side = np.cross(tv, toward_eye)
    weak = np.linalg.norm(side, axis=1) < 1e-9  # looking along the rod: any sideways direction
    if np.any(weak):
        side[weak] = np.cross(tv[weak], np.where(np.abs(tv[weak, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]))
    side = _normalize(side)
    front = np.cross(side, tv)
    h = np.asarray(rod_half_width, dtype=float)[rod_of_vertex][:, None]
    verts = np.stack([x - h * side, x + h * side], axis=1).reshape(-1, 3)
    norms = np.stack([front - side, front + side], axis=1).reshape(-1, 3) * (1.0 / math.sqrt(2.0))
    L0, R0, L1, R1 = 2 * v0, 2 * v0 + 1, 2 * v1, 2 * v1 + 1
    tris = np.stack([np.stack([L0, R0, R1], -1), np.stack([L0, R1, L1], -1)], axis=1).reshape(-1, 3)
    colors = np.repeat(np.asarray(rod_color, dtype=float).reshape(-1, 3)[rod_of_edge], 2, axis=0)
    return Mesh(verts, norms, tris, colors)


def _caps(x, offsets, opened, ring_verts, tv, sides, rod_color) -> Mesh:
    """Flat discs closing the open rods' ends (a fan from the centreline end to its ring)."""
    ends = np.concatenate([offsets[opened], offsets[opened + 1] - 1])
    sign = np.concatenate([-np.ones(len(opened)), np.ones(len(opened))])
    n_end = len(ends)
    ring = ring_verts.reshape(-1, sides, 3)[ends]  # (n_end, sides, 3)
    normal = tv[ends] * sign[:, None]
    verts = np.concatenate([x[ends], ring.reshape(-1, 3)])
    norms = np.concatenate([normal, np.repeat(normal, sides, axis=0)])
    k = np.arange(sides)
    centre = np.arange(n_end)[:, None]
    a = n_end + np.arange(n_end)[:, None] * sides + k[None, :]
    b = n_end + np.arange(n_end)[:, None] * sides + ((k + 1) % sides)[None, :]
    start = (np.arange(n_end) < len(opened))[:, None]  # a start cap faces -t: reversed winding
    a, b = np.where(start, b, a), np.where(start, a, b)
    tris = np.stack([np.broadcast_to(centre, a.shape), a, b], axis=-1).reshape(-1, 3)
    rods = np.concatenate([opened, opened])
    colors = np.repeat(rod_color[rods], sides, axis=0)
    return Mesh(verts, norms, tris, colors, closed=True)


# ---- obstacles and bodies --------------------------------------------------------------------
OBSTACLE_COLOR = (0.70, 0.70, 0.72)
BODY_COLOR = (0.30, 0.30, 0.33)


def _perp_basis(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    e1 = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(a, e1)


def _grid_mesh(points: np.ndarray, normals: np.ndarray, colors_of_cell) -> Mesh:
    """A (I, J) grid of points into triangles; ``colors_of_cell(i, j)`` -> (I-1, J-1, 3)."""
    ni, nj = points.shape[:2]
    idx = np.arange(ni * nj).reshape(ni, nj)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    tris = np.stack([np.stack([a, b, c], -1), np.stack([a, c, d], -1)], axis=2).reshape(-1, 3)
    cell = np.asarray(colors_of_cell, dtype=float).reshape(ni - 1, nj - 1, 3)
    colors = np.repeat(cell.reshape(-1, 3), 2, axis=0)
    return Mesh(points.reshape(-1, 3), normals.reshape(-1, 3), tris, colors)


def _uv_sphere(center, radius, axis=(0.0, 0.0, 1.0), n_u=32, n_v=16, half=None, shift=0.0) -> Mesh:
    """A UV sphere (``half`` = +1/-1: only the hemisphere along +/-``axis``, moved by ``shift`` m
    along it: a capsule's end)."""
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    e1, e2 = _perp_basis(a)
    lo, hi = (-np.pi / 2, np.pi / 2) if half is None else ((0.0, np.pi / 2) if half > 0 else (-np.pi / 2, 0.0))
    lat = np.linspace(lo, hi, n_v + 1)
    lon = np.linspace(0.0, 2 * np.pi, n_u + 1)
    n = (np.cos(lat)[:, None, None] * (np.cos(lon)[None, :, None] * e1 + np.sin(lon)[None, :, None] * e2)
         + np.sin(lat)[:, None, None] * a)
    p = np.asarray(center, dtype=float) + shift * a + radius * n
    return _grid_mesh(p, n, np.broadcast_to(OBSTACLE_COLOR, (n_v, n_u, 3)))


def _cylinder(p0, p1, radius, n_u=32, n_s=8, caps=True, color=OBSTACLE_COLOR) -> Mesh:
    p0, p1 = np.asarray(p0, dtype=float), np.asarray(p1, dtype=float)
    a = (p1 - p0) / np.linalg.norm(p1 - p0)
    e1, e2 = _perp_basis(a)
    lon = np.linspace(0.0, 2 * np.pi, n_u + 1)
    s = np.linspace(0.0, 1.0, n_s + 1)
    n = np.cos(lon)[None, :, None] * e1 + np.sin(lon)[None, :, None] * e2
    n = np.broadcast_to(n, (n_s + 1, n_u + 1, 3))
    p = p0 + s[:, None, None] * (p1 - p0) + radius * n
    meshes = [_grid_mesh(p, n, np.broadcast_to(color, (n_s, n_u, 3)))]
    if caps:
        for c, sign in ((p0, -1.0), (p1, 1.0)):
            ring = c + radius * n[0, :-1]
            verts = np.vstack([c, ring])
            k = np.arange(n_u)
            tris = np.stack([np.zeros(n_u, np.int64), 1 + k, 1 + (k + 1) % n_u], axis=-1)
            meshes.append(Mesh(verts, np.tile(sign * a, (n_u + 1, 1)), tris, np.tile(color, (n_u, 1))))
    return merge(meshes)


def obstacle_mesh(ob, lo: np.ndarray, hi: np.ndarray) -> Mesh:
    """A mesh of obstacle ``ob`` (:mod:`rodlab.world.obstacles`); unbounded ones (plane, cylinder)
    are cut to the box ``lo``-``hi`` [m] grown by half its size (the region the rods move in)."""
    from ..world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh

    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    centre, half = 0.5 * (lo + hi), 0.5 * max(float(np.max(hi - lo)), 1e-9)
    if isinstance(ob, Plane):
        n = np.asarray(ob.normal)
        e1, e2 = _perp_basis(n)
        c = centre - float((centre - ob.point) @ n) * n  # the box centre dropped onto the plane
        cells = 12
        u = np.linspace(-2.0 * half, 2.0 * half, cells + 1)
        p = c + u[:, None, None] * e1 + u[None, :, None] * e2
        checker = (np.add.outer(np.arange(cells), np.arange(cells)) % 2).astype(float)
        col = 0.78 + 0.10 * checker[..., None] * np.ones(3)
        mesh = _grid_mesh(p, np.broadcast_to(n, p.shape), col)
        mesh.two_sided = True
        return mesh
    if isinstance(ob, Sphere):
        return _uv_sphere(ob.center, ob.radius)
    if isinstance(ob, Capsule):
        a = np.asarray(ob.b) - np.asarray(ob.a)
        return merge([_cylinder(ob.a, ob.b, ob.radius, caps=False),
                      _uv_sphere(ob.b, ob.radius, axis=a, half=1), _uv_sphere(ob.a, ob.radius, axis=a, half=-1)])
    if isinstance(ob, Cylinder):
        a = np.asarray(ob.axis)
        s0 = float((centre - ob.point) @ a)
        reach = 1.5 * half + ob.radius
        return _cylinder(ob.point + (s0 - reach) * a, ob.point + (s0 + reach) * a, ob.radius)
    if isinstance(ob, TriangleMesh):
        v, f = np.asarray(ob.vertices), np.asarray(ob.triangles)
        fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        vn = np.zeros_like(v)
        for k in range(3):
            np.add.at(vn, f[:, k], fn)
        mesh = Mesh(v, _normalize(vn), f, np.tile(OBSTACLE_COLOR, (len(f), 1)))
        mesh.two_sided = True
        return mesh
    raise TypeError(f"cannot draw obstacle of type {type(ob).__name__}")


def obstacle_bounds(ob) -> np.ndarray | None:
    """Corners (2, 3) [m] of a bounded obstacle's box, ``None`` for planes and cylinders."""
    from ..world.obstacles import Capsule, Sphere, TriangleMesh

    if isinstance(ob, Sphere):
        return np.array([ob.center - ob.radius, ob.center + ob.radius])
    if isinstance(ob, Capsule):
        p = np.array([ob.a, ob.b])
        return np.array([p.min(axis=0) - ob.radius, p.max(axis=0) + ob.radius])
    if isinstance(ob, TriangleMesh):
        return np.array([ob.vertices.min(axis=0), ob.vertices.max(axis=0)])
    return None


def body_box(mass: float, inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Half sizes (3,) [m] and axes (3, 3) (columns, body coordinates) of the uniform box with
    the body's mass and inertia: ``I_11 = m (b^2 + c^2) / 12`` and cyclic for full sizes a, b, c."""
    w, axes = np.linalg.eigh(np.asarray(inertia, dtype=float))
    sq = 6.0 * (w.sum() - 2.0 * w) / mass  # a^2 = 6 (I2 + I3 - I1) / m
    size = np.sqrt(np.maximum(sq, 1e-4 * max(float(sq.max()), 1e-30)))
    return 0.5 * size, axes


def quat_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of the unit quaternion (w, x, y, z), body -> world."""
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def box_mesh(center, rotation, half, color=BODY_COLOR) -> Mesh:
    """A box of half sizes ``half`` (3,) [m], its axes the columns of ``rotation`` (3, 3)."""
    verts, norms, tris = [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            u, v = (axis + 1) % 3, (axis + 2) % 3
            n = sign * rotation[:, axis]
            base = np.asarray(center) + sign * half[axis] * rotation[:, axis]
            du, dv = half[u] * rotation[:, u], half[v] * rotation[:, v]
            k = len(verts)
            verts += [base - du - dv, base + du - dv, base + du + dv, base - du + dv]
            norms += [n] * 4
            tris += [[k, k + 1, k + 2], [k, k + 2, k + 3]]
    return Mesh(np.array(verts), np.array(norms), np.array(tris), np.tile(color, (len(tris), 1)))
