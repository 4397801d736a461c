"""Contact and Coulomb friction in explicit DER (rodlab.der.contact; docs/contact-der.md)."""
import math

import numpy as np
import pytest

from rodlab.contact import min_gap
from rodlab.scenes.friction_scenes import GRAVITY, fit_acceleration, incline_world
from rodlab.solvers import make_simulator
from rodlab.solvers.base import UnsupportedFeature
from rodlab.world import WorldBuilder, shapes
from rodlab.world.obstacles import Plane, Sphere


def test_rod_dropped_on_plane_comes_to_rest_on_it():
    r = 0.005
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY))
    b.add_rod(shapes.straight(6, 0.1, start=(0.0, 0.0, 0.02)), E=1e7, G=4e6, rho=1000.0, radius=r)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)))
    sim = make_simulator(b.build(), "der", dt=5e-4)
    st = sim.initial_state()
    rep = sim.advance(st, 300)                       # falls 15 mm in ~55 ms, then rests
    assert rep.contact_min_gap >= -0.01 * r
    assert rep.contacts_max == 5
    assert np.all(np.abs(st.vertex_x[:, 2] - r) <= 1e-9)   # lying on the plane
    assert np.abs(st.vertex_v).max() <= 1e-9                # at rest (inelastic contact)


def _crossing_world(v_b, *, pin_a=True, gravity=0.0):
    """Rod a along x at z = 0 (ends pinned or free), rod b along y above it moving at ``v_b``."""
    b = WorldBuilder(gravity=(0.0, 0.0, -gravity))
    a = b.add_rod(shapes.straight(9, 0.2, start=(-0.1, 0.0, 0.0)), E=1e5, G=4e4, rho=1000.0, radius=0.001)
    if pin_a:
        b.pin(a, 0)
        b.pin(a, 8)
    b.add_rod(shapes.straight(9, 0.2, start=(0.013, -0.1, 0.01), direction=(0.0, 1.0, 0.0)), E=1e5, G=4e4, rho=1000.0,
              radius=0.001)
    b.set_contact(rods=True)
    world = b.build()
    return world


def test_fast_rod_does_not_pass_through_at_a_large_step():
    world = _crossing_world(-10.0)
    sim = make_simulator(world, "der", dt=2e-3, energy_check=False)   # 20 mm per step against 2 mm thickness
    st = sim.initial_state()
    st.rod_v(1)[:, 2] = -10.0
    gaps = []
    for _ in range(6):
        rep = sim.advance(st, 1)
        gaps.append(rep.contact_min_gap)
    assert min(gaps) >= -0.01 * 0.001
    # rod b is still above rod a where they cross (it was stopped, not passed through)
    xb = st.rod_x(1)
    k = int(np.argmin(np.abs(xb[:, 1])))
    assert xb[k, 2] > st.rod_x(0)[:, 2].max()


def test_rod_rod_impulses_conserve_momentum():
    world = _crossing_world(-2.0, pin_a=False)
    sim = make_simulator(world, "der", dt=1e-3, energy_check=False)
    st = sim.initial_state()
    st.rod_v(1)[:, 2] = -2.0
    p0, _ = sim.momentum(st)
    rep = sim.advance(st, 20)
    p1, _ = sim.momentum(st)
    assert rep.contacts_sum > 0                               # they did collide
    assert st.rod_v(0)[:, 2].mean() < -0.1                   # rod a was pushed down
    assert np.allclose(p1, p0, rtol=0, atol=1e-12 * np.abs(p0).max())
    assert min_gap(sim._contact.geometry, st.vertex_x) >= -1e-5


def test_rod_below_friction_angle_stays_put():
    world, down, _ = incline_world(20.0, 0.5, gap=0.0)       # tan 20 deg = 0.364 < 0.5
    sim = make_simulator(world, "der", dt=1e-3)
    st = sim.initial_state()
    x0 = st.vertex_x.copy()
    sim.advance(st, 1000)                                     # 1 s
    assert np.abs(st.vertex_x - x0).max() <= 1e-6


@pytest.mark.parametrize("angle, mu", [(30.0, 0.3), (40.0, 0.0)])
def test_rod_above_friction_angle_slides_with_coulomb_acceleration(angle, mu):
    world, down, _ = incline_world(angle, mu, gap=0.0)
    sim = make_simulator(world, "der", dt=1e-3)
    st = sim.initial_state()
    t, s = [], []
    for _ in range(20):
        sim.advance(st, 10)
        t.append(st.t)
        s.append(float(st.vertex_x.mean(axis=0) @ down))
    a = fit_acceleration(t, s)
    theory = GRAVITY * (math.sin(math.radians(angle)) - mu * math.cos(math.radians(angle)))
    assert abs(a / theory - 1.0) <= 0.03


def test_rod_on_sphere_obstacle_keeps_out():
    r = 0.002
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY), damping=1.0)
    b.add_rod(shapes.straight(11, 0.2, start=(-0.1, 0.0, 0.05)), E=1e6, G=4e5, rho=1000.0, radius=r)
    b.add_obstacle(Sphere((0.0, 0.0, 0.0), 0.04), friction=0.5)
    sim = make_simulator(b.build(), "der", dt=5e-4)
    st = sim.initial_state()
    rep = sim.advance(st, 200)
    assert rep.contact_min_gap >= -0.01 * r
    assert rep.contacts_max >= 1


def test_rod_dropped_on_plane_logs_no_penetration_warning(caplog):
    r = 0.005
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY))
    b.add_rod(shapes.straight(6, 0.1, start=(0.0, 0.0, 0.02)), E=1e7, G=4e6, rho=1000.0, radius=r)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)))
    sim = make_simulator(b.build(), "der", dt=5e-4)
    with caplog.at_level("WARNING", logger="rodlab.solvers.der"):
        rep = sim.advance(sim.initial_state(), 300)
    assert rep.contacts_max == 5
    assert "penetration" not in caplog.text


def test_infeasible_contact_logs_its_penetration(caplog):
    """Two planes 8 mm apart facing each other and a rod of radius 5 mm between them: no position
    keeps both gaps >= 0, the response stops at its limits, and the call says so (a warning naming
    the penetration), where it used to report only ``contact_min_gap``."""
    r = 0.005
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY))
    b.add_rod(shapes.straight(11, 0.2, start=(-0.1, 0.0, 0.004)), E=1e7, G=4e6, rho=1000.0, radius=r)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)))
    b.add_obstacle(Plane((0.0, 0.0, 0.008), (0.0, 0.0, -1.0)))
    sim = make_simulator(b.build(), "der", dt=1e-4)
    with caplog.at_level("WARNING", logger="rodlab.solvers.der"):
        rep = sim.advance(sim.initial_state(), 3)
    assert rep.contact_min_gap == pytest.approx(-0.002, abs=1e-6)   # 8 mm - 2 r: the whole overlap, on one side
    assert "der contact: penetration -0.002 m" in caplog.text
    assert "no common solution" in caplog.text


def test_contact_refused_with_bodies():
    b = WorldBuilder()
    r = b.add_rod(shapes.straight(6, 0.1), E=1e7, G=4e6, rho=1000.0, radius=0.005)
    body = b.add_body(0.1, np.eye(3) * 1e-4, position=(0.1, 0.0, 0.0))
    b.weld(r, "end", body)
    b.add_obstacle(Plane((0.0, 0.0, -0.1), (0.0, 0.0, 1.0)))
    with pytest.raises(UnsupportedFeature, match="rigid bodies"):
        make_simulator(b.build(), "der")
