"""cosseratbench adapter for the compact method (rodlab.bench_adapters.cb_compact): the suite's
trajectory format, physics against closed forms and the suite's own references, end conditions
(clamp, pin, driven sliding clamp), point loads on both solver paths, unsupported features."""
import math

import numpy as np
import pytest

cb = pytest.importorskip("cosseratbench")

from cosseratbench.experiments.cantilever import cantilever as cantilever_experiment  # noqa: E402
from cosseratbench.experiments.catenary import catenary as catenary_experiment  # noqa: E402
from cosseratbench.experiments.pendulum import pendulum as pendulum_experiment  # noqa: E402
from cosseratbench.scenario import (Cylinder, End, EndCondition, Material, Motion, PointLoad, Rod,  # noqa: E402
                                    Scenario)

# the cosseratbench module first: it imports the per-method adapter modules at its end
from rodlab.bench_adapters.cosseratbench import SOLVERS  # noqa: E402, I001
from rodlab.bench_adapters.cb_compact import CompactSolver  # noqa: E402
from cosseratbench import Capability  # noqa: E402


def _beam(force=1e-3, n_frames=3, duration=0.01, start=EndCondition.CLAMPED, end=EndCondition.FREE,
          load_at=End.END, length=0.5, E=1e7):
    rod = Rod(centerline=((0.0, 0.0, 0.0), (length, 0.0, 0.0)), radius=0.01, material=Material(E, E / 3, 1000.0),
              start=start, end=end, loads=(PointLoad(force=(0.0, 0.0, -force), at=load_at),))
    return Scenario(rods=(rod,), duration=duration, quasi_static=True, self_contact=False)


def test_registered_with_honest_capabilities():
    assert SOLVERS["rodlab-compact"] is CompactSolver
    solver = CompactSolver()
    assert solver.name == "rodlab-compact" and isinstance(solver, cb.Solver)
    assert solver.capabilities == frozenset({Capability.ROD_CONTACT, Capability.CYLINDER_CONTACT,
                                             Capability.PLANE_CONTACT})  # inextensible, unshearable, no friction
    with pytest.raises(ValueError, match="time_step_scale"):
        CompactSolver(time_step_scale=-1.0)


def test_trajectory_format_and_clamp_held():
    traj = CompactSolver().run(_beam(), n_elements=6, n_frames=3)
    assert isinstance(traj, cb.Trajectory)
    assert np.allclose(traj.times, [0.0, 0.005, 0.01])
    x, d = traj.positions[0], traj.directors[0]
    assert x.shape == (3, 7, 3) and d.shape == (3, 6, 3)
    assert np.abs(x[:, :2] - x[0, :2]).max() < 1e-15                    # clamped element held
    assert np.allclose(x[0, :, 0], np.linspace(0.0, 0.5, 7)) and np.allclose(x[0, :, 1:], 0.0)
    assert x[-1, -1, 2] < -1e-9                                          # the tip load bends it down
    assert np.allclose(np.linalg.norm(d, axis=2), 1.0, atol=1e-12)       # unit directors
    assert np.allclose(d[0], [[0.0, 0.0, 1.0]] * 6, atol=1e-12)          # d1 starts at the rod's normal
    t = np.diff(x, axis=1)
    assert np.abs(np.sum(d * t, axis=2)).max() < 1e-12                   # perpendicular to the elements
    assert np.allclose(np.linalg.norm(t, axis=2), 0.5 / 6, rtol=0, atol=1e-14)  # inextensible
    assert np.allclose(d[:, 0], d[0, 0])                                 # clamped element's frame held


def test_cantilever_tip_deflection_against_euler_bernoulli():
    """The suite's cantilever (small tip load): the first element is held rigid, so the clamp
    acts half an element in, deflection F (L - l/2)^3 / (3 E I); the suite's error metric is
    then ~1.5/n (the other adapters and the peers give 0.0741 at n = 20)."""
    res = cb.run(cantilever_experiment, CompactSolver(), n_elements=20)
    assert res.outcome == "completed", res.failure
    assert res.metrics["tip_deflection_error"] == pytest.approx(0.0741, abs=5e-4)
    assert res.metrics["settling_residual"] < 1e-5
    scen = cantilever_experiment.scenario
    rod = scen.rods[0]
    EI = rod.material.youngs_modulus * rod.second_moment_of_area
    F = -scen.rods[0].loads[0].force[2]
    tip = res.trajectory.positions[0][-1, -1]
    l = rod.length / 20
    assert -tip[2] == pytest.approx(F * (rod.length - l / 2) ** 3 / (3 * EI), rel=2e-3)
    assert abs(tip[1]) < 1e-12


def test_compiled_multi_step_matches_the_stepper():
    """``_advance`` (many steps per compiled call) does what ``CompactSolver.step`` does, with the
    point load entering the inertial prediction (here: a velocity kick dt F / m before each step)."""
    scen = _beam(force=5e-3, duration=1.0)
    runner = CompactSolver()._build(scen.rods[0], 6, scen)
    ref = runner.state.copy()
    dt = 0.02
    assert runner.advance(7, dt) == ""
    v_end = 6
    for _ in range(7):
        ref.v[v_end] += dt * runner.accel[v_end]
        assert runner.solver.step(ref, dt).success
    assert runner.state.t == pytest.approx(ref.t)
    assert np.abs(runner.state.p - ref.p).max() < 1e-13
    assert np.abs(runner.state.v - ref.v).max() < 1e-10
    assert runner.steps == 7 and runner.newton >= 7


def test_point_load_on_the_constrained_path_matches_the_dirichlet_path():
    """The same beam clamped at its end and loaded at its start (active-set solver: FixedVertex
    + ClampFrame, load through the inertial prediction) mirrors the start-clamped one."""
    kw = dict(force=2e-3, n_frames=11, duration=4.0)
    a = CompactSolver().run(_beam(**kw), n_elements=8, n_frames=11).positions[0]
    b = CompactSolver().run(_beam(start=EndCondition.FREE, end=EndCondition.CLAMPED, load_at=End.START, **kw),
                            n_elements=8, n_frames=11).positions[0]
    assert np.allclose(b[:, -2:], b[0, -2:], atol=1e-10)  # clamped element held by the constraints
    mirrored = b[:, ::-1].copy()
    mirrored[..., 0] = 0.5 - mirrored[..., 0]
    assert a[-1, -1, 2] < -5e-4
    assert np.allclose(mirrored, a, atol=1e-6 * abs(a[-1, -1, 2]) + 1e-12)


def test_catenary_pins_hold_and_sag_matches_reference():
    """Both ends pinned (Dirichlet root + FixedVertex at the end). Inextensible, so the sag is
    short of the elastic catenary by its ~1% stretch (the DER adapter and MuJoCo: 1.2-1.4%)."""
    res = cb.run(catenary_experiment, CompactSolver(), n_elements=12)
    assert res.outcome == "completed", res.failure
    x = res.trajectory.positions[0]
    rod = catenary_experiment.scenario.rods[0]
    assert np.abs(x[:, 0] - np.asarray(rod.centerline[0])).max() < 1e-12
    assert np.abs(x[:, -1] - np.asarray(rod.centerline[-1])).max() < 1e-8
    assert 0.005 < res.metrics["sag_error"] < 0.02
    assert res.metrics["shape_error"] < 5e-3
    assert res.metrics["settling_residual"] < 1e-4


def test_pendulum_period_and_small_dissipation():
    """Dynamic, no damping: the suite's hanging-cable pendulum (reference period from its
    linear theory). Implicit Euler loses amplitude ~ w^2 dt T / 2: small at the default step,
    about 10x more at 10x the step (the adapter's step rule is about that loss)."""
    res = cb.run(pendulum_experiment, CompactSolver(time_step_scale=10.0), n_elements=10, n_frames=101)
    assert res.outcome == "completed", res.failure
    assert res.metrics["period_error"] < 5e-3
    assert -0.06 < res.metrics["amplitude_change"] < -0.005  # dissipative, as implicit Euler is
    x = res.trajectory.positions[0]
    assert np.abs(x[:, 0]).max() < 1e-12  # pinned


def test_driven_clamp_turns_and_slides_along_its_axis():
    """The twist experiment's end: clamped, turned about the rod's axis by a prescribed angle,
    free to slide along it under a tension load. The end node stays on the axis, the end
    element's frame follows the prescribed rotation, the start clamp holds."""
    angle = 1.5
    times = np.linspace(0.0, 0.2, 5)
    motion = Motion(times=tuple(times), displacement=tuple((0.0, 0.0, 0.0) for _ in times),
                    rotation=tuple((float(a), 0.0, 0.0) for a in angle * times / times[-1]), slides_along=(1.0, 0.0, 0.0))
    rod = Rod(centerline=((0.0, 0.3, 0.0), (0.5, 0.3, 0.0)), radius=0.01, material=Material(1e6, 1e6 / 3, 1000.0),
              start=EndCondition.CLAMPED, end=EndCondition.CLAMPED, end_motion=motion,
              loads=(PointLoad(force=(0.05, 0.0, 0.0)),))
    scen = Scenario(rods=(rod, rod), duration=0.3, quasi_static=True, self_contact=False)
    traj = CompactSolver().run(scen, n_elements=6, n_frames=7)
    assert len(traj.positions) == 2 and np.array_equal(traj.positions[0], traj.positions[1])
    x, d = traj.positions[0], traj.directors[0]
    assert np.abs(x[:, -1, 1:] - [0.3, 0.0]).max() < 1e-9      # end node on the slide axis
    assert np.allclose(x[:, :2], x[0, :2])                      # start clamp held
    for f, t in enumerate(traj.times):
        a = angle * min(t / 0.2, 1.0)
        expected = np.array([0.0, -math.sin(a), math.cos(a)])  # normal (0, 0, 1) turned about +x by a
        assert np.allclose(d[f, -1], expected, atol=1e-8), (t, d[f, -1])
    # twisted, not bent: the rod stays straight and the twist spreads along it
    assert np.abs(x[:, :, 1:] - [0.3, 0.0]).max() < 1e-6
    assert abs(d[-1, 2] @ np.array([0.0, 1.0, 0.0])) > 0.1


def test_driven_start_clamp_moves_and_turns_its_element():
    """A driven start clamp (not sliding) goes to the active-set path: its node follows
    node0 + displacement(t) and its element's frame R(t) q0, about the node, as the suite says."""
    times = (0.0, 0.1, 0.2)
    motion = Motion(times=times, displacement=((0.0, 0.0, 0.0), (0.0, 0.0, 0.01), (0.0, 0.01, 0.02)),
                    rotation=((0.0, 0.0, 0.0), (0.0, 0.0, 0.2), (0.0, 0.0, 0.5)))
    rod = Rod(centerline=((0.0, 0.0, 0.0), (0.4, 0.0, 0.0)), radius=0.01, material=Material(1e6, 1e6 / 3, 1000.0),
              start=EndCondition.CLAMPED, start_motion=motion)
    scen = Scenario(rods=(rod,), duration=0.25, gravity=(0.0, 0.0, -9.81), quasi_static=True, self_contact=False)
    traj = CompactSolver().run(scen, n_elements=4, n_frames=6)
    x, d = traj.positions[0], traj.directors[0]
    for f, t in enumerate(traj.times):
        disp, R = motion.pose(float(t))
        assert np.allclose(x[f, 0], disp, atol=1e-9), t
        assert np.allclose(x[f, 1], disp + R @ [0.1, 0.0, 0.0], atol=1e-8), t   # turned about the node
        assert np.allclose(d[f, 0], R @ [0.0, 0.0, 1.0], atol=1e-8), t
    assert x[-1, -1, 2] < 0.01  # the free part sags under gravity below the carried clamp


def test_unsupported_features_raise_not_implemented():
    scen = _beam()
    with_obstacle = Scenario(rods=scen.rods, duration=0.01,
                             obstacles=(Cylinder((0, 0, -1), (0, 1, 0), 0.1, 1.0, friction=0.3),))
    with pytest.raises(NotImplementedError, match="friction"):  # contact without friction (cb_contact.py)
        CompactSolver().run(with_obstacle, n_elements=4, n_frames=2)
    with pytest.raises(ValueError, match="n_elements"):
        CompactSolver().run(scen, n_elements=1, n_frames=2)
    with pytest.raises(ValueError, match="finite"):
        CompactSolver().run(_beam(force=math.nan), n_elements=4, n_frames=2)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_numerical_breakdown_raises_diverged():
    """An absurd load (1e200 N) overflows the step on both solver paths: Diverged with the time,
    never a silently frozen trajectory."""
    for kw in ({}, dict(start=EndCondition.FREE, end=EndCondition.CLAMPED, load_at=End.START)):
        with pytest.raises(cb.Diverged, match="rod 0: compact step failed") as info:
            CompactSolver().run(_beam(force=1e200, **kw), n_elements=4, n_frames=3)
        assert info.value.time == 0.0


def test_time_step_rule():
    solver = CompactSolver()
    scen = pendulum_experiment.scenario
    w = scen.slowest_frequency()
    dt, per_frame = solver.time_step(scen, 0.05)
    assert dt * per_frame == pytest.approx(0.05)
    assert dt <= 5e-3 / (w * w * scen.duration) * (1 + 1e-12) < dt * per_frame / (per_frame - 1)
    qs = cantilever_experiment.scenario
    dt_q, _ = CompactSolver(time_step_scale=0.5).time_step(qs, 10.0)
    assert dt_q <= 0.125 / qs.slowest_frequency() * (1 + 1e-12)
