"""cosseratbench adapter for rodlab's ``galpha`` method (generalized-alpha Cosserat rod,
:mod:`rodlab.galpha`, docs/galpha.md); see ``rodlab.bench_adapters.cosseratbench`` for the suite.

What is mapped, and how
-----------------------
* **Rod.** One :class:`rodlab.galpha.GAlphaRod` per scenario rod: ``n_elements`` segments,
  ``n_elements + 1`` nodes at equal *unstretched* arc length (``Rod.length``, so
  ``rest_arc_length`` gives the length and a pre-stretched start is simply not stretched:
  galpha is inextensible and unshearable), circular section, ``K = diag(EI, EI, GJ)``, straight
  stress-free shape (``kappa_hat = 0``).
* **Which end is galpha's root.** galpha's root (s = 0) is kinematic or pinned; its tip is
  natural (end force), kinematic, pinned or sliding (:mod:`rodlab.galpha.boundary`). The root
  is the scenario's start if it is clamped without ``slides_along`` or pinned, else its end
  (the rod is then reversed inside the adapter, and the trajectory is given back in the
  suite's node order). A rod with no such end (both free, or clamps that both slide) raises
  ``NotImplementedError``.
* **Clamps.** A clamped root holds node 0 exactly at the end node with the initial frame, its
  d3 the end tangent of the suite's centerline (the discrete clamp coincides with the
  continuous one: no rigid first element, so the cantilever converges at second order). A
  driven clamp (``Motion``) prescribes the end's velocity and angular velocity, each the mean
  over the time step of the suite's piecewise-linear pose (so the pose integrates exactly; the
  root's is centred on the step as galpha evaluates it there, the tip's is the mean over the
  step ending at the new time). A clamped tip is galpha's kinematic tip, which is velocity
  level: its position and frame are integrated, not imposed, and drift (O(dt^2) per step, up
  to 1e-6 rad of d3 in the twist rods, 0.7 mm of a pin during the catenary's fall). The adapter
  adds a drift correction to the prescribed rates, ``(target - r_L) / (6 dt)`` and
  ``log(R_target R_L^T) / (6 dt)`` (``POSITION_FEEDBACK``), toward the suite's end node and
  end tangent moved by the pose; 2 steps made the collapsing twist rods at 25 elements unstable.
* **Sliding clamp** (``Motion.slides_along``, the twist scenario): :class:`rodlab.galpha.
  boundary.TipSlide`: angular velocity prescribed, velocity across the end's axis d3
  prescribed (the motion's displacement rate), free along d3 with the axial internal force
  ``n3 = F . d3`` from the end loads (loads across the axis are taken by the clamp). Needs
  the slide direction along the rod's end tangent (else ``NotImplementedError``).
* **Pins.** A pinned root is :class:`rodlab.galpha.boundary.RootPin` (position held exactly,
  couple zero, rotation free: the root frame turns with the root angular velocity, midpoint
  rule, and the local gravity at the root is differentiated through it in Newton); a pinned
  tip is :class:`~rodlab.galpha.boundary.TipPin` (velocity zero, couple zero) with the drift
  correction above. Since a pin forces ``kappa = 0`` at its node, the initial shape is refitted
  there: the root frame is turned so that node 1's frame is kept, and with a pinned tip the
  Darboux vectors are scaled and the root frame turned so that galpha's rod reaches the pin
  exactly (catenary: initial shape within 6e-4 m of the suite's at 25 elements).
* **Loads.** End point loads at a free tip are galpha's tip force (world frame, exact in
  Newton through the tip frame); loads at a held end act on the support only and are dropped
  (for a sliding clamp only their axial part acts, see above). Gravity: galpha's local gravity
  field ``g = R^T g_world``.
* **Initial shape.** Tangents at the nodes from the suite's initial nodes (bisector of the two
  neighbouring chords inside, the reflection of the neighbour's tangent in the end chord at
  the ends: exact on a circular arc), frames by parallel transport from ``normal`` projected
  on the root's normal plane (the suite's material frame), per-segment bending rotation
  ``2 tan(theta/2)`` (the Cayley map of galpha's frame integration), nodal Darboux vectors as
  the mean of the neighbouring segments (ends: linear extrapolation). galpha rebuilds its
  positions from these, so frame 0 is galpha's own shape (within O(ds^2) of the suite's).
  Initial velocities zero; the first step is backward Euler (galpha's ``init="euler"``), which
  sets a consistent internal force.
* **Damping.** Quasi-static scenarios: viscous ``-c rhoA v`` with ``c = 2 *
  scenario.slowest_frequency()``, the rule of the other rodlab adapters and the suite's own
  (galpha's damping is translational only). galpha also has a static solver, but only for a
  kinematic root with a natural tip, so the damped dynamics are used everywhere. Dynamic
  scenarios: none (the only dissipation is the scheme's own, rho_inf = 0.5 in time: the
  energy of a mode with ``omega dt`` = 0.01 decays by about 1e-9 per step).
* **Time step.** Implicit and unconditionally stable, so the step is set by accuracy, in units
  of the slowest mode ``omega_s = scenario.slowest_frequency()``: quasi-static ``dt = 0.1 /
  omega_s`` (a tenth of a radian of the slowest mode per step: the settling transient is
  followed, and the equilibrium does not depend on dt), dynamic ``dt = 0.01 / omega_s``
  (pendulum: 3.1 ms; a 4x smaller step moves the period by 1.3e-5, below the suite's 2e-5
  resolution; a 4x larger one by 2e-4), both times ``time_step_scale`` and shortened so
  frames fall on steps. Cantilever 0.05 s, catenary 0.025 s, twist 0.05 s (the frame
  interval).
* **Start-up.** galpha's first step is backward Euler; the generalized-alpha sums after it
  keep ``(beta - alpha + 1 - gamma) dt W1 = dt W1 / 2`` of every first-step rate ``W1``
  (e.g. a driven end turning at W1 in the first step turns dt W1 / 2 further). The suite's
  motions start from rest (twist: 9e-5 of the target), and the drift correction removes it.
* **Directors.** d1 of element j: the mean of the node frames' d1 at its two nodes, made
  perpendicular to the element's chord and unit.
* **Stepping.** One :meth:`rodlab.galpha.GAlphaSolver.step` per time step; the whole Newton
  loop of a step runs in one compiled call (``newton_kernel``); between steps Python only
  evaluates the boundary functions (~65 us). A step that fails is retried in 2, 4, ... 16
  substeps (``step_robust``); if that fails too, or a state is not finite: ``Diverged``.
  The compiled kernels are shared by all rods and frames (numba cache).

Measured (2-core x86_64, shared; ``cosseratbench.run`` at each experiment's default
n_elements, half and twice it; wall = the suite's timing of ``run``, compilation excluded)
-------------------------------------------------------------------------------------------
cantilever 10/20/40: tip_deflection_error 3.1e-3 / 1.2e-3 / 7.3e-4 (der, der-implicit,
pyelastica, mujoco: 0.145 / 0.074 / 0.037, their rigid clamped element; galpha's static solve
gives 2.9e-3 / 1.0e-3 / 5.6e-4, floor 4.1e-4 = the load's geometric nonlinearity; the rest,
1.7e-4, is the motion left after 10 s at c = 2 omega_s: settling_residual 3.3-3.6e-6), wall
0.02-0.05 s. catenary 25/50/100: shape_error 3.37e-3 / 3.31e-3 / 3.29e-3, sag_error 1.48e-2 /
1.23e-2 / 1.23e-2 (the inextensible floor: der 3.2e-3 / 1.2e-2, mujoco 3.3e-3 / 1.2e-2), wall
0.04-0.11 s. pendulum 25/50/100: period_error 1.0e-4 / 1.6e-4 / 2.2e-4 (tends to -2.4e-4 at
200: the measured period is short by the missing stretch), amplitude_change -1.3e-4 / -3.0e-5
/ -1.0e-5 (der -0.14 / -0.037 / -0.009), wall 0.15-0.33 s. twist 25/50/100:
critical_twist_error 2.7e-3 / 1.1e-3 / 1.8e-3 (the suite's own uncertainty ~5e-3), wall
0.8-1.8 s. Command: ``python -c "import cosseratbench as cb; from cosseratbench import registry;
from rodlab.bench_adapters.cosseratbench import SOLVERS; ex=registry.load_experiment('twist');
r=cb.run(ex, SOLVERS['rodlab-galpha'](), n_elements=50); print(r.outcome, r.metrics, r.wall_time)"``.

Not modelled
------------
Obstacles and contact (no contact in rodlab: ``NotImplementedError``); stretch and shear (no
``STRETCH``/``SHEAR`` capability: the catenary sags too little by the ~1 % its stretch adds);
rods with two free ends or two sliding ends; a sliding clamp whose slide direction is not the
rod's end tangent; rotational damping. With a pinned root, the dependence of a world-frame tip
load on the root rotation is lagged by one Newton iterate (converges linearly instead of
quadratically; no scenario of the suite has a pinned root with a tip load).
"""
from __future__ import annotations

import logging
import math

import numpy as np

from cosseratbench import Diverged, Trajectory
from cosseratbench.scenario import End, EndCondition

from .cb_common import _RodlabSolver, _damping

log = logging.getLogger(__name__)

QUASI_STATIC_STEP = 0.1  # dt * slowest_frequency for quasi-static scenarios
DYNAMIC_STEP = 0.01  # dt * slowest_frequency for dynamic scenarios
POSITION_FEEDBACK = 6.0  # held tips: position and frame drift corrected over this many steps (2 made the collapsing
# twist rods at 25 elements unstable; 4, 6 and 10 did not)


class GAlphaSolver(_RodlabSolver):
    """Generalized-alpha Cosserat rod (rodlab.galpha): implicit, inextensible, unshearable."""

    method = "galpha"
    name = "rodlab-galpha"
    capabilities = frozenset()  # inextensible, unshearable, no contact

    def time_step(self, scenario, n_frames: int) -> tuple[float, int]:
        """(dt, steps per frame): the accuracy rule of the module docstring, shortened so that
        frames fall on steps."""
        omega = scenario.slowest_frequency()
        if not (omega > 0 and math.isfinite(omega)):
            raise NotImplementedError(f"rodlab-galpha: the scenario's slowest frequency is {omega} (no time scale)")
        dt_max = (QUASI_STATIC_STEP if scenario.quasi_static else DYNAMIC_STEP) / omega * self.time_step_scale
        frame_dt = scenario.duration / (n_frames - 1)
        per_frame = max(1, math.ceil(frame_dt / dt_max - 1e-9))
        return frame_dt / per_frame, per_frame

    def settings(self, scenario, *, n_elements: int, n_frames: int) -> dict:
        out = super().settings(scenario, n_elements=n_elements, n_frames=n_frames)
        dt, per_frame = self.time_step(scenario, n_frames)
        out.update({"time_step": dt, "steps_per_frame": per_frame, "rho_inf_time": 0.5, "rho_inf_space": 1.0,
                    "unshearable": True})
        return out

    def run(self, scenario, *, n_elements: int, n_frames: int):
        if scenario.obstacles:
            raise NotImplementedError("rodlab-galpha: galpha has no obstacle contact in rodlab")
        if n_elements < 2:
            raise ValueError(f"n_elements must be >= 2 (got {n_elements})")
        if n_frames < 2:
            raise ValueError(f"n_frames must be >= 2 (got {n_frames})")
        dt, per_frame = self.time_step(scenario, n_frames)
        rods = [_RodSetup(crod, i, n_elements, scenario, dt) for i, crod in enumerate(scenario.rods)]  # checks all first
        positions, directors = [], []
        for setup in rods:
            xs, ds = setup.simulate(n_frames, per_frame)
            positions.append(xs)
            directors.append(ds)
        return Trajectory(np.linspace(0.0, scenario.duration, n_frames), tuple(positions), tuple(directors))


def _held(cond) -> bool:
    return cond in (EndCondition.CLAMPED, EndCondition.PINNED)


class _RodSetup:
    """One scenario rod as a galpha rod: model, boundary, initial state, stepping."""

    def __init__(self, crod, index: int, n_elements: int, scenario, dt: float):
        from ..galpha import GAlphaOptions, GAlphaRod
        from ..galpha import GAlphaSolver as GAStepper

        self.index = index
        self.dt = dt
        self.reverse = self._choose_root(crod)
        root_end, tip_end = (End.END, End.START) if self.reverse else (End.START, End.END)
        nodes = crod.nodes(n_elements)
        if self.reverse:
            nodes = nodes[::-1].copy()
        N = n_elements + 1
        length = crod.length
        points = np.asarray(crod.centerline, dtype=float)
        if self.reverse:
            points = points[::-1].copy()
        t_root, t_tip = _end_tangent(points), -_end_tangent(points[::-1])
        clamped_root = crod.condition(root_end) is EndCondition.CLAMPED
        R0, kappa = initial_frames(nodes, np.asarray(crod.normal, dtype=float), length / n_elements,
                                   t_first=t_root if clamped_root else None)
        m = crod.material
        self.model = GAlphaRod.from_material(N, length, radius=crod.radius, E=m.youngs_modulus, G=m.shear_modulus,
                                             rho=m.density, gravity=tuple(float(g) for g in scenario.gravity),
                                             damping=_damping(scenario), root_R=R0, root_r=nodes[0])
        from ..galpha import Boundary

        self._tip_pos0 = nodes[-1].copy()  # the suite's end node: where a held tip is kept
        self._tip_d3 = t_tip  # the suite's end tangent: where a clamped tip's d3 is kept
        self._tip_R0 = None  # the clamped tip's frame at t = 0 (set at the first step)
        root = self._root(crod, root_end, dt)
        tip = self._tip(crod, tip_end, dt, kappa, R0)
        pinned_root = root.KIND == 1
        if pinned_root:  # no end couple: kappa(0) = 0; turn the root frame so that node 1's frame is kept
            R1 = R0 @ _cay(0.5 * (kappa[0] + kappa[1]) * self.model.ds)
            kappa[0] = 0.0
            R0 = R1 @ _cay(0.5 * kappa[1] * self.model.ds).T
        if tip.KIND == 2:  # pinned tip: no end couple, and the rod must reach the pin
            kappa[-1] = 0.0
            kappa, R0 = _fit_tip(self.model, kappa, R0, nodes[0], nodes[-1])
        if pinned_root or tip.KIND == 2:
            from dataclasses import replace

            self.model = replace(self.model, root_R=R0)
        self.solver = GAStepper(self.model, Boundary(root=root, tip=tip), GAlphaOptions())
        self.state = self.solver.initial_state(kappa=kappa)

    # -- end conditions ------------------------------------------------------------------
    def _choose_root(self, crod) -> bool:
        def can_root(end):
            cond = crod.condition(end)
            if cond is EndCondition.PINNED:
                return True
            if cond is EndCondition.CLAMPED:
                motion = crod.motion(end)
                return motion is None or motion.slides_along is None
            return False

        if can_root(End.START):
            return False
        if can_root(End.END):
            return True
        raise NotImplementedError(f"rodlab-galpha: rod {self.index}: galpha needs one end clamped (not sliding) or pinned "
                                  f"as its root (got start {crod.start.value}, end {crod.end.value})")

    @staticmethod
    def _loads_at(crod, end) -> np.ndarray:
        f = np.zeros(3)
        for load in crod.loads:
            if load.at is end:
                f += np.asarray(load.force, dtype=float)
        return f

    def _root(self, crod, end, dt):
        from ..galpha.boundary import RootMotion, RootPin

        if np.any(self._loads_at(crod, end) != 0.0):
            log.info("rod %d: load at the held %s end acts on the support only", self.index, end.value)
        if crod.condition(end) is EndCondition.PINNED:
            return RootPin()
        motion = crod.motion(end)
        if motion is None:
            return RootMotion()
        v, w = _step_mean_rates(motion, dt, centred=True)
        return RootMotion(velocity=v, angular_velocity=w)

    def _tip(self, crod, end, dt, kappa, R0):
        from ..galpha.boundary import TipLoad, TipMotion, TipPin, TipSlide

        cond = crod.condition(end)
        force = self._loads_at(crod, end)
        if cond is EndCondition.FREE:
            return TipLoad(force=force)
        if cond is EndCondition.PINNED:
            if np.any(force != 0.0):
                log.info("rod %d: load at the pinned %s end acts on the support only", self.index, end.value)
            return TipPin(velocity=self._held_velocity(None, None))
        motion = crod.motion(end)
        if motion is None:
            if np.any(force != 0.0):
                log.info("rod %d: load at the clamped %s end acts on the support only", self.index, end.value)
            v, w = self._held_rates(None, None, None)
            return TipMotion(velocity=v, angular_velocity=w)
        v, w = _step_mean_rates(motion, dt, centred=False)
        v, w = self._held_rates(v, w, motion)
        if motion.slides_along is None:
            return TipMotion(velocity=v, angular_velocity=w)
        axis = motion.axis
        c = float(axis @ self._tip_d3)
        if abs(c) < 1.0 - 1e-6:
            raise NotImplementedError(f"rodlab-galpha: rod {self.index}: the clamp slides along {axis.tolist()}, not along "
                                      f"the rod's end tangent {self._tip_d3.tolist()} (galpha's sliding tip slides along d3)")
        self._tip_d3 = axis * math.copysign(1.0, c)
        return TipSlide(velocity=v, angular_velocity=w, axial_force=float(force @ axis) * math.copysign(1.0, c))

    def _held_velocity(self, rate, motion):
        return self._held_rates(rate, None, motion)[0]

    def _held_rates(self, rate_v, rate_w, motion):
        """World velocity and angular velocity of a held tip: the motion's rates (the step means)
        plus a correction of the drift of galpha's velocity-level tip condition (its position
        and frame are integrated, not imposed): ``(target - r_L) / (POSITION_FEEDBACK dt)`` and
        ``log(R_target R_L^T) / (POSITION_FEEDBACK dt)``, the targets from the suite's end node,
        end tangent (a sliding clamp: its axis) and pose at the state's time. The turning about
        d3 needs it too: without it the tip frame of a twist rod ends 0.14 rad (1.4 %) off the
        clamp's pose once it bends (rod 4, 50 elements). During a fast ramp the correction acts
        on the scheme's lag and overshoots briefly (decays over ~POSITION_FEEDBACK steps)."""
        tau = POSITION_FEEDBACK * self.dt

        def velocity(t):
            state = self.state
            target = self._tip_pos0 if motion is None else self._tip_pos0 + motion.pose(state.t)[0]
            base = np.zeros(3) if rate_v is None else rate_v(t)
            return base + (target - state.r[-1]) / tau

        def angular_velocity(t):
            state = self.state
            if self._tip_R0 is None:  # galpha's initial tip frame turned so that d3 is the suite's
                self._tip_R0 = _align(state.R[-1], self._tip_d3)
            target = self._tip_R0 if motion is None else motion.pose(state.t)[1] @ self._tip_R0
            base = np.zeros(3) if rate_w is None else rate_w(t)
            return base + _log_so3(target @ state.R[-1].T) / tau

        return velocity, angular_velocity

    # -- stepping --------------------------------------------------------------------------
    def simulate(self, n_frames: int, per_frame: int) -> tuple[np.ndarray, np.ndarray]:
        N = self.model.n_nodes
        xs = np.empty((n_frames, N, 3))
        ds = np.empty((n_frames, N - 1, 3))
        self._record(xs, ds, 0)
        solver, state = self.solver, self.state
        for f in range(1, n_frames):
            for _ in range(per_frame):
                res = solver.step_robust(state, self.dt)
                if not res.success:
                    raise Diverged(f"rod {self.index}: galpha step at t={state.t + self.dt:.6g} s failed in 16 substeps: "
                                   f"{res.message}", time=state.t)
            if not (np.all(np.isfinite(state.r)) and np.all(np.isfinite(state.x))):
                raise Diverged(f"rod {self.index}: non-finite state", time=state.t)
            self._record(xs, ds, f)
        return xs, ds

    def _record(self, xs, ds, f) -> None:
        r, R = self.state.r, self.state.R
        d1 = R[:-1, :, 0] + R[1:, :, 0]
        e = np.diff(r, axis=0)
        e /= np.linalg.norm(e, axis=1)[:, None]
        d1 -= np.sum(d1 * e, axis=1)[:, None] * e
        d1 /= np.linalg.norm(d1, axis=1)[:, None]
        if self.reverse:
            xs[f] = r[::-1]
            ds[f] = d1[::-1]
        else:
            xs[f] = r
            ds[f] = d1


def _cay(w: np.ndarray) -> np.ndarray:
    from ..galpha.state import _cayley

    E = np.empty((3, 3))
    _cayley(float(w[0]), float(w[1]), float(w[2]), E)
    return E


def _shape(model, kappa, R0, r0) -> np.ndarray:
    from ..galpha.state import integrate_frames, integrate_positions

    N = model.n_nodes
    x = np.zeros((N, 15))
    x[:, 6:9] = kappa
    R = np.zeros((N, 3, 3))
    integrate_frames(x, np.ascontiguousarray(R0), model.ds, True, R)
    r = np.zeros((N, 3))
    integrate_positions(x, R, np.ascontiguousarray(r0, dtype=float), model.ds, r)
    return r


def _fit_tip(model, kappa, R0, r0, target) -> tuple[np.ndarray, np.ndarray]:
    """Make galpha's initial shape reach a held tip exactly: scale the Darboux vectors so that
    the chord root-tip has the suite's length (secant iteration), then turn the root frame
    (smallest rotation) so that the chord points at the tip."""
    want = float(np.linalg.norm(target - r0))
    chord = lambda lam: float(np.linalg.norm(_shape(model, lam * kappa, R0, r0)[-1] - r0)) - want
    a, b = 1.0, 1.001
    fa, fb = chord(a), chord(b)
    for _ in range(50):
        if abs(fb) < 1e-13 * max(want, 1e-300) or fb == fa:
            break
        a, b, fa = b, b - fb * (b - a) / (fb - fa), fb
        fb = chord(b)
    if not (abs(fb) < 1e-9 * max(want, 1e-300)):
        raise NotImplementedError(f"rodlab-galpha: cannot fit the initial shape to the held tip (chord error {fb:.3g} m)")
    kappa = b * kappa
    c = _shape(model, kappa, R0, r0)[-1] - r0
    u, v = c / np.linalg.norm(c), (target - r0) / want
    axis = np.cross(u, v)
    s, co = float(np.linalg.norm(axis)), float(u @ v)
    if s > 1e-15:
        axis /= s
        K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
        R0 = (np.eye(3) + s * K + (1.0 - co) * K @ K) @ R0
    return kappa, R0


def _step_mean_rates(motion, dt: float, centred: bool):
    """World velocity and angular velocity of a driven end as functions of t: the mean over the
    step [t - dt/2, t + dt/2] (centred) or [t - dt, t], from the suite's pose, so the pose is
    integrated exactly by sums of steps (``log(R(b) R(a)^T) / dt`` for the rotation)."""

    def window(t):
        a, b = (t - 0.5 * dt, t + 0.5 * dt) if centred else (t - dt, t)
        return max(a, 0.0), max(b, 0.0)

    def velocity(t):
        a, b = window(t)
        if b <= a:
            return np.zeros(3)
        return (motion.pose(b)[0] - motion.pose(a)[0]) / (b - a)

    def angular_velocity(t):
        a, b = window(t)
        if b <= a:
            return np.zeros(3)
        Rrel = motion.pose(b)[1] @ motion.pose(a)[1].T
        return _log_so3(Rrel) / (b - a)

    return velocity, angular_velocity


def _log_so3(R: np.ndarray) -> np.ndarray:
    c = max(-1.0, min(1.0, 0.5 * (np.trace(R) - 1.0)))
    th = math.acos(c)
    w = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if th < 1e-8:
        return w
    return w * th / math.sin(th)


def _end_tangent(points: np.ndarray) -> np.ndarray:
    """Unit tangent at ``points[0]`` of the polyline through ``points`` (the suite's
    centerline): the chord if there are two points, else the reflection in the first chord of
    the tangent at the second point (chord directions weighted by the other chord's length);
    exact on a circular arc."""
    c0 = points[1] - points[0]
    l0 = float(np.linalg.norm(c0))
    c0 /= l0
    if len(points) == 2:
        return c0
    c1 = points[2] - points[1]
    l1 = float(np.linalg.norm(c1))
    c1 /= l1
    t1 = c0 * l1 + c1 * l0
    t1 /= np.linalg.norm(t1)
    t0 = 2.0 * (t1 @ c0) * c0 - t1
    return t0 / np.linalg.norm(t0)


def _align(R: np.ndarray, d3: np.ndarray) -> np.ndarray:
    """``R`` turned by the smallest rotation that takes its third column to ``d3``."""
    axis = np.cross(R[:, 2], d3)
    s, co = float(np.linalg.norm(axis)), float(R[:, 2] @ d3)
    if s < 1e-15:
        return R.copy()
    axis /= s
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return (np.eye(3) + s * K + (1.0 - co) * K @ K) @ R


def initial_frames(nodes: np.ndarray, normal: np.ndarray, ds: float, t_first=None) -> tuple[np.ndarray, np.ndarray]:
    """Root frame (3, 3) (columns d1, d2, d3) and nodal Darboux vectors (N, 3) of an untwisted
    rod through ``nodes`` (see the module docstring: bisector tangents, parallel transport,
    Cayley-consistent segment rotations, nodal values as means of the segments'); ``t_first``
    overrides the tangent at the first node (a clamp's direction)."""
    N = len(nodes)
    c = np.diff(nodes, axis=0)
    c /= np.linalg.norm(c, axis=1)[:, None]
    t = np.empty((N, 3))
    if N > 2:
        b = c[:-1] + c[1:]
        t[1:-1] = b / np.linalg.norm(b, axis=1)[:, None]
        t[0] = 2.0 * (t[1] @ c[0]) * c[0] - t[1]
        t[-1] = 2.0 * (t[-2] @ c[-1]) * c[-1] - t[-2]
    else:
        t[:] = c[0]
    if t_first is not None:
        t[0] = t_first
    t /= np.linalg.norm(t, axis=1)[:, None]
    d1 = normal - (normal @ t[0]) * t[0]
    if np.linalg.norm(d1) < 1e-9:
        raise ValueError("the rod's normal must not be parallel to its first tangent")
    d1 /= np.linalg.norm(d1)
    R = np.column_stack([d1, np.cross(t[0], d1), t[0]])
    R0 = R.copy()
    mids = np.zeros((N - 1, 3))
    for j in range(N - 1):
        axis = np.cross(t[j], t[j + 1])
        s = np.linalg.norm(axis)
        co = float(t[j] @ t[j + 1])
        th = math.atan2(s, co)
        if s < 1e-14:
            continue
        axis /= s
        mids[j] = R.T @ axis * (2.0 * math.tan(0.5 * th)) / ds
        K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
        Rot = np.eye(3) + math.sin(th) * K + (1.0 - co) * K @ K
        R = Rot @ R
    kappa = np.empty((N, 3))
    kappa[1:-1] = 0.5 * (mids[:-1] + mids[1:])
    kappa[0] = 2.0 * mids[0] - kappa[1] if N > 2 else mids[0]
    kappa[-1] = 2.0 * mids[-1] - kappa[-2] if N > 2 else mids[-1]
    return R0, kappa
