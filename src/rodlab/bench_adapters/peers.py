"""Drivers for the side-by-side cantilever benchmarks: rodlab's methods and peer simulators.

Every driver runs the same physical scene, a cantilever under gravity (straight rod along +x
clamped at x = 0, gravity along -z, viscous damping ``-c m v``), for ``t_end`` simulated seconds at
time step ``dt`` and returns a :class:`CantileverRun` (tip position, wall time spent stepping with
compilation excluded, number of steps, whether it stayed finite). Peers are imported lazily: a
missing peer raises :class:`PeerUnavailable` with the reason.

Prescribed clamp motion (bench/bench_dynamics.py's ``shaken`` scene): the PyElastica, pypbd and
dismech-newton drivers take ``clamp_motion``, a callable ``t -> (displacement, velocity)`` (each (3,),
[m] and [m/s], in the scene's frame: rod along +x, gravity along -z) that translates the clamp
(its orientation stays fixed), each the way its library prescribes a boundary (see each driver).
With ``clamp_motion`` the probe receives the tip's (x, y, z) instead of (x, z), and the run's
``extra`` holds ``clamp_t`` (k,) and ``clamp_x`` (k, 3): the clamped node at the probe times,
read back from the library's state (tests/test_peer_clamp_motion.py checks it follows the motion).
Without it every driver runs exactly as before (fixed clamp).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np


class PeerUnavailable(RuntimeError):
    """The peer simulator is not installed or cannot run this scene here."""


@dataclass(frozen=True)
class Scene:
    n: int = 50                # vertices (nodes)
    length: float = 1.0
    radius: float = 0.01
    E: float = 1e8
    G: float = 1e8 / 3
    rho: float = 1000.0
    g: float = 9.81
    damping: float = 10.0      # [1/s]
    t_end: float = 2.0

    @property
    def area(self) -> float:
        return math.pi * self.radius**2

    @property
    def EI(self) -> float:
        return self.E * math.pi * self.radius**4 / 4

    def reference_tip(self) -> np.ndarray:
        """(x, z) of the static planar elastica (rodlab.analytic.elastica)."""
        from ..analytic.elastica import cantilever_elastica_tip

        return np.asarray(cantilever_elastica_tip(self.length, self.EI, self.rho * self.area * self.g), dtype=float)


@dataclass
class CantileverRun:
    ok: bool                   # finite and not exploded
    tip: np.ndarray            # (x, z)
    wall_s: float              # wall seconds spent stepping (compilation excluded)
    cpu_s: float
    steps: int
    dt: float
    message: str = ""
    extra: dict = field(default_factory=dict)


def _clamp_extra(times: list, xs: list) -> dict:
    """``extra`` entries of a moving-clamp run: the clamped node's samples."""
    return {"clamp_t": np.asarray(times, dtype=float), "clamp_x": np.asarray(xs, dtype=float).reshape(-1, 3)}


def _exploded(x: np.ndarray, length: float) -> bool:
    return (not np.all(np.isfinite(x))) or float(np.abs(x).max()) > 10 * length


# ---------------------------------------------------------------------------------- rodlab
def run_rodlab(method: str, scene: Scene, dt: float, **options) -> CantileverRun:
    """One rodlab method through the ``cantilever`` scene; wall time = the scene's ``us_per_step *
    steps`` (the solver calls only); CPU time = the scene's ``cpu_s_stepping`` (CPU time of its
    stepping loop, Python bookkeeping and frame recording included, as the peers' loops are timed),
    or the whole scene call where a method does not report it (an upper bound). ``options``: more
    cantilever parameters (``damping_scheme``, ``newton_iters``)."""
    import logging

    import rodlab

    logging.getLogger("rodlab").setLevel(logging.ERROR)  # failed projections at too large dt are reported below
    c0 = time.process_time()
    try:
        res = rodlab.run_scene("cantilever", method=method, n=scene.n, length=scene.length, radius=scene.radius, E=scene.E,
                               G=scene.G, rho=scene.rho, g=scene.g, dt=dt, t_end=scene.t_end, damping=scene.damping, static=False,
                               **options)
    except Exception as exc:  # unstable / failed solves raise: report as not ok
        return CantileverRun(False, np.full(2, np.nan), math.nan, math.nan, 0, dt, f"{type(exc).__name__}: {exc}"[:200])
    m = res.metrics
    tip = np.array([m["tip_x"], m["tip_z"]], dtype=float)
    x = np.asarray(res.trajectory["x"])[-1]
    steps = int(m["steps"])
    wall = float(m["us_per_step"]) * 1e-6 * steps
    cpu = float(m["cpu_s_stepping"]) if "cpu_s_stepping" in m else time.process_time() - c0
    inext = float(m.get("inextensibility", 0.0))
    ok = not _exploded(x, scene.length) and inext <= 1e-3
    msg = "" if ok else ("non-finite or exploded" if _exploded(x, scene.length) else f"edge-length violation {inext:.2g}")
    return CantileverRun(ok, tip, wall, cpu, steps, dt, msg,
                         extra={k: m[k] for k in ("inextensibility", "kinetic_energy") if k in m})


def run_der(scene: Scene, dt: float, chunks: int = 20) -> CantileverRun:
    """rodlab's explicit DER driven directly (``DERStepper.advance`` in ``chunks`` calls, so a
    blow-up stops the run early; per-call Python overhead is negligible at these step counts)
    on the ``cantilever`` scene's rod (rodlab.scenes.cantilever_world: edge 0 centred on x = 0)."""
    import logging

    from ..scenes.cantilever_world import cantilever_rod
    from ..der.stepper import DEROptions, DERStepper, SimulationError
    from ..model import Loads

    logging.getLogger("rodlab").setLevel(logging.ERROR)
    rod = cantilever_rod(dict(n=scene.n, length=scene.length, radius=scene.radius, E=scene.E, G=scene.G, rho=scene.rho))
    stepper = DERStepper(rod, Loads(gravity=(0.0, 0.0, -scene.g), damping=scene.damping), DEROptions(dt=dt))
    stepper.advance(stepper.initial_state(), 3)  # compile / load the cache outside the timing
    state = stepper.initial_state()
    nsteps = int(round(scene.t_end / dt))
    per = max(1, -(-nsteps // chunks))
    done, ok, msg, viol = 0, True, "", 0.0
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        while done < nsteps:
            k = min(per, nsteps - done)
            info = stepper.advance(state, k)
            viol = max(viol, info.constraint_violation_max)
            done += k
            if viol > 1e-6 or _exploded(state.x, scene.length):
                ok, msg = False, f"fast projection failed (violation {viol:.2g})" if viol > 1e-6 else "exploded"
                break
    except SimulationError as exc:
        ok, msg = False, str(exc)[:100]
    except ValueError as exc:  # degenerate geometry after a blow-up
        ok, msg = False, f"{type(exc).__name__}: {exc}"[:100]
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    if 0 < done < nsteps:
        wall, cpu = wall * nsteps / done, cpu * nsteps / done
    tip = state.x[-1]
    return CantileverRun(ok, np.array([tip[0], tip[2]]), wall, cpu, nsteps, dt, msg)


# ---------------------------------------------------------------------------------- PyElastica
def run_pyelastica(scene: Scene, dt: float, check_every: int = 2000, probe=None, clamp_motion=None) -> CantileverRun:
    """PyElastica (Gazzola et al.) CosseratRod with ``n - 1`` elements, node 0 and the first
    element's directors fixed (OneEndFixedBC), GravityForces, AnalyticalLinearDamper with the
    uniform rate ``damping``, PositionVerlet. ``probe(t, tip_xz)``, if given, is called every
    ``check_every`` steps (bench/bench_dynamics.py samples the trajectory with it).

    ``clamp_motion`` (module docstring): instead of OneEndFixedBC a constraint class of the same
    form (a ``ConstraintBase`` subclass, PyElastica's way to write a boundary condition) whose
    ``constrain_values(rod, t)`` sets node 0 to its rest position plus the displacement at ``t``
    and element 0's directors to their rest values, and ``constrain_rates(rod, t)`` node 0's
    velocity to the clamp's velocity at ``t`` and element 0's angular velocity to zero. The
    PositionVerlet step calls them at its half and end times, so node 0 is exactly at the motion's
    position at the end of every step."""
    try:
        import elastica as ea
    except ImportError as exc:
        raise PeerUnavailable(f"pyelastica not installed ({exc})") from None

    class _MovingClampBC(ea.ConstraintBase):
        """Node 0 translated by ``motion(t)``, element 0's directors held (OneEndFixedBC moved)."""

        def __init__(self, fixed_position, fixed_directors, motion, **kwargs):
            super().__init__(**kwargs)
            self.rest_position = np.array(fixed_position, dtype=float)
            self.rest_directors = np.array(fixed_directors, dtype=float)
            self.motion = motion

        def constrain_values(self, system, time) -> None:
            disp, _ = self.motion(float(time))
            system.position_collection[:, 0] = self.rest_position + disp
            system.director_collection[..., 0] = self.rest_directors

        def constrain_rates(self, system, time) -> None:
            _, vel = self.motion(float(time))
            system.velocity_collection[:, 0] = vel
            system.omega_collection[:, 0] = 0.0

    class _Sim(ea.BaseSystemCollection, ea.Constraints, ea.Forcing, ea.Damping):
        pass

    sim = _Sim()
    # OneEndFixedBC holds element 0 rigid, which acts like a clamp at its midpoint (as DER's
    # clamped edge does): centre element 0 on x = 0, as rodlab's DER cantilever does, so that
    # both clamps converge to x = 0 and the tip is at x = length.
    h = scene.length / (scene.n - 1.5)
    rod = ea.CosseratRod.straight_rod(scene.n - 1, np.array([-0.5 * h, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]),
                                      scene.length + 0.5 * h, scene.radius, scene.rho, youngs_modulus=scene.E, shear_modulus=scene.G)
    sim.append(rod)
    if clamp_motion is None:
        sim.constrain(rod).using(ea.OneEndFixedBC, constrained_position_idx=(0,), constrained_director_idx=(0,))
    else:
        sim.constrain(rod).using(_MovingClampBC, constrained_position_idx=(0,), constrained_director_idx=(0,), motion=clamp_motion)
    sim.add_forcing_to(rod).using(ea.GravityForces, acc_gravity=np.array([0.0, 0.0, -scene.g]))
    if scene.damping > 0:
        sim.dampen(rod).using(ea.AnalyticalLinearDamper, uniform_damping_constant=scene.damping, time_step=dt)
    sim.finalize()
    stepper = ea.PositionVerlet()
    nsteps = int(round(scene.t_end / dt))
    t = 0.0
    warm = min(5, nsteps)
    for _ in range(warm):  # compile outside the timing
        t = stepper.step(sim, t, dt)
    w0, c0 = time.perf_counter(), time.process_time()
    done = warm
    ok = True
    clamp_t, clamp_x = [], []
    while done < nsteps:
        k = min(check_every, nsteps - done)
        for _ in range(k):
            t = stepper.step(sim, t, dt)
        done += k
        if clamp_motion is not None:
            clamp_t.append(float(t))
            clamp_x.append(rod.position_collection[:, 0].copy())
            if probe is not None:
                probe(t, rod.position_collection[:, -1].copy())
        elif probe is not None:
            probe(t, rod.position_collection[[0, 2], -1].copy())
        if _exploded(rod.position_collection, scene.length):
            ok = False
            break
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    if done > warm:
        scale = (nsteps) / (done - warm)
        wall, cpu = wall * scale, cpu * scale
    tip = rod.position_collection[:, -1]
    return CantileverRun(ok, np.array([tip[0], tip[2]]), wall, cpu, nsteps, dt, "" if ok else f"exploded after {done} steps",
                         extra=_clamp_extra(clamp_t, clamp_x) if clamp_motion is not None else {})


# ---------------------------------------------------------------------------------- dt search
def largest_good_dt(run, dt0: float, reference: np.ndarray, tol: float, factor: float = 2 ** 0.5, up: int = 4, down: int = 12,
                    log=None):
    """Largest ``dt = dt0 * factor**k`` (k from ``up`` down to ``-down``) whose run is stable and
    whose tip is within ``tol`` of ``reference``. Returns (run or None, list of tried runs)."""
    tried = []
    last_err = None
    for k in range(up, -down - 1, -1):
        dt = dt0 * factor**k
        r = run(dt)
        err = float(np.hypot(*(r.tip - reference))) if r.ok else math.inf
        r.extra["tip_error"] = err
        tried.append(r)
        if log:
            log(f"    dt={dt:.3g}: {'ok' if r.ok else 'unstable'} err={err:.2e} wall={r.wall_s:.3g}s {r.message}")
        if r.ok and err <= tol:
            return r, tried
        if r.ok and last_err is not None and abs(err - last_err) < 0.05 * err:
            if log:
                log("    error no longer falls with dt (spatial error above the tolerance): stop")
            return None, tried
        last_err = err if r.ok else None
    return None, tried


# ---------------------------------------------------------------------------------- cosseratbench adapters
def cantilever_scenario(scene: Scene):
    """The cantilever as a cosseratbench Scenario for the suite's peer adapters (MuJoCo,
    dismech): ``n - 1`` elements, the clamped first element centred on x = 0 (as for PyElastica
    and rodlab's DER) so that the clamp converges to x = 0; quasi-static, so each adapter adds
    its mass-proportional damping ``2 * slowest_frequency`` (about 11/s here)."""
    from cosseratbench.scenario import EndCondition, Material, Rod, Scenario

    h = scene.length / (scene.n - 1.5)
    rod = Rod(centerline=((-0.5 * h, 0.0, 0.0), (scene.length, 0.0, 0.0)), radius=scene.radius,
              material=Material(scene.E, scene.G, scene.rho), start=EndCondition.CLAMPED)
    return Scenario(rods=(rod,), duration=scene.t_end, gravity=(0.0, 0.0, -scene.g), quasi_static=True, self_contact=False)


def run_cosseratbench_adapter(solver_cls, scene: Scene, scale: float) -> CantileverRun:
    """Run a cosseratbench solver adapter at ``time_step_scale = scale`` (one warm-up run of
    a few steps first, untimed); dt from the adapter's ``settings``."""
    from cosseratbench import Diverged

    solver = solver_cls(time_step_scale=scale)
    scen = cantilever_scenario(scene)
    n_el = scene.n - 1
    settings = solver.settings(scen, n_elements=n_el, n_frames=2) if hasattr(solver, "settings") else {}
    dt = float(settings.get("time_step", math.nan))
    from dataclasses import replace

    try:
        solver.run(replace(scen, duration=min(scene.t_end, 20 * dt if math.isfinite(dt) else 1e-3)), n_elements=n_el, n_frames=2)
        w0, c0 = time.perf_counter(), time.process_time()
        traj = solver.run(scen, n_elements=n_el, n_frames=2)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    except (Diverged, FloatingPointError) as exc:
        return CantileverRun(False, np.full(2, np.nan), math.nan, math.nan, 0, dt, f"diverged: {exc}"[:120])
    x = traj.positions[0][-1]
    ok = not _exploded(x, scene.length)
    steps = int(round(scene.t_end / dt)) if math.isfinite(dt) else 0
    return CantileverRun(ok, np.array([x[-1, 0], x[-1, 2]]), wall, cpu, steps, dt, "" if ok else "exploded")


# ---------------------------------------------------------------------------------- pypbd
def run_pypbd(scene: Scene, dt: float, check_every: int = 50, probe=None, clamp_motion=None) -> CantileverRun:
    """pypbd (PositionBasedDynamics), the direct position-based solver for stiff rods (Deul et
    al. 2018): ``n - 1`` rigid segments (slender boxes, at most half as wide as long, with the
    density that gives the rod's mass per length; see the comment on ``side``) joined at ``n - 2`` joints by one ``DirectPositionBasedSolverForStiffRodsConstraint``
    with E, G and the radius; the first segment static and centred on x = 0 (clamp converging to
    x = 0). PBD's gravity is fixed along -y: the rod bends in the x-y plane, and y is reported as
    z. Viscous damping: velocities and angular velocities scaled by ``exp(-damping dt)`` after
    each step (from Python). PBD's default 5 substeps per step. ``probe(t, tip_xz)``, if given, is
    called every ``check_every`` steps (bench/bench_dynamics.py samples the trajectory with it).

    ``clamp_motion`` (module docstring): the static first segment (the clamp, mass 0, so the
    position-based solver never moves it) is moved as a kinematic body: before each step from t to
    t + dt its position is set to its rest position plus the displacement at t + dt (its last and
    old positions too, its velocity to the clamp's), its rotation left alone. PBD's frame is the
    scene's rotated about x (its y is the scene's z): the scene's (x, y, z) is PBD's (x, -z, y),
    and the probe's tip and ``clamp_x`` are reported in the scene's frame."""
    try:
        import pypbd as pbd
    except ImportError as exc:
        raise PeerUnavailable(f"pypbd not installed ({exc})") from None
    n_seg = scene.n - 1
    h = scene.length / (scene.n - 1.5)
    # pypbd turns each body into its principal axes of inertia, and its stiff-rod constraint takes
    # the torsion axis from that frame: a box shorter than it is wide (h < sqrt(A), n > ~57 here)
    # swaps the axes and bends with G J instead of E I. Keep the boxes slender, with the density
    # raised so the mass per length stays rho A (statics do not see the smaller rotary inertia).
    side = min(math.sqrt(scene.area), 0.5 * h)
    density = scene.rho * scene.area / side**2
    sim = pbd.Simulation.getCurrent()
    sim.initDefault()
    model = sim.getModel()
    model.cleanup()  # the simulation is a process-wide singleton: start from an empty model
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    for i in range(n_seg):
        vd, mesh = pbd.VertexData(), pbd.IndexedFaceMesh()
        for sx in (-1, 1):
            for sy in (-1, 1):
                for sz in (-1, 1):
                    vd.addVertex(np.array([sx * h / 2, sy * side / 2, sz * side / 2]))
        mesh.initMesh(8, 12, 12)
        for f in faces:
            mesh.addFace(list(f))
        mesh.buildNeighbors()
        model.addRigidBody(density, vd, mesh, translation=np.array([i * h, 0.0, 0.0]), generateCollisionObject=False)
    bodies = model.getRigidBodies()
    if len(bodies) != n_seg:
        raise PeerUnavailable(f"pypbd model holds {len(bodies)} bodies, expected {n_seg}")
    bodies[0].setMass(0.0)
    joints = [(i, i + 1) for i in range(n_seg - 1)]
    where = [np.array([(i + 0.5) * h, 0.0, 0.0]) for i in range(n_seg - 1)]
    m = n_seg - 1
    if not model.addDirectPositionBasedSolverForStiffRodsConstraint(joints, where, [scene.radius] * m, [h] * m, [scene.E] * m, [scene.G] * m):
        raise PeerUnavailable("pypbd refused the stiff-rod constraint")
    pbd.TimeManager.getCurrent().setTimeStepSize(dt)
    stepper = sim.getTimeStep()
    factor = math.exp(-scene.damping * dt)
    moving = list(bodies)[1:]
    nsteps = int(round(scene.t_end / dt))
    ok, done = True, 0
    clamp, clamp_rest = bodies[0], np.asarray(bodies[0].getPosition(), dtype=float).copy()
    to_pbd = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # scene -> PBD: (x, y, z) -> (x, z, -y); back: .T
    clamp_t, clamp_x = [], []
    w0, c0 = time.perf_counter(), time.process_time()
    while done < nsteps:
        for _ in range(min(check_every, nsteps - done)):
            if clamp_motion is not None:
                disp, vel = clamp_motion((done + 1) * dt)
                target = clamp_rest + to_pbd @ np.asarray(disp, dtype=float)
                clamp.setPosition(target)
                clamp.setLastPosition(target)
                clamp.setOldPosition(target)
                clamp.setVelocity(to_pbd @ np.asarray(vel, dtype=float))
            stepper.step(model)
            for rb in moving:
                rb.setVelocity(rb.getVelocity() * factor)
                rb.setAngularVelocity(rb.getAngularVelocity() * factor)
            done += 1
        p = np.asarray(bodies[-1].getPosition())
        if clamp_motion is not None:
            clamp_t.append(done * dt)
            clamp_x.append(to_pbd.T @ np.asarray(clamp.getPosition(), dtype=float))
            if probe is not None:
                tp = p + np.asarray(bodies[-1].getRotationMatrix()) @ np.array([0.5 * h, 0.0, 0.0])
                probe(done * dt, to_pbd.T @ tp)
        elif probe is not None:
            tp = p + np.asarray(bodies[-1].getRotationMatrix()) @ np.array([0.5 * h, 0.0, 0.0])
            probe(done * dt, np.array([tp[0], tp[1]]))
        if not np.all(np.isfinite(p)) or np.abs(p).max() > 10 * scene.length:
            ok = False
            break
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    if 0 < done < nsteps:
        wall, cpu = wall * nsteps / done, cpu * nsteps / done
    last = bodies[-1]
    tip = np.asarray(last.getPosition()) + np.asarray(last.getRotationMatrix()) @ np.array([0.5 * h, 0.0, 0.0])
    sim.reset()
    return CantileverRun(ok, np.array([tip[0], tip[1]]), wall, cpu, nsteps, dt, "" if ok else f"exploded after {done} steps",
                         extra=_clamp_extra(clamp_t, clamp_x) if clamp_motion is not None else {})


# ---------------------------------------------------------------------------------- dismech-newton
def import_dismech_newton():
    """Import dismech-newton (implicit DER on NVIDIA Newton/warp), or raise :class:`PeerUnavailable`.

    dismech-newton 0.1.0.post4 targets Python >= 3.14, which evaluates annotations lazily; on older
    Pythons the return annotation ``-> Slots | None`` (dismech_newton/contact.py:77, ``Slots`` a warp
    struct) is evaluated at import and raises ``TypeError`` (warp's ``Struct`` has no ``|``). The
    annotation is never used at run time, so before importing we give warp's ``Struct`` an ``|`` that
    returns ``typing.Any``. This patches warp's class for the whole process (harmless: nothing else
    takes ``|`` of a warp struct) and is applied only here, only on Python < 3.14.
    """
    import sys
    import typing

    try:
        import warp as wp
    except ImportError as exc:
        raise PeerUnavailable(f"dismech-newton needs warp, not installed ({exc})") from None
    if hasattr(wp, "LOG_WARNING"):  # no per-module load/compile lines in the harness's output
        wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)
    if sys.version_info < (3, 14):
        try:
            from warp._src import codegen as cg
        except ImportError:  # another warp layout: try without the shim
            cg = None
        if cg is not None and "__or__" not in vars(cg.Struct):
            cg.Struct.__or__ = lambda self, other: typing.Any
            cg.Struct.__ror__ = lambda self, other: typing.Any
    try:
        import newton
        import dismech_newton
    except ImportError as exc:
        raise PeerUnavailable(f"dismech-newton not installed ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - report why it does not load here
        raise PeerUnavailable(f"dismech-newton does not import on Python {sys.version.split()[0]} even with the "
                              f"annotation shim: {type(exc).__name__}: {exc}"[:300]) from None
    return wp, newton, dismech_newton


def run_dismech_newton(scene: Scene, dt: float, iterations: int = 10, warmup: int = 3,
                       stall_window: float = 0.25, probe=None, probe_every: int = 0, clamp_motion=None) -> CantileverRun:
    """dismech-newton's ``DiSMechSolver`` (implicit Euler; per step ``iterations`` strain-space ADMM
    iterations with a line search, SciPy's SuperLU as the linear solver on the CPU; float32 DOFs) on
    warp's CPU device.

    The rod: ``newton.Rod`` through ``n`` nodes with the section rigidities given directly (EA, EI =
    E pi r^4 / 4, GJ = G pi r^4 / 2; dismech folds them per edge / per Voronoi length), masses from a
    ``ShapeConfig`` of density ``rho`` (its radius is the scene's, so the mass per length is rho A),
    no capsule proxies, no contact. The clamp: ``fix_segment`` on edge 0 (both its nodes and its twist),
    edge 0 centred on x = 0 (converges to a clamp at x = 0, as the other drivers). Gravity along -z
    (the builder's gravity vector). Damping: dismech offers only strain-rate (Kelvin-Voigt) damping,
    not mass-proportional; the scene's ``-c m v`` is applied as every DOF's velocity (nodes and twist
    angles, i.e. with the twist inertia) scaled by ``exp(-c dt)`` after each step, in place on the
    solver state's CPU arrays (as for pypbd).

    Timing: the solver is built and ``warmup`` steps taken (loads/compiles warp's kernels), then it
    is reset (``DiSMechSolver.reset``) onto a fresh rest state; only the stepping is timed.

    Not ok: non-finite or exploded, or a *stall*: a step within the first ``stall_window`` seconds
    whose result equals its inertial prediction exactly, i.e. every line search took no step (the
    rod starts from rest and cannot be settled then). This happens above a dt that falls ~h^2
    (0.1 s at n = 200, 2 ms at n = 1000): no candidate of the line search lowers the step's objective
    (at n = 1000 the chord step's directional derivative even comes out with the wrong sign; likely
    the float32 DOF/step arrays against the stretch/bend stiffness ratio -- not investigated
    further), the step returns its inertial prediction and the rod hangs nearly straight without
    blowing up, which the accuracy check alone would misread as converged-but-inaccurate.

    ``probe(t, tip_xz)``, if given, is called every ``probe_every`` steps (bench/bench_dynamics.py
    samples the trajectory with it).

    ``clamp_motion`` (module docstring): dismech prescribes fixed DOFs through the step's input state
    ("Fixed DOFs are prescribed through ``state_in.dismech.q``": its inertial prediction keeps them
    and its end sets their velocity to zero). Before each step from t to t + dt the two nodes of the
    fixed edge 0 (``fix_segment``) are set, in the input state, to their rest positions plus the
    displacement at t + dt; their twist DOF stays (the clamp's frame is held). The step's parallel
    transport then starts from the moved clamp nodes (a pure translation: transporting each edge's
    frame from the nodes before the move as well, through the solver's private ``_carry``, changed
    the shaken tip trajectory at n = 50, dt = 1 ms by < 1e-5 L). The DOFs are float32:
    the clamped nodes follow the motion to float32 rounding (~1e-8 of the coordinates).
    """
    wp, newton, dn = import_dismech_newton()
    n = scene.n
    h = scene.length / (n - 1.5)
    pts = np.zeros((n, 3))
    pts[:, 0] = -0.5 * h + h * np.arange(n)
    inertia = math.pi * scene.radius**4 / 4  # second moment of area
    device = "cpu"
    builder = newton.ModelBuilder(gravity=(0.0, 0.0, -scene.g))
    rod = newton.Rod(pts, radius=scene.radius, stretch_rigidity=scene.E * scene.area, shear_rigidity=0.9 * scene.G * scene.area,
                     bend_rigidity=scene.E * inertia, twist_rigidity=scene.G * 2 * inertia)
    edges = dn.add_rod(builder, rod, cfg=newton.ModelBuilder.ShapeConfig(density=scene.rho), proxies=False)
    dn.fix_segment(builder, edge=edges[0])
    model = builder.finalize(device=device)
    solver = dn.DiSMechSolver(model, iterations=iterations, self_contact=False)

    s0, s1 = model.state(), model.state()
    for _ in range(warmup):  # load / compile the kernels outside the timing
        solver.step(s0, s1, None, None, dt)
        s0, s1 = s1, s0
    s0, s1 = model.state(), model.state()
    dn.flatten_state(s0)
    dn.flatten_state(s1)
    solver.reset(s0)  # as a fresh solver's first step would
    views = {id(s): (s.dismech.q.numpy(), s.dismech.qd.numpy(), s.particle_q.numpy()) for s in (s0, s1)}  # CPU: views
    q_pred = solver.q_pred.numpy()
    clamp_rest = views[id(s0)][2][:2].astype(float)  # the fixed edge's two nodes
    clamp_t, clamp_x = [], []
    factor = math.exp(-scene.damping * dt)
    nsteps = int(round(scene.t_end / dt))
    watch = max(1, int(stall_window / dt))
    ok, msg, done, stalls, first_stall = True, "", 0, 0, None
    w0, c0 = time.perf_counter(), time.process_time()
    while done < nsteps:
        if clamp_motion is not None:
            disp, _ = clamp_motion((done + 1) * dt)
            views[id(s0)][2][:2] = clamp_rest + np.asarray(disp, dtype=float)
        solver.step(s0, s1, None, None, dt)
        q, qd, x = views[id(s1)]
        qd *= factor
        if np.array_equal(q, q_pred):
            stalls += 1
            if first_stall is None:
                first_stall = done
        done += 1
        if probe_every > 0 and done % probe_every == 0:
            if clamp_motion is not None:
                clamp_t.append(done * dt)
                clamp_x.append(np.array(x[0], dtype=float))
                if probe is not None:
                    probe(done * dt, np.array(x[-1], dtype=float))
            elif probe is not None:
                probe(done * dt, np.array([x[-1, 0], x[-1, 2]], dtype=float))
        s0, s1 = s1, s0
        if first_stall is not None and first_stall < watch:
            ok, msg = False, (f"stalled: step {first_stall} (t = {first_stall * dt:.3g} s) took no line-search step "
                              "in any iteration")
            break
        if done % 50 == 0 and _exploded(x, scene.length):
            ok, msg = False, f"exploded after {done} steps"
            break
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    x = views[id(s0)][2]
    if ok and _exploded(x, scene.length):
        ok, msg = False, "non-finite or exploded"
    if 0 < done < nsteps:
        wall, cpu = wall * nsteps / done, cpu * nsteps / done
    extra = {"stalled_steps": stalls}
    if clamp_motion is not None:
        extra.update(_clamp_extra(clamp_t, clamp_x))
    return CantileverRun(ok, np.array([x[-1, 0], x[-1, 2]], dtype=float), wall, cpu, nsteps, dt, msg, extra=extra)
