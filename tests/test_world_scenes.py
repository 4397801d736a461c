"""The hairstyle scene: many strands through one simulator, metrics with their shared meaning."""
import numpy as np
import pytest

import rodlab
from rodlab.solvers import METHODS


def test_hairstyle_der_sags_and_keeps_lengths():
    res = rodlab.run_scene("hairstyle", strands=6, vertices=12, method="der", t_end=0.05, wind=0.0, frames=5)
    m = res.metrics
    assert m["n_rods"] == 6 and m["n_vertices"] == 72
    assert m["steps"] == int(np.ceil(0.05 / m["dt"] - 1e-9))
    # inextensible DER keeps every edge length to the projection tolerance
    assert m["inextensibility"] < 1e-9
    # gravity pulls the free tips down, never up
    assert m["mean_tip_drop"] > 0
    x = res.trajectory["x"]
    offsets = res.trajectory["rod_offsets"]
    assert x.shape[1:] == (72, 3) and list(offsets) == list(range(0, 73, 12))
    # roots are clamped: the first two vertices of every strand do not move
    for r in range(6):
        np.testing.assert_array_equal(x[-1, offsets[r]:offsets[r] + 2], x[0, offsets[r]:offsets[r] + 2])


def test_hairstyle_wind_pushes_downwind():
    try:
        res = rodlab.run_scene("hairstyle", strands=4, vertices=10, method="der", t_end=0.1, wind=3.0, drag=1e-4,
                               frames=4, style="straight")
    except rodlab.ModelError as exc:  # the simulator refuses wind until it has it
        pytest.fail(f"der should support wind: {exc}")
    calm = rodlab.run_scene("hairstyle", strands=4, vertices=10, method="der", t_end=0.1, wind=0.0, frames=4,
                            style="straight")
    assert res.metrics["mean_tip_shift_x"] > calm.metrics["mean_tip_shift_x"] + 1e-4


def test_hairstyle_rejects_bad_method():
    with pytest.raises(rodlab.SceneError, match="method"):
        rodlab.run_scene("hairstyle", method="nope")
    assert set(METHODS) == {"der", "der-implicit", "compact", "galpha"}
