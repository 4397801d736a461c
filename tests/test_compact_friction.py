"""Coulomb friction in the compact method (issue "Contact and friction", item 3;
src/rodlab/compact/friction.py, docs/contact-compact.md "Friction").

A rod on a tilted plane (vertex-obstacle rows) and a rod lying across two fixed rails (edge-edge
rows, Zhao et al. Eq. 32): below the friction angle it must not creep (< 1e-6 m over 1 s), above
it it slides with ``a = g (sin - mu cos)``, and without friction with ``g sin``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from rodlab.model import ModelError
from rodlab.scenes.friction_scenes import GRAVITY, fit_acceleration, incline_theory, incline_world
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

from compact_helpers import rails_world

DT = 0.005


def _slide(world, rod_vertices, down, t_end, dt=DT):
    """Times, mean displacement of ``rod_vertices`` along ``down`` [m] and the largest vertex
    displacement [m] at every step, and the simulator."""
    sim = make_simulator(world, "compact", dt=dt)
    state = sim.initial_state()
    x0 = state.vertex_x[rod_vertices].copy()
    t, s, moved = [], [], []
    for _ in range(int(round(t_end / dt))):
        rep = sim.advance(state, 1)
        assert rep.success, rep.message
        x = state.vertex_x[rod_vertices]
        t.append(state.t)
        s.append(float((x - x0).mean(axis=0) @ down))
        moved.append(float(np.linalg.norm(x - x0, axis=1).max()))
    return np.array(t), np.array(s), np.array(moved), sim, state


def _acceleration(t, s, t_settle=0.05):
    keep = t >= t_settle
    return fit_acceleration(t[keep], s[keep])


# ---- rod on a tilted plane: vertex-obstacle rows -------------------------------------------------
def test_incline_below_friction_angle_does_not_creep():
    # tan(10 deg) = 0.176 < mu = 0.3; the rod starts touching the plane, at rest
    world, down, _ = incline_world(10.0, 0.3, gap=0.0)
    t, s, moved, sim, _ = _slide(world, slice(None), down, 1.0)
    assert t[-1] == pytest.approx(1.0)
    assert moved.max() < 1e-6, moved.max()  # measured 1e-15 m: the stick rows hold u = 0
    assert sim.last_call.contacts >= 2


@pytest.mark.parametrize("angle, mu", [(30.0, 0.3), (17.0, 0.3), (30.0, 0.0)])
def test_incline_slides_with_coulomb_acceleration(angle, mu):
    # 17 deg: tan = 0.306, just above mu = 0.3 (a = 0.054 m/s^2); mu = 0: frictionless, g sin
    world, down, _ = incline_world(angle, mu, gap=0.0)
    t, s, _, _, _ = _slide(world, slice(None), down, 0.5)
    theory = incline_theory(angle, mu)
    if mu == 0.0:
        assert theory == pytest.approx(GRAVITY * math.sin(math.radians(angle)))
    acc = _acceleration(t, s)
    assert acc == pytest.approx(theory, rel=0.03)  # measured 2e-5 (30 deg), 1e-4 (17 deg), 4e-9 (mu = 0)


def test_incline_just_below_friction_angle_sticks():
    # 16 deg: tan = 0.287 < 0.3 (the cone is met within 5%): still no creep
    world, down, _ = incline_world(16.0, 0.3, gap=0.0)
    _, _, moved, _, _ = _slide(world, slice(None), down, 0.5)
    assert moved.max() < 1e-6


def test_incline_landing_then_sticks():
    # dropped from 1.25 mm onto a 10 deg plane: it slides a little while landing, then stays
    world, down, normal = incline_world(10.0, 0.3)
    t, s, _, _, state = _slide(world, slice(None), down, 0.6)
    after = t >= 0.1
    assert np.ptp(s[after]) < 1e-9
    assert 0.0 < s[-1] < 1e-3


# ---- rod across two rails: edge-edge rows --------------------------------------------------------


def test_rod_across_rails_sticks_below_and_slides_above_friction_angle():
    world, down = rails_world(10.0, 0.3)
    rod = world.rod_vertices(2)
    t, s, _, _, state = _slide(world, rod, down, 0.6)
    after = t >= 0.1  # the rod first bends under its weight between the rails (elastic, < 1e-6 m)
    assert np.abs(s).max() < 1e-6 and np.ptp(s[after]) < 1e-7  # measured 7e-7 and 3e-9 m
    assert np.abs(state.vertex_x[:6] - world.vertex_rest_x[:6]).max() < 1e-12  # the rails hold
    world, down = rails_world(30.0, 0.3)
    t, s, _, _, state = _slide(world, world.rod_vertices(2), down, 0.4)
    assert _acceleration(t, s) == pytest.approx(incline_theory(30.0, 0.3), rel=0.03)  # measured -0.9%


def test_rod_across_rails_without_friction_slides_with_g_sin():
    world, down = rails_world(30.0, 0.0)
    t, s, _, _, _ = _slide(world, world.rod_vertices(2), down, 0.3)
    assert _acceleration(t, s) == pytest.approx(GRAVITY * 0.5, rel=1e-3)


# ---- options and the scene ------------------------------------------------------------------------
def test_friction_eps_v_is_checked():
    world, _, _ = incline_world(10.0, 0.3)
    with pytest.raises(ModelError, match="friction_eps_v"):
        make_simulator(world, "compact", friction_eps_v=-1.0)


def test_incline_scene_takes_method_compact():
    from rodlab.scenes.registry import run_scene

    res = run_scene("incline", method="compact", angle=30.0, mu=0.3, t_end=0.3)
    m = res.metrics
    assert m["method"] == "compact"
    assert m["acceleration"] == pytest.approx(m["acceleration_theory"], rel=0.03)
    assert m["min_gap"] >= -0.01 * 0.005


# ---- capsule obstacles (vertex rows, as the cylinder's) ---------------------------------------------
def test_rod_rests_on_a_capsule_and_slides_off_its_cap():
    from rodlab.world.obstacles import Capsule

    R, r = 0.02, 0.005
    cap = Capsule((0.0, -0.05, 0.0), (0.0, 0.05, 0.0), R)  # axis along y, 0.1 m long

    def world(mu, y0):
        b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY))
        b.add_rod(shapes.straight(7, 0.06, start=(-0.03, y0, R + r), direction=(1.0, 0.0, 0.0)), E=1e7, G=4e6,
                  rho=1000.0, radius=r)
        b.add_obstacle(cap, friction=mu)
        return b.build()

    # across the capsule's middle with friction: it rests on it, balanced, nothing goes in
    sim = make_simulator(world(0.5, 0.0), "compact", dt=DT)
    state = sim.initial_state()
    rep = sim.advance(state, 60)
    assert rep.success and rep.contacts_max >= 1
    assert rep.contact_min_gap >= -0.01 * r
    assert abs(float(state.vertex_x[3, 2]) - (R + r)) < 1e-4 and abs(float(state.vertex_x[:, 1].mean())) < 1e-9
    # over the end cap (y0 = 0.06 > 0.05): its middle touches the hemisphere off-centre and it
    # slides off along +y, pushed by the cap's slanted normal
    sim = make_simulator(world(0.0, 0.06), "compact", dt=DT)
    state = sim.initial_state()
    rep = sim.advance(state, 40)
    assert rep.contact_min_gap >= -0.01 * r
    assert float(state.vertex_x[:, 1].mean()) > 0.065
