"""cosseratbench's contact experiments (crossing, capstan, pile) through rodlab's adapters
(``rodlab.bench_adapters.cb_contact``), and the rodlab side of the capstan without the suite.

The rodlab-side test always runs: a rope over a cylinder with friction, built with
``WorldBuilder`` and stepped by ``make_simulator(world, "der-implicit")`` as the adapter does, holds
below the heavy-rope capstan limit and slides above it, with ``min_gap >= -0.01 r``. The others
need the optional ``cosseratbench`` and skip without it.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rodlab.geometry.curves import parallel_transport  # noqa: E402
from rodlab.solvers import make_simulator  # noqa: E402
from rodlab.world import WorldBuilder  # noqa: E402
from rodlab.world.obstacles import Cylinder  # noqa: E402

G = 9.81


def holding_overhang(mu: float, short: float, wrap_radius: float) -> float:
    """Longest heavy side [m] a rope hanging ``short`` on its light side holds over the top half
    of a cylinder (``wrap_radius`` to the rope's centre), its own weight on the wrap included:
    ``dT/dphi = mu T + w R (cos phi + mu sin phi)`` integrated over ``phi`` in [0, pi]."""
    ratio = math.exp(mu * math.pi)
    return ratio * short + wrap_radius * 2.0 * mu / (1.0 + mu * mu) * (ratio + 1.0)


def draped_rope(short: float, long: float, wrap: float, seg: float) -> np.ndarray:
    """Nodes of a rope hanging ``short`` at x = -wrap, over the top of the circle of radius
    ``wrap`` (nodes on the circumscribed polygon, so chords stay outside), ``long`` at x = +wrap."""
    n1 = max(2, round(short / seg))
    na = max(8, round(math.pi * wrap / seg))
    n2 = max(2, round(long / seg))
    bulge = wrap / math.cos(0.5 * math.pi / na)
    left = np.stack([np.full(n1, -bulge), np.zeros(n1), np.linspace(-short, 0.0, n1, endpoint=False)], axis=1)
    phi = np.linspace(0.0, math.pi, na + 1)
    arc = np.stack([-bulge * np.cos(phi), np.zeros_like(phi), bulge * np.sin(phi)], axis=1)
    right = np.stack([np.full(n2, bulge), np.zeros(n2), np.linspace(0.0, -long, n2 + 1)[1:]], axis=1)
    return np.vstack([left, arc, right])


def run_capstan_world(overhang: float, mu: float = 0.3, t_settle: float = 0.3, t_end: float = 0.9):
    """The suite's capstan (cylinder radius 0.05 m, rope radius 1 mm, rho 1000 kg/m^3, light side
    0.15 m; E = 3e6 Pa so the rope hardly stretches) as a rodlab World, stepped like the adapter
    (der-implicit, dt 0.02 s, damping 2 sqrt(g/L)). The rope starts unstretched, without the
    tension that lets friction hold it, so it first slips a little (about 1 mm) while the tension
    builds; the slide is the light end's largest rise after ``t_settle``. Returns (slide [m],
    min gap [m], rope radius [m])."""
    R, r, short = 0.05, 0.001, 0.15
    dhat = 0.2 * r
    wrap = R + r + 0.5 * dhat
    long = overhang * holding_overhang(mu, short, R + r)
    x = draped_rope(short, long, wrap, 0.02)
    lengths = np.linalg.norm(np.diff(x, axis=0), axis=1)
    L = float(lengths.sum())
    b = WorldBuilder(gravity=(0.0, 0.0, -G), damping=2.0 * math.sqrt(G / L))
    line = np.zeros_like(x)
    line[:, 0] = np.concatenate([[0.0], np.cumsum(lengths)])
    b.add_rod(line, E=3e6, G=1e6, rho=1000.0, radius=r, rest_d1=np.tile([0.0, 1.0, 0.0], (len(lengths), 1)))
    b.add_obstacle(Cylinder((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), R), friction=mu)
    world = b.build()
    sim = make_simulator(world, "der-implicit", dt=0.02, contact_dhat=dhat, friction_eps_v=1e-4)
    state = sim.initial_state()
    state.vertex_x[...] = x
    t = np.diff(x, axis=0)
    t /= np.linalg.norm(t, axis=1)[:, None]
    d1 = np.empty_like(t)
    d1[0] = (0.0, 1.0, 0.0)
    for i in range(1, len(t)):
        d1[i] = parallel_transport(np.ascontiguousarray(t[i - 1]), np.ascontiguousarray(t[i]), np.ascontiguousarray(d1[i - 1]))
    state.edge_ref_d1[...] = d1
    state.joint_ref_twist[...] = 0.0
    z0, rise, gap = None, 0.0, math.inf
    for k in range(int(round(t_end / 0.02))):
        rep = sim.advance(state, 1)
        gap = min(gap, rep.contact_min_gap)
        if k + 1 == int(round(t_settle / 0.02)):
            z0 = state.vertex_x[0, 2]
        elif z0 is not None:
            rise = max(rise, state.vertex_x[0, 2] - z0)
    assert np.all(np.isfinite(state.vertex_x))
    return rise, gap, r


def test_rodlab_capstan_holds_below_and_slides_above_the_capstan_limit():
    rise_hold, gap_hold, r = run_capstan_world(0.7)
    rise_slide, gap_slide, _ = run_capstan_world(1.4)
    assert gap_hold >= -0.01 * r and gap_slide >= -0.01 * r
    assert gap_hold < 0.2 * r  # resting on the cylinder, within the barrier's reach
    assert rise_hold < 1e-4  # holds: creep only (measured 3.0e-5 m over 0.6 s)
    assert rise_slide > 0.02  # slides off toward the heavy side (measured 0.15 m)


# ---- through the suite -------------------------------------------------------------------------
cb = pytest.importorskip("cosseratbench", reason="cosseratbench is not installed (pip install 'rodlab[bench]')")
from cosseratbench import Capability, registry  # noqa: E402

from rodlab.bench_adapters.cb_contact import clear_obstacles, needs_contact, run_world  # noqa: E402
from rodlab.bench_adapters.cosseratbench import SOLVERS  # noqa: E402


def test_contact_dispatch_and_capabilities():
    for name in ("capstan", "pile"):  # the crossing's scenario takes 12 s to build: its own test covers it
        assert needs_contact(registry.load_experiment(name).scenario), name
    for name in ("cantilever", "catenary", "twist"):
        assert not needs_contact(registry.load_experiment(name).scenario), name
    der_i, compact = SOLVERS["rodlab-der-implicit"], SOLVERS["rodlab-compact"]
    assert {Capability.ROD_CONTACT, Capability.ROD_FRICTION, Capability.CYLINDER_CONTACT,
            Capability.PLANE_CONTACT, Capability.STRETCH} <= der_i.capabilities
    assert Capability.ROD_CONTACT in compact.capabilities and Capability.ROD_FRICTION not in compact.capabilities
    assert not ({Capability.ROD_CONTACT, Capability.CYLINDER_CONTACT} & SOLVERS["rodlab-galpha"].capabilities)


def test_clear_obstacles_lifts_chords_off_the_cylinder():
    sc = registry.load_experiment("capstan").scenario
    crod, cyl = sc.rods[0], sc.obstacles[0]
    nodes = crod.nodes(40)
    moved = clear_obstacles(nodes, crod.radius, sc.obstacles, 1e-4)
    a, b = moved[:-1], moved[1:]
    s = np.linspace(0.0, 1.0, 21)
    pts = a[:, None, :] + s[None, :, None] * (b - a)[:, None, :]
    radial = np.linalg.norm(pts[..., [0, 2]], axis=2).min(axis=1)  # the axis is y through the origin
    assert radial.min() >= cyl.radius + crod.radius + 1e-4 * 0.999
    before = nodes[:-1] + 0.5 * (nodes[1:] - nodes[:-1])
    assert np.linalg.norm(before[:, [0, 2]], axis=1).min() < cyl.radius + crod.radius  # the suite's chords cut in
    assert np.abs(moved - nodes).max() < 2e-3  # a small move


def test_compact_reports_friction_unsupported():
    ex = registry.load_experiment("capstan")
    r = cb.run(ex, SOLVERS["rodlab-compact"](), n_elements=20)
    assert r.outcome == "unsupported"
    assert "friction" in r.missing[0] and "compact" in r.missing[0] and "never slips" in r.missing[0]


def test_crossing_der_implicit_scored_by_the_suite():
    ex = registry.load_experiment("crossing")
    assert needs_contact(ex.scenario)
    r = cb.run(ex, SOLVERS["rodlab-der-implicit"](), n_elements=25)
    assert r.outcome == "completed", r.failure
    assert r.metrics["lift_error"] < 0.05  # measured 0.021 at 25 elements, 0.008 at 51
    assert r.metrics["shape_error"] < 0.006  # measured 0.0038
    assert r.metrics["settling_residual"] < 1e-3
    assert r.observations["max_rod_overlap"] <= 0.01  # radii


def test_capstan_der_implicit_holds_and_slides_in_the_suite():
    ex = registry.load_experiment("capstan")
    hold = cb.run(ex, SOLVERS["rodlab-der-implicit"](), n_elements=30)
    slide = cb.run(ex, SOLVERS["rodlab-der-implicit"](), n_elements=30, values={"overhang": 1.5})
    assert hold.outcome == slide.outcome == "completed"
    assert hold.metrics["slide"] < 2e-3  # creep (measured 7e-4 at 30 elements, 2.4e-4 at 100)
    assert slide.metrics["slide"] > 0.05  # slides off (measured 0.21)
    assert hold.observations["max_penetration"] <= 0.01 and slide.observations["max_penetration"] <= 0.01


def test_pile_start_runs_without_penetration():
    ex = registry.load_experiment("pile")
    sc = dataclasses.replace(ex.scenario, duration=0.25)
    tr = run_world("der-implicit", sc, n_elements=30, n_frames=6)
    x = tr.positions[0]
    assert x.shape == (6, 31, 3) and tr.directors[0].shape == (6, 30, 3)
    assert np.all(np.isfinite(x))
    assert x[:, :, 2].min() >= sc.rods[0].radius * 0.99  # never through the floor
    # the clamp descends at the suite's speed (0.4 m/s): the clamped node follows it
    assert abs((x[-1, 0, 2] - x[0, 0, 2]) - (-0.4 * 0.25)) < 1e-9


def test_compact_refuses_end_supported_rods_with_the_reason():
    from cosseratbench.scenario import EndCondition, Material, Rod, Scenario

    mat = Material(1e6, 1e6 / 3.0, 1000.0)
    rods = tuple(Rod(((-0.4, 0.0, z), (0.4, 0.0, z)), 0.005, mat, normal=(0.0, 1.0, 0.0), start=EndCondition.PINNED,
                     end=EndCondition.PINNED) for z in (0.0, 0.015))
    sc = Scenario(rods=rods, duration=0.1, gravity=(0.0, 0.0, -9.81), self_contact=False)
    assert needs_contact(sc)
    with pytest.raises(NotImplementedError, match="compact.*pinned at its end"):
        SOLVERS["rodlab-compact"]().run(sc, n_elements=10, n_frames=2)
