"""The dynamics benchmark (issue #15, item 3): cost of reproducing a rod's *motion* to 1 % of L.

    python -m pip install -e . -r bench/requirements-peers.txt   # once: the peers (bench only)
    NUMBA_CACHE_DIR=/tmp/numba_bench python bench/bench_dynamics.py [--quick]

Two lightly damped scenes, 2 s each, the rod of ``bench_peers.py`` (L = 1 m, radius 1 cm,
E = 1e8 Pa, G = E/3, rho = 1000 kg/m^3, gravity 9.81 m/s^2 along -z) clamped at x = 0 along +x,
with the light viscous damping ``-c m v``, c = 0.5 /s (about 4.5 % of critical for the first mode):

- ``released``: the straight, horizontal cantilever released under gravity at t = 0 (it swings
  and whips about its sagged shape);
- ``shaken``: the same rod, the clamp shaken sideways (along y), ``y(t) = A (1 - cos(2 pi f t))``,
  A = 2 cm, f = 3 Hz (between the first two bending modes, 0.9 and 5.5 Hz), with gravity.

Accuracy: the tip trajectory within 1 % of L over the whole run, i.e. ``max_t |tip(t) -
tip_ref(t)| / L <= 0.01`` over the tip samples a run reports (every 10 ms, at the run's own step
times; the reference is interpolated there by a cubic spline). Reference: the converged answer,
galpha at its finest step (REF_DT), checked against explicit DER (fast projection) at a quarter of
its suggested step (over the whole run, or over its first DER_CHECK_STEPS steps where the whole run
would take more: n = 1000); the table reports their difference and each one's change from half its step.

For every rodlab method (der fast / symplectic projection, der-implicit and compact with
backward Euler and bdf2 with their default
solver settings, der-implicit's bdf2 also with 3 Newton iterations per step, galpha) and every peer of ``bench_peers.py`` that imports (PyElastica,
pypbd, MuJoCo's cable through cosseratbench's adapter, dismech-newton), the largest step of the
ladder ``dt0 * sqrt(2)^k`` that is stable and within the accuracy, and the CPU time per simulated
second of that run (compilation and model building excluded, as bench_peers times them). dt0 is
each simulator's default (rodlab), DER's suggested step (PyElastica), PBD's 5 ms, the adapter's
step (MuJoCo), dismech-newton's dt0 from bench_peers; implicit and position-based simulators start
their ladder at ``LADDER_TOP`` (40 ms) whatever their default. A ladder stops at the first
accurate step; a run whose projected CPU time (the last run's times sqrt(2)) exceeds the per-run
budget is not run and the row says "skipped: budget"; so does a run stopped once its CPU time passed
the budget (with the time it reached and its projected total). Each peer's run goes to a forked child
process whose CPU time the kernel caps at the budget (``setrlimit(RLIMIT_CPU)``, through
rodlab.bench_adapters.cpu_budget), so a peer stops there even inside one long blocking call
(cosseratbench's MuJoCo adapter runs a whole simulation in one call): its projected total then comes
from the simulated time it reported reaching or, for MuJoCo, from its CPU cost per step measured on
two short runs first (MUJOCO_PROBE_STEPS; that untimed probe has its own CPU allowance,
MUJOCO_PROBE_ALLOWANCE, and the timed run, whose model build the adapter includes, the budget). rodlab's runs check the budget between their advance calls,
in the benchmark's process. The reference of a (scene, n) is computed on first use only. Damping of the peers: PyElastica's
AnalyticalLinearDamper; pypbd and dismech-newton scale the velocities by exp(-c dt) after each step
(their drivers in rodlab.bench_adapters.peers); MuJoCo gets the cosseratbench adapter's
mass-proportional damping force set to the same c. The shaken clamp needs prescribed clamp motion:
rodlab's methods (the clamp's ``motion``), MuJoCo (cosseratbench's ``Motion``, piecewise linear in
10 ms samples), and the PyElastica, pypbd and dismech-newton drivers through their ``clamp_motion``
(:func:`shake_motion`; each the way its library prescribes a boundary: a PyElastica constraint
class setting the clamped node's position and velocity at time t, pypbd's static clamp segment
moved before each step, dismech's fixed DOFs set in each step's input state; see
rodlab.bench_adapters.peers). The clamp translates; its frame stays fixed.

Writes docs/benchmarks-dynamics.md (unless ``--no-doc`` or ``--only``; ``--quick`` too, its page says so).
On a shared machine the full run (> 1 h) can be split: ``--json FILE`` saves every row as it is
measured (with the machine's 1-min load average when the row finished), ``--merge FILE ...`` writes
the page from saved runs (a later file's row replaces an earlier one's; the page lists the runs,
the load at each n, and the simulators missing at each n), ``--note TEXT`` adds a paragraph to it,
and ``--ref-cache DIR`` reuses the reference runs across invocations.
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import json
import logging
import math
import sys
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rodlab.bench_adapters import peers as P  # noqa: E402
from rodlab.bench_adapters.cpu_budget import rearm_cpu_limit, report_progress, run_with_cpu_limit  # noqa: E402
from rodlab.bench_adapters.report import command_line, machine, md_table  # noqa: E402

DOC = ROOT / "docs" / "benchmarks-dynamics.md"
TOL = 0.01          # of L
T_END = 2.0         # [s]
SAMPLE = 0.01       # [s] between tip samples
DAMPING = 0.5       # [1/s]
SHAKE_A, SHAKE_F = 0.02, 3.0  # [m], [Hz]
REF_DT = {50: 2.5e-4, 200: 1.25e-4, 1000: 6.25e-5}  # galpha's reference step [s]
LADDER_TOP = 0.04   # [s] implicit / position-based ladders start here
SQ2 = 2 ** 0.5
MOTION_SAMPLE = 0.01  # [s] MuJoCo's clamp Motion samples (linear between: <= 1e-4 m off the sine); the adapter
                      # evaluates the Motion in Python every step, at a cost growing with the number of samples
REF_EXTRA = 0.05    # [s] the reference runs this much past T_END (a run's last step may end there)
DER_CHECK_STEPS = 2_000_000  # explicit DER's check of the reference runs at most this many steps (dt / 4): at
                             # n = 1000 its stable step (~2.6e-7 s) would need 3e7 steps for the whole 2 s, so it
                             # checks the first DER_CHECK_STEPS * dt / 4 seconds (the window is in the table)
SCENES = ("released", "shaken")
FIRST_CALL_STEPS = 200  # steps of a run's first advance call (the rest go by SAMPLE)


def params(n: int) -> dict:
    return dict(n=n, length=1.0, radius=0.01, E=1e8, G=1e8 / 3, rho=1000.0, g=9.81, damping=DAMPING)


def shake_y(t: float) -> float:
    """Clamp displacement [m] along y at time ``t`` [s] (scene ``shaken``)."""
    return SHAKE_A * (1.0 - math.cos(2.0 * math.pi * SHAKE_F * t))


def shake_motion(t: float):
    """The clamp's (displacement [m], velocity [m/s]), each (3,), at time ``t`` [s] (scene ``shaken``),
    as the peers' drivers take it (``clamp_motion``)."""
    w = 2.0 * math.pi * SHAKE_F
    return np.array([0.0, shake_y(t), 0.0]), np.array([0.0, SHAKE_A * w * math.sin(w * t), 0.0])


@dataclass
class Run:
    ok: bool
    times: np.ndarray           # (k,) [s]
    tips: np.ndarray            # (k, 3) [m]
    cpu_s: float                # CPU seconds of stepping, whole run (a failed run: projected from its steps)
    dt: float
    message: str = ""
    per_step: float = math.nan  # CPU seconds per step (budget projections)
    extra: dict = field(default_factory=dict)
    over_budget: bool = False   # stopped once its CPU time passed the per-run budget (message: "stopped ...")


# ------------------------------------------------------------------------------------ rodlab
def rodlab_world(method: str, n: int, scene: str):
    """The cantilever world of ``method``'s layout (rodlab.scenes.cantilever_world); ``shaken``:
    the clamp driven by :func:`shake_y`."""
    from rodlab.scenes.cantilever_world import cantilever_points, cantilever_world
    from rodlab.world import WorldBuilder

    p = params(n)
    if scene == "released":
        return cantilever_world(p, method)
    base = cantilever_world(p, method)  # same layout and rest frame, then the moving clamp
    pts = cantilever_points(p, method)
    b = WorldBuilder(gravity=(0.0, 0.0, -p["g"]), damping=p["damping"])
    rest_d1 = None if method == "der" else base.rods[0].rest_d1
    r = b.add_rod(pts, E=p["E"], G=p["G"], rho=p["rho"], radius=p["radius"], rest_d1=rest_d1)
    eye = np.eye(3)
    b.clamp(r, "start", motion=lambda t: (eye, np.array([0.0, shake_y(t), 0.0])))
    return b.build()


def run_rodlab(method: str, options: dict, n: int, scene: str, dt: float, t_end: float = T_END) -> Run:
    from rodlab.solvers import make_simulator

    world = rodlab_world(method, n, scene)
    try:
        sim = make_simulator(world, method, dt=dt, **options)
        state = sim.initial_state()
        sim.advance(state.copy(), 2)  # compile / load caches outside the timing (changes nothing)
    except Exception as exc:  # noqa: BLE001 - a refused or failed setup is a failed run
        return Run(False, np.zeros(0), np.zeros((0, 3)), math.nan, dt, f"{type(exc).__name__}: {exc}"[:160])
    nsteps = int(math.ceil(t_end / dt - 1e-9))
    per = max(1, int(round(SAMPLE / dt)))
    times, tips, done, ok, msg, stopped = [], [], 0, True, "", False
    c0 = time.process_time()
    try:
        while done < nsteps:
            k = min(per, nsteps - done)
            if done == 0 and k > FIRST_CALL_STEPS:  # a short first call: a run that fails early still has a
                sim.advance(state, FIRST_CALL_STEPS)  # measured cost per step for the ladder's budget projection
                done, k = FIRST_CALL_STEPS, k - FIRST_CALL_STEPS
            sim.advance(state, k)
            done += k
            x = state.vertex_x[-1]
            if not np.all(np.isfinite(state.vertex_x)) or np.abs(state.vertex_x).max() > 10.0:
                ok, msg = False, f"exploded at t = {state.t:.3g} s"
                break
            times.append(state.t)
            tips.append(x.copy())
            _over_budget(state.t)
    except OverBudget as exc:
        ok, msg, stopped = False, str(exc), True
    except Exception as exc:  # noqa: BLE001 - SimulationError and the like: unstable at this dt
        ok, msg = False, f"{type(exc).__name__}: {exc}"[:160]
        if math.isfinite(state.t):  # a failed advance keeps its last good state: count the steps it did take
            done = max(done, int(round(state.t / dt)))
    cpu = time.process_time() - c0
    # a run that failed in its first (short) call: that call's steps bound the cost per step from above
    steps_timed = done if done else min(FIRST_CALL_STEPS, nsteps)
    return Run(ok, np.array(times), np.array(tips).reshape(-1, 3), cpu * nsteps / steps_timed, dt, msg,
               per_step=cpu / steps_timed, over_budget=stopped)


def _rodlab_maker(method: str, **options):
    def make(n: int, scene: str):
        from rodlab.solvers import make_simulator

        dt0 = float(make_simulator(rodlab_world(method, n, scene), method, **options).dt)
        return (lambda dt: run_rodlab(method, options, n, scene, dt)), dt0, None if method != "der" else 3
    return make


# ------------------------------------------------------------------------------------ peers
def _peer_scene(n: int) -> P.Scene:
    return P.Scene(n=n, t_end=T_END, damping=DAMPING)


class OverBudget(Exception):
    """A run stopped once its CPU time passed the per-run budget (``_RUN_LIMIT``); ``t`` [s] reached."""

    def __init__(self, t: float):
        super().__init__(f"stopped at t = {t:.3g} s: CPU over the budget")
        self.t = t


_RUN_LIMIT = {"cpu_end": math.inf, "budget": math.inf}  # process CPU time [s] at which the current run stops, and
                                                         # the per-run budget [s] (both set by measure)
CHILD_GRACE_S = 5.0  # CPU seconds past the budget before the kernel kills a child that did not stop at SIGXCPU
WALL_PER_CPU = 20.0  # a peer's child process is killed after this many times the budget in wall time, plus a
                     # minute (a hang that uses no CPU; on 2 shared cores a CPU second can take ~5 wall seconds)


def _over_budget(t: float) -> None:
    if time.process_time() > _RUN_LIMIT["cpu_end"]:
        raise OverBudget(t)


def _collector():
    times, tips = [], []

    def probe(t, tip):  # (x, z) from a fixed-clamp run, (x, y, z) from a moving-clamp one
        report_progress(t=float(t), cpu_s=time.process_time())
        _over_budget(float(t))
        times.append(float(t))
        tips.append((float(tip[0]), 0.0, float(tip[1])) if len(tip) == 2 else tuple(float(v) for v in tip))
    return times, tips, probe


def _peer_run(call, dt: float) -> Run:
    times, tips, probe = _collector()
    c0 = time.process_time()
    try:
        r = call(probe)
    except P.PeerUnavailable:
        raise
    except OverBudget as exc:
        cpu = time.process_time() - c0
        steps = max(exc.t / dt, 1.0)
        return Run(False, np.array(times), np.array(tips).reshape(-1, 3), cpu * T_END / max(exc.t, dt), dt,
                   str(exc), per_step=cpu / steps, over_budget=True)
    except Exception as exc:  # noqa: BLE001
        return Run(False, np.zeros(0), np.zeros((0, 3)), math.nan, dt, f"{type(exc).__name__}: {exc}"[:160])
    return Run(bool(r.ok), np.array(times), np.array(tips).reshape(-1, 3), float(r.cpu_s), dt, r.message,
               per_step=float(r.cpu_s) / max(int(r.steps), 1))


def in_child(run, setup_s: float = 0.0):
    """A peer's ``run(dt) -> Run``, made to run in a forked child process whose CPU time the kernel caps
    at the per-run budget (rodlab.bench_adapters.cpu_budget): any peer stops there, even inside one long
    call that the budget checks between samples (:func:`_over_budget`) never reach. A stopped child's
    run is over budget, its cost projected from the progress it reported (:func:`budget_stopped_run`).
    ``setup_s``: CPU seconds allowed on top of the budget for an untimed setup after which the run
    re-arms the limit to the budget (rearm_cpu_limit; MuJoCo's cost probe)."""
    def limited(dt: float) -> Run:
        budget = _RUN_LIMIT["budget"]

        def trial():
            _RUN_LIMIT["cpu_end"] = time.process_time() + budget  # the child's own clock
            return run(dt)
        out = run_with_cpu_limit(trial, budget + setup_s, wall_limit_s=WALL_PER_CPU * (budget + setup_s) + 60.0,
                                 grace_s=CHILD_GRACE_S)
        if out.status == "done":
            return out.value
        if out.status in ("cpu_limit", "wall_limit"):
            return budget_stopped_run(dt, out)
        return Run(False, np.zeros(0), np.zeros((0, 3)), math.nan, dt, f"child process {out.status}: {out.message}"[:160])
    return limited


def budget_stopped_run(dt: float, out) -> Run:
    """The Run of a child stopped at the CPU (or wall) limit: its cost of the whole run projected from
    the simulated time it reported reaching (CPU then x T_END / t), or else from a cost per step it
    measured (x the run's steps); NaN when it reported neither."""
    t, cpu_t, per_step = out.progress["t"], out.progress["cpu_s"], out.progress["per_step_s"]
    why = "CPU over the budget" if out.status == "cpu_limit" else f"wall-clock limit ({out.message})"
    if t > 0:
        return Run(False, np.zeros(0), np.zeros((0, 3)), cpu_t * T_END / t, dt, f"stopped at t = {t:.3g} s: {why}",
                   per_step=cpu_t / max(t / dt, 1.0), over_budget=True)
    steps = math.ceil(T_END / dt - 1e-9)
    timed = out.cpu_s - cpu_t if math.isfinite(cpu_t) else out.cpu_s  # CPU since the last report (the probe's end)
    where = f"after {timed:.0f} s CPU{' of its timed run' if math.isfinite(cpu_t) else ''}, its progress unreported"
    if per_step > 0:
        where += f"; projected from its measured {per_step:.3g} s CPU per step x {steps} steps"
    return Run(False, np.zeros(0), np.zeros((0, 3)), per_step * steps if per_step > 0 else math.nan, dt,
               f"stopped {where}: {why}", per_step=per_step, over_budget=True)


def _clamp_motion(scene: str):
    """The peers' ``clamp_motion`` for ``scene`` (None: the fixed clamp)."""
    return shake_motion if scene == "shaken" else None


def _pyelastica(n: int, scene: str):
    import elastica  # noqa: F401  (ImportError when missing)
    from rodlab.der.stepper import suggested_time_step
    from rodlab.scenes.cantilever_world import cantilever_rod

    dt0 = suggested_time_step(cantilever_rod(params(n)))
    sc, cm = _peer_scene(n), _clamp_motion(scene)
    return (lambda dt: _peer_run(lambda pr: P.run_pyelastica(sc, dt, check_every=max(1, round(SAMPLE / dt)), probe=pr,
                                                             clamp_motion=cm), dt)), dt0, 3


def _pypbd(n: int, scene: str):
    import pypbd  # noqa: F401

    sc, cm = _peer_scene(n), _clamp_motion(scene)
    return (lambda dt: _peer_run(lambda pr: P.run_pypbd(sc, dt, check_every=max(1, round(SAMPLE / dt)), probe=pr, clamp_motion=cm),
                                 dt)), 0.005, None


def _dismech(n: int, scene: str):
    P.import_dismech_newton()
    sc, cm = _peer_scene(n), _clamp_motion(scene)
    h = sc.length / (n - 1.5)
    dt0 = min(0.05, 1000.0 * h * h)  # bench_peers' dt0 (line search stalls above a step ~ h^2)
    return (lambda dt: _peer_run(lambda pr: P.run_dismech_newton(sc, dt, probe=pr, probe_every=max(1, round(SAMPLE / dt)),
                                                                 clamp_motion=cm), dt)), dt0, None


def _mujoco(n: int, scene: str):
    """MuJoCo's cable through cosseratbench's MuJoCoSolver: the adapter's scenario of bench_peers
    (P.cantilever_scenario), its mass-proportional damping force set to DAMPING (the adapter applies
    ``2 * slowest_frequency()`` when ``quasi_static``: a scenario subclass returns DAMPING / 2), and
    for ``shaken`` the clamp's ``Motion`` sampled every MOTION_SAMPLE. Its step comes from
    ``time_step_scale`` times half its stability estimate, rounded to divide the frame interval."""
    from dataclasses import dataclass as _dc

    from cosseratbench import Diverged
    from cosseratbench.scenario import Motion, Scenario
    from cosseratbench.solvers.mujoco import MuJoCoSolver

    @_dc(frozen=True)
    class _Damped(Scenario):
        damping_rate: float = 0.0

        def slowest_frequency(self) -> float:
            return 0.5 * self.damping_rate

    sc = _peer_scene(n)
    base = P.cantilever_scenario(sc)
    rod = base.rods[0]
    if scene == "shaken":
        ts = np.arange(0.0, T_END + 0.5 * MOTION_SAMPLE, MOTION_SAMPLE)
        rod = replace(rod, start_motion=Motion(tuple(ts), tuple((0.0, shake_y(t), 0.0) for t in ts), tuple((0.0, 0.0, 0.0) for _ in ts)))
    scen = _Damped(rods=(rod,), duration=T_END, gravity=base.gravity, self_contact=False, quasi_static=True, damping_rate=DAMPING)
    frames = int(round(T_END / SAMPLE)) + 1
    dt0 = float(MuJoCoSolver().settings(scen, n_elements=n - 1, n_frames=frames)["time_step"])

    def run(dt):
        scale = dt / dt0
        solver = MuJoCoSolver(time_step_scale=scale)
        real_dt = float(solver.settings(scen, n_elements=n - 1, n_frames=frames)["time_step"])
        try:
            _mujoco_cost_probe(solver, scen, n - 1, real_dt)  # also the warm-up
            rearm_cpu_limit(_RUN_LIMIT["budget"])  # the timed run gets the budget (its model build included)
            _RUN_LIMIT["cpu_end"] = time.process_time() + _RUN_LIMIT["budget"]
            c0 = time.process_time()
            traj = solver.run(scen, n_elements=n - 1, n_frames=frames)
            cpu = time.process_time() - c0
        except (Diverged, FloatingPointError) as exc:
            return Run(False, np.zeros(0), np.zeros((0, 3)), math.nan, real_dt, f"diverged: {exc}"[:120])
        tips = traj.positions[0][1:, -1, :]
        ok = bool(np.all(np.isfinite(tips)) and np.abs(tips).max() < 10.0)
        return Run(ok, np.asarray(traj.times[1:]), tips, cpu, real_dt, "" if ok else "exploded", per_step=cpu * real_dt / T_END)
    return run, dt0, 8  # implicitfast: stable above its adapter's step; a step never exceeds the frame interval


MUJOCO_PROBE_STEPS = (2, 8)  # the two short runs whose CPU difference gives MuJoCo's cost per step
MUJOCO_PROBE_ALLOWANCE = 300.0  # CPU seconds [s] for that probe beyond the budget: at n = 1000 building the model
                                # and one step take ~55 s (measured), each probe run builds it once


def _mujoco_cost_probe(solver, scen, n_elements: int, dt: float) -> float:
    """MuJoCo's CPU cost per step [s] at step ~``dt``: two short runs of the scenario (MUJOCO_PROBE_STEPS
    steps, one frame each), their CPU difference over their step difference (model building cancels);
    reported as the run's progress (the adapter's one blocking ``run`` reports nothing until it ends, so
    a run stopped at the budget is projected from this). The runs warm the library up too."""
    cpus, steps = [], []
    for k in MUJOCO_PROBE_STEPS:
        short = replace(scen, duration=min(T_END, k * dt))
        steps.append(round(short.duration / float(solver.settings(short, n_elements=n_elements, n_frames=2)["time_step"])))
        c0 = time.process_time()
        solver.run(short, n_elements=n_elements, n_frames=2)
        cpus.append(time.process_time() - c0)
    per_step = max(cpus[1] - cpus[0], 0.0) / max(steps[1] - steps[0], 1)
    report_progress(per_step_s=per_step, cpu_s=time.process_time())
    return per_step


def _isolated(make, setup_s: float = 0.0):
    """A peer's maker whose runs go to a child process under the CPU budget (:func:`in_child`)."""
    def make_isolated(n: int, scene: str):
        run, dt0, top = make(n, scene)
        return in_child(run, setup_s), dt0, top
    return make_isolated


SIMULATORS = {
    "rodlab der (fast projection)": _rodlab_maker("der", projection="fast"),
    "rodlab der (symplectic)": _rodlab_maker("der", projection="symplectic"),
    "rodlab der-implicit, backward-euler": _rodlab_maker("der-implicit", integrator="backward-euler"),
    "rodlab der-implicit, bdf2": _rodlab_maker("der-implicit", integrator="bdf2"),
    "rodlab der-implicit, bdf2, 3 Newton iterations": _rodlab_maker("der-implicit", integrator="bdf2", newton_iters=3),
    "rodlab compact, backward-euler": _rodlab_maker("compact", integrator="backward-euler"),
    "rodlab compact, bdf2": _rodlab_maker("compact", integrator="bdf2"),
    "rodlab galpha": _rodlab_maker("galpha"),
    "PyElastica": _isolated(_pyelastica),
    "pypbd (direct stiff rods)": _isolated(_pypbd),
    "MuJoCo cable": _isolated(_mujoco, setup_s=MUJOCO_PROBE_ALLOWANCE),
    "dismech-newton (CPU)": _isolated(_dismech),
}


# ------------------------------------------------------------------------------------ reference
def reference(n: int, scene: str, log, cache: str | None = None) -> dict:
    """galpha at REF_DT[n] (the reference), galpha at 2 REF_DT[n], explicit DER at a quarter and half
    its suggested step; returns the reference's spline and the differences / L. ``cache``: a folder
    where the reference's samples and differences are kept (reused when present)."""
    from scipy.interpolate import CubicSpline

    dt_g = REF_DT.get(n, 2.5e-4)
    path = Path(cache) / f"dynamics-ref-{scene}-{n}.npz" if cache else None
    if path is not None and path.exists():
        z = np.load(path)
        out = {k: float(z[k]) for k in ("dt_galpha", "dt_der", "galpha_self", "der_vs_galpha", "der_self", "cpu")}
        out["der_window"] = float(z["der_window"]) if "der_window" in z else T_END
        out["spline"] = CubicSpline(z["times"], z["tips"], axis=0)
        out["load"] = os.getloadavg()[0]
        log(f"  reference {scene} n={n}: from {path}")
        return out
    g1 = run_rodlab("galpha", {}, n, scene, dt_g, T_END + REF_EXTRA)
    g2 = run_rodlab("galpha", {}, n, scene, 2 * dt_g)
    from rodlab.solvers import make_simulator

    dt_d = float(make_simulator(rodlab_world("der", n, scene), "der").dt)
    der_window = min(T_END, DER_CHECK_STEPS * dt_d / 4)
    d4 = run_rodlab("der", {"projection": "fast"}, n, scene, dt_d / 4, der_window)
    d2 = run_rodlab("der", {"projection": "fast"}, n, scene, dt_d / 2, der_window)
    for name, r in (("galpha", g1), ("galpha x2", g2), ("der /4", d4), ("der /2", d2)):
        if not r.ok:
            raise RuntimeError(f"reference run {name} failed at n = {n}, {scene}: {r.message}")
    t0 = np.concatenate([[0.0], g1.times])
    tip0 = np.vstack([[1.0, 0.0, 0.0], g1.tips])
    spline = CubicSpline(t0, tip0, axis=0)

    def diff(r):
        return float(np.linalg.norm(r.tips - spline(r.times), axis=1).max())
    out = dict(spline=spline, dt_galpha=dt_g, dt_der=dt_d / 4, der_window=der_window, galpha_self=diff(g2), der_vs_galpha=diff(d4),
               der_self=float(np.linalg.norm(d2.tips - d4.tips, axis=1).max()) if d2.tips.shape == d4.tips.shape else math.nan,
               cpu=g1.cpu_s + g2.cpu_s + d4.cpu_s + d2.cpu_s)
    log(f"  reference {scene} n={n}: galpha dt={dt_g:.3g} (vs 2dt {out['galpha_self']:.2e} L), der dt={dt_d / 4:.3g} "
        f"(vs 2dt {out['der_self']:.2e} L), der - galpha {out['der_vs_galpha']:.2e} L over the first {der_window:.3g} s")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, times=t0, tips=tip0, **{k: v for k, v in out.items() if k != "spline"})
    out["load"] = os.getloadavg()[0]
    return out


class LazyReference:
    """The reference of one (scene, n), computed (:func:`reference`) on its first use: a row whose every
    run failed or stopped at the budget (MuJoCo at n = 1000) never needs it, and at n = 1000 it costs
    minutes of CPU. ``computed``: its dict, or None while not computed."""

    def __init__(self, compute):
        self._compute, self.computed = compute, None

    def __getitem__(self, key):
        if self.computed is None:
            self.computed = self._compute()
        return self.computed[key]


def tip_error(run: Run, ref) -> float:
    if not run.ok or run.times.size == 0:
        return math.inf
    if run.times[-1] < T_END - SAMPLE - run.dt or run.times[-1] > T_END + REF_EXTRA:  # a run that stopped early
        return math.inf
    return float(np.linalg.norm(run.tips - ref["spline"](run.times), axis=1).max())


def measure(name: str, make, n: int, scene: str, ref: dict, budget: float, log) -> dict:
    try:
        run, dt0, top = make(n, scene)  # top: the ladder's first k (None: start at LADDER_TOP)
    except P.PeerUnavailable as exc:
        return dict(status=f"not run: {exc}")
    except ImportError as exc:
        return dict(status=f"not installed ({exc})"[:120])
    except Exception as exc:  # noqa: BLE001
        return dict(status=f"not run: {type(exc).__name__}: {exc}"[:160])
    if top is None:
        top = int(math.floor(math.log(LADDER_TOP / dt0) / math.log(SQ2) + 1e-9))
    ks = range(top, top - 40, -1)
    tried, per_step = [], math.nan
    for k in ks:
        dt = dt0 * SQ2**k
        projected = per_step * math.ceil(T_END / dt)
        if math.isfinite(projected) and projected > budget:
            return dict(status="skipped: budget", why=f"next run at dt {dt:.3g} s projected {projected:.0f} s CPU > "
                        f"{budget:.0f} s; " + "; ".join(f"{d:.3g} s: {w}" for d, w in tried[-2:]))
        _RUN_LIMIT["cpu_end"], _RUN_LIMIT["budget"] = time.process_time() + budget, budget
        try:
            r = run(dt)
        finally:
            _RUN_LIMIT["cpu_end"], _RUN_LIMIT["budget"] = math.inf, math.inf
        err = tip_error(r, ref) / 1.0
        log(f"    dt={r.dt:.3g}: {'ok' if r.ok else 'failed'} err/L={err:.2e} cpu={r.cpu_s:.3g} s {r.message}")
        if r.over_budget:
            projected = f"projected {r.cpu_s:.0f} s" if math.isfinite(r.cpu_s) else "projection unknown"
            return dict(status="skipped: budget", why="; ".join([f"the run at dt {r.dt:.3g} s passed {budget:.0f} s CPU "
                        f"{r.message.removeprefix('stopped ')} ({projected})"] + [f"{d:.3g} s: {w}" for d, w in tried[-2:]]))
        if r.ok and err <= TOL:
            return dict(status="ok", dt=r.dt, rate=r.cpu_s / T_END, err=err,
                        why=f"next larger dt {tried[-1][0]:.3g} s: {tried[-1][1]}" if tried else "largest dt tried")
        tried.append((r.dt, f"err/L {err:.1e}" if r.ok and math.isfinite(err) else f"failed ({r.message[:60]})"))
        if math.isfinite(r.per_step) and (r.ok or not math.isfinite(per_step)):
            per_step = r.per_step
    return dict(status="no dt met the accuracy", why="; ".join(f"{d:.3g} s: {w}" for d, w in tried[-3:]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 50 only, 20 s budget per run")
    ap.add_argument("--sizes", default="", help="comma-separated n (default 50,200,1000; --quick: 50)")
    ap.add_argument("--scenes", default=",".join(SCENES))
    ap.add_argument("--only", nargs="*", help="simulators to run (names as in the table)")
    ap.add_argument("--budget", type=float, default=None, help="CPU seconds allowed for one run")
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--json", help="save the rows to this file as they are measured (for --merge)")
    ap.add_argument("--merge", nargs="+", help="write the page from these saved runs (no measuring)")
    ap.add_argument("--note", action="append", default=[], help="a paragraph for the page (with --merge or a full run)")
    ap.add_argument("--ref-cache", help="folder to keep / reuse the reference runs in")
    args = ap.parse_args(argv)
    if args.merge:
        results, refs, runs = load_runs(args.merge)
        sizes = sorted({n for (_, n, _) in results})
        scenes = [s for s in SCENES if any(k[0] == s for k in results)]
        text = report(results, refs, sizes, scenes, runs, args.note)
        print(text)
        if not args.no_doc:
            DOC.write_text(text)
            print(f"wrote {DOC}")
        return 0
    logging.getLogger("rodlab").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([50] if args.quick else [50, 200, 1000])
    scenes = [s for s in args.scenes.split(",") if s]
    budget = args.budget or (20.0 if args.quick else 60.0)
    log = lambda s: print(s, flush=True)  # noqa: E731
    t_all = time.perf_counter()
    results, refs = {}, {}
    for scene in scenes:
        for n in sizes:
            log(f"{scene}, n = {n}")
            ref = LazyReference(lambda n=n, scene=scene: reference(n, scene, log, args.ref_cache))
            for name, make in SIMULATORS.items():
                if args.only and name not in args.only:
                    continue
                log(f"  {name}:")
                res = measure(name, make, n, scene, ref, budget, log)
                res["load"] = os.getloadavg()[0]
                results[(scene, n, name)] = res
                if ref.computed is not None:
                    refs[(scene, n)] = ref.computed
                log(f"  -> {res}")
                if args.json:
                    save_run(args.json, results, refs, budget, time.perf_counter() - t_all)
    total = time.perf_counter() - t_all
    runs = [dict(command=command_line(), budget=budget, total_s=total, machine=machine())]
    text = report(results, refs, sizes, scenes, runs, args.note)
    print(text)
    if not (args.no_doc or args.only):
        DOC.write_text(text)
        log(f"wrote {DOC}")
    return 0


def save_run(path: str, results: dict, refs: dict, budget: float, total: float) -> None:
    """The rows and references measured so far, as JSON (read back by :func:`load_runs`)."""
    data = dict(command=command_line(), machine=machine(), budget=budget, total_s=total,
                results=[dict(scene=s, n=n, name=nm, **r) for (s, n, nm), r in results.items()],
                refs=[dict(scene=s, n=n, **{k: v for k, v in r.items() if k != "spline"}) for (s, n), r in refs.items()])
    Path(path).write_text(json.dumps(data, indent=1))


def load_runs(paths) -> tuple[dict, dict, list]:
    """Rows and references of saved runs (a later file's row replaces an earlier one's), ordered as
    SIMULATORS; and each run's command, budget and time."""
    results, refs, runs = {}, {}, []
    order = {nm: i for i, nm in enumerate(SIMULATORS)}
    for p in paths:
        d = json.loads(Path(p).read_text())
        runs.append(dict(command=d["command"], budget=d["budget"], total_s=d["total_s"], machine=d.get("machine", "")))
        for r in d["refs"]:
            refs[(r.pop("scene"), r.pop("n"))] = r
        for r in d["results"]:
            results[(r.pop("scene"), r.pop("n"), r.pop("name"))] = r
    results = dict(sorted(results.items(), key=lambda kv: (SCENES.index(kv[0][0]), kv[0][1], order.get(kv[0][2], 99))))
    refs = dict(sorted(refs.items(), key=lambda kv: (SCENES.index(kv[0][0]), kv[0][1])))
    return results, refs, runs


def report(results, refs, sizes, scenes, runs, notes=()) -> str:
    import importlib.metadata as md

    versions = []
    for pkg in ("pyelastica", "pyPBD", "mujoco", "cosseratbench", "dismech-newton"):
        try:
            versions.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            versions.append(f"{pkg} not installed")
    out = ["# Dynamics benchmark: reproducing a rod's motion to 1 % of L (`bench/bench_dynamics.py`)", "",
           "Produced by " + "; ".join(f"`{r['command']}` ({r['total_s']:.0f} s, budget {r['budget']:.0f} CPU s per run"
                                      + (f", on {r['machine']}" if r.get("machine") else "") + ")" for r in runs)
           + f"; page written on {machine()} with {', '.join(versions)}.", "",
           "Scenes (2 s, damping 0.5 /s, the rod of the peers table: L = 1 m, r = 1 cm, E = 1e8 Pa, G = E/3, "
           "rho = 1000 kg/m^3, g = 9.81 m/s^2): **released** = the straight horizontal cantilever released under "
           f"gravity; **shaken** = the clamp driven sideways, y(t) = {SHAKE_A:g} m (1 - cos(2 pi {SHAKE_F:g} Hz t)). "
           "Accuracy: max over the tip samples (every 10 ms) of |tip - tip_ref| / L <= 1 %. The dt ladder, timing, "
           "damping of each peer and the reference are described in the script's docstring. Columns: the largest "
           "accurate step of the ladder dt0 sqrt(2)^k, its CPU seconds per simulated second, the ratio to rodlab's "
           "best at that n, its error. A run whose projected CPU time exceeds the budget is skipped. The machine's "
           "1-min load average (2 cores) when each group of rows was measured is given under each scene: above ~2 "
           "the CPU times are inflated by other users (CPU time, not wall time, is measured, which limits but does "
           "not remove the effect).", ""]
    out += ["## Reference", "", md_table(["scene", "n", "galpha dt [s]", "galpha vs 2 dt [L]", "DER dt [s]", "DER vs 2 dt [L]",
                                           "DER - galpha [L]", "DER checked over [s]"],
                                          [[s, n, f"{r['dt_galpha']:.3g}", f"{r['galpha_self']:.1e}", f"{r['dt_der']:.3g}",
                                            f"{r['der_self']:.1e}", f"{r['der_vs_galpha']:.1e}", f"{r.get('der_window', T_END):.3g}"]
                                           for (s, n), r in refs.items()]), ""]
    if any(r.get("der_window", T_END) < T_END for r in refs.values()):
        out += [f"Where the DER check covers less than the run ({T_END:g} s), its stable step makes the whole run "
                f"longer than {DER_CHECK_STEPS:.0e} steps: it checks the reference over the first part of the motion "
                "only (galpha's own convergence, column 4, covers the whole run).", ""]
    for scene in scenes:
        out += [f"## {scene}", ""]
        rows = []
        for n in sizes:
            best = min(((r["rate"], nm) for (s, m, nm), r in results.items() if s == scene and m == n and nm.startswith("rodlab")
                        and r.get("status") == "ok"), default=None)
            for (s, m, nm), r in results.items():
                if s != scene or m != n:
                    continue
                rate = r.get("rate")
                rows.append([n, nm, r["status"], f"{r['dt']:.3g}" if "dt" in r and r["status"] == "ok" else "",
                             f"{rate:.3g}" if rate is not None else "", f"{rate / best[0]:.3g}" if rate is not None and best else "",
                             f"{r['err']:.1e}" if "err" in r else "", r.get("why", "").rstrip("; ")])
            loads = [r["load"] for (s, m, _), r in results.items() if s == scene and m == n and "load" in r]
            if loads:
                out += [f"n = {n}: machine load (1-min average) while these rows were measured: {min(loads):.1f} to "
                        f"{max(loads):.1f}" + (" (loaded: CPU times are inflated)." if max(loads) > 2.5 else "."), ""]
            missing = [nm for nm in SIMULATORS if (scene, n, nm) not in results]
            if missing:
                out += [f"n = {n}: not measured in these runs: {', '.join(missing)}.", ""]
            if best:
                peers = [(r["rate"], nm) for (s, m, nm), r in results.items() if s == scene and m == n and not nm.startswith("rodlab")
                         and r.get("status") == "ok"]
                line = f"n = {n}: rodlab's best is {best[1]} at {best[0]:.3g} CPU s per simulated s"
                if peers:
                    fp = min(peers)
                    line += f"; fastest accurate peer {fp[1]} at {fp[0]:.3g} ({fp[0] / best[0]:.3g}x rodlab's best)"
                    if n == 200:
                        line += f"; target >= 10x at n = 200 {'met' if fp[0] / best[0] >= 10 else 'NOT met'}"
                out += [line + ".", ""]
        out += ["", md_table(["n", "simulator", "status", "dt [s]", "CPU s per simulated s", "x rodlab's best", "tip error / L", "notes"],
                             rows), ""]
        if scene == "shaken":
            out += ["MuJoCo's time here includes cosseratbench's adapter evaluating the clamp's `Motion` in Python at every "
                    "step (compare its released row at the same dt): an adapter cost, not MuJoCo's. Likewise PyElastica's "
                    "moving clamp is a Python constraint class called three times per step, and pypbd's clamp is moved "
                    "from Python before each step: the drivers' costs, included in their rows.", ""]
    if notes:
        out += ["## Notes", ""] + [f"{t}\n" for t in notes]
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
