"""The implicit-Euler step of implicit DER with barrier contact and lagged friction (IPC).

One step minimises, over every rod's interleaved unknowns together,

``Phi(q) = sum_rods [1/(2 h^2) |q - q_t - h v_t|_M^2 + c/(2h) |q - q_t|_M^2 + E(q) - f_ext . q]
+ sum_contacts kappa b(g_k(x)) + sum_contacts mu_k lambda_k f0(|u_k(x)|)``

(:mod:`.stepper` for the first line, :mod:`.contact` for the barrier and friction terms) by
Newton's method as in Li et al., "Incremental Potential Contact" (2020), Alg. 1, compiled as one
call per step (:func:`.contact_newton.newton_contact_step`):

1. the contact set (primitives closer than ``dhat``) is detected at every iterate with the shared
   narrowphase and turned into barrier primitives (:func:`.contact_table.contact_table`);
2. the Hessian (each rod's banded elastic Hessian, projected contact stencils, friction) is the
   band of half bandwidth 10 plus the entries of rod-rod and self contacts outside it, solved by a
   banded LDL^T and, with outside entries, their Schur complement (:mod:`.contact_solve`);
3. the search direction's step is capped by continuous collision detection
   (:func:`.contact_table.earliest_impact`, the conservative advancement of
   :func:`rodlab.contact.impacts`) at 0.9 of the earliest time of impact, so no iterate ever has a
   negative gap; then backtracking (Armijo) on ``Phi``;
4. the loop ends when the Newton step's max-norm (positions, and angles times the largest radius)
   is below ``tol h`` (IPC's velocity-scaled criterion; with friction ``tol`` is at most
   ``eps_v / 10``, see :meth:`ContactStep.__init__`) or after ``max_iters`` iterations.

Friction is lagged once per step: normal forces, closest points and tangent bases from the step's
start (IPC Sec. 5.3, one lagging iteration).

Stiffness ``kappa`` [N/m], ``"auto"`` (IPC Sec. 4.3, adapted to a barrier on the gap):
``kappa_min = mean vertex mass / h^2`` (the barrier's curvature at half ``dhat`` is then about 3.6
times the inertia term of one vertex); at the first iterate of a step that has contacts, ``kappa``
is raised to the value that best balances the barrier's gradient against the rest,
``-(grad_E . grad_B) / |grad_B|^2`` (over free unknowns), clamped to ``[kappa_min, 100 kappa_min]``;
after a step whose smallest gap is below ``dhat / 100`` it doubles (at most to
``100 kappa_min``). ``kappa`` only grows and is kept in ``state.solver["contact_kappa"]``.
"""
from __future__ import annotations

import math

import numpy as np

from ..contact import from_arrays, min_gap
from ..contact.detect import _obstacle_table
from ..contact.narrowphase import CYLINDER, MESH, PLANE
from .batch import BDF2_BETA, _impose_drives
from .contact_newton import (NONFINITE_PHI, NONFINITE_STEP, NewtonStatics, Step, newton_contact_step, rods_base_frames,
                             rods_elastic)
from .contact_table import TableStatics


class ContactStep:
    """Implicit-Euler steps of a contact world (module docstring) on a simulator's
    :class:`rodlab.der_implicit.batch.RodBatch` (its model sections; its work sections are scratch).

    ``world``: the :class:`rodlab.world.World`; ``batch``; ``vertex_dof`` (N, 3), ``theta_dof`` (E,)
    rows of the global unknowns; ``fixed`` (F,) held unknowns; ``drives`` the batch's driven clamps;
    ``h`` [s]; ``dhat`` [m]; ``kappa`` [N/m] or ``None`` (auto); ``eps_v`` [m/s]; ``tol`` [m/s];
    ``max_iters``; ``line_search`` (max halvings)."""

    def __init__(self, world, batch, vertex_dof, theta_dof, fixed, *, h, dhat, kappa, eps_v, tol, max_iters,
                 line_search):
        self.world, self.batch, self.h = world, batch, float(h)
        self.vertex_dof = np.ascontiguousarray(vertex_dof, dtype=np.int64)
        self.theta_dof = np.ascontiguousarray(theta_dof, dtype=np.int64)
        self.dhat, self.kappa_fixed, self.eps_v = float(dhat), kappa, float(eps_v)
        # with friction the static branch is a spring so stiff that a Newton step from rest moves less
        # than eps_v h / 2 even when the rod must slide: the step-size test must be below that
        self.tol = min(float(tol), 0.1 * self.eps_v) if world.contact.has_friction else float(tol)
        self.max_iters, self.ls_max = int(max_iters), int(line_search)
        c = world.contact
        radius = np.asarray(world.rod_radius, dtype=float) if c.thickness is None else \
            np.full(world.n_rods, float(c.thickness))
        self.edge_radius = np.repeat(radius, np.diff(world.rod_edge_start))
        self.geometry = g = from_arrays(world.rod_vertex_start, world.rod_closed, self.edge_radius,
                                        obstacles=world.obstacles, skip=c.skip,
                                        edge_rest_length=world.edge_rest_length)
        self.rods = bool(c.rods)
        self.has_friction = bool(c.has_friction)
        self.radius_max = float(self.edge_radius.max())
        D = int(batch.starts["dof"][-1])
        self.n = D
        dof_is_fixed = np.zeros(D, dtype=bool)
        dof_is_fixed[fixed] = True
        self.fixed = np.asarray(fixed, dtype=np.int64)
        self.has_drive = bool(batch.n_drive)
        self.kappa_min = float(np.mean(world.vertex_mass)) / self.h**2
        self.line_search_failures = 0
        dstart = np.asarray(batch.starts["dof"], dtype=np.int64)
        scale = np.ones(D)
        scale[self.theta_dof] = self.radius_max
        self.statics = NewtonStatics(
            vertex_dof=self.vertex_dof, theta_dof=self.theta_dof, fixed=self.fixed, dof_is_fixed=dof_is_fixed,
            dof_rod_start=np.repeat(dstart[:-1], np.diff(dstart)), step_scale=scale, kappa_min=self.kappa_min,
            eps_v=self.eps_v, tol=self.tol, max_iters=self.max_iters, ls_max=self.ls_max,
            friction=self.has_friction, auto=self.kappa_fixed is None)
        # a vertex's radius: that of an edge it belongs to
        vertex_edge = np.empty(world.n_vertices, dtype=np.int64)
        vertex_edge[g.edge_v1] = np.arange(g.n_edges)
        vertex_edge[g.edge_v0] = np.arange(g.n_edges)
        prm = g.obstacle_param
        unit = np.zeros((g.n_obstacles, 3))
        directed = (g.obstacle_kind == PLANE) | (g.obstacle_kind == CYLINDER)
        unit[directed] = prm[directed, 3:6] / np.linalg.norm(prm[directed, 3:6], axis=1)[:, None]
        tri_vid = np.zeros((g.tri_x.shape[0], 3), dtype=np.int64)
        for f in range(g.tri_x.shape[0]):
            tri_vid[f] = np.asarray(world.obstacles[int(g.tri_obstacle[f])].triangles)[int(g.tri_local[f])]
        rmin = float(g.edge_radius.min())
        self.table_statics = TableStatics(
            vertex_edge=vertex_edge, rod_mu=np.ascontiguousarray(c.rod_friction_table(world.n_rods), dtype=float),
            obstacle_mu=np.array([world.obstacle_friction(m) for m in range(len(world.obstacles))], dtype=float),
            obstacle_unit=np.ascontiguousarray(unit), tri_vid=tri_vid, rods=self.rods, dhat=self.dhat,
            ccd_tolerance=1e-6 * rmin)

    # ---- one step --------------------------------------------------------------------------------
    def step(self, q, v, kappa, damping, decay, prev=None):
        """One implicit step of the global unknowns ``q``, velocities ``v`` (D,) in place,
        ``damping`` [1/s] and ``decay`` per unknown (D,)
        (base frames of the batch set to ``q``'s start by the caller). ``prev``: ``None`` (backward
        Euler) or the previous step's unknowns and velocities ``(q_prev, v_prev)`` (BDF2: the same
        minimisation about the BDF2 predictor with ``beta h`` in place of ``h``, the friction's
        displacement measured from the extrapolation ``4/3 q - 1/3 q_prev``;
        :mod:`rodlab.der_implicit.batch`). Returns ``(iterations, kappa, active contacts, min gap
        over the contacts within dhat or inf)``."""
        if prev is None:
            h = self.h
            q0 = q.copy()
            qhat = q + h * v
        else:
            h = BDF2_BETA * self.h
            q0 = q + (q - prev[0]) / 3.0
            qhat = q0 + h * (v + (v - prev[1]) / 3.0)
        qhat[self.fixed] = q[self.fixed]
        b = self.batch
        if self.has_drive:
            ds = b.starts["dof"]
            es = b.starts["edge"]
            for r in sorted({d[0] for d in b.drives}):
                _impose_drives(r, b.ibuf, b.fbuf, q[ds[r]:ds[r + 1]], b.edge_tan_base[es[r]:es[r + 1]],
                               b.edge_a1_base[es[r]:es[r + 1]])
        sp = Step(a_in=1.0 / h**2, a_dmp=np.asarray(damping, dtype=float) / h, q0=q0, qhat=qhat,
                  x0=np.ascontiguousarray(q0[self.vertex_dof]), dof_mass=b.dof_mass, dof_fext=b.dof_fext,
                  eps=self.eps_v * h, h=h)
        status, its, kappa, active, gmin, fails = newton_contact_step(b.ibuf, b.fbuf, q, float(kappa), sp,
                                                                      self.statics, self.geometry, self.table_statics)
        self.line_search_failures += fails
        if status == NONFINITE_PHI:
            raise FloatingPointError("non-finite incremental potential (a gap reached zero)")
        if status == NONFINITE_STEP:
            raise FloatingPointError("non-finite Newton step")
        v[:] = decay * (q - q0) / h
        return its, kappa, active, gmin

    def min_gap(self, x) -> float:
        """The smallest gap [m] at positions ``x``: exact (:func:`rodlab.contact.min_gap`) with rod
        contact; without it, over the analytic obstacles (meshes farther than ``dhat`` are not
        measured: ``inf`` when only they are present)."""
        if self.rods:
            return min_gap(self.geometry, x, obstacles=True)
        g = self.geometry
        if np.any(g.obstacle_kind != MESH):
            gaps = _obstacle_table(g, x)[3]
            return float(gaps[:, g.obstacle_kind != MESH].min())
        return math.inf


__all__ = ["ContactStep", "rods_base_frames", "rods_elastic"]
