"""cosseratbench adapter ``rodlab-galpha`` (rodlab.bench_adapters.cb_galpha) and the galpha
boundary conditions it needs (pinned root, pinned and sliding tips)."""
import math

import numpy as np
import pytest

cb = pytest.importorskip("cosseratbench")

from cosseratbench import registry  # noqa: E402
from cosseratbench.scenario import (EndCondition, Material, Motion, Plane, PointLoad, Rod,  # noqa: E402
                                    Scenario)

import rodlab.bench_adapters.cosseratbench as cbad  # noqa: E402  (import first: it imports cb_galpha)
from rodlab.bench_adapters.cb_galpha import GAlphaSolver, _RodSetup  # noqa: E402
from rodlab.galpha import Boundary, GAlphaOptions, GAlphaRod  # noqa: E402
from rodlab.galpha import GAlphaSolver as GAStepper  # noqa: E402
from rodlab.galpha.boundary import RootPin, TipLoad  # noqa: E402


def _cantilever(duration=10.0):
    ex = registry.load_experiment("cantilever")
    sc = ex.build(**ex.values())
    return ex, sc if duration == sc.duration else Scenario(rods=sc.rods, duration=duration, quasi_static=True,
                                                           self_contact=False)


def test_registered_and_honest():
    s = cbad.SOLVERS["rodlab-galpha"]()
    assert isinstance(s, GAlphaSolver) and s.name == "rodlab-galpha"
    assert s.capabilities == frozenset()  # inextensible, unshearable, no contact


def test_trajectory_format_and_clamp_held():
    ex, sc = _cantilever(duration=0.5)
    n, F = 6, 4
    tr = GAlphaSolver().run(sc, n_elements=n, n_frames=F)
    assert isinstance(tr, cb.Trajectory)
    assert np.allclose(tr.times, np.linspace(0.0, 0.5, F))
    x, d = tr.positions[0], tr.directors[0]
    assert x.shape == (F, n + 1, 3) and d.shape == (F, n, 3)
    assert np.all(np.isfinite(x)) and np.all(np.isfinite(d))
    assert np.allclose(np.linalg.norm(d, axis=2), 1.0, atol=1e-12)
    e = np.diff(x, axis=1)
    assert np.max(np.abs(np.sum(d * e, axis=2))) < 1e-12  # perpendicular to the elements
    assert np.allclose(x[:, 0], 0.0, atol=1e-14)  # the clamp holds the root node ...
    assert np.allclose(x[:, 1, 1:], 0.0, atol=1e-3 * 1.0 / n)  # ... and its direction (+x) to O(ds^2 kappa)
    assert np.allclose(d[0], [0.0, 0.0, 1.0], atol=1e-12)  # the suite's normal, untwisted
    assert x[-1, -1, 2] < 0.0  # the tip load pulls down
    # inextensible: segment arcs of length ds, chords shorter by O(kappa^2 ds^3)
    assert np.allclose(np.linalg.norm(e, axis=2), 1.0 / n, rtol=1e-6)


def test_cantilever_tip_deflection_matches_euler_bernoulli():
    """The suite's cantilever (small tip load, deflection 2 % of L): F L^3 / (3 EI) within 1 % at
    10 elements (no rigid first element: the discrete clamp is the continuous one)."""
    from cosseratbench.experiments.cantilever import reference_tip_deflection

    ex, sc = _cantilever()
    tr = GAlphaSolver().run(sc, n_elements=10, n_frames=ex.n_frames)
    ref = reference_tip_deflection(sc.rods[0])
    assert -tr.positions[0][-1, -1, 2] == pytest.approx(ref, rel=0.01)
    assert abs(tr.positions[0][-1, -1, 1]) < 1e-12
    speed = np.linalg.norm(tr.positions[0][-1] - tr.positions[0][-2], axis=1).max() / (tr.times[1] - tr.times[0])
    assert speed < 1e-4  # settled


def test_catenary_pins_stay_put_and_shape_is_close():
    ex = registry.load_experiment("catenary")
    sc = ex.build(**ex.values())
    tr = GAlphaSolver().run(sc, n_elements=12, n_frames=21)
    x = tr.positions[0]
    a, b = np.asarray(sc.rods[0].centerline[0]), np.asarray(sc.rods[0].centerline[-1])
    assert np.max(np.linalg.norm(x[:, 0] - a, axis=1)) < 1e-12  # pinned root: exact
    dev = np.linalg.norm(x[:, -1] - b, axis=1)  # pinned tip: velocity level + drift correction
    assert dev[-1] < 1e-6 and np.max(dev) < 2e-3  # wanders during the fall (O(dt^2) per step), comes back
    from cosseratbench.experiments.catenary import shape_error

    err = shape_error(sc, tr)
    assert err < 0.006  # inextensible floor 0.0033 (stretch not modelled), DER/mujoco give the same
    assert min(x[-1, :, 2]) < -0.2  # it hangs (a sign error in gravity would not)


def test_pendulum_keeps_period_and_amplitude():
    from cosseratbench.experiments.pendulum import amplitude_change, period_error

    ex = registry.load_experiment("pendulum")
    sc = ex.build(**ex.values())
    tr = GAlphaSolver().run(sc, n_elements=20, n_frames=ex.n_frames)
    assert np.allclose(tr.positions[0][:, 0], 0.0, atol=1e-14)  # the pin
    assert period_error(sc, tr) < 1e-3  # 3.0e-4 measured (1.9e-3 at 10 elements, 1.6e-4 at 50)
    assert abs(amplitude_change(sc, tr)) < 1e-3  # no damping added, the scheme's own is tiny


def test_rigid_pendulum_with_pinned_root_period():
    """A stiff bar pinned at its root swinging 0.05 rad: T = 2 pi sqrt(2 L / (3 g)) (physical
    pendulum; large-amplitude correction 1 + theta^2/16 = 1.00016). Measured -6.6e-5 with 20
    segments (-4.8e-3 with 5: the box scheme's spatial error)."""
    L, g, th = 0.5, 9.81, 0.05
    R0 = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    c, s = math.cos(math.pi + th), math.sin(math.pi + th)
    R0 = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]) @ R0  # d3 down, tilted by th about y
    model = GAlphaRod.from_material(21, L, radius=0.01, E=1e11, G=4e10, rho=1000.0, gravity=(0.0, 0.0, -g), root_R=R0)
    solver = GAStepper(model, Boundary(root=RootPin(), tip=TipLoad()), GAlphaOptions())
    state = solver.initial_state()
    T_ref = 2 * math.pi * math.sqrt(2 * L / (3 * g)) * (1 + th**2 / 16)
    dt = T_ref / 200
    ts, xs = [], []
    for _ in range(420):
        assert solver.step(state, dt).success
        ts.append(state.t)
        xs.append(state.r[-1, 0])
    xs = np.array(xs)
    up = [i for i in range(1, len(xs)) if xs[i - 1] < 0.0 <= xs[i]]
    tz = [ts[i - 1] + (ts[i] - ts[i - 1]) * (-xs[i - 1]) / (xs[i] - xs[i - 1]) for i in up]
    assert len(tz) == 2
    assert tz[1] - tz[0] == pytest.approx(T_ref, rel=5e-4)
    assert np.max(np.abs(state.r[0])) < 1e-14  # the pin
    # inextensible bar: stays straight, length L
    assert np.linalg.norm(state.r[-1] - state.r[0]) == pytest.approx(L, rel=1e-6)


def test_pinned_root_jacobian_matches_central_differences():
    """The omega(0) columns of segment 0 include d g(0)/d omega(0) through the root frame
    (root_pin_jacobian): compare with central differences of the residual."""
    from rodlab.galpha.residual import residual_blocks
    from rodlab.galpha.solver import apply_bc_kinds, root_pin_frame, root_pin_jacobian
    from rodlab.galpha.state import integrate_frames

    rng = np.random.default_rng(3)
    model = GAlphaRod.from_material(5, 0.4, radius=0.01, E=1e7, G=4e6, rho=1000.0, gravity=(0.3, -0.5, -9.81))
    solver = GAStepper(model, Boundary(root=RootPin(), tip=TipLoad()), GAlphaOptions())
    N, dt = 5, 0.01
    x = rng.normal(size=(N, 15)) * 0.5
    xprev = x + rng.normal(size=(N, 15)) * 0.01
    xdotprev = rng.normal(size=(N, 15)) * 0.1
    prm = solver._prm(dt, solver.options.time, False)
    from rodlab.galpha.residual import old_terms

    old = np.zeros((N - 1, 15))
    old_terms(xprev, xdotprev, solver._khat, solver._K, solver._J, prm, np.zeros((N, 12)), old)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    R0old = q * np.sign(np.linalg.det(q))
    ri = np.zeros(14)
    ri[0], ri[1] = 1.0, 0.5 * dt
    ri[2:5] = 0.5 * dt * rng.normal(size=3)
    ri[5:14] = R0old.ravel()
    gw = np.ascontiguousarray(model.gravity)
    vals = np.zeros((5, 3))

    def resid(xx, jac, chain=True):
        R0 = np.zeros((3, 3))
        R = np.zeros((N, 3, 3))
        root_pin_frame(xx, ri, R0)
        integrate_frames(xx, R0, model.ds, True, R)
        apply_bc_kinds(xx, R, 1, 1, vals, solver._khat, solver._K, gw)
        F = np.zeros((N - 1, 15))
        Jb = np.zeros((N - 1, 15, 30))
        residual_blocks(xx, xprev, xdotprev, old, solver._khat, solver._K, solver._J, prm, solver._rowscale,
                        np.zeros((N, 12)), np.zeros((N, 12, 15)), jac, F, Jb, np.zeros((15, 15)))
        if jac and chain:
            root_pin_jacobian(xx, ri, gw, Jb)
        return F[0].copy(), Jb[0].copy()

    J_full = resid(x.copy(), True)[1][:, 3:6]
    J_plain = resid(x.copy(), True, chain=False)[1][:, 3:6]
    h = 1e-6
    fd = np.zeros((15, 3))
    for q in range(3):
        xp, xm = x.copy(), x.copy()
        xp[0, 3 + q] += h
        xm[0, 3 + q] -= h
        fd[:, q] = (resid(xp, False)[0] - resid(xm, False)[0]) / (2 * h)
    scale = np.max(np.abs(fd))
    assert np.max(np.abs(J_full - fd)) < 1e-7 * scale
    assert np.max(np.abs(J_plain - fd)) > 1e-4 * scale  # the chain-rule term matters: the check can fail


def _twist_scenario(angle, tension, duration=5.0, n_pts=3):
    L = 1.0
    t = np.linspace(0.0, 2.0, 21)
    turn = angle * (0.5 - 0.5 * np.cos(np.pi * t / 2.0))
    motion = Motion(times=tuple(t), displacement=tuple((0.0, 0.0, 0.0) for _ in t),
                    rotation=tuple((float(a), 0.0, 0.0) for a in turn), slides_along=(1.0, 0.0, 0.0))
    rod = Rod(centerline=tuple((float(s), 0.0, 0.0) for s in np.linspace(0.0, L, n_pts)), radius=0.01,
              material=Material(1e6, 1e6 / 3, 1000.0), normal=(0.0, 0.0, 1.0), start=EndCondition.CLAMPED,
              end=EndCondition.CLAMPED, end_motion=motion, loads=(PointLoad(force=(tension, 0.0, 0.0)),))
    return Scenario(rods=(rod,), duration=duration, quasi_static=True, self_contact=False)


def test_sliding_clamp_turns_the_end_and_carries_the_tension():
    """Twist's end condition (slides_along): the end turns by the prescribed angle about the
    axis (uniform twist kappa3 = angle / L), stays on the axis, and the axial force is the
    load; a rod with a tiny bend under twist below critical stays straight."""
    angle, tension = 1.0, 0.05
    sc = _twist_scenario(angle, tension)
    dt, per = GAlphaSolver().time_step(sc, 51)
    setup = _RodSetup(sc.rods[0], 0, 8, sc, dt)
    for _ in range(50 * per):  # ramp 2 s, hold 3 s
        assert setup.solver.step(setup.state, dt).success
    x = setup.state.x
    # the tip frame is held at the clamp's pose (drift correction), so the end turns by angle:
    # uniform twist with the Cayley frame update turning a segment by 2 atan(kappa3 ds / 2)
    assert np.allclose(x[:, 8], 16.0 * math.tan(angle / 16.0), rtol=1e-4)  # kappa3 ds / 12 = 1.3e-3 above angle/L
    assert np.allclose(x[:, 11], tension, rtol=1e-6)  # axial force = the load all along
    assert np.max(np.abs(setup.state.r[:, 1:])) < 1e-9  # straight, on the axis
    R = setup.state.R
    turned = math.atan2(R[-1, 1, 0], R[-1, 2, 0])  # d1 started along +z, turned about +x: d1 = (0, -sin, cos)
    assert -turned == pytest.approx(angle, rel=1e-4)  # 6e-5 left of the ramp transient
    # the whole adapter run: first and last element directors differ by the twist (less half elements)
    tr = GAlphaSolver().run(sc, n_elements=8, n_frames=51)
    d = tr.directors[0][-1]
    phi = math.atan2(-d[-1, 1], d[-1, 2]) - math.atan2(-d[0, 1], d[0, 2])
    assert phi == pytest.approx(angle * (1 - 1.0 / 8), rel=1e-3)


def test_unsupported_features_raise_not_implemented():
    ex, sc = _cantilever(duration=0.1)
    with_floor = Scenario(rods=sc.rods, duration=0.1, obstacles=(Plane((0.0, 0.0, -1.0), (0.0, 0.0, 1.0)),),
                          quasi_static=True, self_contact=False)
    with pytest.raises(NotImplementedError, match="obstacle"):
        GAlphaSolver().run(with_floor, n_elements=4, n_frames=2)
    free = Rod(centerline=((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)), radius=0.01, material=Material(1e6, 1e6 / 3, 1000.0))
    with pytest.raises(NotImplementedError, match="clamped .* or pinned"):
        GAlphaSolver().run(Scenario(rods=(free,), duration=0.1, gravity=(0.0, 0.0, -9.81)), n_elements=4, n_frames=2)


def test_reversed_rod_is_returned_in_the_suites_order():
    """Clamp at the end instead of the start: galpha's root is the scenario's end; the
    trajectory comes back in the suite's node order."""
    rod = Rod(centerline=((0.0, 0.0, 0.0), (0.5, 0.0, 0.0)), radius=0.01, material=Material(1e7, 1e7 / 3, 1000.0),
              end=EndCondition.CLAMPED, loads=(PointLoad(force=(0.0, 0.0, -1e-3), at=cb.scenario.End.START),))
    sc = Scenario(rods=(rod,), duration=2.0, quasi_static=True, self_contact=False)
    tr = GAlphaSolver().run(sc, n_elements=6, n_frames=3)
    x = tr.positions[0]
    assert np.allclose(x[:, -1], [0.5, 0.0, 0.0], atol=1e-14)
    assert x[-1, 0, 2] < 0.0 and abs(x[-1, -1, 2]) < 1e-14
    assert np.allclose(tr.directors[0][0], [0.0, 0.0, 1.0], atol=1e-12)
