"""Coulomb friction for the compact method's contact SQP (issue "Contact and friction", item 3).

Zhao et al., "Efficient and Stable Simulation of Inextensible Cosserat Rods by a Compact
Representation" (Computer Graphics Forum, 2024) have no friction; this module adds static and kinetic Coulomb friction to the active-set SQP of
:class:`rodlab.compact.contact_world.WorldContactSolver`, inside the implicit step, for the
vertex-obstacle rows and the edge-edge rows (Eq. 32) alike (docs/contact-compact.md, "Friction").

Every contact row is ``C = n . sum_v w_v p_v - ... >= 0`` (one vertex with ``w = 1`` against an
obstacle; ``(1 - wa, wa, -(1 - wb), -wb)`` for two segments). Its **tangential displacement over
the step** is ``u = P_t sum_v w_v (p_v - p_v^t)`` (``p^t`` the step's start, ``P_t = I - n n^T``,
``n`` and ``w_v`` frozen at the step's start). A contact is *frictional* in a step when its
coefficient ``mu`` is positive and it touches at the step's start (in the last step's active set,
or its gap at most ``1e-3 r_min``). Each step:

1. **Slide** (every frictional contact): the dissipative potential ``D = mu lambda_n f0(|u|)``
   joins the implicit-Euler objective, ``lambda_n`` [N] the normal row's multiplier of the
   previous QP of the SQP (lagged; the step's first QP is solved again once it is known) and
   ``f0`` the mollifier of Li et al., "Incremental Potential Contact" (ACM TOG 2020) with
   ``eps_u = eps_v dt``: the kinetic force ``mu lambda_n`` against the slip once ``|u| >=
   eps_u``, a stiff spring below (the static zone, force below ``mu lambda_n``). Newton sees its
   curvature along the slip, ``mu lambda_n f1'(|u|)``, as an isotropic per-vertex term.
2. **Stick test**, once, when that SQP stops: a *patch* (the pressing frictional contacts of one
   rod against one obstacle along a run of consecutive vertices, or of one pair of rods) whose
   contacts all stay in the static zone (``|u| < eps_u``: Coulomb's cone holds them) **sticks**:
   two linear equality rows per contact, ``t_a . sum_v w_v (p_v - p_v^t) = 0`` (``t_1``, ``t_2``
   a tangent basis), join the QP and its normal rows stay in the working set; the SQP goes on
   for a few iterations. The stick rows hold ``u = 0`` exactly, so the mollifier's creep
   (``eps_v tan(angle) / mu`` for a rod on a slope) is gone.

Multipliers are not used to test the cone: with stick rows the rows of an inextensible rod are
dependent (every vertex of a straight rod moves the same along it; a rope's normal and
tangential rows mix through its tension), so their split is arbitrary, and the Schur complement
is solved for the minimum-norm multipliers (:func:`rodlab.compact.world_qp.min_norm_solve`).
Friction acts at the centre lines' contact points: it exerts no torque about a rod's axis, so a
rod does not roll.
"""
from __future__ import annotations

import numpy as np

from ..der_implicit.contact import mollifier

STICK, SLIP = 0, 1


def tangent_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors (3,) spanning the plane normal to unit ``n`` (3,)."""
    ax = int(np.argmin(np.abs(n)))
    e = np.zeros(3)
    e[ax] = 1.0
    t1 = e - (e @ n) * n
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


class StepFriction:
    """The friction of one step of the contact SQP (module docstring).

    Parameters
    ----------
    rows : tuple
        ``(verts (K, 4), coef (K, 4, 3), values (K,))`` of the inequality rows at the step's start.
    frictional : np.ndarray
        (K,) bool: rows with friction in this step (``mu > 0`` and touching at the step's start).
    mu : np.ndarray
        (K,) Coulomb coefficient [-] of each row.
    patch : np.ndarray
        (K,) int: the patch of each row (patches stick or slide as a whole).
    x0 : np.ndarray
        (N, 3) positions at the step's start [m].
    eps_u : float
        Slip [m] below which the kinetic potential is mollified (``eps_v dt``).
    """

    def __init__(self, rows, frictional, mu, patch, x0, eps_u: float):
        verts, coef, _ = rows
        self.rows = np.nonzero(frictional)[0].astype(np.int64)  # inequality row index of each contact
        K = self.rows.size
        self.verts = verts[self.rows]
        c = coef[self.rows]
        n = c[:, 0] + c[:, 1]  # (1 - wa) + wa = 1: the signed unit normal (obstacle rows: slot 0 alone)
        n /= np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
        self.normal = n
        self.weight = np.einsum("kvc,kc->kv", c, n)  # w_v
        self.tangent = np.empty((K, 2, 3))
        for k in range(K):
            self.tangent[k] = tangent_basis(n[k])
        self.mu = mu[self.rows]
        self.patch = patch[self.rows]
        self.mode = np.full(K, SLIP, dtype=np.int64)
        self.lam_n = np.zeros(K)
        self.in_w = np.zeros(K, dtype=bool)
        self.x0 = x0
        self.eps_u = float(eps_u)
        self.has_lambda = False  # no QP yet: lambda_n unknown
        self.decided = False  # the stick test is made once per step
        self._layout()

    def _layout(self):
        self.stick = np.nonzero(self.mode == STICK)[0]
        self.slip = np.nonzero(self.mode == SLIP)[0]

    @property
    def n_rows(self) -> int:
        """Equality rows of the sticking contacts (two each)."""
        return 2 * int(self.stick.size)

    @property
    def counts(self) -> tuple[int, int]:
        """(sticking, sliding) contacts (sliding: with a normal force)."""
        return int(self.stick.size), int(np.count_nonzero(self.lam_n[self.slip] > 0.0))

    def pinned_rows(self) -> np.ndarray:
        """Inequality rows held in the working set: the normal rows of the sticking contacts."""
        return self.rows[self.stick]

    def slips(self, P) -> np.ndarray:
        """(K,) tangential displacement ``|u|`` [m] of every contact over the step at ``P``."""
        du = P[self.verts] - self.x0[self.verts]
        u = np.einsum("kv,kvc->kc", self.weight, du)
        u -= np.einsum("kc,kc->k", u, self.normal)[:, None] * self.normal
        return np.linalg.norm(u, axis=1)

    def stick_rows(self, P):
        """Rows ``t_a . sum_v w_v (p_v - p_v^t) = 0`` of the sticking contacts at ``P`` (N, 3):
        ``(verts (2S, 4), coef (2S, 4, 3), values (2S,) [m])``."""
        k = self.stick
        S = k.size
        verts = np.repeat(self.verts[k], 2, axis=0)
        coef = (self.weight[k][:, None, :, None] * self.tangent[k][:, :, None, :]).reshape(2 * S, 4, 3)
        du = P[verts] - self.x0[verts]
        return verts, coef, np.einsum("kvc,kvc->k", coef, du)

    def energy(self, P, grad=None) -> float:
        """Kinetic potential ``sum mu lambda_n f0(|u|)`` [J] of the sliding contacts at ``P``; adds its
        gradient to ``grad`` (N, 3) when given."""
        total = 0.0
        for k in self.slip:
            f = self.mu[k] * self.lam_n[k]
            if f <= 0.0:
                continue
            vs, w, n = self.verts[k], self.weight[k], self.normal[k]
            u = w @ (P[vs] - self.x0[vs])
            u = u - (u @ n) * n
            y = float(np.linalg.norm(u))
            f0, f1, _ = mollifier(y, self.eps_u)
            total += f * f0
            if grad is not None and y > 0.0:
                g = (f * f1 / y) * u
                for v in range(4):
                    if w[v] != 0.0:
                        grad[vs[v]] += w[v] * g
        return total

    def stiffness(self, P, hp) -> None:
        """Adds to ``hp`` (N,) [N/m] an isotropic per-vertex stand-in for the kinetic potential's
        Hessian: its curvature along the slip, ``w_v^2 mu lambda_n f1'(y)`` (``2 / eps_u`` at
        ``y = 0``, 0 once sliding), so that Newton sees the stiff static spring of the mollifier
        and, once sliding, the constant force (the curvature across the slip, ``f1 / y``, is left
        out: taken isotropically it would stall a sliding contact's Newton steps)."""
        if not self.slip.size:
            return
        y = self.slips(P)
        for k in self.slip:
            f = self.mu[k] * self.lam_n[k]
            if f <= 0.0:
                continue
            c = f * mollifier(float(y[k]), self.eps_u)[2]
            if c <= 0.0:
                continue
            for v in range(4):
                if self.weight[k, v] != 0.0:
                    hp[self.verts[k, v]] += self.weight[k, v] ** 2 * c

    def update(self, W, lam) -> bool:
        """The sliding contacts' ``lambda_n`` [N] from a QP's working set ``W`` (row indices) and
        multipliers ``lam`` (a normal row out of ``W``: 0). True after the step's first QP (the
        friction force was unknown to it: solve again)."""
        where = {int(k): float(l) for k, l in zip(W, lam)}
        self.in_w = np.array([int(r) in where for r in self.rows], dtype=bool)
        lam_n = np.array([max(where.get(int(r), 0.0), 0.0) for r in self.rows])
        self.lam_n[self.slip] = lam_n[self.slip]
        first = not self.has_lambda
        self.has_lambda = True
        return first and bool(np.any(self.lam_n > 0.0))

    def decide(self, P) -> bool:
        """The stick test, once per step, at the SQP's sliding solution ``P``: every patch whose
        pressing contacts (``lambda_n > 0``) all slip less than ``eps_u`` (inside the mollifier's
        static zone: the friction needed is below ``mu lambda_n``) sticks from here on (two equality
        rows per pressing contact, ``u = 0``; the patch's other contacts stay frictionless). True
        when a patch switched (the SQP goes on)."""
        if self.decided:
            return False
        self.decided = True
        y = self.slips(P)
        pressing = (self.mode == SLIP) & self.in_w & (self.lam_n > 0.0)
        changed = False
        for p in np.unique(self.patch[pressing]):
            members = pressing & (self.patch == p)
            if np.all(y[members] < self.eps_u):
                self.mode[members] = STICK
                changed = True
        if changed:
            self._layout()
        return changed


def patches(cand, pairs, edge_rod, n_e: int) -> np.ndarray:
    """Patch id (K,) of every inequality row: edge-edge rows by their pair of rods, obstacle rows
    by (rod, obstacle) and runs of consecutive vertices."""
    K = n_e + len(cand)
    out = np.empty(K, dtype=np.int64)
    ids: dict = {}
    for k in range(n_e):
        ra, rb = int(edge_rod[pairs[k, 0]]), int(edge_rod[pairs[k, 1]])
        out[k] = ids.setdefault(("e", min(ra, rb), max(ra, rb)), len(ids))
    order = sorted(range(len(cand)), key=lambda i: cand[i])
    last = None
    for i in order:
        r, oi, j = cand[i]
        if last is None or last[0] != r or last[1] != oi or j != last[2] + 1:
            pid = len(ids)
            ids[("o", r, oi, j)] = pid
        out[n_e + i] = pid
        last = (r, oi, j)
    return out


__all__ = ["SLIP", "STICK", "StepFriction", "patches", "tangent_basis"]
