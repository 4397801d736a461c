"""Discrete Elastic Rods stepper (Bergou et al. 2008): the Python face of ``kernels.py``.

``DERStepper(rod, loads, options)`` precomputes the rest quantities once; ``advance(state, n)``
runs ``n`` steps inside compiled code and returns diagnostics. States are plain
:class:`rodlab.state.RodState` arrays, so they can be copied, saved and restored freely.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from ..geometry.curves import (
    compute_curvature_binormals,
    compute_edges,
    compute_tangents,
    complete_frames,
    material_curvatures,
    material_frames,
    reference_twist,
    time_parallel_update,
)
from ..aot import kernel
from ..model import Loads, ModelError, Rod, SimulationError, check_damping_scheme, check_steps, require
from ..motions import sample_motion
from ..state import RodState
from . import kernels as K

# this module calls its kernels from Python only: through their ahead-of-time compiled entries
# where those are built (rodlab.aot; bitwise the JIT's results), else numba's dispatchers
(compute_curvature_binormals, compute_edges, compute_tangents, complete_frames, material_curvatures, material_frames,
 reference_twist, time_parallel_update) = map(kernel, (
    compute_curvature_binormals, compute_edges, compute_tangents, complete_frames, material_curvatures, material_frames,
    reference_twist, time_parallel_update))
_refresh_geometry, _clamp_material_angles, _update_twist = map(kernel, (
    K.refresh_geometry, K.clamp_material_angles, K.update_twist))

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DEROptions:
    """Numerical options of the DER stepper.

    dt: time step [s]. projection_tol: largest allowed ``|e.e - ebar.ebar| / ebar^2`` after
    fast projection; projection_max_iter its iteration cap; projection_fail: a step whose
    projection ends above this violation is refused (SimulationError, state kept). twist_tol: absolute tolerance on
    ``max |dE/dtheta|`` [J] for the quasistatic twist (scaled internally by the stiffest joint);
    twist_max_iter its Newton cap. inextensible: project onto fixed edge lengths (else the
    stretching energy acts). twist_solver: "auto" (closed form when the rod is naturally
    straight and isotropic), "newton" or "uniform". damping_scheme: how the loads' viscous damping
    is discretised (:data:`rodlab.model.DAMPING_SCHEMES`): velocity factor ``1 / (1 + c dt)``
    ("implicit") or ``exp(-c dt)`` ("exponential"); the two agree to O((c dt)^2) at explicit steps. energy_check: refuse an
    ``advance`` call of an undriven rod (no moving clamp, no time-dependent force) whose total
    mechanical energy rises by more than half the rod's energy scale (see
    :meth:`DERStepper.advance`): the mark of a step above the stability limit that the fast
    projection keeps bounded.
    """

    dt: float
    projection_tol: float = 1e-12
    projection_max_iter: int = 30
    projection_fail: float = 1e-6
    twist_tol: float = 1e-10
    twist_max_iter: int = 50
    inextensible: bool = True
    twist_solver: str = "auto"
    damping_scheme: str = "implicit"
    energy_check: bool = True

    def __post_init__(self):
        check_damping_scheme(self.damping_scheme)
        require(self.dt > 0 and math.isfinite(self.dt), f"dt must be > 0 s (got {self.dt})")
        require(self.projection_tol > 0, f"projection_tol must be > 0 (got {self.projection_tol})")
        require(self.projection_fail >= self.projection_tol, f"projection_fail must be >= projection_tol (got {self.projection_fail})")
        require(self.projection_max_iter >= 1, f"projection_max_iter must be >= 1 (got {self.projection_max_iter})")
        require(self.twist_tol > 0, f"twist_tol must be > 0 (got {self.twist_tol})")
        require(self.twist_max_iter >= 1, f"twist_max_iter must be >= 1 (got {self.twist_max_iter})")
        require(self.twist_solver in ("auto", "newton", "uniform"), f"twist_solver must be one of auto, newton, uniform (got {self.twist_solver!r})")


@dataclass(frozen=True)
class StepInfo:
    steps: int
    projection_iterations_max: int
    constraint_violation_max: float
    twist_iterations_max: int
    twist_gradient_max: float


def suggested_time_step(rod: Rod, safety: float = 0.4) -> float:
    """A stable symplectic-Euler step [s]: ``safety * min(l^2) * sqrt(rho A / B)``.

    The stiffest discrete bending mode has ``omega_max ~ (2/l)^2 sqrt(B/(rho A))``; symplectic
    Euler needs ``h omega_max < 2``, i.e. ``safety < 0.5``: the default 0.4 is 80 % of that limit.
    Measured on a clamped rod under gravity (tests/test_der_dynamics.py): stable at 1.2x the
    default step, unstable (refused by the energy check) from 1.3x.
    """
    l = rod.rest_lengths
    b = rod.bending_stiffness.max(axis=1)
    return float(safety * np.min(l * l * np.sqrt(rod.linear_density / b)))


class DERStepper:
    """Explicit DER: symplectic Euler + fast projection + quasistatic twist (Bergou 2008, Alg. 1)."""

    def __init__(self, rod: Rod, loads: Loads = Loads(), options: DEROptions | None = None):
        require(isinstance(rod, Rod), f"rod must be a rodlab.model.Rod (got {type(rod).__name__})")
        require(isinstance(loads, Loads), f"loads must be a rodlab.model.Loads (got {type(loads).__name__})")
        require(rod.n_vertices >= 3, f"method der needs rods of at least 3 vertices (a bending joint); this rod has {rod.n_vertices}")
        self.rod = rod
        self.loads = loads.check_for(rod)
        self.options = options or DEROptions(dt=suggested_time_step(rod))
        nv, ne, nj = rod.n_vertices, rod.n_edges, rod.n_joints
        self.closed = rod.closed
        self.rest_lengths = np.ascontiguousarray(rod.rest_lengths)
        nxt = (np.arange(nj) + 1) % ne
        self.lbar = self.rest_lengths[:nj] + self.rest_lengths[nxt]
        # writable copies: a read-only array (a frozen Rod's) is another numba type, and the
        # kernels called with it from here would compile a second time beside the batch's
        self.bend_k = np.array(rod.bending_stiffness, dtype=np.float64)
        self.twist_k = 0.5 * (rod.twisting_stiffness[:nj] + rod.twisting_stiffness[nxt])
        self.stretch_k = np.zeros(ne) if self.options.inextensible else np.array(rod.stretching_stiffness, dtype=np.float64)
        if not self.options.inextensible:
            require(np.all(rod.stretching_stiffness > 0), "an extensible rod needs stretching_stiffness > 0")
        self.omega_bar, self.twist_bar = rest_curvatures_and_twist(rod)
        masses = rod.vertex_masses
        fixed = rod.fixed_vertex_mask()
        self.inv_mass = np.where(fixed, 0.0, 1.0 / masses)
        self.masses = masses
        self.clamps = {c.edge % ne: c for c in rod.boundary.clamps}
        # edges whose material angle is prescribed (a swivel clamp holds positions only)
        self.clamp_edges = np.array(sorted(j for j, c in self.clamps.items() if not c.free_rotation), dtype=np.int64)
        self.free_theta = np.ones(ne, dtype=bool)
        self.free_theta[self.clamp_edges] = False
        self.prescribed_vertices = np.flatnonzero(fixed).astype(np.int64)
        self._sliders = self._build_sliders(rod, masses)
        # the closed-form twist needs angle-independent bending: isotropic and naturally straight
        straight = np.allclose(self.omega_bar, 0.0, atol=1e-12)
        isotropic = np.allclose(self.bend_k[:, 0], self.bend_k[:, 1], rtol=1e-12)
        if self.options.twist_solver == "auto":
            self.uniform_twist = bool(straight and isotropic)
        else:
            self.uniform_twist = self.options.twist_solver == "uniform"
        # an open straight isotropic rod with at most one prescribed frame never twists
        self.twist_free = bool(self.options.twist_solver == "auto" and self.uniform_twist and not rod.closed
                               and self.clamp_edges.size <= 1 and np.allclose(self.twist_bar, 0.0))
        # work buffers, reused across calls
        self._v3 = np.zeros((2, nv, 3))
        self._e3 = np.zeros((6, ne, 3))
        self._s = np.zeros((7, ne))
        self._kb = np.zeros((nj, 3))
        self._omega = np.zeros((nj, 4))
        self._ext_force = np.zeros((nv, 3))
        self._clamp_rest = {}
        self._clamp_geom = {}  # clamp edge -> (its _clamp_rest entry, _clamp_geometry)

    def _build_sliders(self, rod: Rod, masses: np.ndarray) -> tuple:
        """``run_steps``' ``slide_*`` arrays for the clamps with a ``slide_axis``."""
        sliding = [(j, c) for j, c in self.clamps.items() if c.slide_axis is not None]
        if not sliding:
            return K.no_sliders()
        ne = rod.n_edges
        require(not rod.closed, "a sliding clamp needs an open rod")
        require(self.options.inextensible, "sliding clamps are modelled for the inextensible rod only")
        verts, axes, w, edge, side = [], [], [], [], []
        for j, c in sliding:
            require(j in (0, ne - 1) and ne >= 3, f"a sliding clamp must hold an end edge of a rod of >= 3 edges (edge {j})")
            axis = np.asarray(c.slide_axis, dtype=float)
            require(axis.shape == (3,) and np.linalg.norm(axis) > 0, f"slide_axis must be a nonzero 3-vector (got {c.slide_axis})")
            axis = axis / np.linalg.norm(axis)  # any direction: the clamped edge translates rigidly along it
            verts.append((j, j + 1))
            axes.append(axis)
            w.append(1.0 / (masses[j] + masses[j + 1]))
            # the constraint joining the clamp to the rest of the rod
            edge.append(1 if j == 0 else ne - 2)
            side.append(1.0 if j == 0 else -1.0)
        return (np.array(verts, dtype=np.int64), np.array(axes), np.array(w), np.array(edge, dtype=np.int64), np.array(side))

    # ---- states ------------------------------------------------------------------------------
    def initial_state(self, x=None, theta=None, v=None, t: float = 0.0) -> RodState:
        """State at rest shape (or at ``x``), frames transported from the rest frame, twist solved."""
        rod = self.rod
        x0 = np.array(rod.rest_positions if x is None else x, dtype=float)
        require(x0.shape == rod.rest_positions.shape, f"x must have shape {rod.rest_positions.shape} (got {x0.shape})")
        ne = rod.n_edges
        t_rest = _tangents(rod.rest_positions, rod.closed)
        t_now = _tangents(x0, rod.closed)
        d1 = np.array(rod.rest_d1)
        time_parallel_update(t_rest, t_now, d1)
        rest_mref = np.zeros(rod.n_joints)
        reference_twist(t_rest, np.array(rod.rest_d1), rod.closed, np.zeros(rod.n_joints), rest_mref)
        tw = np.zeros(rod.n_joints)
        reference_twist(t_now, d1, rod.closed, rest_mref, tw)
        th = np.zeros(ne) if theta is None else np.array(theta, dtype=float)
        require(th.shape == (ne,), f"theta must have shape ({ne},) (got {th.shape})")
        state = RodState(float(t), x0, np.zeros_like(x0) if v is None else np.array(v, dtype=float), th, d1, tw)
        self._refresh(state)
        self.attach(state)
        return state

    def attach(self, state: RodState) -> None:
        """Take ``state`` as the clamps' initial pose (prescribed motion acts on it) and
        re-equilibrate its twist. Use it to continue a state made by another stepper, e.g.
        after changing boundary conditions."""
        self._refresh(state)
        m1, _ = self.material_frames(state)
        for j in self.clamps:
            b = (j + 1) % self.rod.n_vertices
            self._clamp_rest[j] = (state.x[[j, b]].copy(), m1[j].copy())
        self._solve_twist(state)

    def material_frames(self, state: RodState) -> tuple[np.ndarray, np.ndarray]:
        """Material directors ``(m1, m2)`` per edge (Bergou 2008, Sec. 4.2.2)."""
        return self.material_frames_from(state, _tangents(state.x, self.closed))

    def twist(self, state: RodState) -> np.ndarray:
        """Integrated twist per joint ``m_k = theta_f - theta_e + mref_k`` [rad]."""
        ne = self.rod.n_edges
        nxt = (np.arange(self.rod.n_joints) + 1) % ne
        return state.theta[nxt] - state.theta[: self.rod.n_joints] + state.ref_twist

    # ---- energies and forces ---------------------------------------------------------------
    def _buffers(self):
        e3 = self._e3
        return e3[0], self._s[0], e3[1], self._kb, e3[3]

    def _refresh(self, state: RodState) -> None:
        edges, lengths, tangents, kb, d2 = self._buffers()
        _refresh_geometry(state.x, self.closed, state.ref_d1, state.ref_twist, False, edges, lengths, tangents, kb, d2)

    def _solve_twist(self, state: RodState):
        edges, lengths, tangents, kb, d2 = self._buffers()
        e3, s = self._e3, self._s
        omega = self._omega
        tol = self.options.twist_tol * max(1.0, float(self.twist_k.max() / self.lbar.min()))
        if self.clamp_edges.size:
            m1 = np.array([self._clamp_m1(j, state.t) for j in self.clamp_edges])
            _clamp_material_angles(state.ref_d1, d2, tangents, state.theta, self.clamp_edges, m1)
        return _update_twist(kb, state.ref_d1, d2, tangents, state.theta, state.ref_twist, lengths,
                              self.rest_lengths, self.lbar, self.omega_bar, self.bend_k, self.twist_bar,
                              self.twist_k, self.stretch_k, self.free_theta, self.closed, self.uniform_twist,
                              tol, self.options.twist_max_iter, e3[4], e3[5], omega, s[1], s[2], s[3], s[4])

    def elastic_energy(self, state: RodState) -> float:
        self._refresh(state)
        edges, lengths, tangents, kb, d2 = self._buffers()
        omega = self._omega
        return float(K.elastic_energy(kb, state.ref_d1, d2, state.theta, state.ref_twist, lengths, self.rest_lengths,
                                      self.lbar, self.omega_bar, self.bend_k, self.twist_bar, self.twist_k,
                                      self.stretch_k, self._e3[4], self._e3[5], omega))

    def elastic_forces(self, state: RodState) -> np.ndarray:
        """``-dE/dx`` [N] at the state's angles (Bergou 2008, Sec. 7.1)."""
        self._refresh(state)
        edges, lengths, tangents, kb, d2 = self._buffers()
        omega = self._omega
        f = np.empty_like(state.x)
        K.elastic_forces(kb, tangents, lengths, self.rest_lengths, state.ref_d1, d2, state.theta, state.ref_twist,
                         self.lbar, self.omega_bar, self.bend_k, self.twist_bar, self.twist_k, self.stretch_k,
                         self._e3[4], self._e3[5], omega, f)
        return f

    def external_forces(self, t: float) -> np.ndarray:
        f = self.masses[:, None] * np.asarray(self.loads.gravity, dtype=float)[None, :]
        for pf in self.loads.point_forces:
            f[pf.vertex] += pf.at(t)
        return f

    def kinetic_energy(self, state: RodState) -> float:
        return 0.5 * float(np.sum(self.masses[:, None] * state.v**2))

    def potential_energy(self, state: RodState) -> float:
        """Gravity potential [J] (zero at z = 0 of the gravity direction)."""
        g = np.asarray(self.loads.gravity, dtype=float)
        return -float(np.sum(self.masses * (state.x @ g)))

    def mechanical_energy(self, state: RodState) -> float:
        """Kinetic + elastic + gravity potential + potential of the constant point forces [J]:
        conserved by the undamped, undriven dynamics, never raised by damping."""
        e = self.kinetic_energy(state) + self.elastic_energy(state) + self.potential_energy(state)
        for pf in self.loads.point_forces:
            if not callable(pf.force):
                e -= float(np.dot(pf.at(state.t), state.x[pf.vertex]))
        return e

    def energy_scale(self, state: RodState) -> float:
        """Energy the undriven rod can exchange, roughly: its kinetic and elastic energy plus the
        work its loads do over a displacement of the rod's length [J]."""
        load = float(self.masses.sum()) * float(np.linalg.norm(self.loads.gravity))
        load += sum(float(np.linalg.norm(pf.at(state.t))) for pf in self.loads.point_forces)
        return self.kinetic_energy(state) + abs(self.elastic_energy(state)) + load * self.rod.total_length + 1e-300

    # ---- prescribed motion -------------------------------------------------------------------
    def _clamp_m1(self, j: int, t: float) -> np.ndarray:
        rest_x, m1 = self._clamp_rest[j]
        motion = self.clamps[j].motion
        if motion is None:
            return m1
        R, _ = motion(t)
        return np.asarray(R) @ m1

    def _prescribed_positions(self, state: RodState, times: np.ndarray) -> np.ndarray:
        """(len(times), n_prescribed, 3): clamped edges follow their motion, pinned vertices stay."""
        return self._clamp_inputs(state, times)[0]

    def _clamp_inputs(self, state: RodState, times: np.ndarray):
        """Prescribed positions (len(times), n_prescribed, 3) (clamped edges follow their motion,
        pinned vertices stay) and clamped material directors m1 (len(times), n_clamps, 3) at each
        time (:meth:`_clamp_inputs_into`)."""
        nt = len(times)
        out = np.empty((nt, self.prescribed_vertices.size, 3))
        m1 = np.empty((nt, self.clamp_edges.size, 3))
        self._clamp_inputs_into(state.x, np.asarray(times, dtype=float), out, m1)
        return out, m1

    def _clamp_inputs_into(self, x: np.ndarray, times: np.ndarray, out: np.ndarray, m1: np.ndarray) -> None:
        """:meth:`_clamp_inputs` written into ``out`` (len(times), n_prescribed, 3) and ``m1``
        (len(times), n_clamps, 3) (views of the DER simulator's flat per-call arrays), from the
        rod's positions ``x``: each moving clamp's motion is sampled at every time at once
        (:func:`rodlab.motions.sample_motion`: its ``sample`` where it has one, else one call per
        time) and its rigid maps are applied to every time at once (stacked ``matmul``: the same
        numbers as one time at a time, tested)."""
        out[:] = x[self.prescribed_vertices][None]
        rotations = {}
        for j, clamp in self.clamps.items():
            if clamp.motion is None:
                continue
            R, d = sample_motion(clamp.motion, times)
            rotations[j] = R
            offsets, centre, cols = self._clamp_geometry(j)
            out[:, cols] = np.matmul(offsets, R.transpose(0, 2, 1)) + centre + d[:, None, :]
        for q, j in enumerate(self.clamp_edges):
            m1_rest = self._clamp_rest[int(j)][1]
            R = rotations.get(int(j))
            m1[:, q] = m1_rest if R is None else np.matmul(R, m1_rest)

    def _clamp_geometry(self, j: int):
        """Clamp ``j``'s rest offsets from its rest midpoint (2, 3) [m], the midpoint (3,) [m] and
        its two vertices' columns among the prescribed vertices; kept until :meth:`attach` (or a
        caller) replaces the clamp's rest pose."""
        rest = self._clamp_rest[j]
        kept = self._clamp_geom.get(j)
        if kept is not None and kept[0] is rest:
            return kept[1]
        rest_x = rest[0]
        centre = rest_x.mean(axis=0)
        nv = self.rod.n_vertices
        cols = [int(np.flatnonzero(self.prescribed_vertices == j)[0]),
                int(np.flatnonzero(self.prescribed_vertices == (j + 1) % nv)[0])]
        geometry = (rest_x - centre, centre, cols)
        self._clamp_geom[j] = (rest, geometry)
        return geometry

    # ---- stepping ------------------------------------------------------------------------------
    def advance(self, state: RodState, nsteps: int = 1) -> StepInfo:
        """Advance ``state`` in place by ``nsteps`` steps of ``options.dt``.

        Raises :class:`SimulationError` if the state becomes non-finite; ``state`` then holds
        the last finite step.
        """
        nsteps = check_steps(nsteps)
        opt = self.options
        h = opt.dt
        self._refresh(state)
        times = state.t + h * np.arange(1, nsteps + 1)
        moving = any(c.motion is not None for c in self.clamps.values())
        timed_forces = any(callable(pf.force) for pf in self.loads.point_forces)
        if moving:
            presc, clamp_m1 = self._clamp_inputs(state, times)
        else:  # one row stands for every step
            presc = np.ascontiguousarray(state.x[self.prescribed_vertices][None])
            clamp_m1 = np.array([self._clamp_m1(j, state.t) for j in self.clamp_edges]).reshape(1, -1, 3)
        diag = np.zeros(6)
        ext_accel = np.asarray(self.loads.gravity, dtype=float)
        snapshot = state.copy()
        passive = opt.energy_check and not moving and not timed_forces and nsteps > 0
        energy_start = self.mechanical_energy(state) if passive else 0.0
        try:
            done = self._advance_chunks(state, nsteps, h, ext_accel, presc, clamp_m1, timed_forces, diag)
        except ValueError as exc:  # the geometry degenerated inside the compiled step
            for name in ("x", "v", "theta", "ref_d1", "ref_twist"):
                getattr(state, name)[...] = getattr(snapshot, name)
            state.t = snapshot.t
            raise SimulationError(f"DER step failed ({exc}) within {nsteps} steps from t = {snapshot.t:.6g} s "
                                  f"(dt = {h:g} s; try a smaller dt); the state is restored to t = {snapshot.t:.6g} s") from None
        state.t += done * h
        info = StepInfo(done, int(diag[0]), float(diag[1]), int(diag[2]), float(diag[3]))
        if done < nsteps:
            why = (f"fast projection did not converge (length violation {info.constraint_violation_max:.3g} after "
                   f"{info.projection_iterations_max} iterations)" if diag[5] else "the state became non-finite")
            raise SimulationError(f"DER step failed: {why} after {done} of {nsteps} steps at t = {state.t:.6g} s "
                                  f"(dt = {h:g} s; try a smaller dt); the state holds the last good step")
        if passive:
            gain = self.mechanical_energy(state) - energy_start
            scale = self.energy_scale(snapshot)
            if gain > 0.5 * scale:
                for name in ("x", "v", "theta", "ref_d1", "ref_twist"):
                    getattr(state, name)[...] = getattr(snapshot, name)
                state.t = snapshot.t
                raise SimulationError(
                    f"DER step unstable: the undriven rod gained {gain:.3g} J of mechanical energy in {nsteps} steps "
                    f"(energy scale {scale:.3g} J; dt = {h:g} s, suggested_time_step {suggested_time_step(self.rod):.3g} s; "
                    f"try a smaller dt); the state is restored to t = {snapshot.t:.6g} s")
        if opt.inextensible and info.constraint_violation_max > max(opt.projection_tol, 1e-9):
            log.warning("fast projection stopped at violation %.3g after %d iterations", info.constraint_violation_max, info.projection_iterations_max)
        return info

    def _advance_chunks(self, state, nsteps, h, ext_accel, presc, clamp_m1, timed_forces, diag) -> int:
        opt = self.options
        tol = opt.twist_tol * max(1.0, float(self.twist_k.max() / self.lbar.min()))
        if timed_forces:
            done = 0
            for s in range(nsteps):
                self._fill_point_forces(state.t + h * s)
                p_row, m_row = min(s, len(presc) - 1), min(s, len(clamp_m1) - 1)
                done += self._run(state, 1, h, ext_accel, presc[p_row : p_row + 1], clamp_m1[m_row : m_row + 1], tol, diag)
                if done < s + 1:
                    break
            return done
        self._fill_point_forces(state.t)
        return self._run(state, nsteps, h, ext_accel, presc, clamp_m1, tol, diag)

    def _fill_point_forces(self, t: float) -> None:
        self._ext_force[:] = 0.0
        for pf in self.loads.point_forces:
            self._ext_force[pf.vertex] += pf.at(t)

    def _run(self, state, nsteps, h, ext_accel, presc, clamp_m1, tol, diag) -> int:
        if self.twist_free:
            t_start = self._e3[1].copy()
        done = self._run_kernel(state, nsteps, h, ext_accel, presc, clamp_m1, tol, diag)
        if self.twist_free and done:
            self._rebuild_twist_free_frames(state, t_start, clamp_m1[min(done, len(clamp_m1)) - 1])
        return done

    def _rebuild_twist_free_frames(self, state: RodState, t_start: np.ndarray, clamp_m1: np.ndarray) -> None:
        """Frames of a twist-free rod after a call that skipped them: the material frame is the
        Bishop frame grown from the prescribed frame (or edge 0's, carried in time), and the
        reference frames are carried in time from the call's start; angles are unwrapped."""
        from ..geometry.curves import bishop_frames, reference_twist, time_parallel_update

        t_now = _tangents(state.x, self.closed)
        m1_old, _ = self.material_frames_from(state, t_start)
        time_parallel_update(t_start, t_now, state.ref_d1)
        ne = t_now.shape[0]
        if self.clamp_edges.size:
            seed_edge, seed = int(self.clamp_edges[0]), clamp_m1[0]
        else:
            seed_edge, seed = 0, m1_old[0].copy()
            time_parallel_update(t_start[:1].copy(), t_now[:1].copy(), seed.reshape(1, 3))
        u = np.empty((ne, 3))
        v = np.empty((ne, 3))
        bishop_frames(np.ascontiguousarray(t_now[seed_edge:]), seed, False, u[seed_edge:], v[seed_edge:])
        if seed_edge > 0:
            back = np.ascontiguousarray(t_now[seed_edge::-1])
            ub, vb = np.empty_like(back), np.empty_like(back)
            bishop_frames(back, seed, False, ub, vb)
            u[:seed_edge] = ub[1:][::-1]
        previous = state.ref_twist.copy()
        reference_twist(t_now, state.ref_d1, self.closed, previous, state.ref_twist)
        K.set_material_angles(state.ref_d1, t_now, u, state.theta)
        self._refresh(state)

    def material_frames_from(self, state: RodState, tangents: np.ndarray):
        """Material directors ``(m1, m2)`` of ``state`` on the given tangents."""
        d2 = np.empty_like(state.ref_d1)
        complete_frames(tangents, state.ref_d1, d2)
        m1, m2 = np.empty_like(d2), np.empty_like(d2)
        material_frames(state.ref_d1, d2, state.theta, m1, m2)
        return m1, m2

    def _kernel_damping(self, h: float) -> float:
        """The rate the kernel's factor ``1 / (1 + h c)`` takes to realise the chosen scheme:
        ``(exp(c h) - 1) / h`` gives ``exp(-c h)``."""
        c = self.loads.damping
        if self.options.damping_scheme == "exponential":
            return math.expm1(c * h) / h
        return c

    def _run_kernel(self, state, nsteps, h, ext_accel, presc, clamp_m1, tol, diag) -> int:
        opt = self.options
        return K.run_steps(nsteps, h, self.closed, opt.inextensible, self.uniform_twist, self.twist_free, state.x, state.v, state.theta,
                           state.ref_d1, state.ref_twist, self.inv_mass, ext_accel, self._ext_force, self._kernel_damping(h),
                           self.prescribed_vertices, presc, self.clamp_edges, clamp_m1, *self._sliders, self.free_theta,
                           self.rest_lengths, self.lbar, self.omega_bar, self.bend_k, self.twist_bar, self.twist_k,
                           self.stretch_k, opt.projection_tol, opt.projection_fail, opt.projection_max_iter, tol, opt.twist_max_iter,
                           self._v3, self._e3, self._s, self._kb, self._omega, diag)

    def step(self, state_in: RodState, nsteps: int = 1) -> RodState:
        """Functional form: returns a new state ``nsteps`` steps later; ``state_in`` is untouched."""
        out = state_in.copy()
        self.advance(out, nsteps)
        return out


@dataclass
class Recording:
    """Frames of a run: times ``t`` [s], positions ``x`` (F, n, 3), per-frame probe values,
    steps taken and the time spent inside the stepper [s]."""

    t: np.ndarray
    x: np.ndarray
    probes: dict
    steps: int
    stepper_seconds: float


def record(stepper: "DERStepper", state: RodState, nsteps: int, *, frames: int = 100, progress=None,
           probes: dict | None = None, stop=None) -> Recording:
    """Advance ``state`` by ``nsteps`` in about ``frames`` compiled chunks, keeping a frame after
    each chunk (plus the initial one). ``probes``: name -> function(state) recorded per frame;
    ``stop(state)`` ends the run early when true."""
    import time as _time

    probes = probes or {}
    ts, xs = [state.t], [state.x.copy()]
    values = {name: [fn(state)] for name, fn in probes.items()}
    per = max(1, nsteps // max(frames, 1))
    done, spent = 0, 0.0
    while done < nsteps:
        k = min(per, nsteps - done)
        t0 = _time.perf_counter()
        stepper.advance(state, k)
        spent += _time.perf_counter() - t0
        done += k
        ts.append(state.t)
        xs.append(state.x.copy())
        for name, fn in probes.items():
            values[name].append(fn(state))
        if progress is not None:
            progress.update(done, nsteps)
        if stop is not None and stop(state):
            break
    return Recording(np.array(ts), np.array(xs), {k: np.array(v) for k, v in values.items()}, done, spent)


def _tangents(x: np.ndarray, closed: bool) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=float)
    ne = x.shape[0] if closed else x.shape[0] - 1
    e = np.empty((ne, 3))
    compute_edges(x, closed, e)
    lengths = np.empty(ne)
    t = np.empty((ne, 3))
    compute_tangents(e, lengths, t)
    return t


def rest_curvatures_and_twist(rod: Rod) -> tuple[np.ndarray, np.ndarray]:
    """Rest material curvatures ``wbar`` (nj, 4) and rest twist ``mbar`` (nj,) from the rest
    polyline and the rest material frame ``rod.rest_d1`` (Bergou 2008, Sec. 4.2)."""
    t = _tangents(rod.rest_positions, rod.closed)
    d1 = np.array(rod.rest_d1, dtype=float)
    d1 -= np.sum(d1 * t, axis=1)[:, None] * t
    norms = np.linalg.norm(d1, axis=1)
    if np.any(norms < 1e-9):
        raise ModelError("rest_d1 must not be parallel to the rest tangent")
    d1 /= norms[:, None]
    d2 = np.cross(t, d1)
    kb = np.empty((rod.n_joints, 3))
    compute_curvature_binormals(t, rod.closed, kb)
    omega = np.empty((rod.n_joints, 4))
    material_curvatures(kb, d1, d2, rod.closed, omega)
    tw = np.zeros(rod.n_joints)
    reference_twist(t, d1, rod.closed, np.zeros(rod.n_joints), tw)
    if rod.rest_curvature is not None:
        omega = np.array(rod.rest_curvature)
    if rod.rest_twist is not None:
        tw = np.array(rod.rest_twist)
    return omega, tw
