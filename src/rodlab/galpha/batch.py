"""Every rod of a galpha world stepped in one compiled call (the generalized-alpha steps of
Sobottka, Lay and Weber, "Stable Integration of the Dynamic Cosserat Equations with Application to
Hair Modeling", 2008, Algorithm 1), and galpha's node frames turned into the common state's edge
frames (issue #13 item 3: the fixed cost of a call).

:func:`advance_rods` runs :func:`rodlab.galpha.stepping.advance_steps` for rod after rod (each
up to ``nsteps`` steps, stopping at its first failed step), then writes the common fields of the
state (:func:`_write_common`). Its 14 arguments are few on purpose: numba's dispatcher types each
array argument on every call (~0.07-0.14 us each), so the simulator keeps

* the state's galpha unknowns (``state.solver``: ``x``, ``xdot``, ``R``, ``r_vel``, the
  diagnostics and the chord Newton's LU factors ``lu_*``) as views of two buffers, one float64
  (``sfb``) and one int64 (``sib``), packed by :meth:`RodsLayout.pack`;
* every rod's model constants, scratch and step parameters in one float64 buffer ``fb``, its
  flags and column maps in one int64 buffer ``ib``, whose header says where everything is
  (``H_*`` slots; the per-rod table ``T_*``; :class:`RodsLayout` writes it, the kernel reads it:
  one definition of the layout).

The arithmetic per rod is :func:`advance_steps`' (the same inner kernel), so trajectories are
bitwise those of a per-rod loop; rods are independent and run in order.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_INNER, python_entry
from ..geometry.curves import reference_twist3
from .newton import META_SIZE, NEWTON_CONVERGED, NEWTON_CONVERGED_STEP
from .residual import NV
from .stepping import (COUNTS_SIZE, I_COLMAPS, K_FACTS, K_ITERS, K_STEPS, R_CODE, R_FACTS, R_ITERS, R_TIME, R_TRIED,
                       RES_SIZE, _advance_steps)
from ..numba_views import borrow
from .views import view1, view2, view3

# the packed state: float fields in ``sfb`` and int64 fields in ``sib``, in this order (the first
# SNAPSHOT_FLOAT / SNAPSHOT_INT fields are what a failed call puts back, with ``vertex_x``)
FLOAT_FIELDS = ("x", "xdot", "R", "r_vel", "last_residual", "lu_W", "lu_T", "lu_D", "lu_Y", "lu_Sinv", "lu_meta")
INT_FIELDS = ("step", "last_newton_iters", "substeps", "lu_piv", "lu_tpiv")
SNAPSHOT_FLOAT, SNAPSHOT_INT = 5, 3
# the fields in a state's ``solver`` dict, in the order a new state lists them
STATE_KEYS = ("x", "xdot", "R", "r_vel", "step", "last_residual", "last_newton_iters", "substeps", "lu_W", "lu_piv", "lu_T",
              "lu_tpiv", "lu_D", "lu_Y", "lu_Sinv", "lu_meta")
(S_X, S_XDOT, S_R, S_RVEL, S_RESID, S_W, S_T, S_D, S_Y, S_SINV, S_META,
 S_STEP, S_ITERS, S_SUB, S_PIV, S_TPIV) = range(16)
W_ROWS, W_COLS = 9 + NV, 2 * NV  # a block row of the block LU: 9 fixed root unknowns + 15 (GAlphaSolver)
# ``ib`` header: counts, buffer sizes, where the snapshot and the call's results sit in ``fb``,
# the 16 field offsets in sfb / sib, then one table row of T_COLS per rod
H_RODS, H_VERTS, H_EDGES, H_JOINTS, H_SFB, H_SIB, H_SNAP_F, H_SNAP_I, H_SNAPSHOT, H_RESULT, H_FIELDS = range(11)
H_TABLE = H_FIELDS + len(FLOAT_FIELDS) + len(INT_FIELDS)
# per rod: its prm (2, 11), running totals (K_* slots), float_views buffer and int64 buffer in fb / ib,
# its ``out`` and ``res`` views in fb, its node count and first vertex, edge and joint in the world
T_PRM, T_COUNTS, T_FB, T_FSIZE, T_IB, T_ISIZE, T_OUT, T_RES, T_NODES, T_V0, T_E0, T_J0 = range(12)
T_COLS = 12
# the call's results in fb: Newton iterations summed (failed tries included), the largest last
# residual, the time reached by the last rod stepped [s]
C_ITERS, C_RESIDUAL, C_TIME = range(3)
RESULT_SIZE = 3
PRM_SIZE = 22  # (2, 11): GAlphaSolver.step_parameters




@njit(inline="always", **JIT)
def _unit_quat(R):
    """:func:`rodlab.geometry.rotations.matrix_to_quat` (Shepperd's method, w >= 0, normalized)
    operation for operation, as four scalars (no allocation)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr >= R[0, 0] and tr >= R[1, 1] and tr >= R[2, 2]:
        s = math.sqrt(1.0 + tr) * 2.0
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        s = math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2.0
        w, x, y, z = (R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] >= R[2, 2]:
        s = math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2.0
        w, x, y, z = (R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s
    else:
        s = math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2.0
        w, x, y, z = (R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    n = math.sqrt(w ** 2 + x ** 2 + y ** 2 + z ** 2)
    if not n > 1e-300:
        raise ValueError("zero quaternion cannot be normalised")
    return w / n, x / n, y / n, z / n


@njit(**JIT_INNER)
def _mid_d1(R, j, Q, t0, t1, t2):
    """d1 of the node frame ``R[j]`` turned by half of ``R[j]^T R[j+1]`` (the segment's mid
    frame), made orthogonal to the unit chord ``(t0, t1, t2)`` and normalized, as three scalars;
    ``Q`` (3, 3) is scratch."""
    for a in range(3):
        for b in range(3):
            Q[a, b] = R[j, 0, a] * R[j + 1, 0, b] + R[j, 1, a] * R[j + 1, 1, b] + R[j, 2, a] * R[j + 1, 2, b]
    q0, q1, q2, q3 = _unit_quat(Q)
    sgn = 1.0 if q0 >= 0.0 else -1.0
    h0, h1, h2, h3 = 1.0 + sgn * q0, sgn * q1, sgn * q2, sgn * q3
    nh = math.sqrt(h0 ** 2 + h1 ** 2 + h2 ** 2 + h3 ** 2)
    h0, h1, h2, h3 = h0 / nh, h1 / nh, h2 / nh, h3 / nh
    # first column of quat_to_matrix(h), element for element
    H0 = 1 - 2 * (h2 * h2 + h3 * h3)
    H1 = 2 * (h1 * h2 + h0 * h3)
    H2 = 2 * (h1 * h3 - h0 * h2)
    d0 = R[j, 0, 0] * H0 + R[j, 0, 1] * H1 + R[j, 0, 2] * H2
    d1 = R[j, 1, 0] * H0 + R[j, 1, 1] * H1 + R[j, 1, 2] * H2
    d2 = R[j, 2, 0] * H0 + R[j, 2, 1] * H1 + R[j, 2, 2] * H2
    dt = d0 * t0 + d1 * t1 + d2 * t2
    d0 -= dt * t0
    d1 -= dt * t1
    d2 -= dt * t2
    nd = math.sqrt(d0 ** 2 + d1 ** 2 + d2 ** 2)
    return d0 / nd, d1 / nd, d2 / nd


@njit(inline="always", **JIT)
def _unit_chord(x, j):
    """The unit vector from ``x[j]`` to ``x[j + 1]`` as three scalars."""
    t0 = x[j + 1, 0] - x[j, 0]
    t1 = x[j + 1, 1] - x[j, 1]
    t2 = x[j + 1, 2] - x[j, 2]
    lt = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    return t0 / lt, t1 / lt, t2 / lt


@njit(**JIT_INNER)
def _edge_d1_from_nodes(R, x, out):
    """Edge directors (n-1, 3): d1 of the node frame ``R[j]`` turned by half of ``R[j]^T R[j+1]``,
    made orthogonal to the chord ``x[j+1] - x[j]`` and normalized (:func:`_mid_d1`)."""
    Q = np.empty((3, 3))
    for j in range(R.shape[0] - 1):
        t0, t1, t2 = _unit_chord(x, j)
        out[j, 0], out[j, 1], out[j, 2] = _mid_d1(R, j, Q, t0, t1, t2)


edge_d1_from_nodes = python_entry(_edge_d1_from_nodes, "edge_d1_from_nodes")


@njit(**JIT_INNER)
def _write_common(R, x, vertex_x, ref_d1, theta, ref_twist, vertex_v, v0, v1, e0, h):
    """The common fields of the rod of vertices ``v0 .. v1``, edges from ``e0`` and first joint
    ``h`` from its node frames ``R`` and unknowns ``x`` (world-wide arrays), one pass over its
    edges: ``ref_d1`` (:func:`edge_d1_from_nodes`), ``theta = 0``, ``ref_twist`` of those frames
    along the chords (:func:`rodlab.geometry.curves.reference_twist`, unwrapped against its value),
    ``vertex_v = R u``."""
    Q = np.empty((3, 3))
    ux = uy = uz = tx = ty = tz = 0.0  # previous edge's d1 and tangent
    for j in range(v0, v1 - 1):
        e = e0 + j - v0
        theta[e] = 0.0
        sx, sy, sz = _unit_chord(vertex_x, j)
        vx, vy, vz = _mid_d1(R, j, Q, sx, sy, sz)
        ref_d1[e, 0], ref_d1[e, 1], ref_d1[e, 2] = vx, vy, vz
        if j > v0:  # reference_twist's parallel_transport_into, signed_angle, unwrap_near on scalars
            ref_twist[h] = reference_twist3(tx, ty, tz, sx, sy, sz, ux, uy, uz, vx, vy, vz, ref_twist[h])
            h += 1
        ux, uy, uz, tx, ty, tz = vx, vy, vz, sx, sy, sz
    for j in range(v0, v1):
        for a in range(3):
            vertex_v[j, a] = R[j, a, 0] * x[j, 0] + R[j, a, 1] * x[j, 1] + R[j, a, 2] * x[j, 2]


@njit(**JIT)
def advance_rods(nsteps, first_rod, t, dt, sfb, sib, vertex_x, vertex_v, edge_ref_d1, edge_theta, joint_ref_twist, bc,
                 fb, ib, common):
    """Up to ``nsteps`` steps of ``dt`` [s] from time ``t`` [s] of the rods ``first_rod ..`` of a
    world (module docstring), rod after rod; returns 0 when every one took them all (the common
    fields then written for every rod if ``common`` is nonzero), ``r + 1`` when rod ``r`` stopped
    at a failed step (its
    state at the last good one, its ``out`` and ``res`` views saying why; the rods after it not
    stepped, nothing written to the common fields), -1 when an argument's shape does not fit the
    layout (nothing changed). ``sfb``, ``sib``: the packed state; ``vertex_x`` .. ``joint_ref_twist``:
    the common state's arrays; ``bc`` (rods, 1 or nsteps, BC_SIZE): every rod's boundary rows;
    ``fb``, ``ib``: the rods' buffers (:class:`RodsLayout`). A call from the first rod of more than
    one step or rod first copies what a failure puts back (``SNAPSHOT_*`` fields, ``vertex_x``) to
    the snapshot in ``fb``; ``nsteps = 0`` only writes the common fields (with ``common`` nonzero).
    ``vertex_x`` (the positions along the frames) is written by every step; ``vertex_v``,
    ``edge_ref_d1``, ``edge_theta`` and ``joint_ref_twist`` are functions of the state after the
    call, written only with ``common`` (the simulator defers them to their first read)."""
    nr, nv, ne, nj = ib[H_RODS], ib[H_VERTS], ib[H_EDGES], ib[H_JOINTS]
    if (sfb.shape[0] != ib[H_SFB] or sib.shape[0] != ib[H_SIB] or vertex_x.shape[0] != nv or vertex_x.shape[1] != 3
            or vertex_v.shape[0] != nv or vertex_v.shape[1] != 3 or edge_ref_d1.shape[0] != ne
            or edge_ref_d1.shape[1] != 3 or edge_theta.shape[0] != ne or joint_ref_twist.shape[0] != nj
            or bc.shape[0] != nr or not (bc.shape[1] == 1 or bc.shape[1] >= nsteps) or nsteps < 0):
        return -1
    # every array below is a view of these, passed on to the step kernels: no reference counting
    sfb, sib, fb, ib, bc = borrow(sfb), borrow(sib), borrow(fb), borrow(ib), borrow(bc)
    vertex_x, vertex_v, edge_ref_d1 = borrow(vertex_x), borrow(vertex_v), borrow(edge_ref_d1)
    edge_theta, joint_ref_twist = borrow(edge_theta), borrow(joint_ref_twist)
    f = H_FIELDS
    x = view2(sfb, ib[f + S_X], nv, NV)
    xdot = view2(sfb, ib[f + S_XDOT], nv, NV)
    R = view3(sfb, ib[f + S_R], nv, 3, 3)
    r_vel = view2(sfb, ib[f + S_RVEL], nv, 3)
    last_residual = view1(sfb, ib[f + S_RESID], nr)
    lu_W = view3(sfb, ib[f + S_W], ne, W_ROWS, W_COLS)
    lu_T = view3(sfb, ib[f + S_T], nr, NV, NV)
    lu_D = ib[f + S_D]  # rod r's (6, 15 n) block starts at lu_D + 6 NV v0
    lu_Y = view2(sfb, ib[f + S_Y], nv * NV, 6)
    lu_Sinv = view3(sfb, ib[f + S_SINV], nr, 6, 6)
    lu_meta = view2(sfb, ib[f + S_META], nr, META_SIZE)
    step = view1(sib, ib[f + S_STEP], nr)
    last_iters = view1(sib, ib[f + S_ITERS], nr)
    lu_piv = view2(sib, ib[f + S_PIV], ne, NV)
    lu_tpiv = view2(sib, ib[f + S_TPIV], nr, NV)
    result = view1(fb, ib[H_RESULT], RESULT_SIZE)
    if first_rod == 0 and nsteps > 0 and (nsteps > 1 or nr > 1):  # what a failure puts back
        o, nf, ni = ib[H_SNAPSHOT], ib[H_SNAP_F], ib[H_SNAP_I]
        for i in range(nf):
            fb[o + i] = sfb[i]
        for i in range(ni):
            fb[o + nf + i] = sib[i]
        o += nf + ni
        for j in range(nv):
            for a in range(3):
                fb[o + 3 * j + a] = vertex_x[j, a]
    result[C_ITERS] = 0.0
    result[C_RESIDUAL] = 0.0
    result[C_TIME] = t
    end_free = np.empty((4, 2, NV), dtype=np.bool_)
    for r in range(first_rod if nsteps > 0 else nr, nr):
        row = view1(ib, H_TABLE + T_COLS * r, T_COLS)
        n, v0, e0 = row[T_NODES], row[T_V0], row[T_E0]
        rfb = view1(fb, row[T_FB], row[T_FSIZE])
        rib = view1(ib, row[T_IB], row[T_ISIZE])
        for k in range(4):  # the end nodes' free unknowns per tip kind: columns in the kind's map
            for q in range(NV):
                end_free[k, 0, q] = rib[I_COLMAPS + k * n * NV + q] >= 0
                end_free[k, 1, q] = rib[I_COLMAPS + k * n * NV + (n - 1) * NV + q] >= 0
        done = _advance_steps(nsteps, t, dt, step[r], x[v0:v0 + n], xdot[v0:v0 + n], R[v0:v0 + n], vertex_x[v0:v0 + n],
                              r_vel[v0:v0 + n], lu_W[e0:e0 + n - 1], lu_piv[e0:e0 + n - 1], lu_T[r], lu_tpiv[r],
                              view2(sfb, lu_D + 6 * NV * v0, 6, NV * n), lu_Y[NV * v0:NV * (v0 + n)],
                              lu_Sinv[r], lu_meta[r], bc[r], view2(fb, row[T_PRM], 2, PRM_SIZE // 2), rfb, rib, end_free)
        step[r] += done
        out, res = view1(fb, row[T_OUT], 2), view1(fb, row[T_RES], RES_SIZE)
        c = row[T_COUNTS]
        fb[c + K_ITERS] += res[R_ITERS]
        fb[c + K_FACTS] += res[R_FACTS]
        fb[c + K_STEPS] += res[R_TRIED]
        result[C_ITERS] += res[R_ITERS]
        result[C_TIME] = res[R_TIME]
        code = res[R_CODE]
        if code != NEWTON_CONVERGED and code != NEWTON_CONVERGED_STEP:
            return r + 1
        last_residual[r] = out[1]
        last_iters[r] = np.int64(out[0])
        result[C_RESIDUAL] = max(result[C_RESIDUAL], out[1])
    for r in range(nr if common != 0 else 0):
        row = view1(ib, H_TABLE + T_COLS * r, T_COLS)
        n, v0, e0 = row[T_NODES], row[T_V0], row[T_E0]
        _write_common(R, x, vertex_x, edge_ref_d1, edge_theta, joint_ref_twist, vertex_v, v0, v0 + n, e0, row[T_J0])
    return 0


class RodsLayout:
    """The buffers of :func:`advance_rods` for the rods ``solvers`` (one
    :class:`rodlab.galpha.GAlphaSolver` each, stepping with ``dt`` [s]) of a world with
    ``vertex_start``, ``edge_start`` and ``joint_start`` per rod (``world.rod_*_start``): ``fb``
    and ``ib`` (each solver's own buffers move into them, :meth:`GAlphaSolver.place_buffers`, so
    a Python-driven step of one rod and the compiled call share its scratch), and the packed
    state's layout (:meth:`pack`)."""

    def __init__(self, solvers, dt: float, vertex_start, edge_start, joint_start):
        nr = len(solvers)
        nv, ne, nj = int(vertex_start[-1]), int(edge_start[-1]), int(joint_start[-1])
        shapes = {}  # the packed state's fields: (buffer index, shape, dtype)
        for key, shape in (("x", (nv, NV)), ("xdot", (nv, NV)), ("R", (nv, 3, 3)), ("r_vel", (nv, 3)),
                           ("last_residual", (nr,)), ("lu_W", (ne, W_ROWS, W_COLS)), ("lu_T", (nr, NV, NV)),
                           ("lu_D", (nv, 6 * NV)), ("lu_Y", (NV * nv, 6)), ("lu_Sinv", (nr, 6, 6)),
                           ("lu_meta", (nr, META_SIZE))):
            shapes[key] = (0, shape, np.dtype(np.float64))
        for key, shape in (("step", (nr,)), ("last_newton_iters", (nr,)), ("substeps", (nr,)), ("lu_piv", (ne, NV)),
                           ("lu_tpiv", (nr, NV))):
            shapes[key] = (1, shape, np.dtype(np.int64))
        for sol in solvers:  # each rod's factors are a slice of the fields above
            n = sol.model.n_nodes
            expected = {"W": (n - 1, W_ROWS, W_COLS), "piv": (n - 1, NV), "T": (NV, NV), "tpiv": (NV,), "D": (6, NV * n),
                        "Y": (NV * n, 6), "Sinv": (6, 6), "meta": (META_SIZE,)}
            assert {k: shape for k, (shape, _) in sol.factor_shapes().items()} == expected
        self.fields = shapes
        offsets, sizes = [], [0, 0]
        for key in (*FLOAT_FIELDS, *INT_FIELDS):
            b, shape, _ = shapes[key]
            offsets.append(sizes[b])
            sizes[b] += math.prod(shape)
        self.sizes = tuple(sizes)
        snap_f = offsets[SNAPSHOT_FLOAT]  # the float fields before lu_W
        snap_i = offsets[len(FLOAT_FIELDS) + SNAPSHOT_INT]  # the int fields before lu_piv
        # fb: per rod [prm | counts | float_views buffer], then the call's results, then the snapshot
        fsizes = [s._fbuf.shape[0] for s in solvers]
        isizes = [s._ibuf.shape[0] for s in solvers]
        head = PRM_SIZE + COUNTS_SIZE
        f_at = np.cumsum([0] + [head + k for k in fsizes])
        result_at = int(f_at[-1])
        snapshot_at = result_at + RESULT_SIZE
        self.fb = np.zeros(snapshot_at + snap_f + snap_i + 3 * nv)
        i_at = H_TABLE + T_COLS * nr + np.cumsum([0] + isizes)
        self.ib = ib = np.zeros(int(i_at[-1]), dtype=np.int64)
        ib[:H_FIELDS] = (nr, nv, ne, nj, sizes[0], sizes[1], snap_f, snap_i, snapshot_at, result_at)
        ib[H_FIELDS:H_TABLE] = offsets
        self.result = self.fb[result_at:result_at + RESULT_SIZE]
        self.snapshot = (self.fb[snapshot_at:snapshot_at + snap_f], self.fb[snapshot_at + snap_f:snapshot_at + snap_f + snap_i],
                         self.fb[snapshot_at + snap_f + snap_i:].reshape(nv, 3))
        for r, sol in enumerate(solvers):
            p, fo, io = int(f_at[r]), int(f_at[r]) + head, int(i_at[r])
            self.fb[p:p + PRM_SIZE] = sol.step_parameters(dt).ravel()
            sol.place_buffers(self.fb[fo:fo + fsizes[r]], ib[io:io + isizes[r]], self.fb[p + PRM_SIZE:fo])
            n = sol.model.n_nodes
            assert n == vertex_start[r + 1] - vertex_start[r]
            ib[H_TABLE + T_COLS * r:H_TABLE + T_COLS * (r + 1)] = (
                p, p + PRM_SIZE, fo, fsizes[r], io, isizes[r], self._offset(sol._out), self._offset(sol._res), n, vertex_start[r],
                edge_start[r], joint_start[r])

    def _offset(self, view: np.ndarray) -> int:
        """Where the view ``view`` of ``fb`` starts in it (float64 elements)."""
        return (view.__array_interface__["data"][0] - self.fb.__array_interface__["data"][0]) // 8

    def views(self, sfb: np.ndarray, sib: np.ndarray) -> dict:
        """The packed state's fields as views of ``sfb`` and ``sib`` (name -> array)."""
        out = {}
        bufs = (sfb, sib)
        for k, key in enumerate((*FLOAT_FIELDS, *INT_FIELDS)):
            b, shape, _ = self.fields[key]
            o = int(self.ib[H_FIELDS + k])
            out[key] = bufs[b][o:o + math.prod(shape)].reshape(shape)
        return out

    def pack(self, solver: dict) -> SolverFields:
        """A copy of ``solver`` (a state's ``solver`` dict, its galpha fields checked by the caller)
        whose galpha fields are views of two new buffers (:class:`SolverFields`); its other keys
        and their order are kept, missing fields appended. Diagnostics and LU factors that are
        missing or of another shape or dtype start as zeros (no factors yet: the first step factors)."""
        sfb, sib = np.zeros(self.sizes[0]), np.zeros(self.sizes[1], dtype=np.int64)
        views = self.views(sfb, sib)
        packed = SolverFields()
        for key, a in solver.items():
            packed.setdefault_fresh(key, views.get(key, a))
        for key in STATE_KEYS:
            view = views[key]
            a = solver.get(key)
            if a is not None and a.shape == view.shape and (not key.startswith("lu_") or a.dtype == view.dtype):
                view[...] = a
            packed.setdefault_fresh(key, view)
        packed.sfb, packed.sib, packed.layout, packed.intact = sfb, sib, self, True
        return packed

    def restore(self, vertex_x: np.ndarray, sfb: np.ndarray, sib: np.ndarray) -> None:
        """Put back what :func:`advance_rods` copied to the snapshot at the start of a call."""
        f, i, x = self.snapshot
        sfb[:f.shape[0]] = f
        sib[:i.shape[0]] = i
        vertex_x[...] = x



class SolverFields(dict):
    """A galpha state's ``solver`` dict (made by :meth:`RodsLayout.pack`) whose galpha fields are
    views of the buffers ``sfb`` and ``sib`` of ``layout``, so the simulator passes two arrays
    instead of 16 and checks them in a few attribute reads: ``intact`` is True until an entry is
    set, added or removed through the dict (writes into the arrays keep it: they are the views).
    Copies and pickles are plain dicts (their arrays no longer views of the buffers)."""

    __slots__ = ("intact", "layout", "sfb", "sib")

    def __init__(self, *args, **kwargs):
        dict.__init__(self, *args, **kwargs)
        self.intact, self.layout, self.sfb, self.sib = False, None, None, None  # not packed (RodsLayout.pack is)

    def setdefault_fresh(self, key, value) -> None:
        """``dict.setdefault`` while packing (does not mark the dict changed)."""
        dict.setdefault(self, key, value)

    def __reduce__(self):
        return dict, (dict(self),)

    def __setitem__(self, key, value):
        self.intact = False
        dict.__setitem__(self, key, value)

    def __delitem__(self, key):
        self.intact = False
        dict.__delitem__(self, key)

    def __ior__(self, other):
        self.intact = False
        return dict.__ior__(self, other)

    def pop(self, *args):
        self.intact = False
        return dict.pop(self, *args)

    def popitem(self):
        self.intact = False
        return dict.popitem(self)

    def clear(self):
        self.intact = False
        dict.clear(self)

    def update(self, *args, **kwargs):
        self.intact = False
        dict.update(self, *args, **kwargs)

    def setdefault(self, key, default=None):
        self.intact = False
        return dict.setdefault(self, key, default)
