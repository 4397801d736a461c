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
  length along the same directions, and a curved start (the catenary's arc: chords shorter than
  the arc) reaches its far support in the first step.
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
  both inertia terms (``c/dt``). Dynamic scenarios get none; implicit Euler then still
  dissipates (see below), which the pendulum measures.
* **Time step**: implicit Euler is unconditionally stable, so the step is an accuracy choice,
  from the scenario's slowest angular frequency ``w`` (``Scenario.slowest_frequency``):

  - quasi-static: ``dt = 0.25 / w`` (about 25 steps per slowest period: the approach to
    equilibrium is followed, and the final state is the equilibrium whatever ``dt``);
  - dynamic: implicit Euler shrinks a free oscillation of frequency ``w`` by
    ``1/sqrt(1 + w^2 dt^2)`` per step, a relative amplitude loss ``w^2 dt T / 2`` over a run of
    ``T``; ``dt = 2e-3 / (w^2 T)`` keeps it near 0.1% for the slowest mode over the scenario's
    duration (faster modes, which the suite does not measure, are damped more).

  Both times ``time_step_scale``, then shortened so that frames fall on steps. Implicit Euler's
  period error (``~ w^2 dt^2 / 3``) is negligible at these steps.
* **Solver settings**: hybrid preconditioner, Newton to ``|b| < 1e-9 x`` a load scale
  (``(|g| M + sum |F| + E I / L^2) L``) or 10 iterations, PCG to a relative 1e-10, the tension
  part of the dropped Hessian term on (``SolverOptions.tension_stiffness``: exact for hanging
  rods, it only speeds Newton up). The Dirichlet-only path steps with ``CompactSolver.step``,
  whose SQP loop (Alg. 1) is one compiled call per step; the constrained path is the
  active-set driver (Python around compiled kernels). A step that fails (non-finite state,
  preconditioner not SPD or PCG not converging, line search without progress before the
  residual fell 8 orders) raises ``cosseratbench.Diverged``.
* **Directors**: ``d1`` of each segment is the first column of its rotation (the third is the
  segment direction), so it is unit, perpendicular to the element to round-off, and equal to
  ``rod.directors`` at ``t = 0``.
* **Several rods**: independent, one solver each (the compiled kernels are shared: numba
  compiles them once per process, cached on disk).

Not mapped
----------
* obstacles (``NotImplementedError``: rodlab has no contact with the suite's obstacles; the
  compact method's floor/sphere/cylinder constraints are frictionless and the suite's cylinders
  have friction and finite length), rod-rod and self-contact, friction (capabilities do not
  claim them; a scenario that asks for self-contact runs without it, as with the other rodlab
  adapters);
* stretch and shear (inextensible, unshearable: no ``STRETCH``, no ``SHEAR``);
* rest curvature / twist of the initial centerline (the suite's rods are straight when
  stress-free).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .cosseratbench import Diverged, End, EndCondition, Trajectory, _damping, _RodlabSolver

QUASI_STATIC_STEP = 0.25  # dt * slowest angular frequency, quasi-static scenarios
DYNAMIC_DISSIPATION = 2e-3  # dt * w^2 * duration, dynamic scenarios (~0.1% amplitude loss)
NEWTON_TOL = 1e-9  # relative to the load scale, see _tolerance
MAX_NEWTON = 10


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


def _check_supported(scenario) -> None:
    if scenario.obstacles:
        raise NotImplementedError("rodlab-compact: rodlab has no contact with the suite's obstacles")


class CompactSolver(_RodlabSolver):
    """Zhao et al.'s compact inextensible rod (implicit Euler by SQP, hybrid-preconditioned PCG,
    active set for end constraints); see the module docstring for the mapping."""

    method = "compact"
    name = "rodlab-compact"
    capabilities = frozenset()  # inextensible, unshearable, no contact

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
                             pcg_rtol=1e-10, pcg_atol=0.0, tension_stiffness=True)
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
        return solver, state, accel, loaded

    def run(self, scenario, *, n_elements: int, n_frames: int):
        _check_supported(scenario)
        if n_elements < 2:
            raise ValueError(f"n_elements must be >= 2 (got {n_elements})")
        if n_frames < 2:
            raise ValueError(f"n_frames must be >= 2 (got {n_frames})")
        frame_dt = scenario.duration / (n_frames - 1)
        dt, per_frame = self.time_step(scenario, frame_dt)
        positions, directors = [], []
        for i, crod in enumerate(scenario.rods):
            solver, state, accel, loaded = self._build(crod, n_elements, scenario)
            xs = np.empty((n_frames, n_elements + 1, 3))
            ds = np.empty((n_frames, n_elements, 3))
            xs[0], ds[0] = state.p, _d1(state.q)
            kick = dt * accel[loaded]
            for f in range(1, n_frames):
                for _ in range(per_frame):
                    if len(loaded):
                        state.v[loaded] += kick
                    st = solver.step(state, dt)
                    if not st.success:
                        raise Diverged(f"rod {i}: compact step failed at t = {state.t:.6g} s: {st.message} "
                                       f"({st.newton_iters} Newton iterations, |b| = {st.residual:.3e})", time=state.t)
                xs[f], ds[f] = state.p, _d1(state.q)
            positions.append(xs)
            directors.append(ds)
        return Trajectory(np.linspace(0.0, scenario.duration, n_frames), tuple(positions), tuple(directors))
