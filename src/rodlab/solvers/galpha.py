"""``galpha``: the generalized-alpha Cosserat rod (the dynamic Cosserat PDEs as a two-point
boundary value problem, generalized-alpha in time and space, Newton on a block-banded Jacobian;
:mod:`rodlab.galpha`) on a world, one :class:`rodlab.galpha.GAlphaSolver` per rod.

World -> galpha, per rod (refused otherwise, naming the requirement):

- open rods with equally spaced rest vertices (edge lengths equal to 1e-8 relative), at least 3;
  the vertices are the nodes, ``ds`` the rest edge length;
- an isotropic circular section from ``world.rod_material[r]`` (E, G, rho, radius);
- at the start, a clamp of edge 0 = the kinematic root (node 0 position and frame held) or a pin of
  vertex 0 = :class:`rodlab.galpha.boundary.RootPin`; a free start is refused;
- at the end: free (:class:`TipLoad`, with the world's point forces on the last vertex as its
  force), a clamp of the last edge (:class:`TipMotion` at rest) or a pin of the last vertex
  (:class:`TipPin`); clamps and pins elsewhere are refused;
- a clamp's prescribed ``motion(t) -> (R, d)`` (world rotation and translation about the clamped
  edge's rest midpoint ``c0``, :class:`rodlab.model.Clamp`) becomes the end's velocities: at the
  root :class:`RootMotion`, at the tip :class:`TipMotion` (the GA paper's kinematic end, Sec.
  3.4.1; a tip moved along a line without turning is its "line constraint", Sec. 5 item 6). The
  end vertex ``p`` rides the clamp, ``p(t) = R(t) (p0 - c0) + c0 + d(t)``; its velocity ``p'(t)``
  and the clamp's angular velocity ``w(t)`` (``[w]x = R' R^T``, world) are second-order central
  differences of the pose with step ``h = 1e-4 dt`` (``w = log(R(t + h) R(t - h)^T) / 2h``, which
  is ``w + O(h^2)`` by the Baker-Campbell-Hausdorff formula; one-sided
  ``(4 log(R(t + h) R(t)^T) - log(R(t + 2h) R(t)^T)) / 2h`` for ``t < h``, so the motion is
  never called before t = 0). galpha integrates the end pose from these velocities (midpoint
  rule, O(dt^2) from the exact pose), so ``motion(0)`` must be the identity (a clamp starts
  at its rest pose; refused otherwise);
- point torques (world couples [N m]) on the last vertex: the tip torque of :class:`TipLoad`, or
  the end couple of :class:`TipPin` on a pinned tip; elsewhere refused;
- rest shape: the edge frames ``F_j = [m1, t x m1, t]`` of the rest polyline with ``rods[r].rest_d1``
  as m1. The rest Darboux vector at interior node ``j`` is the rotation from ``F_{j-1}`` to ``F_j``
  over ``ds`` (inverse of the solver's orientation map, Cayley by default), copied to the end
  nodes; ``root_R = F_0 H_0^T`` with ``H_0`` half the first segment's rotation, so a rod of uniform
  rest curvature and twist (straight, helix, arc) starts with exactly its edge frames. Positions
  are arcs of length ``ds`` (:func:`rodlab.galpha.state.integrate_positions`): a curved rod's
  vertices sit inside the rest polyline by O(kappa^2 ds^2) relative; straight rods exactly.

Node frames -> edges (the common ``State`` fields): edge ``j``'s frame is the node frame ``R_j``
turned by half the rotation ``R_j^T R_{j+1}`` (the segment's mid frame); ``edge_ref_d1`` is its d1
made orthogonal to the edge chord, ``edge_theta = 0``, ``joint_ref_twist`` from those frames;
``vertex_v`` = ``R_j u_j``. ``state.solver`` holds ``x``, ``xdot`` (N, 15) nodal unknowns and their
rates, ``R`` (N, 3, 3) node frames, ``r_vel`` (N, 3) positions integrated from the velocities,
``step`` (R,) steps taken per rod (the first is backward Euler), and per rod the diagnostics of the
last step, ``last_residual`` (R,) (row-scaled Newton residual) and ``last_newton_iters`` (R,), and
``substeps`` (R,) (extra substeps taken so far by retried steps). ``vertex_x`` are the positions
integrated along the frames (as the first-wave driver reports them); they differ from ``r_vel``
(integrated in time from the velocities, which keeps a held tip exactly in place) by the scheme's
O(ds^2) drift.

The solver's chord Newton (``reuse_jacobian``) keeps its LU factors between steps, and they
are part of the state: ``state.solver["lu_W"]`` (E, 24, 30), ``lu_piv`` (E, 15) (the block LU of
every rod, stacked along the edges), ``lu_T`` (R, 15, 15), ``lu_tpiv`` (R, 15), ``lu_Sinv`` (R, 6,
6), ``lu_D`` (N, 90) (rod ``r``'s rows read as (6, 15 n_r)), ``lu_Y`` (15 N, 6) (the Woodbury
term of the end loads) and ``lu_meta`` (R, 14) (valid, Woodbury term, tip kind and the step
parameters they were made for; :meth:`rodlab.galpha.GAlphaSolver.bind_factors`). A call's result
therefore depends only on the state: ``advance(state, 1)`` K times is bitwise ``advance(state,
K)``, a warm-up on a copy changes nothing and a fresh simulator continues a saved state bitwise.
A state without them (an older file) gets empty ones (refactored at the first step).

The common fields are functions of these unknowns, so a call leaves them to their first read
(:meth:`rodlab.world.State.defer` of ``vertex_x``, ``vertex_v``, ``edge_ref_d1``, ``edge_theta``,
``joint_ref_twist``; ``vertex_x`` itself is written by every step, the others by the fill): reading
any of them (or ``copy``, ``save``, pickling, another simulator) writes them all as the call would
have, and a loop of calls nobody reads in between does not pay them (docs/galpha.md, "Third stop").

Every rod steps in one compiled call (:func:`rodlab.galpha.batch.advance_rods`, which writes the
common fields when asked), so ``state.solver`` is a :class:`rodlab.galpha.batch.SolverFields`: its galpha
entries are views of two buffers passed whole. A state whose ``solver`` is a plain dict (a copy,
a loaded file) or was changed through the dict (an entry set or removed) is checked and gets a
packed copy of its ``solver`` at its next call: arrays taken from ``state.solver`` before that
call are no longer the state's afterwards.
"""
from __future__ import annotations

import logging
import math
import time
from functools import partial
from time import perf_counter

import numpy as np

from .. import aot
from ..galpha.batch import STATE_KEYS, RodsLayout, SolverFields, advance_rods, edge_d1_from_nodes
from ..galpha.boundary import Boundary, RootMotion, RootPin, TipLoad, TipMotion, TipPin
from ..galpha.model import Coefficients, GAlphaRod
from ..galpha.solver import GAlphaOptions, GAlphaSolver
from ..galpha.state import GAlphaState, _cayley, _expm, energies
from ..galpha.stepping import BC_SIZE
from ..geometry.rotations import log_so3, matrix_to_quat, quat_to_matrix
from ..model import ModelError, require
from ..world import State
from .base import Simulator, StaticReport, StepReport, UnsupportedFeature, ok_report, step_report

FEATURES = frozenset({"pinned vertices", "point forces", "point torques", "prescribed clamp motion"})
_NV = 15
# the common fields a call leaves to their first read (State.defer): functions of the state after the call
COMMON_FIELDS = ("vertex_x", "vertex_v", "edge_ref_d1", "edge_theta", "joint_ref_twist")
log = logging.getLogger(__name__)

# Python calls of compiled kernels: handles that seed their ahead-of-time entries, where built, into
# numba's dispatchers (rodlab.aot.kernel; bitwise the JIT's results; advance_rods: seeded by _setup)
_matrix_to_quat, _quat_to_matrix, _cayley_call, _energies = map(aot.kernel, (matrix_to_quat, quat_to_matrix, _cayley,
                                                                           energies))


# ---------------------------------------------------------------------------------------------
# rest geometry and frames
# ---------------------------------------------------------------------------------------------
def _quat(R: np.ndarray) -> np.ndarray:
    q = np.asarray(_matrix_to_quat(np.ascontiguousarray(R)))
    return -q if q[0] < 0 else q


def _half(q: np.ndarray) -> np.ndarray:
    """Square root of a unit quaternion with q[0] >= 0: half the rotation, same axis."""
    h = np.array([1.0 + q[0], q[1], q[2], q[3]])
    return h / np.linalg.norm(h)


def rest_geometry(points, d1, cayley: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
    """``(ds, kappa_hat (n, 3) [1/m], root_R (3, 3))`` of a galpha rod at rest along the polyline
    ``points`` (n, 3) with edge directors ``d1`` (n-1, 3) (module docstring). ``cayley``: the
    orientation map of the solver (else the exponential map)."""
    p = np.asarray(points, dtype=float)
    e = np.diff(p, axis=0)
    lengths = np.linalg.norm(e, axis=1)
    ds = float(lengths.mean())
    t = e / lengths[:, None]
    m = len(t)
    F = np.empty((m, 3, 3))
    for j in range(m):
        u = np.asarray(d1[j], dtype=float)
        u = u - (u @ t[j]) * t[j]
        u = u / np.linalg.norm(u)
        F[j] = np.stack([u, np.cross(t[j], u), t[j]], axis=1)
    kh = np.zeros((m + 1, 3))
    for j in range(1, m):
        q = _quat(F[j - 1].T @ F[j])
        if cayley:
            w = 2.0 * q[1:] / q[0]
        else:
            sv = float(np.linalg.norm(q[1:]))
            w = np.zeros(3) if sv == 0.0 else 2.0 * math.atan2(sv, q[0]) * q[1:] / sv
        kh[j] = w / ds
    kh[0] = kh[1]
    kh[m] = kh[m - 1]
    w0 = 0.5 * (kh[0] + kh[1]) * ds
    M = np.empty((3, 3))
    (_cayley_call if cayley else _expm)(w0[0], w0[1], w0[2], M)
    H = np.asarray(_quat_to_matrix(_half(_quat(M))))
    return ds, kh, F[0] @ H.T


def rest_polyline(kappa_hat, ds: float, root_R, root_r=(0.0, 0.0, 0.0), cayley: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`rest_geometry`: a rest polyline ``points`` (n, 3) [m] of equal edges
    ``ds`` [m] and edge directors ``d1`` (n-1, 3) whose galpha rod has the Darboux vector
    ``kappa_hat`` (n, 3) [1/m] at the interior nodes, root frame ``root_R`` (3, 3) and root
    ``root_r`` (3,) [m], all to rounding. Edge frames: ``F_0 = root_R H_0`` (``H_0`` half the first
    segment's rotation), ``F_j = F_{j-1} cay(kappa_hat_j ds)`` (``exp`` if not ``cayley``); edge ``j``
    runs along ``F_j e3``. The end nodes read back as their neighbours' values (as
    :func:`rest_geometry` reads any polyline), so a uniform ``kappa_hat`` round-trips exactly."""
    kh = np.asarray(kappa_hat, dtype=float)
    require(kh.ndim == 2 and kh.shape[1] == 3 and kh.shape[0] >= 3 and bool(np.all(np.isfinite(kh))),
            f"kappa_hat must be a finite (n, 3) array with n >= 3 nodes (got shape {kh.shape})")
    require(math.isfinite(ds) and ds > 0, f"ds must be > 0 m (got {ds})")
    R0 = np.asarray(root_R, dtype=float)
    require(R0.shape == (3, 3) and bool(np.allclose(R0.T @ R0, np.eye(3), atol=1e-9)) and np.linalg.det(R0) > 0,
            "root_R must be a rotation matrix (3, 3)")
    rotate = _cayley_call if cayley else _expm
    m = kh.shape[0] - 1
    F = np.empty((m, 3, 3))
    E = np.empty((3, 3))
    w0 = kh[1] * ds
    rotate(w0[0], w0[1], w0[2], E)
    F[0] = R0 @ np.asarray(_quat_to_matrix(_half(_quat(E))))
    for j in range(1, m):
        w = kh[j] * ds
        rotate(w[0], w[1], w[2], E)
        F[j] = F[j - 1] @ E
    points = np.empty((m + 1, 3))
    points[0] = np.asarray(root_r, dtype=float)
    points[1:] = points[0] + ds * np.cumsum(F[:, :, 2], axis=0)
    return points, np.ascontiguousarray(F[:, :, 0])


class ClampKinematics:
    """Velocity [m/s] of the point ``point`` (3,) [m] carried by a clamp moved by ``motion(t) ->
    (R, d)`` about ``centre`` (3,) [m], and the clamp's angular velocity [rad/s] (world), by
    central differences of the pose with step ``h`` [s] (module docstring). ``what`` names the
    clamp in error messages. The last time's result is kept (the motion is a function of t)."""

    def __init__(self, motion, point, centre, h: float, what: str):
        self.motion, self.h, self.what = motion, float(h), what
        self.offset = np.asarray(point, dtype=float) - np.asarray(centre, dtype=float)
        self.point = np.asarray(point, dtype=float)
        self._t = None
        self._value = None

    def pose(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """``(R, d)`` of the motion at ``t``, checked: R a rotation, d a finite 3-vector."""
        out = self.motion(t)
        ok = isinstance(out, tuple) and len(out) == 2
        R, d = (np.asarray(out[0], dtype=float), np.asarray(out[1], dtype=float).reshape(-1)) if ok else (None, None)
        ok = ok and R.shape == (3, 3) and d.shape == (3,)
        if ok:  # orthonormal (NaN fails every comparison), right-handed, finite translation
            err = R.T @ R
            err[0, 0] -= 1.0
            err[1, 1] -= 1.0
            err[2, 2] -= 1.0
            det = (R[0, 0] * (R[1, 1] * R[2, 2] - R[1, 2] * R[2, 1]) - R[0, 1] * (R[1, 0] * R[2, 2] - R[1, 2] * R[2, 0])
                   + R[0, 2] * (R[1, 0] * R[2, 1] - R[1, 1] * R[2, 0]))
            ok = float(np.abs(err).max()) < 1e-9 and det > 0.0 and math.isfinite(float(d @ d))
        if not ok:
            raise ModelError(f"{self.what}: motion(t) must return (R, d), a rotation matrix (3, 3) and a finite "
                             f"3-vector [m] (got {out!r} at t = {t:g} s)")
        return R, d

    def _position(self, R, d):
        return R @ self.offset + (self.point - self.offset) + d

    def _rates(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        if self._t == t:
            return self._value
        h = self.h
        if t >= h:
            Rm, dm = self.pose(t - h)
            Rp, dp = self.pose(t + h)
            w = np.asarray(log_so3(np.ascontiguousarray(Rp @ Rm.T))) / (2.0 * h)
            v = (self._position(Rp, dp) - self._position(Rm, dm)) / (2.0 * h)
        else:
            R0, d0 = self.pose(t)
            R1, d1 = self.pose(t + h)
            R2, d2 = self.pose(t + 2.0 * h)
            w = (4.0 * np.asarray(log_so3(np.ascontiguousarray(R1 @ R0.T)))
                 - np.asarray(log_so3(np.ascontiguousarray(R2 @ R0.T)))) / (2.0 * h)
            v = (4.0 * self._position(R1, d1) - 3.0 * self._position(R0, d0) - self._position(R2, d2)) / (2.0 * h)
        self._t, self._value = t, (v, w)
        return v, w

    def velocity(self, t: float) -> np.ndarray:
        return self._rates(t)[0]

    def angular_velocity(self, t: float) -> np.ndarray:
        return self._rates(t)[1]


def galpha_rod_of(world, r: int, orientation: str = "cayley", dt: float = 0.01) -> tuple[GAlphaRod, Boundary]:
    """Rod ``r`` of ``world`` as a :class:`GAlphaRod` and its :class:`Boundary` (module docstring;
    ``dt`` [s] sets the difference step of moving clamps); raises :class:`UnsupportedFeature`
    naming what does not map."""
    rod, mat = world.rods[r], world.rod_material[r]
    nv = rod.n_vertices
    require(nv >= 3, f"method galpha needs rods of at least 3 vertices (rod {r} has {nv})")
    lengths = rod.rest_lengths
    spread = float(lengths.max() - lengths.min()) / float(lengths.mean())
    if spread > 1e-8:
        raise UnsupportedFeature(f"method galpha needs equally spaced rest vertices (edge lengths equal to 1e-8 "
                                 f"relative); rod {r}'s edges range from {lengths.min():.6g} to {lengths.max():.6g} m")
    clamps = rod.clamped_edges()
    pins = sorted({v % nv for v in rod.boundary.fixed_vertices})
    last = rod.n_edges - 1
    for e in clamps:
        if e not in (0, last):
            raise UnsupportedFeature(f"method galpha does not support a clamp of edge {e} of rod {r} "
                                     f"(only the first edge: root clamp, or the last: tip clamp)")
    for v in pins:
        if v not in (0, nv - 1):
            raise UnsupportedFeature(f"method galpha does not support a pin of vertex {v} of rod {r} "
                                     f"(only vertex 0: root pin, or the last vertex: tip pin)")
    moving = {c.edge % rod.n_edges: c.motion for c in rod.boundary.clamps if c.motion is not None}
    kin = {}
    for e, motion in moving.items():
        what = f"the moving clamp of edge {e} of rod {r}"
        p = rod.rest_positions
        k = ClampKinematics(motion, p[0] if e == 0 else p[-1], 0.5 * (p[e] + p[e + 1]), 1e-4 * dt, what)
        R0, d0 = k.pose(0.0)
        if np.abs(R0 - np.eye(3)).max() > 1e-9 or np.abs(d0).max() > 1e-9 * max(1.0, float(np.abs(p).max())):
            raise UnsupportedFeature(f"method galpha needs {what} to start at its rest pose: motion(0) must be "
                                     f"(identity, zero) (got R = {R0.tolist()}, d = {d0.tolist()})")
        kin[e] = k
    if 0 in clamps:
        root = RootMotion(kin[0].velocity, kin[0].angular_velocity) if 0 in kin else RootMotion()
    elif 0 in pins:
        root = RootPin()
    else:
        raise UnsupportedFeature(f"method galpha does not support a free start of rod {r}: its root (vertex 0) "
                                 f"needs a clamp of edge 0 or a pin of vertex 0")
    forces = world.point_forces_of(r)
    for pf in forces:
        if pf.vertex % nv != nv - 1:
            raise UnsupportedFeature(f"method galpha does not support a point force on vertex {pf.vertex} of rod {r} "
                                     f"(only on the last vertex, as the tip load)")
    torques = world.point_torques_of(r)
    for pt in torques:
        if pt.vertex % nv != nv - 1:
            raise UnsupportedFeature(f"method galpha does not support a point torque on vertex {pt.vertex} of rod {r} "
                                     f"(only on the last vertex, as the tip torque)")
    force = (lambda t, fs=forces: np.sum([f.at(t) for f in fs], axis=0)) if forces else (0.0, 0.0, 0.0)
    torque = (lambda t, ts=torques: np.sum([c.at(t) for c in ts], axis=0)) if torques else (0.0, 0.0, 0.0)
    if last in clamps:
        tip = TipMotion(kin[last].velocity, kin[last].angular_velocity) if last in kin else TipMotion()
    elif nv - 1 in pins:
        tip = TipPin(torque=torque)
    else:
        tip = TipLoad(force=force, torque=torque)
    if forces and not isinstance(tip, TipLoad):
        raise UnsupportedFeature(f"method galpha does not support a point force on the held tip of rod {r}")
    if torques and isinstance(tip, TipMotion):
        raise UnsupportedFeature(f"method galpha does not support a point torque on the clamped tip of rod {r}")
    ds, kh, root_R = rest_geometry(rod.rest_positions, rod.rest_d1, orientation == "cayley")
    model = GAlphaRod.from_material(nv, ds * (nv - 1), radius=mat.radius, E=mat.E, G=mat.G, rho=mat.rho,
                                    kappa_hat=kh, gravity=world.loads.gravity, damping=world.loads.damping,
                                    root_R=root_R, root_r=rod.rest_positions[0])
    return model, Boundary(root, tip)


# ---------------------------------------------------------------------------------------------
# the simulator
# ---------------------------------------------------------------------------------------------
class GAlphaSimulator(Simulator):
    """Generalized-alpha Cosserat rods on a world (module docstring).

    Options: ``dt`` [s] (default 0.01); the time scheme's coefficients (GA paper, Eq. 17-20), either
    ``rho_inf`` (spectral radius at infinity, Chung-Hulbert family, second order; 0.5 when none of
    these is given) or ``alpha`` and ``gamma`` with optional ``beta`` (0) directly (the paper's
    Fig. 1 settings, e.g. alpha = 0.4, gamma = 1), not both; ``rho_inf_space`` (1: the box
    scheme); ``tol`` (row-scaled
    Newton residual, 1e-8), ``max_iter`` (40), ``relaxation``, ``adaptive``, ``min_relaxation``,
    ``init`` (euler / paper), ``orientation`` (cayley / rodrigues), ``reuse_jacobian``,
    ``reuse_ratio``, ``exact_end_loads``, ``constraints_at_new_time`` (see
    :class:`rodlab.galpha.GAlphaOptions`); ``substeps``: a failed step is retried in up to
    ``2**substeps`` substeps (4); ``static_load_steps``: initial load increments of the static
    continuation (8); ``damping_scheme``: implicit only (the scheme's state carries accelerations,
    which a split-off velocity decay would make inconsistent).
    """

    method = "galpha"
    supports = FEATURES
    options = {"rho_inf": None, "alpha": None, "beta": None, "gamma": None, "rho_inf_space": 1.0, "tol": 1e-8, "max_iter": 40, "relaxation": 1.0,
               "adaptive": True, "min_relaxation": 1.0 / 64, "init": "euler", "orientation": "cayley",
               "reuse_jacobian": True, "reuse_ratio": 0.1, "exact_end_loads": True, "constraints_at_new_time": False,
               "substeps": 4, "static_load_steps": 8, "damping_scheme": "implicit"}

    def _setup(self, dt):
        w, o = self.world, self.opts
        self._dt = float(dt) if dt is not None else 0.01
        require(o["damping_scheme"] == "implicit",
                f"damping_scheme={o['damping_scheme']!r} is not available for method galpha (allowed: implicit)")
        for name in ("substeps", "static_load_steps"):
            require(isinstance(o[name], (int, np.integer)) and not isinstance(o[name], bool) and o[name] >= (0 if name == "substeps" else 1),
                    f"{name} must be an integer >= {0 if name == 'substeps' else 1} (got {o[name]!r})")
        gopts = GAlphaOptions(time=self._time_coefficients(),
                              space=Coefficients.from_rho_inf(float(o["rho_inf_space"])), tol=float(o["tol"]),
                              max_iter=int(o["max_iter"]), relaxation=float(o["relaxation"]), adaptive=bool(o["adaptive"]),
                              min_relaxation=float(o["min_relaxation"]), init=o["init"], orientation=o["orientation"],
                              reuse_jacobian=bool(o["reuse_jacobian"]), exact_end_loads=bool(o["exact_end_loads"]),
                              constraints_at_new_time=bool(o["constraints_at_new_time"]), reuse_ratio=float(o["reuse_ratio"]))
        self.solvers = []
        for r in range(w.n_rods):
            model, boundary = galpha_rod_of(w, r, gopts.orientation, self._dt)
            self.solvers.append(GAlphaSolver(model, boundary, gopts))
        self._shape_x = (w.n_vertices, 3)
        self.layout = RodsLayout(self.solvers, self._dt, w.rod_vertex_start, w.rod_edge_start, w.rod_joint_start)
        self._fb, self._ib, self._result = self.layout.fb, self.layout.ib, self.layout.result  # read on every call
        # every rod's boundary rows when none depends on time (made once), else None: made per call
        static = all(sol.static_boundary for sol in self.solvers)
        self._bc = np.stack([sol.boundary_rows(0.0, self._dt, 1) for sol in self.solvers]) if static else None
        self._bc_none = np.zeros((w.n_rods, 1, BC_SIZE))  # the rows of a call of no step (only the shape is read)
        self._paper = o["init"] == "paper"  # a rod's first step then runs in Python (GAlphaSolver.advance)
        # advance_rods' ahead-of-time compiled entry (rodlab.aot, where built), inserted into its numba
        # dispatcher: numba's type dispatch runs it for a call of its exact signature (the
        # simulator's own fb, ib and bc; writeable C float64 state arrays), the JIT for any other
        aot.seed(advance_rods)

    def _time_coefficients(self) -> Coefficients:
        """The time scheme's (alpha, beta, gamma) from ``rho_inf`` or from ``alpha``, ``beta``, ``gamma``."""
        o = self.opts
        direct = {k: o[k] for k in ("alpha", "beta", "gamma") if o[k] is not None}
        for name, value in [("rho_inf", o["rho_inf"]), *direct.items()]:
            if value is not None:
                require(isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
                        and math.isfinite(value), f"{name} must be a finite number (got {value!r})")
        if not direct:
            return Coefficients.from_rho_inf(float(0.5 if o["rho_inf"] is None else o["rho_inf"]))
        require(o["rho_inf"] is None, "give either rho_inf or the coefficients alpha, beta, gamma of method galpha, not both")
        require("alpha" in direct and "gamma" in direct,
                f"method galpha needs both alpha and gamma when its coefficients are given directly (got {sorted(direct)})")
        return Coefficients(float(direct["alpha"]), float(direct.get("beta", 0.0)), float(direct["gamma"]))

    @property
    def coefficients(self) -> Coefficients:
        """The time scheme's generalized-alpha coefficients (alpha, beta, gamma)."""
        return self.solvers[0].options.time

    # ---- state -------------------------------------------------------------------------------
    def initial_state(self) -> State:
        w = self.world
        state = State.zeros_for(w)
        N = w.n_vertices
        state.solver = {"x": np.zeros((N, _NV)), "xdot": np.zeros((N, _NV)), "R": np.zeros((N, 3, 3)),
                        "r_vel": np.zeros((N, 3)), "step": np.zeros(w.n_rods, dtype=np.int64)}
        state.method = self.method
        sfb, sib = self._packed_state(state)
        sv = state.solver
        for r, sol in enumerate(self.solvers):
            gs = sol.initial_state()
            vs = w.rod_vertices(r)
            for key, value in (("x", gs.x), ("xdot", gs.xdot), ("R", gs.R), ("r_vel", gs.r_vel)):
                sv[key][vs] = value
            state.vertex_x[vs] = gs.r
        self._write_common(state, sfb, sib)
        return state

    def _packed_state(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """``(sfb, sib)``: the buffers whose views are ``state``'s galpha fields
        (:class:`rodlab.galpha.batch.SolverFields`), in a few attribute reads when ``state.solver``
        is such a dict of this simulator, untouched since; else the state is checked and
        ``state.solver`` replaced by a packed copy (:meth:`rodlab.galpha.batch.RodsLayout.pack`)."""
        sv = state.solver
        if sv.__class__ is SolverFields and sv.intact and sv.layout is self.layout and state.method == "galpha":
            return sv.sfb, sv.sib
        state.resolve()  # a pending fill reads the buffers it was made for, which a repacked state no longer has
        if state.vertex_x.shape != self._shape_x:  # another world's state: say so first
            self._check_layout(state)
        if state.method != self.method:
            raise ModelError(f"method galpha starts only from a galpha state (this one is {state.method or 'unset'!r}); "
                             f"use GAlphaSimulator.initial_state()")
        N, R = self.world.n_vertices, self.world.n_rods
        for key, shape in (("x", (N, _NV)), ("xdot", (N, _NV)), ("R", (N, 3, 3)), ("r_vel", (N, 3)), ("step", (R,))):
            a = sv.get(key)
            if a is None or a.shape != shape:
                raise ModelError(f"state.solver[{key!r}] of a galpha state must have shape {shape} "
                                 f"(got {None if a is None else a.shape})")
        packed = state.solver = self.layout.pack(sv)
        return packed.sfb, packed.sib

    def _views(self, state: State, r: int) -> GAlphaState:
        """Rod ``r``'s unknowns in ``state`` as a :class:`GAlphaState` of views, its LU factors
        bound to rod ``r``'s solver (the state checked and packed first: :meth:`_packed_state`)."""
        w = self.world
        self._packed_state(state)
        sv = state.solver
        vs, es = w.rod_vertices(r), w.rod_edges(r)
        self.solvers[r].bind_factors(sv["lu_W"][es], sv["lu_piv"][es], sv["lu_T"][r], sv["lu_tpiv"][r],
                                     sv["lu_D"][vs].reshape(6, -1), sv["lu_Y"][_NV * vs.start:_NV * vs.stop],
                                     sv["lu_Sinv"][r], sv["lu_meta"][r])
        return GAlphaState(state.t, sv["x"][vs], sv["xdot"][vs], sv["R"][vs], self._common(state)[0][vs],
                           sv["r_vel"][vs], int(sv["step"][r]))

    def _common(self, state: State) -> tuple:
        """``state``'s arrays of :data:`COMMON_FIELDS`, without running the fill of a deferral of
        this simulator's (which a call writes or defers again; ``vertex_x`` is always current)."""
        arrays = state.deferred_by(self)
        if arrays is None:
            return state.vertex_x, state.vertex_v, state.edge_ref_d1, state.edge_theta, state.joint_ref_twist
        return (arrays["vertex_x"], arrays["vertex_v"], arrays["edge_ref_d1"], arrays["edge_theta"],
                arrays["joint_ref_twist"])

    def _write_common(self, state: State, sfb: np.ndarray, sib: np.ndarray) -> None:
        """The common fields of every rod from the node frames (:func:`advance_rods` of no step),
        written now (a deferral of this simulator's dropped: its fields are written)."""
        common = self._common(state)
        if advance_rods(0, 0, state.t, self._dt, sfb, sib, *common, self._bc_none, self._fb, self._ib, 1) != 0:
            self._layout_error(state)
        state.drop_deferred()

    def _fill(self, sfb: np.ndarray, sib: np.ndarray, state: State) -> None:
        """The fill of a deferral of :data:`COMMON_FIELDS` (:meth:`State.defer`): the common fields
        from the packed unknowns ``sfb``, ``sib`` (those of the call that deferred; a repacked
        state resolves first) and ``state.vertex_x``, as a call would have written them."""
        x, v, d1, theta, twist = (state.vertex_x, state.vertex_v, state.edge_ref_d1, state.edge_theta,
                                  state.joint_ref_twist)
        if advance_rods(0, 0, state.t, self._dt, sfb, sib, x, v, d1, theta, twist, self._bc_none, self._fb, self._ib,
                        1) != 0:
            self._layout_error(state)

    def _defer_common(self, state: State, sfb: np.ndarray, sib: np.ndarray) -> None:
        """Leave the common fields to their first read (a deferral of this simulator's already
        pending stays: its fill reads the same buffers)."""
        if state.deferred_by(self) is None:
            state.defer(COMMON_FIELDS, partial(self._fill, sfb, sib), self)

    def _layout_error(self, state: State):
        """Raise :class:`ModelError` naming the common field whose shape does not fit the world."""
        self._check_layout(state)
        w = self.world
        for name, shape in (("vertex_v", (w.n_vertices, 3)), ("edge_ref_d1", (w.n_edges, 3)),
                            ("joint_ref_twist", (w.n_joints,))):
            got = getattr(state, name).shape
            if got != shape:
                raise ModelError(f"state.{name} must have shape {shape} for this world (got {got})")
        raise ModelError("the state's arrays do not fit this galpha simulator's layout")

    # ---- stepping ----------------------------------------------------------------------------
    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        """Advance ``state`` in place by ``nsteps`` generalized-alpha steps (GA paper, Algorithm 1),
        every rod in turn, in one compiled call (:func:`rodlab.galpha.batch.advance_rods`), the
        common fields left to their first read (module docstring); a
        failed Newton solve is retried in substeps (from Python), then raises
        :class:`rodlab.solvers.SimulationError` with the state as it was before the call (its LU
        factors excepted: left valid for what ``lu_meta`` says they were made for)."""
        if nsteps.__class__ is not int or nsteps < 0 or state.__class__ is not State:  # the checks' slow path
            self._check_steps(state, nsteps)
        if nsteps == 0:
            if self._common(state)[0].shape != self._shape_x:
                self._check_layout(state)
            return ok_report(0, 0.0)
        sv = state.solver  # _packed_state's test, inline
        if sv.__class__ is SolverFields and sv.intact and sv.layout is self.layout and state.method == "galpha":
            sfb, sib = sv.sfb, sv.sib
        else:
            sfb, sib = self._packed_state(state)
        if self._paper and not state.solver["step"].all():  # Algorithm 1's initial rates, in Python
            return self._advance_in_python(state, nsteps)
        bc = self._bc
        if bc is None:
            bc = self._boundary_rows(state.t, nsteps)
        t0 = perf_counter()
        arrays = state.deferred_by(self)  # the common fields left unwritten by the last call, if nobody read them
        if arrays is None:
            x, v, d1, theta, twist = (state.vertex_x, state.vertex_v, state.edge_ref_d1, state.edge_theta,
                                      state.joint_ref_twist)
        else:
            x, v, d1, theta, twist = (arrays["vertex_x"], arrays["vertex_v"], arrays["edge_ref_d1"], arrays["edge_theta"],
                                      arrays["joint_ref_twist"])
        failed = advance_rods(nsteps, 0, state.t, self._dt, sfb, sib, x, v, d1, theta, twist, bc, self._fb, self._ib, 0)
        if failed:
            return self._retry(state, nsteps, failed, bc, sfb, sib, t0)
        if arrays is None:
            state.defer(COMMON_FIELDS, partial(self._fill, sfb, sib), self)
        newton, residual, state.t = self._result.tolist()
        return step_report(nsteps, True, "ok", int(newton), 0, residual, perf_counter() - t0)

    def _boundary_rows(self, t: float, nsteps: int) -> np.ndarray:
        """(rods, nsteps, BC_SIZE): every rod's boundary rows for ``nsteps`` steps from ``t``."""
        bc = np.empty((self.world.n_rods, nsteps, BC_SIZE))
        for r, sol in enumerate(self.solvers):
            bc[r] = sol.boundary_rows(t, self._dt, nsteps)
        return bc

    def _retry(self, state: State, nsteps: int, failed: int, bc, sfb, sib, t0: float) -> StepReport:
        """Rod ``failed - 1`` stopped at a failed step in :func:`advance_rods`: that step again in
        substeps and the rod's other steps in Python (:meth:`GAlphaSolver.advance`), then the rods
        after it in the compiled call again; the same steps, in the same order, as a per-rod loop of
        :meth:`GAlphaSolver.advance`. A rod that fails even in substeps puts the state back (the
        snapshot of the call, or a one-step call of one rod, left unchanged by the solver) and raises.
        The common fields stay deferred (or as they were: a failed call does not write them)."""
        if failed < 0:
            self._layout_error(state)
        sv, dt, t_start = state.solver, self._dt, state.t
        common = self._common(state)
        newton, residual, t_end = self.layout.result.tolist()
        n_rods = len(self.solvers)
        while failed > 0:
            r = failed - 1
            sol = self.solvers[r]
            gs = self._views(state, r)
            it0, sub0 = sol.total_iterations, sol.substeps
            done, res = sol.failed_run(gs, dt)
            done, res = sol.finish_failed_run(gs, dt, nsteps, done, res, self.opts["substeps"])
            newton += sol.total_iterations - it0
            if not res.success:
                report = StepReport(0, False, res.message, int(newton), 0, res.residual, perf_counter() - t0)
                if nsteps > 1 or n_rods > 1:
                    state.t = t_start
                    self.layout.restore(common[0], sfb, sib)
                self._fail(state, None, report, f"rod {r}, step {done + 1} of this call: {res.message}")
            sv["step"][r] = gs.step
            sv["last_residual"][r] = res.residual
            sv["last_newton_iters"][r] = res.iterations
            sv["substeps"][r] += sol.substeps - sub0
            residual, t_end = max(residual, res.residual), gs.t
            # the rods after it (none: only the common fields are written)
            if r + 1 < n_rods:
                failed = advance_rods(nsteps, r + 1, t_start, dt, sfb, sib, *common, bc, self._fb, self._ib, 0)
                more, worst, t_end = self.layout.result.tolist()
                newton, residual = newton + more, max(residual, worst)
            else:
                failed = 0
        self._defer_common(state, sfb, sib)
        state.t = t_end
        return step_report(nsteps, True, "ok", int(newton), 0, residual, perf_counter() - t0)

    def _advance_in_python(self, state: State, nsteps: int) -> StepReport:
        """Every rod in turn through :meth:`GAlphaSolver.advance` (its first step with the paper's
        initial rates, ``init = "paper"``); a failure puts back what :meth:`_retry` puts back."""
        sv = state.solver
        snapshot = None if (nsteps == 1 and len(self.solvers) == 1) else (
            state.t, self._common(state)[0].copy(), {k: sv[k].copy() for k in STATE_KEYS[:8]})
        t0 = perf_counter()
        newton, residual, t_end = 0, 0.0, state.t
        for r, sol in enumerate(self.solvers):
            gs = self._views(state, r)
            it0, sub0 = sol.total_iterations, sol.substeps
            done, res = sol.advance(gs, self._dt, nsteps, self.opts["substeps"])
            newton += sol.total_iterations - it0
            if not res.success:
                report = StepReport(0, False, res.message, newton, 0, res.residual, perf_counter() - t0)
                if snapshot is not None:
                    state.t = snapshot[0]
                    self._common(state)[0][...] = snapshot[1]
                    for key, a in snapshot[2].items():
                        sv[key][...] = a
                self._fail(state, None, report, f"rod {r}, step {done + 1} of this call: {res.message}")
            residual = max(residual, res.residual)
            sv["step"][r] = gs.step
            sv["last_residual"][r] = res.residual
            sv["last_newton_iters"][r] = res.iterations
            sv["substeps"][r] += sol.substeps - sub0
            t_end = gs.t
        state.t = t_end
        self._write_common(state, *self._packed_state(state))
        return step_report(nsteps, True, "ok", newton, 0, residual, perf_counter() - t0)

    def solve_static(self, state: State) -> StaticReport:
        """Static equilibrium under gravity and tip forces: the same residual with the inertia
        dropped, Newton with load continuation (needs a clamped root and a free or loaded tip)."""
        self._check_layout(state)
        for r, sol in enumerate(self.solvers):
            if sol.boundary.root_kind != 0 or not isinstance(sol.boundary.tip_at(state.t), TipLoad):
                raise UnsupportedFeature(f"method galpha solves statics only for a clamped root and a free (or loaded) "
                                         f"tip; rod {r} has {type(sol.boundary.root).__name__} and "
                                         f"{type(sol.boundary.tip_at(state.t)).__name__}")
        views = [self._views(state, r) for r in range(self.world.n_rods)]
        snapshot = state.copy()
        t0 = time.perf_counter()
        iters, residual = 0, 0.0
        w = self.world
        for r, (sol, gs) in enumerate(zip(self.solvers, views)):
            new, res = sol.solve_static(gs, load_steps=self.opts["static_load_steps"])
            iters += res.iterations
            residual = max(residual, res.residual)
            if not res.success:
                report = StaticReport(False, f"rod {r}: {res.message}", iters, residual, time.perf_counter() - t0)
                self._fail(state, snapshot, report, f"static solve of rod {r} failed: {res.message}")
            vs = w.rod_vertices(r)
            state.solver["x"][vs] = new.x
            state.solver["xdot"][vs] = 0.0
            state.solver["R"][vs] = new.R
            state.solver["r_vel"][vs] = new.r_vel
            state.solver["step"][r] = 0
            state.solver["last_residual"][r] = res.residual
            state.solver["last_newton_iters"][r] = res.iterations
            state.vertex_x[vs] = new.r
        self._write_common(state, *self._packed_state(state))
        return StaticReport(True, "converged", iters, residual, time.perf_counter() - t0)

    def energies(self, state: State) -> dict:
        """The Cosserat rod's ``kinetic`` (translational and rotational, ``1/2 int rhoA |u|^2 +
        omega^T J omega ds``), ``elastic``, ``gravity`` (potential, zero at the origin) energies and
        their ``total`` [J], trapezoid rule in s over every rod (:func:`rodlab.galpha.state.energies`).
        End loads' work is not in ``total``."""
        kinetic = elastic = gravity = 0.0
        for r, sol in enumerate(self.solvers):
            gs = self._views(state, r)
            m = sol.model
            k, e, g = _energies(np.ascontiguousarray(gs.x), np.ascontiguousarray(gs.r), sol._khat, sol._K, sol._J,
                               m.rhoA, np.ascontiguousarray(m.gravity), m.ds)
            kinetic, elastic, gravity = kinetic + float(k), elastic + float(e), gravity + float(g)
        return {"kinetic": kinetic, "elastic": elastic, "gravity": gravity, "total": kinetic + elastic + gravity}

    def elastic_energy(self, state: State) -> float:
        """Bending and twisting energy ``1/2 int (kappa - kappa_hat)^T K (kappa - kappa_hat) ds``
        (trapezoid rule) of every rod [J]."""
        total = 0.0
        for r, sol in enumerate(self.solvers):
            gs = self._views(state, r)
            m = sol.model
            total += float(_energies(np.ascontiguousarray(gs.x), np.ascontiguousarray(gs.r), sol._khat, sol._K, sol._J,
                                    m.rhoA, np.ascontiguousarray(m.gravity), m.ds)[1])
        return total


__all__ = ["ClampKinematics", "GAlphaSimulator", "edge_d1_from_nodes", "galpha_rod_of", "rest_geometry", "rest_polyline"]
