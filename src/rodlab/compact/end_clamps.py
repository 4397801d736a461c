"""Clamps away from the root, sliding clamps and pins away from the root for the compact rod, as
constraints of the step's SQP (Zhao et al., "Efficient and Stable Simulation of Inextensible
Cosserat Rods by a Compact Representation", 2024, Sec. 2.3 and Eq. 10-12).

In the compact coordinates ``s`` (root position, one axis-angle ``w_e`` per segment, each relative
to its own reference ``qref_e``) the frame of segment ``e`` depends on ``w_e`` alone. A clamp of
edge ``e`` therefore splits in two:

* its **frame** is a Dirichlet condition: ``w_e`` is held (``s[e + 1]`` not free) and before each
  step ``qref_e`` is set to ``quat(R(t1)) q_e^rest`` (``R`` the clamp's ``motion`` rotation at the
  end of the step, identity without motion) and ``w_e = 0`` -- the way the root clamp's frame is
  driven (:func:`rodlab.compact.batch._drive_root`);
* its **position** (vertex ``e``; with the segment's frame fixed, vertex ``e + 1`` follows) is a
  function of every earlier coordinate, so it is held by linear equality rows on the vertex,
  ``C_k = a_k . (p_e - x*(t1)) = 0`` with ``x*(t) = R(t) (x_e^rest - c0) + c0 + d(t)`` (``c0`` the
  clamped edge's rest midpoint) and ``a_k`` the three world axes, or for a **sliding clamp** the
  two directions across its ``slide_axis``: the clamp then translates freely along the axis under
  the forces on the rod (Eq. 12: equality rows of ``C_A``, kept in the working set with
  multipliers of either sign). The root clamp (edge 0) that does not slide keeps its exact
  Dirichlet root position instead of rows.

A pin of a vertex ``j > 0`` is three rows ``e_k . (p_j - x_j^rest) = 0``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..geometry.rotations import matrix_to_quat, quat_mul
from ..model import ModelError


class ClampRow(NamedTuple):
    """One constrained end: rod ``rod``, ``vertex`` (rod-local) held by rows along ``axes`` (k, 3);
    ``segment`` whose frame is driven (-1: none, a pin); ``motion`` or None; rest data."""

    rod: int
    vertex: int
    segment: int
    motion: object
    axes: np.ndarray
    x_rest: np.ndarray
    c0: np.ndarray
    q_rest: np.ndarray


def _across(axis) -> np.ndarray:
    """Two unit vectors (2, 3) orthogonal to ``axis`` and to each other."""
    a = np.asarray(axis, dtype=float)
    norm = float(np.linalg.norm(a))
    if not (np.isfinite(norm) and norm > 0):
        raise ModelError(f"slide_axis must be a finite non-zero 3-vector (got {axis!r})")
    a = a / norm
    helper = np.eye(3)[int(np.argmin(np.abs(a)))]
    b1 = np.cross(a, helper)
    b1 /= np.linalg.norm(b1)
    return np.stack([b1, np.cross(a, b1)])


def needs_rows(world) -> bool:
    """True when a rod of ``world`` has a clamp or pin that the compact method holds by rows (a
    clamp of an edge other than the first, a sliding clamp, a pin of a vertex other than 0)."""
    for rod in world.rods:
        for c in rod.boundary.clamps:
            if c.edge % rod.n_edges != 0 or c.slide_axis is not None:
                return True
        if any(v % rod.n_vertices != 0 for v in rod.boundary.fixed_vertices):
            return True
    return False


class EndClamps:
    """The rows and frame drives of every clamp and pin held by rows in ``world`` (module
    docstring). ``vstart`` (R + 1,) the rods' first vertices in the flat arrays."""

    def __init__(self, world, models):
        self.items: list[ClampRow] = []
        for r, rod in enumerate(world.rods):
            x = np.asarray(rod.rest_positions, dtype=float)
            for c in rod.boundary.clamps:
                e = c.edge % rod.n_edges
                if e == 0 and c.slide_axis is None:
                    continue  # the root clamp: Dirichlet root position and frame (solvers.compact)
                axes = np.eye(3) if c.slide_axis is None else _across(c.slide_axis)
                self.items.append(ClampRow(r, e, e, c.motion, axes, x[e].copy(), 0.5 * (x[e] + x[e + 1]),
                                           np.array(models[r].rest_q[e])))
            for v in rod.boundary.fixed_vertices:
                j = v % rod.n_vertices
                if j != 0:
                    self.items.append(ClampRow(r, j, -1, None, np.eye(3), x[j].copy(), x[j].copy(), np.zeros(4)))
        self.vstart = np.asarray(world.rod_vertex_start, dtype=np.int64)
        self.n_rows = int(sum(it.axes.shape[0] for it in self.items))
        # per row: flat vertex, direction, item
        self._row_vertex = np.array([int(self.vstart[it.rod]) + it.vertex for it in self.items for _ in it.axes],
                                    dtype=np.int64)
        self._row_axis = np.array([a for it in self.items for a in it.axes], dtype=float).reshape(-1, 3)
        self._row_item = np.array([i for i, it in enumerate(self.items) for _ in it.axes], dtype=np.int64)
        self._target_t = None
        self._row_target = np.zeros((self.n_rows, 3))
        # the rows' vertices (K, 4) and coefficients (K, 4, 3): fixed, read-only
        self._verts4 = np.repeat(self._row_vertex[:, None], 4, axis=1)
        self._coef4 = np.zeros((self.n_rows, 4, 3))
        self._coef4[:, 0] = self._row_axis
        for a in (self._verts4, self._coef4):
            a.setflags(write=False)

    def __bool__(self) -> bool:
        return bool(self.items)

    @staticmethod
    def _pose(item: ClampRow, t: float):
        if item.motion is None:
            return np.eye(3), np.zeros(3)
        R, d = item.motion(t)
        R, d = np.asarray(R, dtype=float), np.asarray(d, dtype=float)
        if R.shape != (3, 3) or d.shape != (3,) or not (np.all(np.isfinite(R)) and np.all(np.isfinite(d))):
            raise ModelError(f"clamp motion of rod {item.rod} must return a finite rotation (3, 3) and translation "
                             f"(3,) (got shapes {R.shape}, {d.shape} at t = {t:g} s)")
        return R, d

    def drive_frames(self, states, t1: float) -> None:
        """Dirichlet values of the clamped frames at the step's end ``t1`` [s]: ``qref_e =
        quat(R(t1)) q_e^rest`` (sign-aligned with the current one) and ``w_e = 0`` (in place)."""
        for it in self.items:
            if it.segment < 0:
                continue
            st = states[it.rod]
            R, _ = self._pose(it, t1)
            target = np.asarray(quat_mul(matrix_to_quat(np.ascontiguousarray(R)), it.q_rest))
            if float(target @ st.qref[it.segment]) < 0.0:
                target = -target
            st.qref[it.segment] = target
            st.s[it.segment + 1] = 0.0

    def targets(self, t1: float) -> np.ndarray:
        """Each row's target point ``x*(t1)`` (K, 3) [m] (evaluated once per time ``t1``)."""
        if self._target_t != t1:
            per_item = []
            for it in self.items:
                R, d = self._pose(it, t1)
                per_item.append(R @ (it.x_rest - it.c0) + it.c0 + d)
            if per_item:
                self._row_target = np.asarray(per_item)[self._row_item]
            self._target_t = t1
        return self._row_target

    def rows(self, P, t1: float):
        """Equality rows at positions ``P`` (N, 3) [m]: vertices (K, 4), coefficients (K, 4, 3)
        (both read-only), values (K,) [m], in the layout of
        :func:`rodlab.compact.contact_world.edge_edge_rows`."""
        return self._verts4, self._coef4, self.values(P, t1)

    def values(self, P, t1: float) -> np.ndarray:
        """The rows' values (K,) [m] at positions ``P`` (N, 3) [m] (read-only vertices and
        coefficients of :meth:`rows` are fixed)."""
        return np.einsum("kc,kc->k", self._row_axis, P[self._row_vertex] - self.targets(t1))

    def linear_rows(self, t1: float):
        """The rows of :meth:`rows` as linear forms ``C = sum_v coef_v . (P[verts_v] - ref_v)``:
        vertices (K, 4), coefficients (K, 4, 3), reference points (K, 4, 3) [m] (the targets at
        ``t1``)."""
        ref = np.repeat(self.targets(t1)[:, None, :], 4, axis=1)
        return self._verts4, self._coef4, np.ascontiguousarray(ref)


__all__ = ["ClampRow", "EndClamps", "needs_rows"]
