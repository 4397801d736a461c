"""Rod-rod and self contact for the compact rod: one SQP over every rod of a world, with the
edge-edge constraints of Zhao et al., "Compact inextensible Cosserat rods" (App. B, Eq. 32) in
the active set of Alg. 2, discrete detection at the start of each step and continuous detection
after it.

Unknowns are the compact coordinates ``s`` of every rod (root position + one axis-angle per
segment). The Hessian ``A`` of the implicit-Euler objective is block-diagonal over rods, so
``A^-1`` of a constraint gradient is one PCG solve per rod it touches (Zhao et al., Alg. 1, Eq. 14
Schur complement). Inequality rows:

* **edge-edge** (Eq. 32): segments ``a`` (vertices ``i, i+1``) and ``b`` (``j, j+1``) that are not
  neighbours along a rod (:mod:`rodlab.contact`),
  ``C = n . ((1 - wa) p_i + wa p_{i+1} - (1 - wb) p_j - wb p_{j+1}) - delta >= 0``
  with the closest-point parameters ``wa``, ``wb`` and unit normal ``n`` (from b toward a) fixed
  at detection and ``delta = r_a + r_b`` (each rod's radius, or ``world.contact.thickness``);
  ``C`` is linear in the vertices, and ``grad_s C = J^T grad_x C`` through the O(n) Jacobian
  products of :mod:`rodlab.compact.chain`;
* **vertex-obstacle**: ``distance(p_j) - r >= 0`` for planes, spheres, cylinders, re-evaluated at
  every iterate (:mod:`rodlab.compact.active_set`).

Detection (Zhao et al., Alg. 2 and Sec. 5): at the start of each step every segment pair whose
gap is below ``proximity`` (default ``2 r_max + 3 |v|_max dt + l_max / 2``) becomes a candidate
row, obstacle candidates likewise per vertex. The paper names its limitation: discrete detection
only, so fast strands can pass through. Here, after the SQP, the segment pairs of
:func:`rodlab.contact.impacts` (:func:`rodlab.contact.ccd.segment_impacts`, one compiled call)
are swept linearly over the step; a pair that was not a candidate and whose gap
reaches zero during the step is added as a candidate (normal and parameters from the
configuration at its time of impact, where the two surfaces touch) and the step is solved again
from its start, at most ``ccd_passes`` times.

Point forces ``f`` on vertices enter the objective as ``-f . p_j`` (constant over the step, taken
at the end of the step, as gravity is).

Clamps of edges other than the first, sliding clamps and pins of vertices other than 0
(:mod:`rodlab.compact.end_clamps`) add linear **equality** rows on a vertex's position (the last
``n_eq`` rows of every step): always in the working set, multipliers of either sign, ``|C|`` in
the merit function; their clamped frames are Dirichlet values set before the step.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..contact import from_arrays
from ..contact.ccd import default_tolerance, segment_impacts
from ..contact.detect import min_gap, segment_contacts, _obstacle_table
from ..model import require
from .chain import chain_forward, jac_t_mul
from .end_clamps import EndClamps
from .friction import StepFriction, patches
from .energies import reduced_hessian
from .sqp import CompactState, finish_step, prepare_preconditioner, split_damping, tension_stiffness
from .world_line_search import RodConstants, edge_edge_kernel, row_violation, world_line_search, world_rows
from .world_qp import C_EXCHANGE, C_FAIL, C_REDUNDANT, C_PCG, C_QP, C_SOLVES, DEPENDENCE_TOL, WorldArrays, row_gradient, world_qp


class StepInfo(NamedTuple):
    """One joint step: ``success`` (no PCG or line-search failure), ``message``, ``newton``
    iterations, ``pcg`` iterations, linear ``solves``, last KKT ``residual``, ``active`` rows at the
    end, ``qp`` active-set iterations, ``ccd_passes`` re-solves after continuous detection,
    ``max_violation`` [m] of the candidate rows after the step, ``finite``; ``sticking`` and
    ``sliding`` frictional contacts at the step's end (:mod:`rodlab.compact.friction`)."""

    success: bool
    message: str
    newton: int
    pcg: int
    solves: int
    residual: float
    active: int
    qp: int
    ccd_passes: int
    max_violation: float
    finite: bool
    sticking: int = 0
    sliding: int = 0


def _member(keys, table):
    """``np.isin(keys, table)`` for int64 keys by a binary search in the sorted ``table`` (no
    ``unique`` of both arrays: a few microseconds for the few hundred keys of a step)."""
    if table.size == 0 or keys.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    ordered = np.sort(table)
    at = np.minimum(np.searchsorted(ordered, keys), ordered.size - 1)
    return ordered[at] == keys


def contact_radius(world) -> np.ndarray:
    """(R,) contact radius [m] of each rod: ``world.contact.thickness`` when set, else the rod's
    radius (Zhao et al.'s thickness ``delta`` of a pair is the sum of the two)."""
    thick = world.contact.thickness
    return np.array([float(thick) if thick is not None else float(rod.radius) for rod in world.rods])


def contact_geometry(world, *, radius=None, obstacles=True):
    """The :class:`rodlab.contact.ContactGeometry` of ``world`` with each rod's contact radius
    (:func:`contact_radius`, or ``radius`` (R,) [m]) and the world's neighbour ``skip``."""
    rad = contact_radius(world) if radius is None else np.asarray(radius, dtype=float)
    return from_arrays(world.rod_vertex_start, world.rod_closed, rad, obstacles=world.obstacles if obstacles else (),
                       skip=world.contact.skip, edge_rest_length=world.edge_rest_length)


def obstacle_min_gap(geometry, x) -> float:
    """Smallest gap [m] of a segment surface to an obstacle (``inf`` without obstacles)."""
    if geometry.n_obstacles == 0:
        return math.inf
    return float(_obstacle_table(geometry, np.ascontiguousarray(x))[3].min())


def contact_min_gap(geometry, x, rods: bool) -> float:
    """The ``contact_min_gap`` of a step (:class:`rodlab.solvers.base.StepReport`): segment pairs
    and obstacles when rods collide (``rods``), obstacles only otherwise."""
    if rods:
        return min_gap(geometry, np.ascontiguousarray(x))
    return obstacle_min_gap(geometry, x)


def edge_edge_rows(x, geometry, pairs, normal_ref, x_ref=None):
    """Edge-edge rows (Eq. 32) of segment ``pairs`` (K, 2) at positions ``x`` (N, 3) [m]:
    vertices (K, 4), coefficients (K, 4, 3) and values (K,) [m], ``C = sum_k coef_k . x[vert_k] -
    delta``, with the closest-point parameters ``wa``, ``wb`` and the unit normal ``n`` (from b
    toward a) of the pair at ``x`` and ``delta`` the sum of the two contact radii. ``C`` is then
    the gap (centre-line distance minus ``delta``) and ``coef`` its gradient (the closest points
    are stationary, so their motion does not enter it). ``normal_ref`` (K, 3): each pair's normal
    in the reference configuration ``x_ref`` (N, 3) (the step's start; None: ``x``). Where
    ``n . normal_ref < 0`` and the centre lines met on the straight way from ``x_ref`` to ``x``
    (:func:`rodlab.compact.world_line_search.edge_edge_kernel`) they have crossed since, and the
    distance counts negative (``C = -dist - delta``), as the fixed normal of Eq. 32 would have it,
    so no iterate may jump to the far side; a normal that turned without the lines meeting keeps
    the positive distance."""
    g = geometry
    K = pairs.shape[0]
    verts, coef, value, normal = np.empty((K, 4), dtype=np.int64), np.empty((K, 4, 3)), np.empty(K), np.empty((K, 3))
    x = np.ascontiguousarray(x, dtype=float)
    x_ref = x if x_ref is None else np.ascontiguousarray(x_ref, dtype=float)
    edge_edge_kernel(x, x_ref, g.edge_v0, g.edge_v1, g.edge_radius, np.ascontiguousarray(pairs),
                     np.ascontiguousarray(normal_ref, dtype=float).reshape(K, 3), verts, coef, value, normal)
    return verts, coef, value


def edge_edge_normal(x, geometry, pairs):
    """Unit normals (K, 3) (from b toward a) of segment ``pairs`` (K, 2) at ``x`` (N, 3)."""
    K = pairs.shape[0]
    g = geometry
    normal = np.empty((K, 3))
    x = np.ascontiguousarray(x, dtype=float)
    edge_edge_kernel(x, x, g.edge_v0, g.edge_v1, g.edge_radius, np.ascontiguousarray(pairs), np.zeros((K, 3)),
                     np.empty((K, 4), dtype=np.int64), np.empty((K, 4, 3)), np.empty(K), normal)
    return normal


class WorldContactSolver:
    """Implicit Euler of every rod of a world at once, with edge-edge, obstacle and Dirichlet
    constraints (module docstring; Zhao et al., Alg. 1 + Alg. 2 + App. B).

    Parameters
    ----------
    world : rodlab.world.World
    rod_solvers : list of rodlab.compact.active_set.ConstrainedSolver
        One per rod: its model, options, Dirichlet mask, obstacles, gravity, damping and
        workspace (reused here for energies, Hessians, preconditioners and PCG).
    rods : bool
        Rod-rod and self contact (edge-edge rows); False: obstacles and point forces only.
    proximity : float or None
        Gap [m] below which a pair is a candidate at the start of a step (None: module docstring).
    max_qp_iterations : int
        Active-set iterations per QP at most.
    ccd_passes : int
        Re-solves of a step after continuous detection found new pairs (0: discrete only).
    max_newton : int
        SQP iterations at most while a candidate row is violated by more than ``1e-3 r_min``
        (the options' ``max_newton``, the paper's 5, otherwise).
    friction_eps_v : float
        Slip speed [m/s] below which the kinetic friction potential is mollified
        (:mod:`rodlab.compact.friction`; sticking is exact, by equality rows, whatever its value).
        The coefficients come from ``world.contact.rod_friction_table`` and
        ``world.obstacle_friction``.
    """

    def __init__(self, world, rod_solvers, *, rods: bool, proximity=None, max_qp_iterations: int = 100,
                 ccd_passes: int = 4, max_newton: int = 30, friction_eps_v: float = 1e-4):
        require(isinstance(ccd_passes, (int, np.integer)) and ccd_passes >= 0,
                f"contact_ccd_passes must be an integer >= 0 (got {ccd_passes!r})")
        require(proximity is None or (isinstance(proximity, (int, float)) and math.isfinite(proximity) and proximity >= 0),
                f"proximity must be None or a finite number >= 0 m (got {proximity!r})")
        self.world = world
        self.solvers = list(rod_solvers)
        self.rods = bool(rods)
        self.proximity = proximity
        self.max_qp = int(max_qp_iterations)
        self.dependence_tol = DEPENDENCE_TOL  # rodlab.compact.world_qp: dependent blocking rows are exchanged
        self.ccd_passes = int(ccd_passes)
        require(isinstance(max_newton, (int, np.integer)) and max_newton >= 1,
                f"contact_newton_iters must be an integer >= 1 (got {max_newton!r})")
        self.max_newton = max(int(max_newton), self.solvers[0].options.max_newton if self.solvers else 1)
        self.geometry = contact_geometry(world)
        # rodlab.contact.impacts's default tolerance; None: it depends on the motion (no radii)
        self.ccd_tolerance = (default_tolerance(self.geometry, np.zeros((1, 3)), np.zeros((1, 3)))
                              if float(self.geometry.edge_radius.min(initial=0.0)) > 0 else None)
        self.vstart = np.asarray(world.rod_vertex_start, dtype=np.int64)
        self.N = int(world.n_vertices)
        # every rod's Jacobians, Hessian blocks, preconditioner and mask in flat world arrays (its
        # workspace holds views): the compiled QP slices them per rod (rodlab.compact.world_qp)
        self.flat = WorldArrays(self.solvers, self.vstart)
        self.free = self.flat.free
        self.consts = RodConstants(self.solvers, self.vstart)
        self.point_forces = [[(pf.vertex % world.rods[r].n_vertices, pf) for pf in world.point_forces_of(r)]
                             for r in range(world.n_rods)]
        self.lmax = float(np.max(world.edge_rest_length))
        self.rmax = float(np.max(self.geometry.edge_radius)) if self.geometry.n_edges else 0.0
        rmin = float(np.min(self.geometry.edge_radius)) if self.geometry.n_edges else 0.0
        self.violation_tol = 1e-3 * rmin if rmin > 0 else 1e-9
        self.redundant_tol = 1e-6 * rmin if rmin > 0 else 1e-12
        # clamps away from the root, sliding clamps, pins away from the root: Dirichlet frames and
        # equality rows (rodlab.compact.end_clamps), the last ``n_eq`` rows of every step
        self.clamps = EndClamps(world, [sol.model for sol in self.solvers])
        self.n_clamp = self.clamps.n_rows
        self.n_eq = self.n_clamp  # + the stick rows of the step's sticking contacts
        self._t1 = 0.0
        # Coulomb friction (rodlab.compact.friction): coefficients per rod pair and per obstacle
        require(isinstance(friction_eps_v, (int, float)) and math.isfinite(friction_eps_v) and friction_eps_v > 0,
                f"friction_eps_v must be > 0 m/s (got {friction_eps_v!r})")
        self.friction_eps_v = float(friction_eps_v)
        self.has_friction = bool(world.contact.has_friction)
        self.rod_mu = (world.contact.rod_friction_table(world.n_rods) if world.contact.rods
                       else np.zeros((world.n_rods, world.n_rods)))
        self.obstacle_mu = np.array([world.obstacle_friction(m) for m in range(len(world.obstacles))], dtype=float)
        self._fric = None
        self._pinned = set()
        self._detected = None  # (dt, x, v, (pairs, normals, gaps)): the next step's detection
        self._x_ref = np.zeros((self.N, 3))  # the step's start: the edge-edge rows' reference configuration
        self._clamp_lin = None  # (t1, the clamps' linear rows at t1): _linear_rows
        self._forces_at = None  # (t1, per rod [(vertex, force (3,) [N])]): _energy

    # ---- helpers ---------------------------------------------------------------------------------
    def _sl(self, r):
        return slice(int(self.vstart[r]), int(self.vstart[r + 1]))

    def _energy(self, S, QREF, preds, mode, t1, P):
        """Objective of every rod at ``S`` (N, 3); writes each rod's positions into ``P`` (N, 3)."""
        total = 0.0
        if self._forces_at is None or self._forces_at[0] != t1:  # the point forces at t1, once a step
            self._forces_at = (t1, [[(j, pf.at(t1)) for j, pf in self.point_forces[r]] for r in range(len(self.solvers))])
        forces = self._forces_at[1]
        for r, sol in enumerate(self.solvers):
            sl = self._sl(r)
            total += sol._energy(S[sl], QREF[r], preds[r], mode)
            P[sl] = sol.ws.p
            for j, f in forces[r]:
                total -= float(f @ sol.ws.p[j])
                if mode >= 1:
                    sol.ws.gp[j] -= f
        fric = self._fric
        if fric is not None and fric.slip.size:
            grad = np.zeros((self.N, 3)) if mode >= 1 else None
            total += fric.energy(P, grad)
            if grad is not None:
                for r, sol in enumerate(self.solvers):
                    sol.ws.gp += grad[self._sl(r)]
        return total

    def _obstacle_rows(self, P, cand):
        """Rows of the vertex-obstacle candidates ``cand`` (list of (rod, obstacle, vertex)) at ``P``."""
        K = len(cand)
        verts = np.zeros((K, 4), dtype=np.int64)
        coef = np.zeros((K, 4, 3))
        val = np.empty(K)
        for k, (r, oi, j) in enumerate(cand):
            sol = self.solvers[r]
            v0 = int(self.vstart[r])
            vals, grads = sol.obstacles[oi].values(P[v0 + j:v0 + j + 1], sol.model.radius)
            verts[k, :] = v0 + j
            coef[k, 0] = grads[0]
            val[k] = vals[0]
        return verts, coef, val

    def _rows(self, P, ee, cand):
        """All rows at ``P``: (verts (K, 4), coef (K, 4, 3), values (K,)): the inequality rows
        (edge-edge, then obstacle), then the ``n_eq`` equality rows of the clamps at the step's end."""
        pairs, nref = ee
        n_e, n_o, n_c = pairs.shape[0], len(cand), self.n_clamp
        if n_o == 0:  # edge-edge and linear rows: one compiled call
            g = self.geometry
            lv, lc, lr = self._linear_rows(P)
            K = n_e + lv.shape[0]
            verts, coef, val = np.empty((K, 4), dtype=np.int64), np.empty((K, 4, 3)), np.empty(K)
            world_rows(P, self._x_ref, g.edge_v0, g.edge_v1, g.edge_radius, pairs, nref, lv, lc, lr, verts, coef, val)
            return verts, coef, val
        stick = self._fric.stick_rows(P) if self._fric is not None and self._fric.n_rows else None
        K = n_e + n_o + n_c + (stick[2].shape[0] if stick is not None else 0)
        verts, coef, val = np.empty((K, 4), dtype=np.int64), np.empty((K, 4, 3)), np.empty(K)
        if n_e:  # written in place by the compiled closest points (edge_edge_rows)
            g = self.geometry
            edge_edge_kernel(P, self._x_ref, g.edge_v0, g.edge_v1, g.edge_radius, pairs, nref, verts[:n_e], coef[:n_e],
                             val[:n_e], np.empty((n_e, 3)))
        parts = [(n_e, self._obstacle_rows(P, cand))] if n_o else []
        if n_c:
            parts.append((n_e + n_o, self.clamps.rows(P, self._t1)))
        if stick is not None:
            parts.append((n_e + n_o + n_c, stick))
        for at, (v, c, x) in parts:
            k = x.shape[0]
            verts[at:at + k], coef[at:at + k], val[at:at + k] = v, c, x
        return verts, coef, val

    def _linear_rows(self, P):
        """The linear equality rows ``C = sum_v coef_v . (P[v] - ref_v)`` of the step: the clamps'
        at its end (fixed over the step, built once) and the stick rows of its sticking contacts
        at ``P`` (N, 3): (verts (L, 4), coef (L, 4, 3), ref (L, 4, 3))."""
        if self._clamp_lin is None or self._clamp_lin[0] != self._t1:
            lin = (self.clamps.linear_rows(self._t1) if self.n_clamp else
                   (np.zeros((0, 4), dtype=np.int64), np.zeros((0, 4, 3)), np.zeros((0, 4, 3))))
            self._clamp_lin = (self._t1, tuple(np.ascontiguousarray(a) for a in lin))
        clamp = self._clamp_lin[1]
        if self._fric is None or not self._fric.n_rows:
            return clamp
        verts, coef, _ = self._fric.stick_rows(P)
        stick = (verts, coef, self._fric.x0[verts])
        return tuple(np.ascontiguousarray(np.concatenate([clamp[i], stick[i]])) for i in range(3))

    def _infeasibility(self, cvals):
        """``|C_A|_1`` of the merit function (Eq. 11): violated inequality rows and every equality row."""
        return row_violation(cvals, self.n_eq)[1]

    def _worst(self, cvals):
        """Largest violation [m] of any row (inequality rows below zero, equality rows either way)."""
        return row_violation(cvals, self.n_eq)[0]

    def _row_gradient(self, verts, coef):
        """``grad_s`` (N, 3) of one row (O(n) per rod it touches, Dirichlet-projected) and the set
        of rods it touches (:func:`rodlab.compact.world_qp.row_gradient`)."""
        fa = self.flat
        g = np.empty((self.N, 3))
        touched = np.zeros(len(self.solvers), dtype=bool)
        row_gradient(np.ascontiguousarray(verts, dtype=np.int64), np.ascontiguousarray(coef, dtype=float), fa.vstart,
                     fa.Dj, fa.Qj, fa.free, np.empty((self.N, 3)), np.zeros((max(fa.Dj.shape[0], 1), 4)), g, touched)
        return g, {int(r) for r in np.nonzero(touched)[0]}

    # ---- the QP of Eq. 12 by a primal active-set method (Alg. 2) ---------------------------------
    def _solve_qp(self, b, rows, prev_mask, ctx):
        """The QP of one SQP iteration, one compiled call (:func:`rodlab.compact.world_qp.world_qp`):
        primal active set with step control (Nocedal and Wright, "Numerical Optimization", 2006,
        Alg. 16.3), ``W`` from the last step's active rows (``prev_mask``, equality rows included)
        and the violated or touching ones (Zhao et al., Alg. 2). Returns (d, lam, W, G^T lam)."""
        verts, coef, cvals = rows
        K = cvals.shape[0]
        pinned = np.zeros(K, dtype=bool)
        if self._pinned:
            pinned[list(self._pinned)] = True
        counts = np.zeros(6, dtype=np.int64)
        d, g_lam = np.empty((self.N, 3)), np.empty((self.N, 3))
        min_norm = bool(self._fric is not None and self._fric.n_rows)
        lam, W = world_qp(np.ascontiguousarray(b), verts, coef, cvals, prev_mask, self.n_eq, pinned, min_norm,
                          self.max_qp, self.dependence_tol, self.redundant_tol, *self.flat.args(), d, g_lam, counts)
        ctx["pcg"] += int(counts[C_PCG])
        ctx["solves"] += int(counts[C_SOLVES])
        ctx["qp"] += int(counts[C_QP])
        ctx["exchanges"] = ctx.get("exchanges", 0) + int(counts[C_EXCHANGE])
        ctx["redundant"] = ctx.get("redundant", 0) + int(counts[C_REDUNDANT])
        if counts[C_FAIL]:
            ctx["pcg_fail"] = True
        return d, lam, W.tolist(), g_lam

    # ---- one step ------------------------------------------------------------------------------
    def _detect_pairs(self, x, v, dt):
        """Segment pairs of a step's start ``x``, ``v`` (N, 3) within its candidate margin: (pairs
        (K, 2), normals (K, 3), gaps (K,) [m]); kept for the step that starts at exactly this
        ``x``, ``v`` and ``dt`` (:meth:`end_min_gap` detects them at the end of the last step)."""
        cache = self._detected
        if cache is not None and cache[0] == dt and np.array_equal(cache[1], x) and np.array_equal(cache[2], v):
            return cache[3]
        speed = float(np.max(np.linalg.norm(v, axis=1))) if v.size else 0.0
        # the velocity term is capped at two segment lengths: continuous detection after the
        # solve catches faster pairs, without making every pair of a whipping rod a candidate
        margin = self.proximity if self.proximity is not None else \
            2.0 * self.rmax + 0.5 * self.lmax + min(3.0 * speed * dt, 2.0 * self.lmax)
        g = self.geometry  # rodlab.contact.detect's segment pairs, one compiled call
        pairs, _, _, _, normal, gap = segment_contacts(np.ascontiguousarray(x, dtype=float), g.edge_v0, g.edge_v1,
                                                       g.edge_radius, g.edge_rod, g.edge_local, g.rod_edge_count,
                                                       g.rod_closed, g.rod_skip, float(margin))
        out = (pairs, normal, gap)
        self._detected = (dt, np.array(x), np.array(v), out)
        return out

    def start_min_gap(self) -> float:
        """:func:`contact_min_gap` (with rods) of the configuration the last step started from, from
        that step's detection: the smallest gap of the pairs within its margin bounds every other
        pair's, so it is the minimum (:func:`rodlab.contact.detect.min_gap` when no pair is that
        close). The start of a step is the end of the step before it, up to the round-off of the
        clamps' Dirichlet frames set before the step."""
        dt, x, v, (_, _, gaps) = self._detected
        rod_gap = float(gaps.min()) if gaps.size else min_gap(self.geometry, x, obstacles=False)
        return min(rod_gap, obstacle_min_gap(self.geometry, x))

    def end_min_gap(self, x, v, dt) -> float:
        """:func:`contact_min_gap` (with rods) at a step's end ``x``, ``v`` (N, 3): the next step's
        detection there (kept for it when it starts from exactly ``x``, ``v``), as
        :meth:`start_min_gap`."""
        self._detect_pairs(x, v, dt)
        return self.start_min_gap()

    def _candidates(self, x, v, dt):
        """The step's candidate rows at its start ``x``, ``v``: ((pairs, normals), obstacle rows, the
        pairs' gaps [m] at ``x``)."""
        speed = float(np.max(np.linalg.norm(v, axis=1))) if v.size else 0.0
        pairs, nref, gaps = np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3)), np.zeros(0)
        if self.rods:
            pairs, nref, gaps = self._detect_pairs(x, v, dt)
        cand = []
        for r, sol in enumerate(self.solvers):
            p = x[self._sl(r)]
            m = self.proximity if self.proximity is not None else 2.0 * sol.model.radius + 3.0 * speed * dt + 0.5 * float(sol.model.lengths.max())
            for oi, ob in enumerate(sol.obstacles):
                vals, _ = ob.values(p, sol.model.radius)
                cand.extend((r, oi, int(j)) for j in np.nonzero(vals < m)[0])
        return (pairs, nref), cand, gaps

    def step(self, states, t, dt, x, v, active_prev):
        """One implicit-Euler step of every rod (``states``: one :class:`CompactState` per rod, views
        into the flat ``x``, ``v`` (N, 3)), in place; ``active_prev`` (set of row keys) the active
        set of the last step, updated. Returns :class:`StepInfo`."""
        self._t1 = t + dt
        if self.clamps:
            self.clamps.drive_frames(states, self._t1)
        backup = [st.copy() for st in states]
        (pairs, nref), cand, gap_ref = self._candidates(x, v, dt)
        x0 = np.array(x)
        passes = 0
        total = dict(newton=0, pcg=0, solves=0, qp=0)
        while True:
            info, keys, W = self._sqp(states, t, dt, (pairs, nref), cand, active_prev, gap_ref)
            for k in ("newton", "pcg", "solves", "qp"):
                total[k] += getattr(info, k)
            if not info.finite or not self.rods or passes >= self.ccd_passes:
                break
            # rodlab.contact.impacts's segment pairs in one compiled call, the candidates left out
            g = self.geometry
            known = np.sort(pairs[:, 0] * g.n_edges + pairs[:, 1])
            tol = self.ccd_tolerance if self.ccd_tolerance is not None else default_tolerance(g, x0, x)
            hits, toi = segment_impacts(x0, np.ascontiguousarray(x, dtype=float), g.edge_v0, g.edge_v1, g.edge_radius,
                                        g.edge_rod, g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip,
                                        tol, known)
            new = [(int(a), int(b), float(tau)) for (a, b), tau in zip(hits, toi)]
            if not new:
                break
            add = np.array([[a, b] for a, b, _ in new], dtype=np.int64)
            n_add = np.empty((len(new), 3))
            for k, (a, b, tau) in enumerate(new):  # the normal where the two surfaces touch
                n_add[k] = edge_edge_normal(x0 + tau * (x - x0), self.geometry, add[k:k + 1])
            pairs = np.ascontiguousarray(np.concatenate([pairs, add]))
            nref = np.concatenate([nref, n_add])
            gap_ref = np.concatenate([gap_ref, np.zeros(len(new))])  # unknown: never left out of the merit
            for st, bk in zip(states, backup):  # solve the step again from its start
                for name in ("s", "qref", "p", "q", "v", "omega"):
                    getattr(st, name)[...] = getattr(bk, name)
            passes += 1
        active_prev.clear()
        active_prev.update(keys(k) for k in W if k < pairs.shape[0] + len(cand))
        return info._replace(newton=total["newton"], pcg=total["pcg"], solves=total["solves"], qp=total["qp"],
                             ccd_passes=passes)

    def _sqp(self, states, t, dt, ee, cand, active_prev, gap_ref):
        solvers, N = self.solvers, self.N
        t1 = t + dt
        pairs, n_e, n_o = ee[0], ee[0].shape[0], len(cand)

        def keys(k):
            """The key of row ``k`` in ``active_prev``: ("e", a, b) or ("o", rod, obstacle, vertex)."""
            return ("e", int(pairs[k, 0]), int(pairs[k, 1])) if k < n_e else ("o",) + tuple(cand[k - n_e])

        # rows active at the end of the last step (Alg. 2's warm start) and every equality row
        n_seg = max(int(self.geometry.n_edges), 1)
        prev_e = np.array([(k[1], k[2]) for k in active_prev if k[0] == "e"], dtype=np.int64).reshape(-1, 2)
        prev_ineq = np.concatenate([_member(pairs[:, 0] * n_seg + pairs[:, 1], prev_e[:, 0] * n_seg + prev_e[:, 1]),
                                    np.array([("o",) + tuple(c) in active_prev for c in cand], dtype=bool)])
        preds = []
        for st, sol in zip(states, solvers):
            a_d = 0.0 if sol.damping_scheme == "exponential" else sol.damping / dt
            preds.append((st.p + dt * st.v, st.p.copy(), st.q.copy(), dt * st.omega, 1.0 / dt**2, a_d))
        S = np.concatenate([st.s for st in states])
        QREF = [st.qref for st in states]
        self._x_ref = np.ascontiguousarray(np.concatenate([pr[1] for pr in preds]))  # where the rows' normals were taken
        ls_fixed = None
        P = np.empty((N, 3))
        self._start_friction(np.concatenate([pr[1] for pr in preds]), ee, cand, prev_ineq, dt)
        max_it, min_it = self.max_newton, solvers[0].options.max_newton
        ctx = {"pcg": 0, "solves": 0, "qp": 0, "pcg_fail": False}
        it, resid, W, converged, ls_fail = 0, math.inf, [], False, False
        opts = solvers[0].options
        while True:
            E = self._energy(S, QREF, preds, 2, t1, P)
            rows = self._rows(P, ee, cand)
            worst = self._worst(rows[2])
            if it >= max_it or (it >= min_it and worst <= self.violation_tol):
                if self._stick_switch(P):  # patches that stick get their rows: a few more iterations
                    max_it, min_it = it + 3, it + 1
                    continue
                break
            prev_mask = np.concatenate([prev_ineq, np.ones(self.n_eq, dtype=bool)])
            prev_mask[list(self._pinned)] = True
            kdiag = None
            if self._fric is not None and self._fric.slip.size:
                kdiag = np.zeros(N)
                self._fric.stiffness(P, kdiag)
            b = np.empty((N, 3))
            ok = True
            for r, sol in enumerate(solvers):
                ws, md, sl = sol.ws, sol.model, self._sl(r)
                out = np.empty((md.n, 3))
                jac_t_mul(ws.Dj, ws.Qj, ws.gp, ws.gq, out)
                b[sl] = out * sol.free
                pr = preds[r]
                reduced_hessian(ws.q, pr[2], ws.Qj, md.masses, md.Jr, md.lbar, md.Kh, pr[4], pr[5], ws.Hp, ws.Bd, ws.Bo)
                if sol.options.tension_stiffness:
                    tension_stiffness(S[sl], md.lengths, ws.q, ws.gp, ws.Bd)
                if kdiag is not None:
                    ws.Hp += kdiag[sl]
                ok &= bool(prepare_preconditioner(sol.kind, ws.Dj, ws.Hp, ws.Bd, ws.Bo, sol.free, ws.diag, ws.off,
                                                  ws.sinv, ws.W, ws.suffix, ws.A, ws.L))
            if not ok:
                ctx["pcg_fail"] = True
                break
            d, lam, W, g_lam = self._solve_qp(b, rows, prev_mask, ctx)
            if self._fric is not None and self._fric.update(W, lam):
                continue  # the step's first QP had no friction force: solve again with it
            cvals = rows[2]
            viol = float(np.max(np.abs(cvals[W]))) if W else 0.0
            resid = float(np.linalg.norm(b - g_lam))
            if resid < opts.tol and viol < 1e-10:
                if self._stick_switch(P):
                    max_it, min_it = it + 3, it + 1
                    continue
                converged = True
                break
            inv_mu = 1.1 * (float(np.max(np.abs(lam))) if len(lam) else 0.0) + 1e-12
            infeasible = self._infeasibility(cvals)
            phi0 = E + inv_mu * infeasible
            slope = float(np.sum(b * d)) - inv_mu * infeasible
            if n_o == 0 and (self._fric is None or not self._fric.slip.size):
                if ls_fixed is None:  # the line search's arrays that stay fixed over the step
                    ls_fixed = self._line_search_fixed(ee, gap_ref, preds, QREF, t1)
                accepted, S_try = self._line_search(S, d, P, phi0, slope, inv_mu, ls_fixed)
            else:  # obstacle rows or the kinetic friction potential: the line search in Python
                accepted, S_try = self._line_search_py(S, d, ee, cand, phi0, slope, inv_mu, preds, QREF, t1)
            it += 1
            if not accepted:
                if self._stick_switch(P):  # no progress at the sliding solution: the stick test
                    max_it, min_it = it + 3, it + 1
                    continue
                ls_fail = True
                break
            S = S_try
        # the step's end
        finite = True
        for r, (st, sol) in enumerate(zip(states, solvers)):
            md, ws, sl = sol.model, sol.ws, self._sl(r)
            chain_forward(np.ascontiguousarray(S[sl]), md.lengths, st.qref, ws.p, ws.q, ws.Dj, ws.Qj, False)
            P[sl] = ws.p
            finite &= bool(np.all(np.isfinite(ws.p)))
        if not finite:
            return StepInfo(False, "non-finite state", it, ctx["pcg"], ctx["solves"], resid, 0, ctx["qp"], 0, math.inf,
                            False), keys, W
        for r, (st, sol) in enumerate(zip(states, solvers)):
            sl = self._sl(r)
            st.s[...] = S[sl]
            p_t, q_t = preds[r][1], preds[r][2]
            st.p[...] = sol.ws.p
            st.q[...] = sol.ws.q
            finish_step(st.s, st.qref, st.p, st.q, p_t, q_t, st.v, st.omega, dt)
            split_damping(st, sol.damping, sol.damping_scheme, dt)
        cvals = self._rows(P, ee, cand)[2]
        max_viol = self._worst(cvals) if cvals.size else 0.0
        msg = "converged" if converged else ("PCG did not converge" if ctx["pcg_fail"] else
                                             ("line search made no progress" if ls_fail else "newton iteration limit reached"))
        n_contact = sum(1 for k in W if k < n_e + n_o)
        stick, slide = self._fric.counts if self._fric is not None else (0, 0)
        return StepInfo(not ctx["pcg_fail"], msg, it, ctx["pcg"], ctx["solves"], resid, n_contact, ctx["qp"], 0, max_viol,
                        True, stick, slide), keys, W

    def _line_search_fixed(self, ee, gap_ref, preds, QREF, t1):
        """The arguments of :func:`rodlab.compact.world_line_search.world_line_search` that stay fixed
        over a step (predictions, reference rotations, point forces, candidate pairs with their
        normals and gaps at the step's start; the clamp rows: :meth:`_linear_rows`)."""
        p_pred, p_t, q_t, th_pred = (np.ascontiguousarray(np.concatenate([pr[i] for pr in preds])) for i in range(4))
        a_d = np.array([pr[5] for pr in preds], dtype=float)
        qref = np.ascontiguousarray(np.concatenate(QREF))
        nref = np.ascontiguousarray(ee[1], dtype=float).reshape(-1, 3)
        return dict(state=(qref, p_pred, p_t, q_t, th_pred, float(preds[0][4]), a_d), forces=self._point_force_arrays(t1),
                    pairs=(ee[0], nref, np.ascontiguousarray(gap_ref, dtype=float)))

    def _line_search(self, S, d, P, phi0, slope, inv_mu, fixed):
        """Backtracking on the merit function (Eq. 11) in one compiled call
        (:func:`rodlab.compact.world_line_search.world_line_search`): edge-edge and linear equality
        rows (clamps, stick rows), rod energies and point forces; ``fixed`` from
        :meth:`_line_search_fixed`. Returns (accepted, S_try)."""
        g = self.geometry
        lv, lc, lr = self._linear_rows(P)
        S_try, P_try = np.empty_like(S), np.empty((self.N, 3))
        steps = int(self.solvers[0].options.line_search_steps)
        accepted, _ = world_line_search(np.ascontiguousarray(S), np.ascontiguousarray(d), steps, float(phi0),
                                        float(slope), float(inv_mu), *fixed["state"], *self.consts.args(),
                                        *fixed["forces"], g.edge_v0, g.edge_v1, g.edge_radius, *fixed["pairs"], lv, lc,
                                        lr, S_try, P_try)
        return bool(accepted), S_try

    def _point_force_arrays(self, t1):
        """Point forces at ``t1``: rod (F,), flat vertex (F,), force (F, 3) [N]."""
        rod, vert, force = [], [], []
        for r in range(len(self.solvers)):
            for j, pf in self.point_forces[r]:
                rod.append(r)
                vert.append(int(self.vstart[r]) + j)
                force.append(pf.at(t1))
        return (np.array(rod, dtype=np.int64), np.array(vert, dtype=np.int64),
                np.ascontiguousarray(np.array(force, dtype=float).reshape(-1, 3)))

    def _line_search_py(self, S, d, ee, cand, phi0, slope, inv_mu, preds, QREF, t1):
        """The line search of :meth:`_line_search` for steps with vertex-obstacle rows or sliding
        frictional contacts (the kinetic potential), in Python. Returns (accepted, S_try)."""
        P_try, S_try = np.empty((self.N, 3)), S
        alpha = 1.0
        for _ in range(self.solvers[0].options.line_search_steps):
            S_try = S + alpha * d
            E_try = self._energy(S_try, QREF, preds, 0, t1, P_try)
            phi = E_try + inv_mu * self._infeasibility(self._rows(P_try, ee, cand)[2])
            e_round = 1e-14 * sum(float(np.sum(np.abs(sol.ws.comps))) for sol in self.solvers)
            if phi <= phi0 + 1e-4 * alpha * min(slope, 0.0) or phi - phi0 <= e_round:
                return True, S_try
            alpha *= 0.5
        return False, S_try

    def _start_friction(self, x0, ee, cand, prev_ineq, dt):
        """The step's frictional contacts (:class:`rodlab.compact.friction.StepFriction`): rows with
        ``mu > 0`` in the last step's active set or touching (gap <= 1e-3 r_min) at the step's
        start ``x0`` (N, 3), every one sliding until the step's stick test; ``n_eq`` back to the
        clamp rows."""
        self._fric = None
        self._pinned = set()
        self.n_eq = self.n_clamp
        if not self.has_friction:
            return
        pairs, n_e = ee[0], ee[0].shape[0]
        K = n_e + len(cand)
        if K == 0:
            return
        mu = np.empty(K)
        er = self.geometry.edge_rod
        mu[:n_e] = self.rod_mu[er[pairs[:, 0]], er[pairs[:, 1]]] if n_e else 0.0
        mu[n_e:] = [self.obstacle_mu[oi] if oi < self.obstacle_mu.size else 0.0 for _, oi, _ in cand]
        rows = self._rows(x0, ee, cand)  # inequality rows only: no friction yet, clamp rows last
        frictional = (mu > 0.0) & (prev_ineq | (rows[2][:K] <= self.violation_tol))
        if not frictional.any():
            return
        rows_in = (rows[0][:K], rows[1][:K], rows[2][:K])
        self._fric = StepFriction(rows_in, frictional, mu, patches(cand, pairs, er, n_e), x0,
                                  self.friction_eps_v * dt)

    def _stick_switch(self, P) -> bool:
        """The step's stick test at the sliding solution ``P`` (:meth:`StepFriction.decide`); on a
        switch the stick rows join the equality rows and the sticking contacts' normal rows stay
        in the working set. True when the SQP must go on."""
        f = self._fric
        if f is None or not f.decide(P):
            return False
        self.n_eq = self.n_clamp + f.n_rows
        self._pinned = {int(k) for k in f.pinned_rows()}
        return True


def rod_states(world, s, qref, x, q, v, omega, t=0.0):
    """Per-rod :class:`CompactState` views into the flat compact arrays of a world state."""
    out = []
    for r in range(world.n_rods):
        vs, es = world.rod_vertices(r), world.rod_edges(r)
        out.append(CompactState(t, s[vs], qref[es], x[vs], q[es], v[vs], omega[es]))
    return out


__all__ = ["StepInfo", "WorldContactSolver", "contact_geometry", "contact_min_gap", "contact_radius", "edge_edge_rows",
           "obstacle_min_gap", "rod_states"]
