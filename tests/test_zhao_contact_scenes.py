"""Zhao et al. contact scenes on compact: ``strand-through-springs`` (Fig. 14) and ``plectoneme``
(Fig. 16), short runs; the writhe and twist they report."""
import math

import numpy as np
import pytest

from rodlab.analytic.michell_numeric import writhe as midpoint_writhe
from rodlab.scenes.registry import run_scene
from rodlab.scenes.zhao_contact_scenes import material_twist, open_rod_writhe, polygon_writhe
from rodlab.solvers import UnsupportedFeature


def _trefoil(n):
    t = np.linspace(0.0, 2 * math.pi, n + 1)[:-1]
    return np.stack([np.sin(t) + 2 * np.sin(2 * t), np.cos(t) - 2 * np.cos(2 * t), -np.sin(3 * t)], axis=1)


def test_polygon_writhe_matches_gauss_integral_and_symmetries():
    # the exact polygon writhe converges as O(h^2) like the midpoint rule, with a smaller constant:
    # at 300 vertices the two differ by 1.3e-3, the polygon value by 1e-5 from its 600-vertex value
    x = _trefoil(300)
    wr = polygon_writhe(x, closed=True)
    assert abs(wr - midpoint_writhe(x)) < 2e-3 and wr == pytest.approx(-3.35413, abs=5e-5)
    assert polygon_writhe(x * [1, 1, -1], closed=True) == pytest.approx(-wr, abs=1e-12)  # a mirror flips it
    planar = np.stack([np.cos(np.linspace(0, 6, 80)), np.sin(np.linspace(0, 6, 80)), np.zeros(80)], axis=1)
    assert abs(polygon_writhe(planar)) < 1e-12
    # a right-handed helix along x, closed through infinity along its axis: positive writhe,
    # close to the closed-form of a long helix, turns * (1 - sin(pitch angle)) (Fuller)
    turns, R, P = 3, 0.05, 0.4
    s = np.linspace(0, turns * 2 * math.pi, 601)
    helix = np.stack([P * s / (2 * math.pi), R * np.cos(s) - R, R * np.sin(s)], axis=1)
    helix = np.concatenate([[helix[0] - [0.2, 0, 0]], helix, [helix[-1] + [0.2, 0, 0]]])
    sin_a = P / math.hypot(P, 2 * math.pi * R)
    assert open_rod_writhe(helix) == pytest.approx(turns * (1 - sin_a), rel=0.05)


def test_material_twist_of_a_uniformly_twisted_rod():
    n = 30
    x = np.stack([np.linspace(0, 1, n), np.zeros(n), np.zeros(n)], axis=1)
    phi = np.linspace(0.0, 2.5, n - 1)
    m1 = np.stack([np.zeros(n - 1), np.cos(phi), np.sin(phi)], axis=1)
    assert material_twist(x, m1) == pytest.approx(2.5 / (2 * math.pi), abs=1e-12)
    assert material_twist(x, m1 * [1, 1, -1]) == pytest.approx(-2.5 / (2 * math.pi), abs=1e-12)


def test_plectoneme_short_run_conserves_link():
    """60 ms at dt = 3 ms: the ends turn by +-0.6 rad, the link grows by 1.2 / 2 pi turns; Tw + Wr
    follows it to 1e-6 turns (discrete Calugareanu for the polygon and its parallel-transport
    twist holds to round-off; the finite tails of the closure add below 1e-8), most of it already as
    writhe (GJ / EI = 200: the twist buckles within milliseconds); no overlap beyond 1% of the radius."""
    res = run_scene("plectoneme", t_end=0.06, frames=20)
    m = res.metrics
    assert m["steps"] == 20 and m["failed_steps"] == 0
    assert m["link_imposed"] == pytest.approx(2 * 10.0 * 0.06 / (2 * math.pi), rel=1e-9)
    assert m["link_error"] < 1e-6
    assert m["writhe"] > 0.6 * m["link_imposed"] and 0 < m["twist"] < 0.4 * m["link_imposed"]
    assert m["min_gap"] >= -0.01 * 0.003
    assert m["inextensibility"] < 1e-12
    assert m["end_to_end"] < 1.0  # the ends slid in along x
    x = res.state.vertex_x
    np.testing.assert_allclose(x[[0, 1, -2, -1]][:, 1:], 0.0, atol=1e-7)  # ends on the x axis, end edges along it
    wr = np.asarray(res.trajectory["writhe"])
    assert np.all(np.diff(wr[3:]) > 0)  # writhe keeps growing with the link


def test_strand_through_springs_short_run():
    """30 ms: the strand sags under the weight, the chute end slides in along x and stays on the axis,
    the springs fall onto the strand, nothing passes through anything."""
    res = run_scene("strand-through-springs", t_end=0.03)
    m = res.metrics
    assert m["steps"] == 10 and m["failed_steps"] == 0 and m["n_vertices"] == 31 + 2 * 151
    assert m["min_gap"] >= -0.01 * 0.03
    assert m["threaded"]
    assert m["sag"] > 0.05 and m["chute_slide"] > 0.0
    assert m["inextensibility"] < 1e-12
    x = res.state.vertex_x
    np.testing.assert_allclose(x[[29, 30]][:, 1:], 0.0, atol=1e-7)  # the chute holds the end on the x axis
    np.testing.assert_allclose(x[[0, 1]], [[0, 0, 0], [0.1, 0, 0]], atol=1e-9)  # the fixed end


@pytest.mark.parametrize("scene", ["plectoneme", "strand-through-springs"])
def test_bdf2_is_refused_clearly(scene):
    with pytest.raises(UnsupportedFeature, match="integrator='bdf2' only without rod contact"):
        run_scene(scene, integrator="bdf2", t_end=0.003)
