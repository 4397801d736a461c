"""DER time stepping: fast paths agree with the general one, invariants hold."""
import numpy as np
import pytest

from rodlab import BoundaryConditions, Clamp, CrossSection, Loads, Material, Rod
from rodlab.der.stepper import DERStepper, DEROptions, SimulationError, suggested_time_step


def _cantilever(n=30):
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0, 1, n)
    return Rod.from_material(x, Material(1e7, 4e6, 1000.0), CrossSection.circle(0.01),
                             boundary=BoundaryConditions(clamps=(Clamp(0),)))


def test_twist_free_fast_path_matches_general_path():
    rod = _cantilever()
    loads = Loads(gravity=(0, 0, -9.81), damping=1.0)
    dt = suggested_time_step(rod)
    fast = DERStepper(rod, loads, DEROptions(dt=dt))
    slow = DERStepper(rod, loads, DEROptions(dt=dt, twist_solver="uniform"))
    assert fast.twist_free and not slow.twist_free
    a, b = fast.initial_state(), slow.initial_state()
    for _ in range(3):
        fast.advance(a, 400)
        slow.advance(b, 400)
    assert np.abs(a.x - b.x).max() < 1e-10
    m_fast, _ = fast.material_frames(a)
    m_slow, _ = slow.material_frames(b)
    assert np.abs(m_fast - m_slow).max() < 1e-8
    assert np.abs(fast.twist(a)).max() < 1e-9


def test_newton_twist_path_matches_closed_form_for_straight_isotropic_rod():
    x = np.zeros((20, 3))
    x[:, 0] = np.linspace(0, 1, 20)
    from rodlab.model import twist_about_axis

    rod = Rod.from_stiffness(x, bending=1.0, twisting=0.7, boundary=BoundaryConditions(
        clamps=(Clamp(0), Clamp(-1, twist_about_axis((1, 0, 0), rate=20.0)))))
    loads = Loads(gravity=(0, -1.0, -2.0), damping=0.5)
    a = DERStepper(rod, loads, DEROptions(dt=1e-4, twist_solver="uniform"))
    b = DERStepper(rod, loads, DEROptions(dt=1e-4, twist_solver="newton", twist_tol=1e-13))
    sa, sb = a.initial_state(), b.initial_state()
    a.advance(sa, 3000)
    b.advance(sb, 3000)
    assert np.abs(sa.x - sb.x).max() < 1e-9
    assert np.allclose(a.twist(sa), b.twist(sb), atol=1e-9)
    assert np.sum(a.twist(sa)) == pytest.approx(20.0 * sa.t, rel=1e-9)  # 6 rad of twist


def test_projection_keeps_edges_inextensible_and_momentum_is_conserved_when_free():
    rng = np.random.default_rng(0)
    n = 25
    s = np.linspace(0, 2, n)
    x = np.stack([s, 0.2 * np.sin(3 * s), 0.1 * np.cos(2 * s)], axis=1)
    rod = Rod.from_stiffness(x, bending=(0.02, 0.05), twisting=0.03, linear_density=0.3)
    st = DERStepper(rod, Loads(), DEROptions(dt=2e-4))
    state = st.initial_state(v=0.3 * rng.standard_normal((n, 3)))
    p0 = (st.masses[:, None] * state.v).sum(axis=0)
    st.advance(state, 2000)
    e = np.linalg.norm(np.diff(state.x, axis=0), axis=1)
    assert np.abs(e / rod.rest_lengths - 1).max() < 1e-11
    p1 = (st.masses[:, None] * state.v).sum(axis=0)
    assert np.abs(p1 - p0).max() < 1e-10 * max(1.0, np.abs(p0).max())


def test_energy_bounded_and_projection_dissipation_first_order_in_dt():
    """Undamped: total energy never grows; fast projection dissipates O(dt) (VALIDATION: energy)."""
    rod = _cantilever(20)
    losses = []
    for fac in (0.5, 0.25):
        st = DERStepper(rod, Loads(gravity=(0, 0, -9.81)), DEROptions(dt=fac * suggested_time_step(rod)))
        state = st.initial_state()
        total = lambda: st.elastic_energy(state) + st.potential_energy(state) + st.kinetic_energy(state)
        e0 = total()
        scale = st.masses.sum() * 9.81 * 1.0
        nsteps = int(round(0.5 / st.options.dt))
        drift = []
        for _ in range(20):
            st.advance(state, nsteps // 20)
            drift.append(total() - e0)
        assert max(drift) < 1e-3 * scale
        losses.append(-min(drift))
    assert 0 < losses[1] < 0.6 * losses[0]
    assert losses[0] < 0.01 * scale


def test_blow_up_is_reported_and_last_good_state_kept():
    rod = _cantilever(20)  # extensible and far past the stretching wave's stability limit
    # energy_check off: this checks the non-finite path (the energy check would refuse step 1)
    st = DERStepper(rod, Loads(gravity=(0, 0, -9.81)), DEROptions(dt=50 * suggested_time_step(rod), inextensible=False,
                                                                   energy_check=False))
    state = st.initial_state()
    st.advance(state, 1)
    before = state.copy()
    with pytest.raises(SimulationError, match="try a smaller dt"):
        st.advance(state, 20000)
    assert np.all(np.isfinite(state.x)) and np.all(np.isfinite(state.theta))
    assert state.t >= before.t


def test_energy_gain_of_an_undriven_rod_is_refused_and_the_state_restored():
    """Just above the stable step the fast projection keeps an inextensible rod bounded in a
    zig-zag that pumps energy: the energy check refuses the call; at the stable step it passes."""
    rod = _cantilever(20)
    loads = Loads(gravity=(0, 0, -9.81), damping=5.0)
    dt = suggested_time_step(rod)
    ok = DERStepper(rod, loads, DEROptions(dt=dt))
    state = ok.initial_state()
    ok.advance(state, 2000)
    assert np.isfinite(ok.mechanical_energy(state))
    bad = DERStepper(rod, loads, DEROptions(dt=2.0 * dt))
    state = bad.initial_state()
    start = state.copy()
    with pytest.raises(SimulationError, match="gained .* J of mechanical energy"):
        bad.advance(state, 2000)
    assert np.array_equal(state.x, start.x) and state.t == start.t
    off = DERStepper(rod, loads, DEROptions(dt=2.0 * dt, energy_check=False))
    state = off.initial_state()
    off.advance(state, 1000)  # bounded, so nothing else notices; a stable run has settled (KE ~1e-11 J)
    assert np.all(np.isfinite(state.x)) and off.kinetic_energy(state) > 0.1 * bad.energy_scale(start)


def test_bad_options_name_the_parameter():
    with pytest.raises(ValueError, match="dt must be > 0"):
        DEROptions(dt=-1.0)
    with pytest.raises(ValueError, match="twist_solver"):
        DEROptions(dt=1e-3, twist_solver="magic")


def test_failed_projection_is_refused_not_stepped_through():
    rod = _cantilever(20)
    st = DERStepper(rod, Loads(gravity=(0, 0, -9.81)),
                    DEROptions(dt=suggested_time_step(rod), projection_max_iter=1, projection_tol=1e-15, projection_fail=1e-14))
    state = st.initial_state()
    before = state.copy()
    with pytest.raises(SimulationError, match="fast projection did not converge"):
        st.advance(state, 500)
    e = np.linalg.norm(np.diff(state.x, axis=0), axis=1)
    assert np.abs(e / rod.rest_lengths - 1).max() < 1e-12  # the kept state is a good one
    assert state.t >= before.t


def test_sliding_clamp_drags_the_rod_with_the_whole_mass():
    """A free rod whose last edge is clamped but slides along the rod's axis, pulled by F along
    it: rod and clamp move together as one rigid body, x = F t^2 / (2 M). The projection must
    share the pull with the clamp's own mass (a clamp treated as immovable, or as massless, would
    not give M); across the axis and in angle the clamp stays held."""
    from rodlab import PointForce

    n, F, T = 12, 0.3, 0.5
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0.0, 1.0, n)
    rod = Rod.from_material(x, Material(1e6, 4e5, 1000.0), CrossSection.circle(0.01),
                            boundary=BoundaryConditions(clamps=(Clamp(-1, slide_axis=(1.0, 0.0, 0.0)),)))
    stepper = DERStepper(rod, Loads(point_forces=(PointForce(n - 1, np.array([F, 0.0, 0.0])),)),
                         DEROptions(dt=suggested_time_step(rod)))
    state = stepper.initial_state()
    m1_before = stepper.material_frames(state)[0][-1].copy()
    steps = int(round(T / stepper.options.dt))
    stepper.advance(state, steps)
    M = rod.vertex_masses.sum()
    shift = state.x[:, 0] - x[:, 0]
    assert np.allclose(shift, shift[0], atol=1e-12)                   # rigid: every vertex the same
    h = stepper.options.dt  # symplectic Euler's exact distance under a constant force: h^2 a N (N + 1) / 2
    assert shift[0] == pytest.approx(F / M * h * h * steps * (steps + 1) / 2, rel=1e-9)
    assert np.abs(state.x[:, 1:]).max() < 1e-12                        # nothing moves across the axis
    assert np.allclose(stepper.material_frames(state)[0][-1], m1_before, atol=1e-12)


def test_sliding_clamp_validation_names_the_problem():
    x = np.zeros((6, 3))
    x[:, 0] = np.linspace(0.0, 1.0, 6)
    for clamp, match in ((Clamp(2, slide_axis=(1.0, 0.0, 0.0)), "end edge"),
                         (Clamp(-1, slide_axis=(0.0, 0.0, 0.0)), "nonzero")):
        rod = Rod.from_stiffness(x, bending=1.0, twisting=1.0, boundary=BoundaryConditions(clamps=(clamp,)))
        with pytest.raises(Exception, match=match):
            DERStepper(rod, Loads(), DEROptions(dt=1e-4))
