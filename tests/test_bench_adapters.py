"""The cosseratbench adapter: interface and honest capabilities (no peers needed)."""
import numpy as np
import pytest

cb = pytest.importorskip("cosseratbench")

from cosseratbench import Capability, Solver  # noqa: E402
from cosseratbench.scenario import EndCondition, Material, PointLoad, Rod, Scenario  # noqa: E402

from rodlab.bench_adapters.cosseratbench import SOLVERS, DERSolver  # noqa: E402

CONTACT = {Capability.ROD_CONTACT, Capability.ROD_FRICTION, Capability.CYLINDER_CONTACT, Capability.PLANE_CONTACT}


def test_every_method_has_a_solver_with_honest_capabilities():
    assert set(SOLVERS) == {"rodlab-der", "rodlab-der-implicit", "rodlab-compact", "rodlab-galpha"}
    for name, cls in SOLVERS.items():
        solver = cls()
        assert isinstance(solver, Solver) and solver.name == name
        if name not in ("rodlab-der", "rodlab-der-implicit", "rodlab-compact"):  # contact: cb_contact.py (tests/test_cb_contact.py)
            assert not (solver.capabilities & CONTACT), name
        assert Capability.SHEAR not in solver.capabilities, name
    for name in ("rodlab-der", "rodlab-compact", "rodlab-galpha"):  # inextensible methods
        assert Capability.STRETCH not in SOLVERS[name].capabilities
    with pytest.raises(ValueError, match="time_step_scale"):
        DERSolver(time_step_scale=0.0)


def _beam(force=1e-3, n_frames=3):
    rod = Rod(centerline=((0.0, 0.0, 0.0), (0.5, 0.0, 0.0)), radius=0.01,
              material=Material(1e7, 1e7 / 3, 1000.0), start=EndCondition.CLAMPED,
              loads=(PointLoad(force=(0.0, 0.0, -force)),))
    return Scenario(rods=(rod,), duration=0.01, quasi_static=True, self_contact=False)


def test_solver_returns_a_trajectory_in_the_suites_format():
    # der only: der-implicit's kernels take ~20 s to compile, over this test's time budget
    traj = DERSolver().run(_beam(), n_elements=6, n_frames=3)
    assert isinstance(traj, cb.Trajectory)
    assert np.allclose(traj.times, [0.0, 0.005, 0.01])
    x, d = traj.positions[0], traj.directors[0]
    assert x.shape == (3, 7, 3) and d.shape == (3, 6, 3)
    assert np.allclose(x[:, :2], x[0, :2])                     # clamped edge held
    assert x[-1, -1, 2] < 0.0                                  # the tip load bends it down
    assert np.allclose(np.linalg.norm(d, axis=2), 1.0)         # unit directors
    assert np.allclose(d[0], [[0.0, 0.0, 1.0]] * 6)            # d1 starts at the rod's normal
    tangents = np.diff(x, axis=1)
    assert np.abs(np.sum(d * tangents, axis=2)).max() < 1e-9   # perpendicular to the elements


def test_unsupported_features_raise_not_implemented():
    from cosseratbench.scenario import Cylinder

    scen = _beam()
    with_obstacle = Scenario(rods=scen.rods, duration=0.01, obstacles=(Cylinder((0, 0, -1), (0, 1, 0), 0.1, 1.0),))
    for name in ("rodlab-galpha",):  # no obstacle contact (der, der-implicit, compact: test_cb_*contact.py)
        cls = SOLVERS[name]
        with pytest.raises(NotImplementedError):
            cls().run(with_obstacle, n_elements=4, n_frames=2)


def test_der_implicit_drives_a_sliding_turning_clamp():
    """Both ends clamped, the end turned by 1 rad about the rod's axis while it slides along it
    under a tension F: the twist spreads uniformly (material angle linear along the rod) and the
    end slides out by the stretch of the unclamped length, F L' / (E A)."""
    from cosseratbench.scenario import Motion

    from rodlab.bench_adapters.cosseratbench import DERImplicitSolver

    E, r, L, F, turn = 1e7, 0.01, 0.5, 50.0, 1.0
    t = np.linspace(0.0, 0.5, 11)
    motion = Motion(times=tuple(t), displacement=tuple((0.0, 0.0, 0.0) for _ in t),
                    rotation=tuple((turn * min(1.0, tt / 0.5), 0.0, 0.0) for tt in t), slides_along=(1.0, 0.0, 0.0))
    rod = Rod(centerline=((0.0, 0.0, 0.0), (L, 0.0, 0.0)), radius=r, material=Material(E, E / 3, 1000.0),
              normal=(0.0, 0.0, 1.0), start=EndCondition.CLAMPED, end=EndCondition.CLAMPED, end_motion=motion,
              loads=(PointLoad(force=(F, 0.0, 0.0)),))
    scen = Scenario(rods=(rod,), duration=2.0, quasi_static=True, gravity=(0.0, 0.0, 0.0), self_contact=False)
    traj = DERImplicitSolver().run(scen, n_elements=10, n_frames=3)
    x, d = traj.positions[0][-1], traj.directors[0][-1]
    assert np.allclose(x[:, 1:], 0.0, atol=1e-9)                       # stays straight, on the axis
    slide = x[-1, 0] - L
    free_length = L * 9 / 10  # the root clamp holds its edge's two vertices: that edge does not stretch
    assert slide == pytest.approx(F * free_length / (E * np.pi * r**2), rel=1e-3)  # stretched by the tension
    angles = np.arctan2(-d[:, 1], d[:, 2])                               # d1 turned about +x from +z
    assert angles[-1] == pytest.approx(turn, abs=1e-9)                   # the clamp's frame is imposed
    mid = 0.5 * (angles[:-1] + angles[1:])
    assert np.allclose(np.diff(angles[1:-1]), np.diff(angles[1:-1]).mean(), rtol=1e-3)  # uniform twist
    assert angles[0] == pytest.approx(0.0, abs=1e-12) and 0.4 < mid[len(mid) // 2] < 0.6
