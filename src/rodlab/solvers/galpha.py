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
rates, ``R`` (N, 3, 3) node frames, ``r_vel`` (N, 3) positions integrated from the velocities, and
``step`` (R,) steps taken per rod (the first is backward Euler). ``vertex_x`` are the positions
integrated along the frames (as the first-wave driver reports them); they differ from ``r_vel``
(integrated in time from the velocities, which keeps a held tip exactly in place) by the scheme's
O(ds^2) drift.

The solver's chord-Newton reuse of LU factors (``reuse_jacobian``) is restarted at every
``advance`` call, so a call's result depends only on the state (not on earlier calls); splitting
a run into calls changes it at the Newton tolerance.
"""
from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from ..galpha.boundary import Boundary, RootMotion, RootPin, TipLoad, TipMotion, TipPin
from ..galpha.model import Coefficients, GAlphaRod
from ..galpha.solver import GAlphaOptions, GAlphaSolver
from ..galpha.state import GAlphaState, _cayley, _expm, energies
from ..geometry.curves import reference_twist
from ..geometry.rotations import matrix_to_quat, quat_to_matrix
from ..model import ModelError, require
from ..world import State
from .base import Simulator, StaticReport, StepReport, UnsupportedFeature

JIT = dict(cache=True, error_model="numpy")
FEATURES = frozenset({"pinned vertices", "point forces"})
_NV = 15


# ---------------------------------------------------------------------------------------------
# rest geometry and frames
# ---------------------------------------------------------------------------------------------
def _quat(R: np.ndarray) -> np.ndarray:
    q = np.asarray(matrix_to_quat(np.ascontiguousarray(R)))
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
    (_cayley if cayley else _expm)(w0[0], w0[1], w0[2], M)
    H = np.asarray(quat_to_matrix(_half(_quat(M))))
    return ds, kh, F[0] @ H.T


@njit(**JIT)
def edge_d1_from_nodes(R, x, out):
    """Edge directors (n-1, 3): d1 of the node frame ``R[j]`` turned by half of ``R[j]^T R[j+1]``,
    made orthogonal to the chord ``x[j+1] - x[j]`` and normalized."""
    Q = np.empty((3, 3))
    h = np.empty(4)
    for j in range(R.shape[0] - 1):
        for a in range(3):
            for b in range(3):
                Q[a, b] = R[j, 0, a] * R[j + 1, 0, b] + R[j, 1, a] * R[j + 1, 1, b] + R[j, 2, a] * R[j + 1, 2, b]
        q = matrix_to_quat(Q)
        sgn = 1.0 if q[0] >= 0.0 else -1.0
        h[0] = 1.0 + sgn * q[0]
        h[1] = sgn * q[1]
        h[2] = sgn * q[2]
        h[3] = sgn * q[3]
        nh = math.sqrt(h[0] ** 2 + h[1] ** 2 + h[2] ** 2 + h[3] ** 2)
        for c in range(4):
            h[c] /= nh
        H = quat_to_matrix(h)
        t0 = x[j + 1, 0] - x[j, 0]
        t1 = x[j + 1, 1] - x[j, 1]
        t2 = x[j + 1, 2] - x[j, 2]
        lt = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
        t0, t1, t2 = t0 / lt, t1 / lt, t2 / lt
        d = np.empty(3)
        for a in range(3):
            d[a] = R[j, a, 0] * H[0, 0] + R[j, a, 1] * H[1, 0] + R[j, a, 2] * H[2, 0]
        dt = d[0] * t0 + d[1] * t1 + d[2] * t2
        d[0] -= dt * t0
        d[1] -= dt * t1
        d[2] -= dt * t2
        nd = math.sqrt(d[0] ** 2 + d[1] ** 2 + d[2] ** 2)
        for a in range(3):
            out[j, a] = d[a] / nd


def galpha_rod_of(world, r: int, orientation: str = "cayley") -> tuple[GAlphaRod, Boundary]:
    """Rod ``r`` of ``world`` as a :class:`GAlphaRod` and its :class:`Boundary` (module docstring);
    raises :class:`UnsupportedFeature` naming what does not map."""
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
    if 0 in clamps:
        root = RootMotion()
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
    if last in clamps:
        tip = TipMotion()
    elif nv - 1 in pins:
        tip = TipPin()
    else:
        tip = TipLoad(force=(lambda t, fs=forces: np.sum([f.at(t) for f in fs], axis=0)) if forces else (0.0, 0.0, 0.0))
    if forces and not isinstance(tip, TipLoad):
        raise UnsupportedFeature(f"method galpha does not support a point force on the held tip of rod {r}")
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

    Options: ``dt`` [s] (default 0.01); ``rho_inf`` (spectral radius at infinity of the time
    scheme, Chung-Hulbert; 0.5) and ``rho_inf_space`` (1: the box scheme); ``tol`` (row-scaled
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
    options = {"rho_inf": 0.5, "rho_inf_space": 1.0, "tol": 1e-8, "max_iter": 40, "relaxation": 1.0,
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
        gopts = GAlphaOptions(time=Coefficients.from_rho_inf(float(o["rho_inf"])),
                              space=Coefficients.from_rho_inf(float(o["rho_inf_space"])), tol=float(o["tol"]),
                              max_iter=int(o["max_iter"]), relaxation=float(o["relaxation"]), adaptive=bool(o["adaptive"]),
                              min_relaxation=float(o["min_relaxation"]), init=o["init"], orientation=o["orientation"],
                              reuse_jacobian=bool(o["reuse_jacobian"]), exact_end_loads=bool(o["exact_end_loads"]),
                              constraints_at_new_time=bool(o["constraints_at_new_time"]), reuse_ratio=float(o["reuse_ratio"]))
        self.solvers = []
        for r in range(w.n_rods):
            model, boundary = galpha_rod_of(w, r, gopts.orientation)
            self.solvers.append(GAlphaSolver(model, boundary, gopts))

    # ---- state -------------------------------------------------------------------------------
    def initial_state(self) -> State:
        w = self.world
        state = State.zeros_for(w)
        N = w.n_vertices
        state.solver = {"x": np.zeros((N, _NV)), "xdot": np.zeros((N, _NV)), "R": np.zeros((N, 3, 3)),
                        "r_vel": np.zeros((N, 3)), "step": np.zeros(w.n_rods, dtype=np.int64)}
        state.method = self.method
        for r, sol in enumerate(self.solvers):
            gs = sol.initial_state()
            vs = w.rod_vertices(r)
            for key, value in (("x", gs.x), ("xdot", gs.xdot), ("R", gs.R), ("r_vel", gs.r_vel)):
                state.solver[key][vs] = value
            state.vertex_x[vs] = gs.r
        self._write_common(state)
        return state

    def _views(self, state: State, r: int) -> GAlphaState:
        w = self.world
        if state.method != self.method:
            raise ModelError(f"method galpha starts only from a galpha state (this one is {state.method or 'unset'!r}); "
                             f"use GAlphaSimulator.initial_state()")
        sv, N = state.solver, w.n_vertices
        for key, shape in (("x", (N, _NV)), ("xdot", (N, _NV)), ("R", (N, 3, 3)), ("r_vel", (N, 3)), ("step", (w.n_rods,))):
            a = sv.get(key)
            if a is None or a.shape != shape:
                raise ModelError(f"state.solver[{key!r}] of a galpha state must have shape {shape} "
                                 f"(got {None if a is None else a.shape})")
        vs = w.rod_vertices(r)
        return GAlphaState(state.t, sv["x"][vs], sv["xdot"][vs], sv["R"][vs], state.vertex_x[vs], sv["r_vel"][vs],
                           int(sv["step"][r]))

    def _write_common(self, state: State) -> None:
        w, sv = self.world, state.solver
        for r in range(w.n_rods):
            vs, es, js = w.rod_vertices(r), w.rod_edges(r), w.rod_joints(r)
            R, x = np.ascontiguousarray(sv["R"][vs]), np.ascontiguousarray(state.vertex_x[vs])
            d1 = np.empty((es.stop - es.start, 3))
            edge_d1_from_nodes(R, x, d1)
            state.edge_ref_d1[es] = d1
            state.edge_theta[es] = 0.0
            e = np.diff(x, axis=0)
            t = np.ascontiguousarray(e / np.linalg.norm(e, axis=1)[:, None])
            tw = np.empty(js.stop - js.start)
            reference_twist(t, d1, False, np.ascontiguousarray(state.joint_ref_twist[js]), tw)
            state.joint_ref_twist[js] = tw
            state.vertex_v[vs] = np.einsum("jab,jb->ja", R, sv["x"][vs, 0:3])

    # ---- stepping ----------------------------------------------------------------------------
    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        """Advance ``state`` in place by ``nsteps`` generalized-alpha steps (GA paper, Algorithm 1),
        every rod in turn; a failed Newton solve is retried in substeps, then raises
        :class:`rodlab.solvers.SimulationError` with the state as it was before the call."""
        self._check_steps(state, nsteps)
        self._check_layout(state)
        if nsteps == 0:
            return StepReport(0)
        views = [self._views(state, r) for r in range(self.world.n_rods)]
        snapshot = state.copy()
        t0 = time.perf_counter()
        newton, residual, t_end = 0, 0.0, state.t
        for r, (sol, gs) in enumerate(zip(self.solvers, views)):
            sol._fact_key = None  # no LU factors carried over from an earlier call (module docstring)
            it0 = sol.total_iterations
            for k in range(nsteps):
                res = sol.step_robust(gs, self._dt, self.opts["substeps"])
                if not res.success:
                    report = StepReport(0, False, res.message, newton + sol.total_iterations - it0, 0, res.residual,
                                        time.perf_counter() - t0)
                    self._fail(state, snapshot, report, f"rod {r}, step {k + 1} of this call: {res.message}")
                residual = max(residual, res.residual) if k == nsteps - 1 else residual
            newton += sol.total_iterations - it0
            state.solver["step"][r] = gs.step
            t_end = gs.t
        state.t = t_end
        self._write_common(state)
        return StepReport(nsteps, True, "ok", newton, 0, residual, time.perf_counter() - t0)

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
            state.vertex_x[vs] = new.r
        self._write_common(state)
        return StaticReport(True, "converged", iters, residual, time.perf_counter() - t0)

    def elastic_energy(self, state: State) -> float:
        """Bending and twisting energy ``1/2 int (kappa - kappa_hat)^T K (kappa - kappa_hat) ds``
        (trapezoid rule) of every rod [J]."""
        total = 0.0
        for r, sol in enumerate(self.solvers):
            gs = self._views(state, r)
            m = sol.model
            total += float(energies(np.ascontiguousarray(gs.x), np.ascontiguousarray(gs.r), sol._khat, sol._K, sol._J,
                                    m.rhoA, np.ascontiguousarray(m.gravity), m.ds)[1])
        return total


__all__ = ["GAlphaSimulator", "edge_d1_from_nodes", "galpha_rod_of", "rest_geometry"]
