"""cosseratbench adapter for rodlab's ``compact`` method (Zhao et al., ``rodlab.compact``).

What is mapped, and how
-----------------------
* **Rod**: ``n_elements`` rigid segments of the unstretched length ``rod.length / n_elements``
  each (the suite's material points, evenly spaced along the unstretched rod), circular section,
  ``E``, ``G``, ``rho`` from the scenario (``CompactModel``: lumped vertex masses, segment
  rotational inertia, hinge stiffness ``(E I, E I, G J)``). The stress-free shape is straight
  (rest Darboux vectors zero) whatever the initial centerline.
* **Initial shape**: segment ``i`` points along the chord of the suite's nodes ``i, i+1`` with
  the unstretched length, starting at the first node; its material frame has ``d1 =
  rod.directors(n_elements)[i]`` and ``d3`` along the segment. The method is inextensible, so a
  rod given as pre-stretched (``rest_arc_length``, the pendulum) starts at its unstretched
  length along the same directions. A chain built so can miss a far support (the catenary's
  arc: chords shorter than the arc; 1.2 mm at 12 elements): before t = 0 it is projected onto its
  end constraints by one load-free step of 1e-6 s (inertia dominates: the mass-weighted closest
  configuration that meets them), velocities reset to zero.
* **Clamped start, not driven**: Dirichlet conditions on the root position ``p_c`` and on the
  rotation of segment 0 (the first element is held rigid, as the other adapters and the peers
  do, so the effective clamp sits half an element in: error ~1.5/n in the cantilever, the
  suite's "discretisation error"). **Pinned start**: Dirichlet on ``p_c`` only.
* **Clamped / pinned end, or a driven clamp**: equality constraints of the active-set solver
  (``rodlab.compact.active_set.ConstrainedSolver``, Zhao et al. Alg. 2, Schur complement
  Eq. 14): a pinned end is ``FixedVertex``; a clamp is ``FixedVertex`` on its node plus
  ``ClampFrame`` (3 rows) on its element. A driven clamp (``Motion``) moves the node target to
  ``node0 + displacement(t)`` and turns the element's frame target to ``R(t) q0`` (the suite
  turns the end about its own node; the element follows because its node and frame are both
  held). ``slides_along``: the node is kept on the line through ``node0 + displacement(t)``
  along the slide axis (2 rows, :class:`_SlideLine`) instead of at a point, the frame still
  prescribed: the twist experiment's turning clamp that slides under its tension load.
  Rods with no such constraint run on the compiled Dirichlet-only SQP (``CompactSolver``).
* **Point loads**: a constant force ``F`` on an end node enters implicit Euler's inertial
  prediction (Zhao et al., Eq. 30): ``p_pred += dt^2 F / m_j``, done by adding ``dt F / m_j``
  to that node's velocity just before each step (the step recomputes every velocity from the
  positions afterwards). The minimised energy then contains ``-F . p_j``: the force is exact
  and implicit. On a held node it is carried by the support.
* **Gravity**: the scenario's, as the stepper's gravity energy.
* **Damping** (quasi-static scenarios only, the same rule as the other rodlab adapters and the
  suite's own): viscous ``-c m v`` with ``c = 2 * scenario.slowest_frequency()``, implicit in
  both inertia terms (``c/dt``, Zhao et al. Eq. 30/31 with our damping term). The method has no
  better faithful equivalent: a static solve (``static=True``) would reach the equilibria
  directly but not the twist experiment's growth rates, whose fit assumes mass-proportional
  damping. Dynamic scenarios get none; implicit Euler then still dissipates (see below), which
  the pendulum measures.
* **Time step**: implicit Euler is unconditionally stable, so the step is an accuracy choice,
  from the scenario's slowest angular frequency ``w`` (``Scenario.slowest_frequency``):

  - quasi-static: ``dt = 0.25 / w`` (about 25 steps per slowest period: the approach to
    equilibrium is followed, and the final state is the equilibrium whatever ``dt``); in the
    suite's cantilever, catenary and twist the frame interval (0.1, 0.05, 0.05 s) is shorter,
    so ``dt`` is one step per frame (the twist's fitted critical twist moves 0.68% -> 0.67%
    when halved);
  - dynamic: implicit Euler shrinks a free oscillation of frequency ``w`` by
    ``1/sqrt(1 + w^2 dt^2)`` per step, a relative amplitude loss ``w^2 dt T / 2`` over a run of
    ``T``; ``dt = 5e-3 / (w^2 T)`` keeps it near 0.25% for the slowest mode over the scenario's
    duration (faster modes, which the suite does not measure, are damped more).

  Both times ``time_step_scale``, then shortened so that frames fall on steps. Implicit Euler's
  period error (``~ w^2 dt^2 / 3``) is negligible at these steps.
* **Solver settings**: hybrid preconditioner (Eq. 22-23), Newton until ``|b| < 1e-9 x`` a load
  scale ``(|g| M + sum |F| + E I / L^2) L`` or 10 iterations, PCG to a relative residual of 1e-6
  (inexact Newton: the Newton test decides the accuracy), the tension part of the dropped
  Hessian term on (``SolverOptions.tension_stiffness``: exact for hanging rods; it only speeds
  Newton up, the solution is the same).

  - Dirichlet-only rods (cantilever, pendulum): many steps per call into one compiled kernel
    (:func:`_advance`, the same work as ``CompactSolver.step`` -- warm start, Alg. 1 by
    ``sqp_solve``, ``finish_step`` -- plus the point loads); 1-2.4 Newton iterations per step.
  - Rods with end constraints (catenary, twist): the active-set driver, one Python call per
    step around compiled kernels. Its Gauss-Newton matrix lacks the curvature of the
    constraints and the tension carried by the multipliers, so Newton converges only linearly
    and usually takes all 10 iterations; the pinned end of the catenary is met to 4e-9 m after
    the first step and to round-off from the third.

  A step that fails (non-finite state, preconditioner not SPD or PCG not converging, or a line
  search without progress while ``|b|`` is still above 1e3 x the Newton tolerance) raises
  ``cosseratbench.Diverged`` with the time and the residual; below that the stall is round-off
  and the step is kept.
* **Directors**: ``d1`` of each segment is the first column of its rotation (the third is the
  segment direction), so it is unit, perpendicular to the element to round-off, and equal to
  ``rod.directors`` at ``t = 0``.
* **Several rods**: independent, one solver each (the compiled kernels are shared: numba
  compiles them once per process, cached on disk).

Measured (cosseratbench 0.3.0 metrics; 2-core shared machine, wall time of the timed run)
--------------------------------------------------------------------------------------------
``python -c "import cosseratbench as cb; from cosseratbench import registry; from
rodlab.bench_adapters.cosseratbench import SOLVERS; ex = registry.load_experiment('NAME');
r = cb.run(ex, SOLVERS['rodlab-compact'](), n_elements=N); print(r.metrics, r.wall_time)"``

* cantilever, n = 10 / 20 / 40: tip_deflection_error 0.145 / 0.0741 / 0.0376 (the same as
  der, der-implicit and MuJoCo: the held first element), 0.01-0.02 s, dt = 0.1 s.
* catenary, n = 25 / 50 / 100: sag_error 0.0136 / 0.0120 / 0.0122, shape_error 0.0031 /
  0.0032 / 0.0033, 0.6-1.0 s, dt = 0.05 s. As der and MuJoCo (also inextensible): the
  reference's cable stretches, which deepens its sag by ~1%; der-implicit and PyElastica stretch
  and reach 2e-4 .. 2e-3.
* pendulum, n = 25 / 50 / 100: period_error 2.0e-4 / 1.4e-4 / 2.3e-4, amplitude_change
  -0.25% at every n (implicit Euler at dt = 1.0e-4 s, 49k steps, 3-5 s; -0.97% at
  ``time_step_scale=4``, 1 s). The period error at n = 100 is the missing stretch: the
  reference cable is ~5e-4 longer on average, its period ~2.4e-4 longer.
* twist (6 rods, sliding turned clamp), n = 25 / 50 / 100: critical_twist_error 0.95% /
  0.68% / 0.83% (der 0.4-0.8%, der-implicit 0.5-0.9%; the suite puts its own measurement
  uncertainty near 0.5%), 18 / 20 / 30 s,
  dt = 0.05 s (0.67% at dt = 0.025 s).

Contact
-------
Scenarios with obstacles or rods within reach of each other (crossing, capstan, pile) run on a
rodlab World through ``make_simulator(world, "compact")`` (``cb_contact.py``; capabilities
``ROD_CONTACT``, ``CYLINDER_CONTACT``, ``PLANE_CONTACT``, not ``ROD_FRICTION``). The compact
World path refuses Coulomb friction (capstan, pile) and pins away from a rod's root (crossing:
both ends pinned); those runs are reported unsupported with the simulator's reason.

Not mapped
----------
* friction (refused), and self-contact in the scenarios above that keep this module's path (a
  scenario that asks for self-contact without obstacles or touching rods, the twist, runs without
  it, as with the other rodlab adapters);
* stretch and shear (inextensible, unshearable: no ``STRETCH``, no ``SHEAR``);
* rest curvature / twist of the initial centerline (the suite's rods are straight when
  stress-free).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from ..geometry._vec import JIT
from ..compact.sqp import PcgWork, SqpOptions, SqpRod, SqpStep, SqpWork, finish_step, predict_start, sqp_solve
from .cb_common import Diverged, End, EndCondition, Trajectory, _damping, _RodlabSolver
from .cb_contact import COMPACT_CONTACT, needs_contact, run_world
from .cb_contact import settings as contact_settings

QUASI_STATIC_STEP = 0.25  # dt * slowest angular frequency, quasi-static scenarios
DYNAMIC_DISSIPATION = 5e-3  # dt * w^2 * duration, dynamic scenarios (~0.25% amplitude loss)
PROJECTION_DT = 1e-6  # s, initial projection onto end constraints (see _ConstrainedRun)
NEWTON_TOL = 1e-9  # relative to the load scale, see _tolerance
MAX_NEWTON = 10
STALL_OK = 1e3  # a line search that stalls below STALL_OK * tol is at round-off: not a failure
PCG_RTOL = 1e-6  # PCG relative residual (inexact Newton: the Newton tolerance decides accuracy)


@dataclass(frozen=True)
class _SlideLine:
    """Vertex ``vertex`` kept on the line through ``point(t)`` along the unit ``axis``: the two
    rows ``e_k . (p - point(t)) = 0`` across the axis (an equality of
    ``rodlab.compact.active_set.ConstrainedSolver``; ``SlideAlongAxis`` with a moving line)."""

    vertex: int
    point: object  # callable t -> (3,)
    axis: np.ndarray
    e1: np.ndarray
    e2: np.ndarray

    def rows(self, p, q, t):
        k = self.vertex % p.shape[0]
        d = p[k] - np.asarray(self.point(t), dtype=float)
        return [("p", k, self.e1, float(d @ self.e1)), ("p", k, self.e2, float(d @ self.e2))]


def _d1(q: np.ndarray) -> np.ndarray:
    """First column of each quaternion's rotation (w, x, y, z): the material director d1."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)], axis=1)


def _frame_target(motion, q0: np.ndarray):
    """Quaternion of an element turned by the motion's ``R(t)`` from its start frame ``q0``."""
    from ..geometry.rotations import matrix_to_quat, quat_mul

    q0 = np.ascontiguousarray(q0, dtype=float)

    def target(t):
        _, R = motion.pose(float(t))
        return np.asarray(quat_mul(matrix_to_quat(np.ascontiguousarray(R)), q0))

    return target


def _point_target(motion, node0: np.ndarray):
    node0 = np.array(node0, dtype=float)

    def target(t):
        d, _ = motion.pose(float(t))
        return node0 + d

    return target


@njit(**JIT)
def _advance(n_steps, dt, t0, s, qref, p, q, v, omega, accel, free, lengths, masses, Jr, lbar, Kh, ubar, gravity,
             damping, kind, max_newton, tol, stall_ok, pcg_rtol, pcg_atol, pcg_maxiter, ls_steps, use_g,
             p_t, q_t, s_bak, qref_bak, p_pred, th_pred,
             G, wp, wq, Dj, Qj, gp, gq, Hp, Hqd, Hqo, b, ds, s_try, diag, off, sinv, W, suffix, Bd, Bo, A, L,
             r, zz, d, Ad, tv, tp, y, comps, stats, out):
    """``n_steps`` implicit Euler steps of the Dirichlet-only compact rod in one compiled call:
    what ``rodlab.compact.sqp.CompactSolver.step`` does per step (constant-velocity warm start,
    Alg. 1 by ``sqp_solve``, velocities and re-centering by ``finish_step``), plus the point-load
    accelerations ``accel`` in the inertial prediction ``p_pred = p_t + dt v + dt^2 F/m``.
    ``out`` = (steps done, Newton iterations, PCG iterations, linear solves, failure code
    (0 none, 1 non-finite state, residual or energy, 2 PCG / preconditioner, 3 line search without progress while
    |b| > stall_ok * tol), last |b|, time).
    A failed step is undone (last good state kept)."""
    n = p.shape[0]
    m = q.shape[0]
    a_in = 1.0 / (dt * dt)
    a_dd = damping / dt
    t = t0
    for k in range(n_steps):
        for j in range(n):
            for c in range(3):
                p_t[j, c] = p[j, c]
                s_bak[j, c] = s[j, c]
                p_pred[j, c] = p[j, c] + dt * v[j, c] + dt * dt * accel[j, c]
        for i in range(m):
            for c in range(4):
                q_t[i, c] = q[i, c]
                qref_bak[i, c] = qref[i, c]
            for c in range(3):
                th_pred[i, c] = dt * omega[i, c]
        predict_start(s, q, v, omega, dt, free)
        sqp_solve(s, qref, free, SqpRod(lengths, masses, Jr, lbar, Kh, ubar),
                  SqpStep(p_pred, p_t, q_t, th_pred, gravity, a_in, a_dd),
                  SqpOptions(kind, max_newton, tol, pcg_rtol, pcg_atol, pcg_maxiter, ls_steps, use_g, False),
                  SqpWork(G, wp, wq, Dj, Qj, gp, gq, Hp, Hqd, Hqo, b, ds, s_try, comps, stats),
                  PcgWork(diag, off, sinv, W, suffix, Bd, Bo, r, zz, d, Ad, tv, tp, y), (A, L))
        out[1] += stats[0]
        out[2] += stats[1]
        out[3] += stats[2]
        out[5] = stats[3]
        finite = True
        for j in range(n):
            for c in range(3):
                if not math.isfinite(wp[j, c]):
                    finite = False
        if not (math.isfinite(stats[3]) and math.isfinite(stats[5])):
            finite = False  # residual or energy overflowed
        code = 0
        if not finite:
            code = 1
        elif stats[4] == 0.0 and stats[7] != 0.0:
            code = 2
        elif stats[4] == 0.0 and stats[6] != 0.0 and stats[3] > stall_ok * tol:
            code = 3
        if code != 0:  # the step is refused: back to its start
            s[:, :] = s_bak
            qref[:, :] = qref_bak
            out[4] = code
            out[6] = t
            return
        p[:, :] = wp
        q[:, :] = wq
        finish_step(s, qref, p, q, p_t, q_t, v, omega, dt)
        t += dt
        out[0] += 1
    out[6] = t


def _check_supported(scenario) -> None:
    if scenario.obstacles:
        raise NotImplementedError("rodlab-compact: obstacles are driven by the World path only (cb_contact.py)")


class CompactSolver(_RodlabSolver):
    """Zhao et al.'s compact inextensible rod (implicit Euler by SQP, hybrid-preconditioned PCG,
    active set for end constraints); see the module docstring for the mapping."""

    method = "compact"
    name = "rodlab-compact"
    capabilities = COMPACT_CONTACT  # inextensible, unshearable; contact without friction (cb_contact.py)

    # ---- numerical choices ------------------------------------------------------------------
    def time_step(self, scenario, frame_dt: float) -> tuple[float, int]:
        """``(dt, steps per frame)``: see the module docstring."""
        w = max(scenario.slowest_frequency(), 1e-12)
        if scenario.quasi_static:
            dt_max = QUASI_STATIC_STEP / w
        else:
            dt_max = DYNAMIC_DISSIPATION / (w * w * scenario.duration)
        dt_max *= self.time_step_scale
        per_frame = max(1, math.ceil(frame_dt / dt_max * (1 - 1e-12)))
        return frame_dt / per_frame, per_frame

    def settings(self, scenario, *, n_elements: int, n_frames: int) -> dict:
        if needs_contact(scenario):
            return contact_settings(scenario, self.method, self.time_step_scale, n_frames, n_elements)
        out = super().settings(scenario, n_elements=n_elements, n_frames=n_frames)
        dt, per_frame = self.time_step(scenario, scenario.duration / max(n_frames - 1, 1))
        out.update({"time_step": dt, "steps_per_frame": per_frame, "integrator": "implicit Euler (SQP)",
                    "newton_tol_relative": NEWTON_TOL, "max_newton": MAX_NEWTON, "preconditioner": "hybrid"})
        return out

    @staticmethod
    def _tolerance(crod, scenario) -> float:
        g = float(np.linalg.norm(scenario.gravity))
        m = crod.material
        EI = m.youngs_modulus * crod.second_moment_of_area
        force = g * m.density * crod.area * crod.length + sum(float(np.linalg.norm(ld.force)) for ld in crod.loads)
        return NEWTON_TOL * (force + EI / crod.length**2) * crod.length

    # ---- one rod ----------------------------------------------------------------------------
    def _build(self, crod, n_elements: int, scenario):
        from ..compact.active_set import ClampFrame, FixedVertex
        from ..compact.active_set import ConstrainedSolver as _ConstrainedSolver
        from ..compact.sqp import CompactModel, CompactState, SolverOptions
        from ..compact.sqp import CompactSolver as _DirichletSolver
        from ..geometry.curves import any_perpendicular

        if not all(np.all(np.isfinite(ld.force)) for ld in crod.loads):
            raise ValueError("a point load's force must be finite")
        nodes = crod.nodes(n_elements)
        seg = crod.length / n_elements
        tangents = np.diff(nodes, axis=0)
        tangents /= np.linalg.norm(tangents, axis=1)[:, None]
        pts = np.vstack([nodes[:1], nodes[:1] + np.cumsum(tangents * seg, axis=0)])
        m = crod.material
        md = CompactModel.from_polyline(pts, E=m.youngs_modulus, G=m.shear_modulus, rho=m.density,
                                        radius=crod.radius, d1=crod.directors(n_elements))
        ubar = np.zeros_like(md.ubar)
        ubar.setflags(write=False)
        md = replace(md, ubar=ubar)  # straight when stress-free
        nv = n_elements + 1
        fixed = np.zeros((nv, 3), dtype=bool)
        equalities = []
        for end in End:
            cond = crod.condition(end)
            if cond is EndCondition.FREE:
                continue
            motion = crod.motion(end)
            vertex, segment = (0, 0) if end is End.START else (nv - 1, n_elements - 1)
            if motion is None and end is End.START:
                fixed[0] = True  # root position p_c
                if cond is EndCondition.CLAMPED:
                    fixed[1] = True  # rotation of segment 0
                continue
            if motion is None:
                equalities.append(FixedVertex(vertex, nodes[vertex].copy()))
                if cond is EndCondition.CLAMPED:
                    equalities.append(ClampFrame(segment, md.rest_q[segment].copy()))
                continue
            point = _point_target(motion, nodes[vertex])
            if motion.slides_along is None:
                equalities.append(FixedVertex(vertex, point))
            else:
                axis = motion.axis
                e1 = np.asarray(any_perpendicular(axis), dtype=float)
                e1 /= np.linalg.norm(e1)
                equalities.append(_SlideLine(vertex, point, axis, e1, np.cross(axis, e1)))
            equalities.append(ClampFrame(segment, _frame_target(motion, md.rest_q[segment])))
        opts = SolverOptions(precond="hybrid", max_newton=MAX_NEWTON, tol=self._tolerance(crod, scenario),
                             pcg_rtol=PCG_RTOL, pcg_atol=0.0, tension_stiffness=True)
        common = dict(fixed=fixed, gravity=tuple(float(g) for g in scenario.gravity), damping=_damping(scenario))
        if equalities:
            solver = _ConstrainedSolver(md, opts, equalities=tuple(equalities), **common)
        else:
            solver = _DirichletSolver(md, opts, **common)
        state = CompactState.at_rest(md)
        loads = [(0 if ld.at is End.START else nv - 1, np.asarray(ld.force, dtype=float)) for ld in crod.loads]
        # per-vertex acceleration F / m_j of the point loads (added to the velocity as dt F / m_j)
        accel = np.zeros((nv, 3))
        for v, f in loads:
            accel[v] += f / md.masses[v]
        loaded = np.flatnonzero(np.any(accel != 0.0, axis=1))
        if equalities:
            return _ConstrainedRun(solver, state, accel, loaded)
        return _DirichletRun(solver, state, accel)

    def run(self, scenario, *, n_elements: int, n_frames: int):
        if needs_contact(scenario):  # obstacles or rods within reach: the World path (cb_contact.py)
            return run_world(self.method, scenario, n_elements=n_elements, n_frames=n_frames,
                             time_step_scale=self.time_step_scale)
        _check_supported(scenario)
        if n_elements < 2:
            raise ValueError(f"n_elements must be >= 2 (got {n_elements})")
        if n_frames < 2:
            raise ValueError(f"n_frames must be >= 2 (got {n_frames})")
        frame_dt = scenario.duration / (n_frames - 1)
        dt, per_frame = self.time_step(scenario, frame_dt)
        positions, directors = [], []
        for i, crod in enumerate(scenario.rods):
            runner = self._build(crod, n_elements, scenario)
            state = runner.state
            xs = np.empty((n_frames, n_elements + 1, 3))
            ds = np.empty((n_frames, n_elements, 3))
            xs[0], ds[0] = state.p, _d1(state.q)
            for f in range(1, n_frames):
                failure = runner.advance(per_frame, dt)
                if failure:
                    raise Diverged(f"rod {i}: {failure}", time=runner.failed_at)
                xs[f], ds[f] = state.p, _d1(state.q)
            positions.append(xs)
            directors.append(ds)
        return Trajectory(np.linspace(0.0, scenario.duration, n_frames), tuple(positions), tuple(directors))


class _DirichletRun:
    """Steps a rod whose only conditions are Dirichlet ones (clamped / pinned start): many
    steps per compiled call (:func:`_advance`)."""

    def __init__(self, solver, state, accel):
        self.solver, self.state = solver, state
        self.accel = np.ascontiguousarray(accel)
        n, m = solver.model.n, solver.model.m
        self.scratch = [np.zeros((n, 3)), np.zeros((m, 4)), np.zeros((n, 3)), np.zeros((m, 4)), np.zeros((n, 3)),
                        np.zeros((m, 3))]
        self.out = np.zeros(7)
        self.newton = self.pcg = self.steps = 0
        self.failed_at = state.t

    def advance(self, n_steps: int, dt: float) -> str:
        sv, md, o, ws, st = self.solver, self.solver.model, self.solver.options, self.solver.ws, self.state
        out = self.out
        out[:] = 0.0
        _advance(n_steps, dt, st.t, st.s, st.qref, st.p, st.q, st.v, st.omega, self.accel, sv.free, md.lengths,
                 md.masses, md.Jr, md.lbar, md.Kh, md.ubar, sv.gravity, sv.damping, sv.kind, o.max_newton, o.tol,
                 STALL_OK, o.pcg_rtol, o.pcg_atol, o.pcg_maxiter, o.line_search_steps, o.tension_stiffness, *self.scratch,
                 ws.G, ws.p, ws.q, ws.Dj, ws.Qj, ws.gp, ws.gq, ws.Hp, ws.Hqd, ws.Hqo, ws.b, ws.ds, ws.s_try,
                 ws.diag, ws.off, ws.sinv, ws.W, ws.suffix, ws.Bd, ws.Bo, ws.A, ws.L,
                 ws.r, ws.zz, ws.d, ws.Ad, ws.tv, ws.tp, ws.y, ws.comps, ws.stats, out)
        st.t = float(out[6])
        self.steps += int(out[0])
        self.newton += int(out[1])
        self.pcg += int(out[2])
        code = int(out[4])
        self.failed_at = st.t  # the failed step is undone: its start
        if code:
            what = {1: "non-finite state", 2: "PCG did not converge (or preconditioner not SPD)",
                    3: "line search made no progress"}[code]
            return (f"compact step failed at t = {self.failed_at:.6g} s: {what} (|b| = {out[5]:.3e}; "
                    f"last good state kept)")
        return ""


class _ConstrainedRun:
    """Steps a rod with end constraints by the active-set solver, one step per call (its
    driver is Python around compiled kernels); point loads as velocity kicks ``dt F / m``."""

    def __init__(self, solver, state, accel, loaded):
        self.solver, self.state = solver, state
        self.accel, self.loaded = accel, loaded
        self.newton = self.pcg = self.steps = 0
        self.failed_at = state.t
        self.projection = self._project()

    def _project(self) -> float:
        """An inextensible chain built along the suite's initial nodes can miss a far support
        (a curved start: chords shorter than the arc). Bring it onto its end constraints before
        t = 0 by one step of ``PROJECTION_DT`` without loads: inertia then dominates every other
        term, so the step is the mass-weighted closest configuration that meets them. Velocities
        are reset to zero. Returns the largest violation found before projecting [m]."""
        st, sv = self.state, self.solver
        violation = max((abs(row[3]) for c in sv.equalities for row in c.rows(st.p, st.q, 0.0)), default=0.0)
        if violation <= 1e-12:
            return violation
        gravity = sv.gravity.copy()
        sv.gravity[:] = 0.0
        try:
            stats = sv.step(st, PROJECTION_DT)
        finally:
            sv.gravity[:] = gravity
        if not stats.success:
            raise Diverged(f"could not bring the initial shape onto its end constraints: {stats.message}", time=0.0)
        st.t = 0.0
        st.v[:] = 0.0
        st.omega[:] = 0.0
        return violation

    def advance(self, n_steps: int, dt: float) -> str:
        st = self.state
        kick = dt * self.accel[self.loaded]
        for _ in range(n_steps):
            self.failed_at = st.t  # a failing step is reported at its start
            if len(self.loaded):
                st.v[self.loaded] += kick
            stats = self.solver.step(st, dt)
            self.steps += 1
            self.newton += stats.newton_iters
            self.pcg += stats.pcg_iters
            if not (math.isfinite(stats.residual) and math.isfinite(stats.energy)):
                return (f"compact step failed at t = {self.failed_at:.6g} s: non-finite residual or energy "
                        f"(|b| = {stats.residual:.3e}, E = {stats.energy:.3e})")
            if not stats.success and not (stats.message == "line search made no progress"
                                          and stats.residual <= STALL_OK * self.solver.options.tol):
                return (f"compact step failed at t = {self.failed_at:.6g} s: {stats.message} "
                        f"({stats.newton_iters} Newton iterations, |b| = {stats.residual:.3e})")
        return ""
