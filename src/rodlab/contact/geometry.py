"""The static arrays contact detection reads: segments, neighbour rules, obstacles, mesh BVH.

:func:`from_world` builds a :class:`ContactGeometry` once from a :class:`rodlab.world.World`
(its flat ``rod_vertex_start``, ``rod_closed``, ``rod_radius`` and ``obstacles``);
:func:`from_arrays` builds one from the same arrays without a world. Segments are numbered like
the world's flat edges: rod ``r``'s edge ``k`` is ``rod_edge_start[r] + k`` and joins vertices
``v + k`` and ``v + (k + 1) % n`` (``v = rod_vertex_start[r]``, ``n`` its vertex count; the wrap
only on a closed rod). Obstacles become rows of ``obstacle_kind`` / ``obstacle_param`` (codes in
:mod:`rodlab.contact.narrowphase`); triangle meshes add their triangles to one BVH.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..model import require
from .broadphase import build_bvh
from .narrowphase import CAPSULE, CYLINDER, MESH, PLANE, SPHERE


class ContactGeometry(NamedTuple):
    """Static contact arrays (module docstring). Per segment (E,): ``edge_v0``, ``edge_v1`` (vertex
    ids), ``edge_rod``, ``edge_local`` (rod and index in it), ``edge_radius`` [m]. Per rod (R,):
    ``rod_edge_count``, ``rod_closed``, ``rod_skip`` (segments within ``rod_skip[r]`` edges of each
    other on rod ``r`` are neighbours, never paired). Per obstacle (M,): ``obstacle_kind``,
    ``obstacle_param`` (M, 8). Per mesh triangle (T,): ``tri_x`` (T, 3, 3) corners [m],
    ``tri_obstacle`` (obstacle id), ``tri_local`` (index in its mesh), ``tri_lo``, ``tri_hi``
    (T, 3) boxes, and the BVH over them (``bvh_*``, see :func:`rodlab.contact.broadphase.build_bvh`)."""

    n_vertices: int
    edge_v0: np.ndarray
    edge_v1: np.ndarray
    edge_rod: np.ndarray
    edge_local: np.ndarray
    edge_radius: np.ndarray
    rod_edge_count: np.ndarray
    rod_closed: np.ndarray
    rod_skip: np.ndarray
    obstacle_kind: np.ndarray
    obstacle_param: np.ndarray
    tri_x: np.ndarray
    tri_obstacle: np.ndarray
    tri_local: np.ndarray
    tri_lo: np.ndarray
    tri_hi: np.ndarray
    bvh_lo: np.ndarray
    bvh_hi: np.ndarray
    bvh_child: np.ndarray
    bvh_start: np.ndarray
    bvh_count: np.ndarray
    bvh_item: np.ndarray

    @property
    def n_edges(self) -> int:
        return int(self.edge_v0.shape[0])

    @property
    def n_obstacles(self) -> int:
        return int(self.obstacle_kind.shape[0])


def obstacle_rows(obstacles) -> tuple[np.ndarray, np.ndarray, list]:
    """``(obstacle_kind (M,), obstacle_param (M, 8), meshes)`` of the obstacles of
    :mod:`rodlab.world.obstacles`; ``meshes`` lists ``(obstacle id, vertices, triangles)``. A
    ``Cylinder`` is infinite unless it has a ``length`` attribute [m] (then capped, centred on
    its ``point``)."""
    from ..world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh

    kind = np.zeros(len(obstacles), dtype=np.int64)
    param = np.zeros((len(obstacles), 8))
    meshes = []
    for m, ob in enumerate(obstacles):
        if isinstance(ob, Plane):
            kind[m] = PLANE
            param[m, :6] = np.concatenate([ob.point, ob.normal])
        elif isinstance(ob, Sphere):
            kind[m] = SPHERE
            param[m, :4] = [*ob.center, ob.radius]
        elif isinstance(ob, Capsule):
            kind[m] = CAPSULE
            param[m, :7] = [*ob.a, *ob.b, ob.radius]
        elif isinstance(ob, Cylinder):
            length = getattr(ob, "length", None)
            half = math.inf if length is None else 0.5 * float(length)
            require(half > 0, f"obstacle {m}: cylinder length must be > 0 m (got {length})")
            kind[m] = CYLINDER
            param[m, :8] = [*ob.point, *ob.axis, ob.radius, half]
        elif isinstance(ob, TriangleMesh):
            kind[m] = MESH
            meshes.append((m, ob.vertices, ob.triangles))
        else:
            raise TypeError(f"obstacle {m}: unknown obstacle type {type(ob).__name__} "
                            "(expected Plane, Sphere, Capsule, Cylinder or TriangleMesh)")
    return kind, param, meshes


def _rod_skip(skip, n_rods: int, rod_radius_max: np.ndarray, rod_length_min: np.ndarray | None) -> np.ndarray:
    if isinstance(skip, str):
        require(skip == "auto", f"skip must be an integer >= 1, one per rod, or 'auto' (got {skip!r})")
        require(rod_length_min is not None, "skip='auto' needs the edges' rest lengths (edge_rest_length)")
        return np.maximum(1, np.ceil(2.0 * rod_radius_max / rod_length_min - 1e-12)).astype(np.int64)
    values = np.broadcast_to(np.asarray(skip), (n_rods,)) if np.ndim(skip) == 0 else np.asarray(skip)
    require(values.shape == (n_rods,), f"skip must be one integer or one per rod ({n_rods}) (got shape {values.shape})")
    require(np.issubdtype(values.dtype, np.integer) and bool(np.all(values >= 1)),
            f"skip must be integers >= 1 (segments sharing a vertex are always skipped) (got {skip!r})")
    return values.astype(np.int64)


def from_arrays(rod_vertex_start, rod_closed, edge_radius, *, obstacles=(), skip=1,
                edge_rest_length=None) -> ContactGeometry:
    """A :class:`ContactGeometry` from flat world arrays.

    Parameters
    ----------
    rod_vertex_start : (R + 1,) int
        Vertex offsets of the rods (rod ``r`` owns vertices ``[start[r], start[r + 1])``).
    rod_closed : (R,) bool
        Whether each rod is a closed loop (its last edge joins its last vertex to its first).
    edge_radius : float, (E,) or (R,) floats
        Radius [m] of every segment, of each segment, or of each rod.
    obstacles : sequence
        Obstacles of :mod:`rodlab.world.obstacles`.
    skip : int >= 1, (R,) ints, or ``"auto"``
        Segments within ``skip`` edges of each other along a rod are neighbours, never paired
        (1: only those sharing a vertex). ``"auto"``: per rod ``ceil(2 r / l_min)``, the least
        that leaves a straight rod at rest with no negative gap (needs ``edge_rest_length``).
    edge_rest_length : (E,) float, optional
        Rest lengths [m], for ``skip="auto"``.
    """
    vs = np.asarray(rod_vertex_start)
    closed = np.asarray(rod_closed, dtype=bool).reshape(-1)
    require(vs.ndim == 1 and vs.shape[0] >= 2 and np.issubdtype(vs.dtype, np.integer) and vs[0] == 0,
            "rod_vertex_start must be an integer (R + 1,) array starting at 0")
    nv = np.diff(vs).astype(np.int64)
    require(closed.shape == nv.shape, f"rod_closed must have one entry per rod ({nv.shape[0]}) (got {closed.shape[0]})")
    require(bool(np.all(nv >= np.where(closed, 3, 2))), "each rod needs >= 2 vertices (>= 3 when closed)")
    ne = np.where(closed, nv, nv - 1)
    es = np.concatenate([[0], np.cumsum(ne)]).astype(np.int64)
    n_edges = int(es[-1])
    edge_rod = np.repeat(np.arange(nv.shape[0], dtype=np.int64), ne)
    edge_local = np.arange(n_edges, dtype=np.int64) - es[edge_rod]
    edge_v0 = vs[edge_rod].astype(np.int64) + edge_local
    edge_v1 = vs[edge_rod].astype(np.int64) + (edge_local + 1) % nv[edge_rod]
    radius = np.asarray(edge_radius, dtype=float).reshape(-1)
    if radius.shape[0] == 1:
        radius = np.full(n_edges, radius[0])
    elif radius.shape[0] == nv.shape[0] and radius.shape[0] != n_edges:
        radius = radius[edge_rod]
    require(radius.shape == (n_edges,), f"edge_radius must have one entry per edge ({n_edges}) or per rod "
                                        f"({nv.shape[0]}) (got {radius.shape[0]})")
    require(bool(np.all(np.isfinite(radius) & (radius >= 0))), "edge_radius must be finite and >= 0 m")
    length_min = None
    if edge_rest_length is not None:
        lengths = np.asarray(edge_rest_length, dtype=float).reshape(-1)
        require(lengths.shape == (n_edges,) and bool(np.all(lengths > 0)),
                f"edge_rest_length must be ({n_edges},) and > 0 m")
        length_min = np.minimum.reduceat(lengths, es[:-1])
    radius_max = np.maximum.reduceat(radius, es[:-1])
    rod_skip = _rod_skip(skip, nv.shape[0], radius_max, length_min)

    kind, param, meshes = obstacle_rows(tuple(obstacles))
    tri_x = [np.asarray(v, dtype=float)[np.asarray(f)] for _, v, f in meshes]
    tri_x = np.ascontiguousarray(np.concatenate(tri_x)) if tri_x else np.zeros((0, 3, 3))
    tri_obstacle = np.concatenate([np.full(len(f), m, dtype=np.int64) for m, _, f in meshes]) if meshes \
        else np.zeros(0, dtype=np.int64)
    tri_local = np.concatenate([np.arange(len(f), dtype=np.int64) for _, _, f in meshes]) if meshes \
        else np.zeros(0, dtype=np.int64)
    tri_lo = np.ascontiguousarray(tri_x.min(axis=1)) if len(tri_x) else np.zeros((0, 3))
    tri_hi = np.ascontiguousarray(tri_x.max(axis=1)) if len(tri_x) else np.zeros((0, 3))
    if len(tri_x):
        bvh = build_bvh(tri_lo, tri_hi)
    else:
        bvh = (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
               np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return ContactGeometry(
        n_vertices=int(vs[-1]), edge_v0=edge_v0, edge_v1=edge_v1, edge_rod=edge_rod, edge_local=edge_local,
        edge_radius=np.ascontiguousarray(radius), rod_edge_count=ne.astype(np.int64), rod_closed=closed,
        rod_skip=rod_skip, obstacle_kind=kind, obstacle_param=param, tri_x=tri_x, tri_obstacle=tri_obstacle,
        tri_local=tri_local, tri_lo=tri_lo, tri_hi=tri_hi, bvh_lo=bvh[0], bvh_hi=bvh[1], bvh_child=bvh[2],
        bvh_start=bvh[3], bvh_count=bvh[4], bvh_item=bvh[5])


def from_world(world, *, skip=1) -> ContactGeometry:
    """The :class:`ContactGeometry` of a :class:`rodlab.world.World` (its rods' radii, closed
    flags and obstacles), built once; ``skip`` as in :func:`from_arrays`."""
    radius = np.repeat(np.asarray(world.rod_radius, dtype=float), np.diff(world.rod_edge_start))
    return from_arrays(world.rod_vertex_start, world.rod_closed, radius, obstacles=world.obstacles, skip=skip,
                       edge_rest_length=world.edge_rest_length)
