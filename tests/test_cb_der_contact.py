"""cosseratbench's contact experiments with explicit DER (``rodlab-der``) through the World path
of ``rodlab.bench_adapters.cb_contact`` (issue #11): the adapter claims contact, routes the
capstan to ``make_simulator(world, "der")`` at DER's stable step, and the rope held by friction on
the cylinder stays put while a rope past the capstan limit slides off, with no penetration.
Needs the optional ``cosseratbench`` (skips without it).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

cb = pytest.importorskip("cosseratbench", reason="cosseratbench is not installed (pip install 'rodlab[bench]')")
from cosseratbench import Capability, registry  # noqa: E402

from rodlab.bench_adapters.cb_contact import build_world, der_stable_step, needs_contact, time_step  # noqa: E402
from rodlab.bench_adapters.cosseratbench import SOLVERS  # noqa: E402
from rodlab.der.stepper import suggested_time_step  # noqa: E402

N = 20  # elements: a coarse rope keeps the run short; the suite's resolutions are 50, 100, 200


def test_der_claims_contact_and_steps_at_its_stability_bound():
    der = SOLVERS["rodlab-der"]()
    assert {Capability.ROD_CONTACT, Capability.ROD_FRICTION, Capability.CYLINDER_CONTACT,
            Capability.PLANE_CONTACT} <= der.capabilities
    assert Capability.STRETCH not in der.capabilities  # inextensible (fast projection)
    sc = registry.load_experiment("capstan").scenario
    assert needs_contact(sc)
    world, nodes = build_world(sc, N, "der")
    # inextensible: the rope keeps the (stretched) edge lengths it starts with, so it starts in equilibrium
    x = nodes[0][0]
    assert np.allclose(world.edge_rest_length, np.linalg.norm(np.diff(x, axis=0), axis=1), rtol=1e-12)
    stable = min(suggested_time_step(rod) for rod in world.rods)
    assert der_stable_step(sc, N) == stable
    assert time_step(sc, "der", 0.5, N) == pytest.approx(0.5 * stable, rel=1e-12)
    s = der.settings(sc, n_elements=N, n_frames=101)
    assert s["path"].startswith("rodlab World") and s["method"] == "der"
    assert s["dt"] <= stable * (1.0 + 1e-12)  # never above the explicit stability bound
    with pytest.raises(ValueError, match="n_elements"):
        time_step(sc, "der")


def _capstan(overhang: float, duration: float = 0.3):
    """The suite's capstan (friction 0.3) at ``overhang`` times the longest heavy side that holds,
    cut to ``duration`` [s], run by the rodlab-der adapter at N elements, frames every 0.02 s as
    the suite's. Returns (scenario, trajectory)."""
    ex = registry.load_experiment("capstan")
    sc = dataclasses.replace(ex.build(overhang=overhang, friction=0.3), duration=duration)
    tr = SOLVERS["rodlab-der"]().run(sc, n_elements=N, n_frames=int(round(duration / 0.02)) + 1)
    return ex, sc, tr


def _cylinder_gap(sc, x: np.ndarray) -> float:
    """Smallest surface gap [m] between the rope's segments (points sampled along each) and the
    capstan's cylinder (axis y through the origin)."""
    s = np.linspace(0.0, 1.0, 11)
    pts = x[:-1, None, :] + s[None, :, None] * (x[1:] - x[:-1])[:, None, :]
    return float(np.linalg.norm(pts[..., [0, 2]], axis=2).min() - sc.obstacles[0].radius - sc.rods[0].radius)


def test_capstan_der_holds_below_and_slides_above_the_limit():
    ex, sc, hold = _capstan(0.8)  # 0.8 of the holding overhang: static friction holds the rope
    _, sc_slide, slide = _capstan(1.5)  # 1.5 of it: the heavy side wins
    r = sc.rods[0].radius
    # holds: the light end does not rise (measured 0 m over 0.3 s; it settles down by 1.2e-5 m)
    assert ex.metrics["slide"](sc, hold) < 1e-5
    # slides: measured 0.06 m in 0.3 s (0.21 m over the suite's 2 s); frictionless it would be faster still
    assert ex.metrics["slide"](sc_slide, slide) > 0.03
    for scenario, tr in ((sc, hold), (sc_slide, slide)):
        x = tr.positions[0]
        assert np.all(np.isfinite(x))
        gaps = [_cylinder_gap(scenario, xf) for xf in x]
        assert min(gaps) >= -0.01 * r  # no penetration beyond 1 % of the rope radius
    assert max(_cylinder_gap(sc, xf) for xf in hold.positions[0][-3:]) < 0.5 * r  # and it rests on the cylinder
