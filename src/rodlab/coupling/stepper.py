"""Discrete Elastic Rods welded to rigid bodies (Bergou et al. 2008, Sec. 8, 8.1, 8.2).

Model: :class:`RigidBody` (mass, body-frame inertia tensor) and :class:`Weld` (which body,
which end edge of the rod). State: :class:`CoupledState` (the rod's
:class:`rodlab.state.RodState` plus body arrays ``r, q, V, w``). Stepper:
:class:`CoupledDERStepper`, which reuses the DER stepper's rest quantities and kernels and
adds the body integration, the generalized-metric projection and the torque transfer
(``rodlab.coupling.kernels``). docs/coupling.md has the equations.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..der import kernels as K
from ..der.stepper import DEROptions, DERStepper, SimulationError, StepInfo, suggested_time_step
from ..model import Loads, Rod, require
from ..state import RodState
from . import kernels as CK


@dataclass(frozen=True, eq=False)
class RigidBody:
    """A rigid body: ``mass`` [kg] and ``inertia`` (3, 3) [kg m^2] about its centre of mass,
    in body coordinates (symmetric positive definite)."""

    mass: float
    inertia: np.ndarray

    def __post_init__(self):
        require(math.isfinite(self.mass) and self.mass > 0, f"body mass must be > 0 kg (got {self.mass})")
        I = np.array(self.inertia, dtype=float)
        require(I.shape == (3, 3), f"body inertia must have shape (3, 3) (got {I.shape})")
        require(np.allclose(I, I.T, rtol=1e-12, atol=0), "body inertia must be symmetric")
        require(np.all(np.linalg.eigvalsh(I) > 0), "body inertia must be positive definite")
        I.setflags(write=False)
        object.__setattr__(self, "inertia", I)

    @classmethod
    def disk(cls, mass: float, radius: float, thickness: float = 0.0, axis: int = 2) -> "RigidBody":
        """Solid cylinder (disk) of ``radius`` and ``thickness`` with its symmetry axis along body ``axis``."""
        ia = 0.5 * mass * radius**2
        it = mass * (3 * radius**2 + thickness**2) / 12.0
        d = np.full(3, it)
        d[axis] = ia
        return cls(mass, np.diag(d))


@dataclass(frozen=True)
class Weld:
    """Weld body ``body`` to the rod's end edge ``edge`` (0 or -1): the edge's two vertices and
    material frame follow the body (Bergou 2008, Sec. 8)."""

    body: int
    edge: int


@dataclass
class CoupledState:
    """Rod state plus bodies: ``r`` (nb, 3) centres of mass [m], ``q`` (nb, 4) unit quaternions
    (w, x, y, z) body -> world, ``V`` (nb, 3) [m/s], ``w`` (nb, 3) angular velocity in the
    body frame [rad/s]."""

    rod: RodState
    r: np.ndarray
    q: np.ndarray
    V: np.ndarray
    w: np.ndarray

    @property
    def t(self) -> float:
        return self.rod.t

    def copy(self) -> "CoupledState":
        return CoupledState(self.rod.copy(), self.r.copy(), self.q.copy(), self.V.copy(), self.w.copy())

    def rotation(self, b: int) -> np.ndarray:
        R = np.empty((3, 3))
        CK.quat_matrix_into(np.ascontiguousarray(self.q[b]), R)
        return R


class CoupledDERStepper:
    """Explicit DER rod welded to rigid bodies: Bergou 2008, Algorithm 1 with steps 4, 5, 8.

    ``rod`` may carry its own static clamps (``Clamp(edge)`` without motion); bodies are welded
    to end edges (edge 0 and/or the last edge, one body per end). ``body_damping`` [1/s]
    damps body velocities (``V, w <- . / (1 + h c)``), for settling runs. ``projection``:
    "fast" (Goldenthal fast projection, the paper's Sec. 8.1) or "shake" (corrections along the
    constraint gradients at the step's start: the constrained leapfrog, no projection damping).
    """

    def __init__(self, rod: Rod, bodies, welds, loads: Loads = Loads(), options: DEROptions | None = None,
                 body_damping: float = 0.0, projection: str = "fast"):
        require(not rod.closed, "rigid-body coupling needs an open rod")
        require(rod.n_edges >= 3, f"rigid-body coupling needs at least 3 edges (got {rod.n_edges})")
        self.bodies = tuple(bodies)
        self.welds = tuple(welds)
        require(len(self.welds) == len(self.bodies), "give exactly one Weld per body")
        ne = rod.n_edges
        edges = []
        for w in self.welds:
            require(0 <= w.body < len(self.bodies), f"weld body must be in [0, {len(self.bodies) - 1}] (got {w.body})")
            e = w.edge % ne
            require(e in (0, ne - 1), f"weld edge must be 0 or -1 (an end edge) (got {w.edge})")
            require(e not in rod.clamped_edges(), f"edge {e} is both clamped and welded")
            edges.append(e)
        require(len(set(edges)) == len(edges), "two welds on the same edge")
        require(sorted(w.body for w in self.welds) == list(range(len(self.bodies))), "each body needs exactly one weld")
        for c in rod.boundary.clamps:
            require(c.motion is None and not c.free_rotation, "coupled rods support static clamps only")
        require(projection in ("fast", "shake"), f"projection must be one of fast, shake (got {projection!r})")
        self.projection = projection
        require(math.isfinite(body_damping) and body_damping >= 0, f"body_damping must be >= 0 1/s (got {body_damping})")
        self.der = DERStepper(rod, loads, options)
        self.rod = rod
        self.loads = loads
        self.options = self.der.options
        self.body_damping = float(body_damping)
        nb = len(self.bodies)
        # body index per weld order = body order
        order = sorted(range(nb), key=lambda i: self.welds[i].body)
        self.weld_edges = np.array([edges[i] for i in order], dtype=np.int64)
        self.b_mass = np.array([b.mass for b in self.bodies])
        self.b_I = np.ascontiguousarray(np.array([b.inertia for b in self.bodies]).reshape(nb, 3, 3))
        self.b_Iinv = np.ascontiguousarray(np.linalg.inv(self.b_I).reshape(nb, 3, 3))
        self.b_vidx = np.array([[e, e + 1] for e in self.weld_edges], dtype=np.int64).reshape(nb, 2)
        nv = rod.n_vertices
        self.vbody = np.full(nv, -1, dtype=np.int64)
        for b in range(nb):
            self.vbody[self.b_vidx[b]] = b
        self.inv_mass = self.der.inv_mass.copy()
        self.inv_mass[self.vbody >= 0] = 0.0
        # prescribed material angles: static clamps first, then one slot per weld
        clamp_edges = [int(j) for j in self.der.clamp_edges]
        self.b_slot = np.arange(len(clamp_edges), len(clamp_edges) + nb, dtype=np.int64)
        self.clamp_edges = np.array(clamp_edges + [int(e) for e in self.weld_edges], dtype=np.int64)
        self.free_theta = np.ones(ne, dtype=bool)
        self.free_theta[self.clamp_edges] = False
        self._p = None
        self._m1 = None
        self._clamp_m1 = None

    def set_damping(self, rod_rate: float, body_rate: float) -> None:
        """Change the viscous damping rates [1/s] of the rod vertices and of the bodies (e.g.
        after a settling phase)."""
        require(rod_rate >= 0 and body_rate >= 0, f"damping rates must be >= 0 1/s (got {rod_rate}, {body_rate})")
        self.loads = Loads(gravity=self.loads.gravity, damping=float(rod_rate), point_forces=self.loads.point_forces)
        self.body_damping = float(body_rate)

    def set_body(self, b: int, body: RigidBody) -> None:
        """Replace body ``b``'s mass and inertia (its pose, weld and state are kept)."""
        require(0 <= b < len(self.bodies), f"body must be in [0, {len(self.bodies) - 1}] (got {b})")
        bodies = list(self.bodies)
        bodies[b] = body
        self.bodies = tuple(bodies)
        self.b_mass[b] = body.mass
        self.b_I[b] = body.inertia
        self.b_Iinv[b] = np.linalg.inv(body.inertia)

    # ---- states --------------------------------------------------------------------------------
    def initial_state(self, x=None, centers=None, orientations=None, theta=None, v=None,
                      body_velocities=None, body_angular_velocities=None) -> CoupledState:
        """State at the rest shape (or ``x``); body ``b`` has centre ``centers[b]`` and
        orientation ``orientations[b]`` (quaternion, default identity) in this configuration, which
        fixes the body-frame offsets of its welded vertices and director (the weld's reference).
        Angular velocities are given in the world frame."""
        nb = len(self.bodies)
        rs = self.der.initial_state(x=x, theta=theta, v=v)
        require(centers is not None, "initial_state needs the bodies' centres of mass")
        r = np.array(centers, dtype=float).reshape(nb, 3)
        q = np.tile([1.0, 0.0, 0.0, 0.0], (nb, 1)) if orientations is None else np.array(orientations, dtype=float).reshape(nb, 4)
        q /= np.linalg.norm(q, axis=1)[:, None]
        m1, _ = self.der.material_frames(rs)
        self._p = np.empty((nb, 2, 3))
        self._m1 = np.empty((nb, 3))
        for b in range(nb):
            R = np.empty((3, 3))
            CK.quat_matrix_into(q[b], R)
            self._p[b] = (rs.x[self.b_vidx[b]] - r[b]) @ R
            self._m1[b] = R.T @ m1[self.weld_edges[b]]
        self._clamp_m1 = np.array([self.der._clamp_m1(int(j), 0.0) for j in self.der.clamp_edges] + list(m1[self.weld_edges])).reshape(-1, 3)
        V = np.zeros((nb, 3)) if body_velocities is None else np.array(body_velocities, dtype=float).reshape(nb, 3)
        w = np.zeros((nb, 3))
        if body_angular_velocities is not None:
            ww = np.array(body_angular_velocities, dtype=float).reshape(nb, 3)
            for b in range(nb):
                R = np.empty((3, 3))
                CK.quat_matrix_into(q[b], R)
                w[b] = R.T @ ww[b]
        state = CoupledState(rs, r, q, V, w)
        # welded vertices move rigidly with the body
        for b in range(nb):
            R = state.rotation(b)
            for s in range(2):
                k = self.b_vidx[b, s]
                rho = rs.x[k] - r[b]
                rs.v[k] = V[b] + np.cross(R @ w[b], rho)
        self._solve_twist(state)
        return state

    def _solve_twist(self, state: CoupledState) -> None:
        der = self.der
        rs = state.rod
        der._refresh(rs)
        edges, lengths, tangents, kb, d2 = der._buffers()
        dirs = np.empty((len(self.bodies), 3))
        CK.body_directors(state.q, self._m1, dirs)
        self._clamp_m1[self.b_slot] = dirs
        K.clamp_material_angles(rs.ref_d1, d2, tangents, rs.theta, self.clamp_edges, self._clamp_m1)
        tol = self.options.twist_tol * max(1.0, float(der.twist_k.max() / der.lbar.min()))
        e3, s = der._e3, der._s
        K.update_twist(kb, rs.ref_d1, d2, tangents, rs.theta, rs.ref_twist, lengths, der.rest_lengths, der.lbar,
                       der.omega_bar, der.bend_k, der.twist_bar, der.twist_k, der.stretch_k, self.free_theta, False,
                       der.uniform_twist, tol, self.options.twist_max_iter, e3[4], e3[5], der._omega, s[1], s[2], s[3], s[4])

    # ---- diagnostics ---------------------------------------------------------------------------
    def weld_error(self, state: CoupledState) -> float:
        """max over bodies of ``|x_k - (r + R p_k)|`` and ``|m1 - R m1^0|`` (the weld constraints of Sec. 8)."""
        m1, _ = self.der.material_frames(state.rod)
        err = 0.0
        for b in range(len(self.bodies)):
            R = state.rotation(b)
            for s in range(2):
                err = max(err, float(np.linalg.norm(state.rod.x[self.b_vidx[b, s]] - state.r[b] - R @ self._p[b, s])))
            err = max(err, float(np.linalg.norm(m1[self.weld_edges[b]] - R @ self._m1[b])))
        return err

    def inextensibility(self, state: CoupledState) -> float:
        e = np.diff(state.rod.x, axis=0)
        return float(np.max(np.abs(np.sum(e * e, axis=1) / self.der.rest_lengths**2 - 1.0)))

    def body_energies(self, state: CoupledState) -> np.ndarray:
        """(nb, 3): translational kinetic, rotational kinetic, gravity potential [J] of each body."""
        g = np.asarray(self.loads.gravity, dtype=float)
        out = np.empty((len(self.bodies), 3))
        for b in range(len(self.bodies)):
            out[b, 0] = 0.5 * self.b_mass[b] * float(state.V[b] @ state.V[b])
            out[b, 1] = 0.5 * float(state.w[b] @ self.b_I[b] @ state.w[b])
            out[b, 2] = -self.b_mass[b] * float(state.r[b] @ g)
        return out

    def rod_energies(self, state: CoupledState) -> tuple[float, float, float]:
        """(kinetic of the free rod vertices, elastic, gravity potential of the free rod vertices) [J];
        the welded vertices' lumped masses count as part of their bodies."""
        free = self.vbody < 0
        m = self.der.masses * free
        ke = 0.5 * float(np.sum(m[:, None] * state.rod.v**2))
        g = np.asarray(self.loads.gravity, dtype=float)
        pe = -float(np.sum(m * (state.rod.x @ g)))
        return ke, self.der.elastic_energy(state.rod), pe

    def total_energy(self, state: CoupledState) -> float:
        return float(np.sum(self.body_energies(state)) + sum(self.rod_energies(state)))

    def linear_momentum(self, state: CoupledState) -> np.ndarray:
        m = self.der.masses * (self.vbody < 0)
        return np.sum(m[:, None] * state.rod.v, axis=0) + np.sum(self.b_mass[:, None] * state.V, axis=0)

    def angular_momentum(self, state: CoupledState) -> np.ndarray:
        """About the origin, world frame."""
        m = self.der.masses * (self.vbody < 0)
        L = np.sum(m[:, None] * np.cross(state.rod.x, state.rod.v), axis=0)
        for b in range(len(self.bodies)):
            R = state.rotation(b)
            L += self.b_mass[b] * np.cross(state.r[b], state.V[b]) + R @ (self.b_I[b] @ state.w[b])
        return L

    def axial_twist_torque(self, state: CoupledState) -> np.ndarray:
        """``dE/dtheta_w`` at each welded edge [N m] (Sec. 8.2: ``|tau| = dE/dtheta_0``)."""
        der = self.der
        der._refresh(state.rod)
        edges, lengths, tangents, kb, d2 = der._buffers()
        ne = self.rod.n_edges
        grad = np.empty(ne)
        hd = np.empty(ne)
        hl = np.empty(ne)
        K.twist_gradient_hessian(kb, state.rod.ref_d1, d2, state.rod.theta, state.rod.ref_twist, der.lbar, der.omega_bar,
                                 der.bend_k, der.twist_bar, der.twist_k, der._e3[4], der._e3[5], der._omega, grad, hd, hl)
        return grad[self.weld_edges].copy()

    def rod_wrench(self, state: CoupledState) -> tuple[np.ndarray, np.ndarray]:
        """(nb, 3) forces and (nb, 3) torques [N, N m] the rod exerts on each body (world frame,
        torque about the centre of mass), from the same compiled kernel the stepper uses."""
        der = self.der
        rs = state.rod
        der._refresh(rs)
        edges, lengths, tangents, kb, d2 = der._buffers()
        nv, ne = self.rod.n_vertices, self.rod.n_edges
        f = np.empty((nv, 3))
        K.elastic_forces(kb, tangents, lengths, der.rest_lengths, rs.ref_d1, d2, rs.theta, rs.ref_twist, der.lbar,
                         der.omega_bar, der.bend_k, der.twist_bar, der.twist_k, der.stretch_k, der._e3[4], der._e3[5],
                         der._omega, f)
        grad, hd, hl = np.empty(ne), np.empty(ne), np.empty(ne)
        K.twist_gradient_hessian(kb, rs.ref_d1, d2, rs.theta, rs.ref_twist, der.lbar, der.omega_bar, der.bend_k,
                                 der.twist_bar, der.twist_k, der._e3[4], der._e3[5], der._omega, grad, hd, hl)
        nb = len(self.bodies)
        force, torque = np.empty((nb, 3)), np.empty((nb, 3))
        CK.rod_wrench_on_bodies(rs.x, f, grad, tangents, state.r, self.b_vidx, self.weld_edges, force, torque)
        return force, torque

    def moved_body_energy(self, state: CoupledState, b: int, translation, rotvec) -> float:
        """Reduced elastic energy ``min_theta E`` after :meth:`move_body`: the
        finite-difference reference for :meth:`rod_wrench`."""
        return self.der.elastic_energy(self.move_body(state, b, translation, rotvec).rod)

    def move_body(self, state: CoupledState, b: int, translation, rotvec) -> CoupledState:
        """A copy of ``state`` with body ``b`` moved rigidly by ``translation`` and rotated by
        ``rotvec`` (world, about its centre): welded vertices and director follow, reference
        frames are carried in time, the free angles re-equilibrate."""
        from ..geometry.rotations import rotvec_to_quat

        s = state.copy()
        dq = rotvec_to_quat(np.asarray(rotvec, dtype=float))
        qn = np.empty(4)
        qn[0], qn[1], qn[2], qn[3] = CK._qmul(dq[0], dq[1], dq[2], dq[3], *s.q[b])
        s.q[b] = qn / np.linalg.norm(qn)
        s.r[b] += np.asarray(translation, dtype=float)
        R = np.empty((3, 3))
        CK.place_body_vertices(s.rod.x, s.r, s.q, self._p, self.b_vidx, R)
        der = self.der
        der._refresh(state.rod)  # tangents of the base state in the buffer
        edges, lengths, tangents, kb, d2 = der._buffers()
        K.refresh_geometry(s.rod.x, False, s.rod.ref_d1, s.rod.ref_twist, True, edges, lengths, tangents, kb, d2)
        self._solve_twist(s)
        return s

    # ---- stepping --------------------------------------------------------------------------------
    def advance(self, state: CoupledState, nsteps: int = 1) -> StepInfo:
        """Advance ``state`` in place by ``nsteps`` steps; on failure restore it and raise
        :class:`SimulationError`."""
        require(nsteps >= 0, f"nsteps must be >= 0 (got {nsteps})")
        require(self._p is not None, "make the state with initial_state() first")
        der, opt = self.der, self.options
        h = opt.dt
        rs = state.rod
        der._refresh(rs)
        snapshot = state.copy()
        diag = np.zeros(5)
        tol = opt.twist_tol * max(1.0, float(der.twist_k.max() / der.lbar.min()))
        g = np.asarray(self.loads.gravity, dtype=float)
        try:
            done = CK.run_coupled_steps(
                nsteps, h, der.uniform_twist, rs.x, rs.v, rs.theta, rs.ref_d1, rs.ref_twist, self.inv_mass, self.vbody,
                g, self.loads.damping, self.clamp_edges, self._clamp_m1, self.free_theta, der.rest_lengths, der.lbar,
                der.omega_bar, der.bend_k, der.twist_bar, der.twist_k, der.stretch_k, self.b_mass, self.b_I, self.b_Iinv,
                state.r, state.q, state.V, state.w, self._p, self.b_vidx, self.weld_edges, self._m1, self.b_slot,
                self.body_damping, opt.projection_tol, opt.projection_max_iter, tol, opt.twist_max_iter,
                der._v3, der._e3, der._s, der._kb, der._omega, diag, self.projection == "shake")
        except (ValueError, ZeroDivisionError) as exc:
            done = -1
            err = str(exc)
        if done < nsteps:
            self._restore(state, snapshot)
            why = err if done < 0 else "non-finite state"
            raise SimulationError(f"coupled DER step failed ({why}) within {nsteps} steps from t = {snapshot.t:.6g} s "
                                  f"(dt = {h:g} s; try a smaller dt); the state is restored to t = {snapshot.t:.6g} s")
        rs.t += done * h
        return StepInfo(done, int(diag[0]), float(diag[1]), int(diag[2]), float(diag[3]))

    @staticmethod
    def _restore(state: CoupledState, snap: CoupledState) -> None:
        for name in ("x", "v", "theta", "ref_d1", "ref_twist"):
            getattr(state.rod, name)[...] = getattr(snap.rod, name)
        state.rod.t = snap.rod.t
        for name in ("r", "q", "V", "w"):
            getattr(state, name)[...] = getattr(snap, name)


__all__ = ["RigidBody", "Weld", "CoupledState", "CoupledDERStepper", "suggested_time_step", "DEROptions", "SimulationError"]
