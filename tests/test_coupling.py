"""Rigid-body coupling of DER (Bergou 2008, Sec. 8): closed-form and conservation checks."""
import numpy as np
import pytest

from rodlab import BoundaryConditions, Clamp, Loads, Rod
from rodlab.coupling import CoupledDERStepper, RigidBody, Weld
from rodlab.der.stepper import DEROptions, suggested_time_step
from rodlab.model import ModelError


def hanging(n=10, L=0.5, twisting=0.5, g=9.81, mass=1.0, radius=0.1, projection="fast"):
    x = np.zeros((n, 3))
    x[:, 2] = -np.linspace(0, L, n)
    rod = Rod.from_stiffness(x, bending=1.0, twisting=twisting, linear_density=0.01,
                             boundary=BoundaryConditions(clamps=(Clamp(0),)))
    body = RigidBody.disk(mass, radius, 0.01, axis=2)
    st = CoupledDERStepper(rod, [body], [Weld(0, -1)], Loads(gravity=(0, 0, -g)), DEROptions(dt=suggested_time_step(rod)),
                           projection=projection)
    centre = x[-2:].mean(axis=0) + [0, 0, -0.02]
    return rod, body, st, centre


def crossings(t, y):
    i = np.flatnonzero(np.sign(y[1:]) != np.sign(y[:-1]))
    return t[i] - y[i] * (t[i + 1] - t[i]) / (y[i + 1] - y[i])


@pytest.mark.parametrize("projection", ["fast", "shake"])
def test_torsion_pendulum_period_matches_closed_form(projection):
    """Straight isotropic rod clamped above, disk welded below: T = 2 pi sqrt(I L / (G J)), with L
    the distance between the midpoints of the clamped and welded edges (the twisting length of
    the discrete rod, Eq. 5)."""
    rod, body, st, centre = hanging(twisting=0.5, projection=projection)
    s = st.initial_state(centers=[centre], body_angular_velocities=[[0, 0, 1.0]])
    x = rod.rest_positions
    L = np.linalg.norm(x[-2:].mean(0) - x[:2].mean(0))
    T = 2 * np.pi * np.sqrt(body.inertia[2, 2] * L / 0.5)
    nchunk = 120
    per = int(1.6 * T / st.options.dt / nchunk)
    t, wz = [], []
    for _ in range(nchunk):
        st.advance(s, per)
        t.append(s.t)
        wz.append((s.rotation(0) @ s.w[0])[2])
    tc = crossings(np.array(t), np.array(wz))
    assert len(tc) >= 3
    period = 2 * np.mean(np.diff(tc))
    assert abs(period / T - 1) < 1e-3
    # amplitude of the twist: the energy is exchanged with the rod and comes back
    assert st.weld_error(s) < 1e-12
    assert np.abs(s.rod.x[:, :2]).max() < 1e-12  # a pure twist never bends the rod


def test_pendulum_at_rest_hangs_straight_and_welds_hold():
    rod, body, st, centre = hanging()
    s = st.initial_state(centers=[centre])
    info = st.advance(s, 3000)
    assert info.constraint_violation_max < 1e-10
    assert st.inextensibility(s) < 1e-10
    assert st.weld_error(s) < 1e-10
    assert np.abs(s.rod.x[:, :2]).max() < 1e-12
    assert np.abs(s.r[0, :2]).max() < 1e-12
    assert abs(s.q[0] @ s.q[0] - 1) < 1e-14


def test_swinging_pendulum_welds_and_energy():
    """A rod + disk pendulum started sideways: welds exact, constraints held, energy never grows
    (fast projection only dissipates, first order in dt)."""
    rod, body, st, centre = hanging(n=8, L=0.3, g=9.81)
    s = st.initial_state(centers=[centre], body_velocities=[[0.3, 0.1, 0.0]], body_angular_velocities=[[0.5, -0.3, 2.0]])
    e_rest = st.total_energy(st.initial_state(centers=[centre]))
    e0 = st.total_energy(s) - e_rest  # energy above the hanging equilibrium
    es = []
    for _ in range(40):
        info = st.advance(s, 200)
        es.append(st.total_energy(s) - e_rest)
        assert st.weld_error(s) < 1e-10
        assert info.constraint_violation_max < 1e-10
    es = np.array(es)
    assert es.max() < e0 * (1 + 1e-3)
    assert es.min() > e0 * (1 - 0.1)
    assert abs(np.linalg.norm(s.q[0]) - 1) < 1e-14


@pytest.mark.parametrize("projection", ["fast", "shake"])
def test_momentum_conserved_without_gravity(projection):
    """Curved anisotropic rod (Newton twist) with a body welded to each end, random velocities,
    no gravity: linear momentum exact to round-off, angular momentum to first order in dt."""
    rng = np.random.default_rng(3)
    n = 9
    s_ = np.linspace(0, 1.2, n)
    x = np.stack([np.cos(s_), np.sin(s_), 0.1 * s_], 1)
    rod = Rod.from_stiffness(x, bending=(0.02, 0.03), twisting=0.015, linear_density=0.05)
    bodies = [RigidBody(0.2, np.diag([1e-3, 2e-3, 1.5e-3])), RigidBody(0.1, np.diag([5e-4, 4e-4, 6e-4]))]
    st = CoupledDERStepper(rod, bodies, [Weld(0, 0), Weld(1, -1)], Loads(), DEROptions(dt=0.5 * suggested_time_step(rod)),
                           projection=projection)
    centres = [x[:2].mean(0) + [0, 0, -0.05], x[-2:].mean(0) + [0.03, 0, 0]]
    v = 0.2 * rng.standard_normal(x.shape)
    s = st.initial_state(centers=centres, v=v, body_velocities=rng.standard_normal((2, 3)) * 0.2,
                         body_angular_velocities=rng.standard_normal((2, 3)))
    p0 = st.linear_momentum(s)
    L0 = st.angular_momentum(s)
    e0 = st.total_energy(s)
    for _ in range(20):
        st.advance(s, 100)
        assert np.linalg.norm(st.linear_momentum(s) - p0) < 1e-12 * (1 + np.linalg.norm(p0))
    L1 = st.angular_momentum(s)
    assert np.linalg.norm(L1 - L0) < 2e-2 * np.linalg.norm(L0)
    assert st.total_energy(s) < e0 * (1 + 1e-3)
    assert st.weld_error(s) < 1e-10


def test_bad_input_names_the_parameter():
    rod, body, st, centre = hanging()
    with pytest.raises(ModelError, match="weld edge"):
        CoupledDERStepper(rod, [body], [Weld(0, 3)])
    with pytest.raises(ModelError, match="body mass"):
        RigidBody(-1.0, np.eye(3))
    with pytest.raises(ModelError, match="positive definite"):
        RigidBody(1.0, np.diag([1.0, -1.0, 1.0]))


def test_rod_wrench_is_minus_gradient_of_reduced_energy():
    """The force and torque handed to a body (elastic forces on its welded vertices plus the
    explicit twist torque -dE/dtheta_w t_w of Sec. 8.2) equal minus the central-difference
    gradient of min_theta E under rigid motions of the body. Curved anisotropic rod (Newton
    twist), clamped at the far end, perturbed off equilibrium."""
    rng = np.random.default_rng(7)
    n = 8
    s_ = np.linspace(0, 1.0, n)
    x = np.stack([s_, 0.3 * np.sin(2 * s_), 0.2 * s_ ** 2], 1)
    rod = Rod.from_stiffness(x, bending=(0.7, 1.4), twisting=0.9, boundary=BoundaryConditions(clamps=(Clamp(-1),)))
    body = RigidBody(0.3, np.diag([1e-2, 2e-2, 3e-2]))
    st = CoupledDERStepper(rod, [body], [Weld(0, 0)], Loads(), DEROptions(dt=1e-4, twist_tol=1e-13))
    xp = x + 0.03 * rng.standard_normal(x.shape)
    xp[-2:] = x[-2:]
    s = st.initial_state(x=xp, centers=[xp[:2].mean(0) + [0.0, -0.05, 0.02]])
    # twist the body so the rod carries a real twist torque
    s = st.move_body(s, 0, np.zeros(3), 0.6 * (xp[1] - xp[0]) / np.linalg.norm(xp[1] - xp[0]))
    force, torque = st.rod_wrench(s)
    eps = 1e-6
    fd_f, fd_t = np.empty(3), np.empty(3)
    for d in range(3):
        e = np.zeros(3)
        e[d] = eps
        fd_f[d] = -(st.moved_body_energy(s, 0, e, np.zeros(3)) - st.moved_body_energy(s, 0, -e, np.zeros(3))) / (2 * eps)
        fd_t[d] = -(st.moved_body_energy(s, 0, np.zeros(3), e) - st.moved_body_energy(s, 0, np.zeros(3), -e)) / (2 * eps)
    scale = np.abs(np.concatenate([fd_f, fd_t])).max()
    assert np.abs(force[0] - fd_f).max() < 1e-6 * scale
    assert np.abs(torque[0] - fd_t).max() < 1e-6 * scale
    # the axial (twist) part is a real contribution: dropping it breaks the match
    assert abs(st.axial_twist_torque(s)[0]) > 1e-3 * scale


def test_shake_projection_does_not_damp_a_taut_rod():
    """A rod hanging under a 0.5 kg body, kicked sideways: the paper's fast projection damps the
    transverse motion of the taut rod away (first-order projection dissipation, growing with
    the tension), the SHAKE-type step keeps the energy (docs/coupling.md)."""
    n, L = 21, 0.5
    x = np.zeros((n, 3))
    x[:, 2] = -np.linspace(0, L, n)
    rod = Rod.from_stiffness(x, bending=0.01, twisting=0.01, linear_density=0.02,
                             boundary=BoundaryConditions(clamps=(Clamp(0),)))
    dt = suggested_time_step(rod)
    loss = {}
    for projection in ("fast", "shake"):
        st = CoupledDERStepper(rod, [RigidBody.disk(0.5, 0.02, 0.01, axis=2)], [Weld(0, -1)], Loads(gravity=(0, 0, -9.81)),
                               DEROptions(dt=dt), projection=projection)
        v = np.zeros((n, 3))
        v[2:, 0] = 0.1 * np.sin(np.pi * np.linspace(0, 1, n))[2:]
        s = st.initial_state(centers=[x[-2:].mean(0) + [0, 0, -0.01]], v=v)
        st.advance(s, 1)
        e0 = st.total_energy(s)
        k0 = st.rod_energies(s)[0] + st.body_energies(s)[0, :2].sum()
        info = st.advance(s, int(1.0 / dt))
        assert info.constraint_violation_max < 1e-10
        loss[projection] = (e0 - st.total_energy(s)) / k0
    assert loss["fast"] > 0.5
    assert abs(loss["shake"]) < 0.03
