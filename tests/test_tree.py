"""The ``tree`` scene (Bergou et al. 2008, Fig. 12): the default world's layout, and a small tree
stepped a few hundred steps with finite metrics, welds held to round-off and energy bookkeeping
that adds up."""
from __future__ import annotations

import math

import numpy as np

from rodlab.scenes.registry import get_scene, run_scene
from rodlab.scenes.tree import build_tree


def test_default_tree_has_the_papers_size():
    p = get_scene("tree").resolve({})
    world, layout = build_tree(p)
    assert world.n_vertices == 2158
    assert world.n_rods == 2 ** (p["levels"] + 1) - 1 and world.n_bodies == 2 ** p["levels"] - 1
    assert len(world.welds) == 3 * world.n_bodies  # parent end + continuing rod + branch at each junction
    assert world.features() == {"rigid bodies", "wind"}
    # every child rod starts next to its parent's end, where their junction body is
    for r, (start, d, length, level, parent) in enumerate(layout):
        if parent >= 0:
            gap = np.linalg.norm(world.rods[r].rest_positions[0] - world.rods[parent].rest_positions[-1])
            assert gap < 2 * world.rods[parent].rest_lengths.max()


def test_small_tree_runs_with_finite_metrics_and_held_welds():
    res = run_scene("tree", levels=2, branches=2, vertices=150, t_end=0.004, frames=4, wind=10.0)
    m = res.metrics
    assert m["n_rods"] == 13 and m["n_bodies"] == 4 and m["n_vertices"] == 150
    assert m["steps"] == math.ceil(0.004 / m["dt"] - 1e-9)
    assert m["max_weld_error"] < 1e-12
    assert m["inextensibility"] < 1e-6
    assert m["ms_per_step"] == m["us_per_step"] / 1000 > 0
    for k, v in m.items():
        assert not isinstance(v, float) or math.isfinite(v), k
    e = res.trajectory["energy"]
    np.testing.assert_allclose(e[:, :4].sum(axis=1), e[:, 4], rtol=1e-12)
    assert e[-1, 0] > 0 and e[-1, 1] > 0  # the wind set rods and bodies moving
    F = res.trajectory["t"].shape[0]
    assert F >= 3 and res.trajectory["x"].shape == (F, 150, 3) and res.trajectory["body_x"].shape == (F, 4, 3)
    assert m["max_tip_displacement"] > 0
