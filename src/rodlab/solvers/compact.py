"""``compact``: compact inextensible Cosserat rods (Zhao et al., "Compact inextensible Cosserat
rods", SQP implicit Euler) on a whole world.

Each rod is a root position plus one axis-angle per segment (Zhao et al., Sec. 2.1); a time step
minimizes the implicit-Euler objective (Eq. 8a) by SQP with O(n) products and PCG (Alg. 1), through
the compiled kernels of :mod:`rodlab.compact.sqp`. One compiled call (:func:`advance_rods`) loops
the steps of an ``advance`` and, in parallel, the rods, over flat per-rod workspaces.

Boundary conditions are Dirichlet conditions on the compact coordinates: a clamp of a rod's first
edge holds the root position and the rotation of segment 0, a pin of vertex 0 the root position.
Anything else (clamps or pins away from the root, prescribed or sliding clamps, closed rods,
contacts, point forces, wind) is refused by name.

State layout (``state.method == "compact"``): ``vertex_x``/``vertex_v`` are the chain's positions
``p`` and velocities ``v``; ``state.solver`` holds ``s`` (N, 3) (per rod: root position, then the
axis-angles ``w_i`` relative to ``qref``, zero after every step), ``qref`` and ``q`` (E, 4) segment
quaternions (w, x, y, z) and ``omega`` (E, 3) body-frame angular velocities [rad/s]. The common
frame fields are written after every call: ``edge_ref_d1`` = the first director of ``q`` (m1),
``edge_theta = 0``, ``joint_ref_twist`` from those frames.
"""
from __future__ import annotations

import math
import time

import numpy as np
from numba import njit, prange

from ..compact.chain import chain_forward, frames_from_polyline, recenter
from ..compact.energies import darboux, eval_energy
from ..compact.pcg import PRECONDITIONERS
from ..compact.sqp import CompactModel, finish_step, predict_start, sqp_solve
from ..geometry.curves import parallel_transport_into, signed_angle, unwrap_near
from ..model import DAMPING_SCHEMES, ModelError, require
from ..world import State
from .base import Simulator, StaticReport, StepReport, UnsupportedFeature

JIT = dict(cache=True, error_model="numpy")
FEATURES = frozenset({"pinned vertices", "anisotropic bending", "rods given by stiffness"})
PRECONDS = ("none", "diagonal", "block-diagonal", "hybrid")
_SOLVER_KEYS = ("s", "qref", "q", "omega")


# ---------------------------------------------------------------------------------------------
# the world's rods as compact models
# ---------------------------------------------------------------------------------------------
def compact_model_of(world, r: int) -> CompactModel:
    """Rod ``r`` of ``world`` as a :class:`rodlab.compact.CompactModel`.

    Rest polyline and rest frames (``rods[r].rest_d1`` as d1, the segment as d3); rest Darboux
    vectors from the rest frames. A rod with a circular material (``world.rod_material[r]``) gets
    masses, segment inertia ``Jr = rho l (I, I, 2I)`` and hinge stiffness ``(EI, EI, G 2I)`` exactly
    as :meth:`CompactModel.from_polyline` computes them. A rod given by stiffness gets the lumped
    vertex masses of the rod and per hinge the mean of its two edges' stiffness, ``Kh = (EI_1,
    EI_2, GJ)`` with ``EI_1`` resisting rotation about d1 = m1 (the world's
    ``bending_stiffness[:, 1]``) and ``EI_2`` about m2 (``bending_stiffness[:, 0]``); its segment
    inertia ``Jr = lambda l (r^2/4, r^2/4, r^2/2)`` treats the section as a circle of the rod's
    ``radius`` (0.01 m unless the rod was given one: it only sets this rotational inertia).
    """
    rod = world.rods[r]
    p = np.ascontiguousarray(rod.rest_positions, dtype=float)
    require(rod.n_vertices >= 3, f"method compact needs rods of at least 3 vertices (rod {r} has {rod.n_vertices})")
    lengths = np.ascontiguousarray(rod.rest_lengths)
    q = frames_from_polyline(p, rod.rest_d1)
    lbar = 0.5 * (lengths[:-1] + lengths[1:])
    mat = world.rod_material[r]
    if mat is not None:
        # a circular material rod: the formulas of CompactModel.from_polyline, operation for
        # operation, so a world rod steps bit for bit like the first-wave drivers' models
        area = math.pi * mat.radius**2
        inertia = math.pi * mat.radius**4 / 4.0
        seg_mass = mat.rho * area * lengths
        masses = np.zeros(len(lengths) + 1)
        masses[:-1] += 0.5 * seg_mass
        masses[1:] += 0.5 * seg_mass
        Jr = mat.rho * lengths[:, None] * np.array([inertia, inertia, 2 * inertia])[None, :]
        Kh = np.tile([mat.E * inertia, mat.E * inertia, mat.G * 2 * inertia], (len(lbar), 1))
        E, G, rho = mat.E, mat.G, mat.rho
    else:
        lam = np.asarray(rod.linear_density, dtype=float)
        rad2 = float(rod.radius) ** 2
        masses = rod.vertex_masses
        Jr = (lam * lengths)[:, None] * np.array([0.25 * rad2, 0.25 * rad2, 0.5 * rad2])[None, :]
        B = np.asarray(rod.bending_stiffness, dtype=float)
        T = np.asarray(rod.twisting_stiffness, dtype=float)
        edge_k = np.stack([B[:, 1], B[:, 0], T], axis=1)
        Kh = 0.5 * (edge_k[:-1] + edge_k[1:])
        E, G, rho = float(B.max()), float(T.max()), float(lam.max())
    ubar = np.empty((len(lbar), 3))
    darboux(q, lbar, ubar)
    arrs = [np.ascontiguousarray(a, dtype=float) for a in (lengths, masses, Jr, lbar, Kh, ubar, p, q)]
    for a in arrs:
        a.setflags(write=False)
    return CompactModel(*arrs, radius=float(rod.radius), E=float(E), G=float(G), rho=float(rho))


def dirichlet_mask(world, r: int) -> np.ndarray:
    """Coordinates of ``s`` (n, 3) held fixed for rod ``r``: clamp of edge 0 -> root position and
    segment-0 rotation; pin of vertex 0 -> root position. Raises :class:`UnsupportedFeature` for
    every other clamp or pin."""
    rod = world.rods[r]
    fixed = np.zeros((rod.n_vertices, 3), dtype=bool)
    for edge in rod.clamped_edges():
        if edge != 0:
            raise UnsupportedFeature(f"method compact does not support a clamp of edge {edge} of rod {r} "
                                     f"(only the first edge, its root, can be clamped)")
        fixed[0] = fixed[1] = True
    for vertex in rod.boundary.fixed_vertices:
        if vertex % rod.n_vertices != 0:
            raise UnsupportedFeature(f"method compact does not support a pin of vertex {vertex} of rod {r} "
                                     f"(only vertex 0, its root, can be pinned)")
        fixed[0] = True
    return fixed


# ---------------------------------------------------------------------------------------------
# compiled driver: steps x rods
# ---------------------------------------------------------------------------------------------
@njit(**JIT)
def _copy_rows(src, dst):
    a = src.reshape(-1)
    b = dst.reshape(-1)
    for i in range(a.shape[0]):
        b[i] = a[i]


@njit(parallel=True, **JIT)
def advance_rods(nsteps, dt, static, vstart, estart, jstart, s, qref, q, p, v, omega,
                 lengths, masses, Jr, lbar, Kh, ubar, free, gravity, tol, a_in, a_d, decay, iopt, fopt,
                 p_t, q_t, p_pred, th_pred, s_bk, qref_bk, q_bk, p_bk, v_bk, om_bk,
                 wp, wq, Dj, Qj, gp, gq, Hp, Hqd, Hqo, b, ds, s_try, diag, off, sinv, W, suffix, Bd, Bo, A, L,
                 r, zz, d, Ad, tv, tp, y, G, comps, stats, totals, failed):
    """``nsteps`` implicit-Euler steps (``static``: one static solve, inertia dropped) of every rod.

    Per step and rod, in parallel over rods: back up the rod, start from the constant-velocity
    prediction (:func:`rodlab.compact.sqp.predict_start`), solve the step by SQP
    (:func:`rodlab.compact.sqp.sqp_solve`, Zhao et al., Alg. 1), then velocities and re-centering
    (:func:`rodlab.compact.sqp.finish_step`) and the exponential damping factor ``decay``. Arrays are
    flat over rods, rod ``k``'s rows at ``vstart`` (vertices), ``estart`` (edges), ``jstart``
    (hinges). ``iopt`` = (preconditioner kind, max Newton iterations, PCG max iterations,
    line-search steps, tension stiffness, re-center every iteration, warm start); ``fopt`` =
    (PCG rtol, PCG atol); ``tol`` (R,) Newton tolerance per rod. If any rod's step is not finite,
    every rod is put back to the previous step and the number of steps done is returned (else
    ``nsteps``). ``totals`` (R, 4) accumulates Newton iterations, PCG iterations, linear solves and
    steps that stopped on a PCG or line-search failure; ``stats`` (R, 8) holds the last step's.
    """
    nr = vstart.shape[0] - 1
    kind = iopt[0]
    max_newton = iopt[1]
    pcg_maxiter = iopt[2]
    ls_steps = iopt[3]
    use_g = iopt[4] != 0
    recenter_each = iopt[5] != 0
    warm = iopt[6] != 0
    pcg_rtol = fopt[0]
    pcg_atol = fopt[1]
    for k in range(nsteps):
        for ri in prange(nr):
            v0, v1 = vstart[ri], vstart[ri + 1]
            e0, e1 = estart[ri], estart[ri + 1]
            h0, h1 = jstart[ri], jstart[ri + 1]
            sr, qrefr, qr = s[v0:v1], qref[e0:e1], q[e0:e1]
            pr, vr, omr = p[v0:v1], v[v0:v1], omega[e0:e1]
            _copy_rows(sr, s_bk[v0:v1])
            _copy_rows(qrefr, qref_bk[e0:e1])
            _copy_rows(qr, q_bk[e0:e1])
            _copy_rows(pr, p_bk[v0:v1])
            _copy_rows(vr, v_bk[v0:v1])
            _copy_rows(omr, om_bk[e0:e1])
            ptr, qtr, ppr, thr = p_t[v0:v1], q_t[e0:e1], p_pred[v0:v1], th_pred[e0:e1]
            _copy_rows(pr, ptr)
            _copy_rows(qr, qtr)
            for j in range(v1 - v0):
                for c in range(3):
                    ppr[j, c] = vr[j, c] * dt + ptr[j, c]
            for i in range(e1 - e0):
                for c in range(3):
                    thr[i, c] = omr[i, c] * dt
            fr = free[v0:v1]
            if warm and not static:
                predict_start(sr, qr, vr, omr, dt, fr)
            wpr, wqr = wp[v0:v1], wq[e0:e1]
            sqp_solve(sr, lengths[e0:e1], qrefr, fr, ppr, ptr, qtr, thr, masses[v0:v1], Jr[e0:e1], lbar[h0:h1],
                      Kh[h0:h1], ubar[h0:h1], gravity, a_in, a_d, kind, max_newton, tol[ri], pcg_rtol, pcg_atol,
                      pcg_maxiter, ls_steps, G[v0:v1], use_g, recenter_each,
                      wpr, wqr, Dj[e0:e1], Qj[e0:e1], gp[v0:v1], gq[e0:e1], Hp[v0:v1], Hqd[e0:e1], Hqo[h0:h1],
                      b[v0:v1], ds[v0:v1], s_try[v0:v1], diag[v0:v1], off[e0:e1], sinv[v0:v1], W[e0:e1],
                      suffix[v0:v1], Bd[v0:v1], Bo[e0:e1], A, L, r[v0:v1], zz[v0:v1], d[v0:v1], Ad[v0:v1],
                      tv[v0:v1], tp[v0:v1], y[v0:v1], comps[ri], stats[ri])
            finite = True
            for j in range(v1 - v0):
                for c in range(3):
                    if not math.isfinite(wpr[j, c]):
                        finite = False
            failed[ri] = 0 if finite else 1
            if not finite:
                continue
            _copy_rows(wpr, pr)
            _copy_rows(wqr, qr)
            if static:
                vr[:, :] = 0.0
                omr[:, :] = 0.0
                recenter(qr, qrefr, sr)
            else:
                finish_step(sr, qrefr, pr, qr, ptr, qtr, vr, omr, dt)
                if decay != 1.0:
                    for j in range(v1 - v0):
                        for c in range(3):
                            vr[j, c] *= decay
                    for i in range(e1 - e0):
                        for c in range(3):
                            omr[i, c] *= decay
        bad = False
        for ri in range(nr):
            if failed[ri] != 0:
                bad = True
        if bad:
            _copy_rows(s_bk, s)
            _copy_rows(qref_bk, qref)
            _copy_rows(q_bk, q)
            _copy_rows(p_bk, p)
            _copy_rows(v_bk, v)
            _copy_rows(om_bk, omega)
            return k
        for ri in range(nr):
            totals[ri, 0] += stats[ri, 0]
            totals[ri, 1] += stats[ri, 1]
            totals[ri, 2] += stats[ri, 2]
            if stats[ri, 6] != 0.0 or stats[ri, 7] != 0.0:
                totals[ri, 3] += 1.0
    return nsteps


@njit(**JIT)
def write_frames(vstart, estart, jstart, p, q, ref_d1, theta, ref_twist):
    """Common frame fields of every open rod from its segment quaternions: ``ref_d1`` = first
    director of ``q`` (m1), ``theta = 0``, ``ref_twist`` the reference twist of those frames
    (Bergou et al. 2008, Sec. 6), unwrapped against its previous value."""
    nr = vstart.shape[0] - 1
    t = np.empty((q.shape[0], 3))
    tmp = np.empty(3)
    for ri in range(nr):
        v0 = vstart[ri]
        for i in range(estart[ri], estart[ri + 1]):
            w, x, yq, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
            nq = w * w + x * x + yq * yq + z * z
            ref_d1[i, 0] = (nq - 2.0 * (yq * yq + z * z)) / nq
            ref_d1[i, 1] = 2.0 * (x * yq + w * z) / nq
            ref_d1[i, 2] = 2.0 * (x * z - w * yq) / nq
            theta[i] = 0.0
            j = v0 + i - estart[ri]
            e0 = p[j + 1, 0] - p[j, 0]
            e1 = p[j + 1, 1] - p[j, 1]
            e2 = p[j + 1, 2] - p[j, 2]
            le = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
            t[i, 0], t[i, 1], t[i, 2] = e0 / le, e1 / le, e2 / le
        e = estart[ri]
        for h in range(jstart[ri], jstart[ri + 1]):
            parallel_transport_into(t[e], t[e + 1], ref_d1[e], tmp)
            ref_twist[h] = unwrap_near(signed_angle(tmp, ref_d1[e + 1], t[e + 1]), ref_twist[h])
            e += 1


# ---------------------------------------------------------------------------------------------
# the simulator
# ---------------------------------------------------------------------------------------------
class CompactSimulator(Simulator):
    """Compact inextensible Cosserat rods of Zhao et al. on a world (module docstring).

    Options: ``dt`` [s] (default 0.01); ``newton_iters`` (SQP iterations per step at most; 5, Zhao
    et al., Sec. 4); ``tol`` (stop when ``|b|_2`` < tol, 1e-5); ``precond`` (none, diagonal,
    block-diagonal, hybrid: the paper's block-tridiagonal hybrid, default); ``pcg_rtol``,
    ``pcg_atol`` (PCG stops at ``|r| <= max(atol, rtol |rhs|)``; 0 and 1e-7 as in the paper),
    ``pcg_maxiter``, ``line_search_steps``; ``tension_stiffness`` (add the PSD tension part of the
    term Eq. 12 drops; off, as in the paper); ``recenter_every_iteration``; ``warm_start`` (start
    Newton from the constant-velocity prediction); ``damping_scheme`` (implicit or exponential,
    docs/damping.md); ``static_newton_iters`` (300) and ``static_rtol`` (1e-9: the static solve
    stops at ``|b| < static_rtol max(1e-6, M |g| L)`` per rod, or ``mean(GJ, EI)/L`` scale without
    gravity).

    A step whose SQP stops on a PCG or line-search failure is kept (as the first-wave drivers did)
    and reported (``StepReport.success`` false, ``message``); a non-finite step raises
    :class:`rodlab.solvers.SimulationError` with every rod back at the last good step.
    """

    method = "compact"
    supports = FEATURES
    options = {"newton_iters": 5, "tol": 1e-5, "precond": "hybrid", "pcg_rtol": 0.0, "pcg_atol": 1e-7,
               "pcg_maxiter": 2000, "line_search_steps": 30, "tension_stiffness": False,
               "recenter_every_iteration": False, "warm_start": True, "damping_scheme": "implicit",
               "static_newton_iters": 300, "static_rtol": 1e-9}

    def _setup(self, dt):
        w, o = self.world, self.opts
        self._dt = float(dt) if dt is not None else 0.01
        require(o["precond"] in PRECONDS, f"precond must be one of {', '.join(PRECONDS)} (got {o['precond']!r})")
        for name in ("newton_iters", "pcg_maxiter", "line_search_steps", "static_newton_iters"):
            require(isinstance(o[name], (int, np.integer)) and not isinstance(o[name], bool) and o[name] >= 1,
                    f"{name} must be an integer >= 1 (got {o[name]!r})")
        for name, positive in (("tol", True), ("static_rtol", True), ("pcg_rtol", False), ("pcg_atol", False)):
            val = o[name]
            ok = isinstance(val, (int, float)) and math.isfinite(val) and (val > 0 if positive else val >= 0)
            require(ok, f"{name} must be {'> 0' if positive else '>= 0'} (got {val!r})")
        require(o["damping_scheme"] in DAMPING_SCHEMES,
                f"damping_scheme must be one of {', '.join(DAMPING_SCHEMES)} (got {o['damping_scheme']!r})")
        self.models = [compact_model_of(w, r) for r in range(w.n_rods)]
        free = np.ones((w.n_vertices, 3))
        for r in range(w.n_rods):
            free[w.rod_vertices(r)][dirichlet_mask(w, r)] = 0.0
        self._vstart = np.ascontiguousarray(w.rod_vertex_start, dtype=np.int64)
        self._estart = np.ascontiguousarray(w.rod_edge_start, dtype=np.int64)
        self._jstart = np.ascontiguousarray(w.rod_joint_start, dtype=np.int64)
        cat = lambda name: np.ascontiguousarray(np.concatenate([getattr(m, name) for m in self.models]))
        self._lengths, self._masses, self._Jr = cat("lengths"), cat("masses"), cat("Jr")
        self._lbar, self._Kh, self._ubar = cat("lbar"), cat("Kh"), cat("ubar")
        self._free = free
        self._gravity = np.asarray(w.loads.gravity, dtype=float)
        self._damping = float(w.loads.damping)
        self._tol = np.full(w.n_rods, float(o["tol"]))
        g = float(np.linalg.norm(self._gravity))
        scale = np.array([float(m.masses.sum()) * g * float(m.lengths.sum()) if g > 0
                          else float(m.Kh.mean()) / float(m.lengths.sum()) for m in self.models])
        self._static_tol = float(o["static_rtol"]) * np.maximum(1e-6, scale)
        self._iopt = np.array([PRECONDITIONERS[o["precond"]], o["newton_iters"], o["pcg_maxiter"], o["line_search_steps"],
                               int(bool(o["tension_stiffness"])), int(bool(o["recenter_every_iteration"])),
                               int(bool(o["warm_start"]))], dtype=np.int64)
        self._static_iopt = self._iopt.copy()
        self._static_iopt[1] = o["static_newton_iters"]
        self._static_iopt[4] = 1  # the tension stiffness and re-centering of the first-wave static solve
        self._static_iopt[5] = 1
        self._static_iopt[6] = 0
        self._fopt = np.array([float(o["pcg_rtol"]), float(o["pcg_atol"])])
        self._static_fopt = np.array([1e-10, 0.0])
        N, E, J, R = w.n_vertices, w.n_edges, w.n_joints, w.n_rods
        z = np.zeros
        self._ws = dict(
            p_t=z((N, 3)), q_t=z((E, 4)), p_pred=z((N, 3)), th_pred=z((E, 3)), s_bk=z((N, 3)), qref_bk=z((E, 4)),
            q_bk=z((E, 4)), p_bk=z((N, 3)), v_bk=z((N, 3)), om_bk=z((E, 3)),
            wp=z((N, 3)), wq=z((E, 4)), Dj=z((E, 3, 3)), Qj=z((E, 4, 3)), gp=z((N, 3)), gq=z((E, 4)), Hp=z(N),
            Hqd=z((E, 4, 4)), Hqo=z((J, 4, 4)), b=z((N, 3)), ds=z((N, 3)), s_try=z((N, 3)), diag=z((N, 3, 3)),
            off=z((E, 3, 3)), sinv=z((N, 3, 3)), W=z((E, 3, 3)), suffix=z(N), Bd=z((N, 3, 3)), Bo=z((E, 3, 3)),
            A=z((1, 1)), L=z((1, 1)), r=z((N, 3)), zz=z((N, 3)), d=z((N, 3)), Ad=z((N, 3)), tv=z((N, 3)),
            tp=z((N, 3)), y=z((N, 3)), G=z((N, 3, 3)), comps=z((R, 4)), stats=z((R, 8)))
        self._totals = z((R, 4))
        self._failed = np.zeros(R, dtype=np.int64)

    # ---- state -------------------------------------------------------------------------------
    def initial_state(self) -> State:
        w = self.world
        state = State.zeros_for(w)
        s = np.zeros((w.n_vertices, 3))
        s[w.rod_vertex_start[:-1]] = w.vertex_rest_x[w.rod_vertex_start[:-1]]
        q = np.ascontiguousarray(np.concatenate([m.rest_q for m in self.models]))
        state.solver = {"s": s, "qref": q.copy(), "q": q, "omega": np.zeros((w.n_edges, 3))}
        state.method = self.method
        self._write_common(state)
        return state

    def _own(self, state: State) -> dict:
        """The compact unknowns of ``state``; a state of another method is converted from its common
        fields (positions, velocities, material frames; the segments' angular velocity from the
        tangents' rates, without spin about them)."""
        w = self.world
        shapes = {"s": (w.n_vertices, 3), "qref": (w.n_edges, 4), "q": (w.n_edges, 4), "omega": (w.n_edges, 3)}
        if state.method == self.method:
            for k, shape in shapes.items():
                a = state.solver.get(k)
                if a is None or a.shape != shape:
                    raise ModelError(f"state.solver[{k!r}] of a compact state must have shape {shape} "
                                     f"(got {None if a is None else a.shape})")
                if not (a.flags.c_contiguous and a.dtype == np.float64):
                    state.solver[k] = np.ascontiguousarray(a, dtype=np.float64)
        else:
            m1, _ = state.material_frames()
            s = np.zeros((w.n_vertices, 3))
            q = np.empty((w.n_edges, 4))
            omega = np.empty((w.n_edges, 3))
            for r, md in enumerate(self.models):
                x = np.array(state.rod_x(r))
                qr = frames_from_polyline(x, m1[w.rod_edges(r)])
                p = np.empty_like(x)
                chain_forward(np.vstack([x[:1], np.zeros((md.m, 3))]), md.lengths, qr, p, np.empty((md.m, 4)),
                              np.empty((md.m, 3, 3)), np.empty((md.m, 4, 3)), False)
                s[w.rod_vertex_start[r]] = x[0]
                state.rod_x(r)[...] = p
                e = np.diff(x, axis=0)
                t = e / np.linalg.norm(e, axis=1)[:, None]
                w_world = np.cross(t, np.diff(state.rod_v(r), axis=0)) / np.linalg.norm(e, axis=1)[:, None]
                R = _quat_matrices(qr)
                omega[w.rod_edges(r)] = np.einsum("kji,kj->ki", R, w_world)
                q[w.rod_edges(r)] = qr
            state.solver = {"s": s, "qref": q.copy(), "q": q, "omega": omega}
            state.method = self.method
        for name in ("vertex_x", "vertex_v"):
            a = getattr(state, name)
            require(a.flags.c_contiguous and a.dtype == np.float64, f"state.{name} must be a C-contiguous float64 array")
        return state.solver

    def _write_common(self, state: State) -> None:
        write_frames(self._vstart, self._estart, self._jstart, state.vertex_x, state.solver["q"], state.edge_ref_d1,
                     state.edge_theta, state.joint_ref_twist)

    # ---- stepping ----------------------------------------------------------------------------
    def _run(self, state: State, nsteps: int, static: bool) -> tuple[int, float]:
        sv = self._own(state)
        ws = self._ws
        self._totals[:] = 0.0
        dt = self._dt
        a_in = 0.0 if static else 1.0 / dt**2
        exponential = self.opts["damping_scheme"] == "exponential"
        a_d = 0.0 if (static or exponential) else self._damping / dt
        decay = math.exp(-self._damping * dt) if (exponential and self._damping > 0 and not static) else 1.0
        t0 = time.perf_counter()
        done = advance_rods(nsteps, dt, static, self._vstart, self._estart, self._jstart, sv["s"], sv["qref"], sv["q"],
                            state.vertex_x, state.vertex_v, sv["omega"], self._lengths, self._masses, self._Jr,
                            self._lbar, self._Kh, self._ubar, self._free, self._gravity,
                            self._static_tol if static else self._tol, a_in, a_d, decay,
                            self._static_iopt if static else self._iopt, self._static_fopt if static else self._fopt,
                            ws["p_t"], ws["q_t"], ws["p_pred"], ws["th_pred"], ws["s_bk"], ws["qref_bk"], ws["q_bk"],
                            ws["p_bk"], ws["v_bk"], ws["om_bk"], ws["wp"], ws["wq"], ws["Dj"], ws["Qj"], ws["gp"],
                            ws["gq"], ws["Hp"], ws["Hqd"], ws["Hqo"], ws["b"], ws["ds"], ws["s_try"], ws["diag"],
                            ws["off"], ws["sinv"], ws["W"], ws["suffix"], ws["Bd"], ws["Bo"], ws["A"], ws["L"],
                            ws["r"], ws["zz"], ws["d"], ws["Ad"], ws["tv"], ws["tp"], ws["y"], ws["G"], ws["comps"],
                            ws["stats"], self._totals, self._failed)
        wall = time.perf_counter() - t0
        if not static:
            for _ in range(done):
                state.t += dt
        self._write_common(state)
        return int(done), wall

    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        """Advance ``state`` in place by ``nsteps`` implicit-Euler steps (Zhao et al., Alg. 1)."""
        self._check_steps(state, nsteps)
        self._check_layout(state)
        done, wall = self._run(state, nsteps, False)
        tot = self._totals
        newton, linear = int(tot[:, 0].sum()), int(tot[:, 1].sum())
        residual = float(self._ws["stats"][:, 3].max()) if done > 0 else 0.0
        if done < nsteps:
            bad = [int(r) for r in np.nonzero(self._failed)[0]]
            report = StepReport(done, False, f"non-finite step of rod(s) {bad}", newton, linear, residual, wall)
            self._fail(state, None, report, f"step {done + 1} of this call is not finite (rod(s) {bad})")
        stalled = int(tot[:, 3].sum())
        msg = "ok" if stalled == 0 else f"{stalled} rod step(s) stopped on a PCG or line-search failure (kept)"
        return StepReport(done, stalled == 0, msg, newton, linear, residual, wall)

    def solve_static(self, state: State) -> StaticReport:
        """Static equilibrium under gravity (inertia dropped): SQP from the current state with the
        tension stiffness and re-centering after every iteration, PCG to 1e-10 relative."""
        self._check_layout(state)
        snapshot = state.copy()
        done, wall = self._run(state, 1, True)
        stats = self._ws["stats"]
        iters, residual = int(self._totals[:, 0].sum()), float(stats[:, 3].max())
        if done < 1:
            report = StaticReport(False, "non-finite iterate", iters, residual, wall)
            self._fail(state, snapshot, report, "static solve gave a non-finite state")
        bad = [r for r in range(self.world.n_rods) if stats[r, 4] == 0.0]
        if bad:
            why = "PCG failure" if np.any(stats[bad, 7]) else ("line search made no progress" if np.any(stats[bad, 6])
                                                                 else "Newton iteration limit reached")
            report = StaticReport(False, f"rod(s) {bad}: {why}", iters, residual, wall)
            self._fail(state, snapshot, report, f"static solve did not converge for rod(s) {bad} ({why})")
        return StaticReport(True, "converged", iters, residual, wall)

    def elastic_energy(self, state: State) -> float:
        """Bending and twisting energy (Zhao et al., Eq. 29) of every rod [J]."""
        sv = self._own(state)
        w = self.world
        total = 0.0
        for r, md in enumerate(self.models):
            vs, es = w.rod_vertices(r), w.rod_edges(r)
            n, m = md.n, md.m
            p, q = np.empty((n, 3)), np.empty((m, 4))
            chain_forward(np.ascontiguousarray(sv["s"][vs]), md.lengths, np.ascontiguousarray(sv["qref"][es]), p, q,
                          np.empty((m, 3, 3)), np.empty((m, 4, 3)), False)
            comps = np.zeros(4)
            eval_energy(p, q, p, p, q, np.zeros((m, 3)), md.masses, md.Jr, md.lbar, md.Kh, md.ubar, np.zeros(3), 0.0, 0.0,
                        np.empty((n, 3)), np.empty((m, 4)), np.empty(n), np.empty((m, 4, 4)), np.empty((m - 1, 4, 4)),
                        0, comps)
            total += float(comps[0])
        return total


def _quat_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (m, 3, 3) of unit quaternions (m, 4) (w, x, y, z)."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


__all__ = ["CompactSimulator", "advance_rods", "compact_model_of", "dirichlet_mask", "write_frames"]
