"""The compact scenes (Zhao et al. Fig. 6, 11, 17) on World + the compact simulator: the numbers of
the first-wave scenes (golden values recorded before the port, with the same rod: ``n`` then
counted segments, so n = 30 then is n = 31 vertices now), their metric keys, the root motion and
the cylinders in the picture.

Golden values stored here were recorded on one machine; numba compiles for the host CPU, so another
CPU (AVX-512 against AVX2, say) rounds differently, and compact's iterative solves (PCG to an
absolute 1e-7, Newton to 1e-5) carry that into the trajectory at about the solver's tolerance.
Stored numbers are therefore compared at tolerances of that size; bit-for-bit checks are kept for
comparisons made within one process (docs/architecture.md, "Golden values")."""
import math

import numpy as np
import pytest

from rodlab.scenes import run_scene

COMMON_KEYS = {"inextensibility", "alignment", "newton_iters", "pcg_iters", "ms_per_step", "us_per_step",
               "cpu_ms_per_step", "steps", "failed_steps", "success", "message", "final_kinetic_energy", "n_vertices"}


def test_helix_gravity_gives_the_first_wave_numbers():
    """Rest frames differ from the first-wave model's by round-off (the world rod's rest_d1 is
    projected once more), so the positions agree to ~1e-11, not bit for bit."""
    r = run_scene("helix-gravity", n=31, t_end=0.2, dt=0.02)
    m = r.metrics
    assert set(m) == COMMON_KEYS | {"tip_z", "length", "wall_s"}
    assert m["success"] and m["steps"] == 10 and m["failed_steps"] == 0 and m["n_vertices"] == 31
    assert m["tip_z"] == pytest.approx(-0.2115711038612303, rel=1e-9)
    assert m["final_kinetic_energy"] == pytest.approx(0.0005170599032639421, rel=1e-7)
    assert m["length"] == pytest.approx(1.8601596977816028, rel=1e-14)
    assert m["newton_iters"] == 2.0
    assert m["pcg_iters"] == pytest.approx(11.85, abs=0.1)
    assert m["inextensibility"] < 1e-14 and m["alignment"] < 1e-13
    x = r.trajectory["x"]
    assert x.shape == (11, 31, 3) and r.trajectory["q"].shape == (11, 30, 4)
    assert np.abs(x[-1, 15] - [-0.2002941978296006, 0.007385817441542854, -0.11813086028228098]).max() < 1e-10
    assert np.abs(x[:, :2] - x[0, :2]).max() < 1e-15  # the clamped top edge does not move
    ke = r.trajectory["kinetic_energy"]
    assert ke[0] == 0.0 and np.all(ke[1:] > 0)


def test_drag_root_gives_the_first_wave_numbers():
    r = run_scene("drag-root", n=21, t_end=2.0)
    m = r.metrics
    assert set(m) == COMMON_KEYS | {"simulated_s", "tip_x", "tip_z", "max_speed", "wall_s"}
    assert m["success"] and m["steps"] == 8 and m["simulated_s"] == 2.0
    assert m["tip_x"] == pytest.approx(-0.007980269929778162, abs=1e-9)
    assert m["tip_z"] == pytest.approx(-0.9999626151946114, abs=1e-9)
    assert m["max_speed"] == pytest.approx(1.9999999999999991, rel=1e-14)
    assert m["final_kinetic_energy"] == pytest.approx(0.005584161865608214, rel=1e-8)
    assert m["newton_iters"] == 1.625 and m["pcg_iters"] == pytest.approx(18 / 13, abs=0.1)
    x, t = r.trajectory["x"], r.trajectory["t"]
    # the top two vertices move as phi sin(2 pi f t) along x, rigidly
    for j, z in ((0, 0.0), (1, -1.0 / 20)):
        assert np.abs(x[:, j, 0] - 0.5 * np.sin(2 * np.pi * t)).max() < 1e-12
        assert np.abs(x[:, j, 2] - z).max() < 1e-15
    assert np.abs(x[-1, 10] - [-0.002703260539349453, 0.0, -0.4999905051028903]).max() < 1e-9


def test_drag_root_refuses_segments_below_three_vertices():
    from rodlab.scenes.registry import SceneError

    with pytest.raises(SceneError, match="n"):
        run_scene("drag-root", n=2)


def test_drop_cylinders_gives_the_first_wave_numbers_and_draws_the_cylinders(tmp_path):
    r = run_scene("drop-cylinders", n=31, t_end=0.4, dt=0.01)  # the first wave's step (the default is now 0.001)
    m = r.metrics
    assert set(m) == COMMON_KEYS | {"mean_contacts", "max_contacts", "min_gap", "bounces", "min_clearance", "wall_s"}
    assert m["bounces"] == 0  # at dt = 0.01 backward Euler damps the landing dead (docs/contact-compact.md)
    assert -0.01 * 0.03 <= m["min_gap"] < 1e-3  # radius 0.03 m: the bound is -0.01 r
    assert m["success"] and m["steps"] == 40
    assert m["mean_contacts"] == pytest.approx(1.65, rel=1e-14) and m["max_contacts"] == 3
    assert m["newton_iters"] == 0.75 and m["pcg_iters"] == pytest.approx(6.063953488372093, abs=0.1)
    assert abs(m["min_clearance"]) < 1e-12  # resting on the cylinders: 1.38e-13 when recorded
    assert m["final_kinetic_energy"] == 0.0
    x = r.trajectory["x"][-1]
    assert np.abs(x[0] - [-1.0000012512780168, 0.0, 0.1298612626894023]).max() < 1e-9
    assert np.abs(x[-1] - [0.9999986978295837, 0.0, 0.1298612657295383]).max() < 1e-9
    # at rest on the three tops (z = R + r = 0.13 at x = -0.6, 0, 0.6)
    for cx in (-0.6, 0.0, 0.6):
        j = int(np.argmin(np.abs(x[:, 0] - cx)))
        assert x[j, 2] == pytest.approx(0.13, abs=2e-3)
    cyl = r.extra["cylinders"]
    assert [c[0][0] for c in cyl] == [-0.6, 0.0, 0.6] and all(c[2] == 0.1 for c in cyl)
    paths = r.plot(r, tmp_path)
    assert len(paths) == 1 and paths[0].stat().st_size > 10_000


def test_drop_cylinders_bounces_at_its_default_step_then_rests():
    """Zhao et al. (Fig. 17): the rod bounces a while before it lies on the cylinders. At the
    scene's default dt = 0.001 s it leaves the cylinders three times (separations after the first
    contact) and comes to rest on all three tops; at dt = 0.01 s (the test above) it lands dead."""
    r = run_scene("drop-cylinders", n=31, t_end=0.6)
    m = r.metrics
    assert m["success"] and m["steps"] == 600
    assert m["bounces"] == 3
    assert m["max_contacts"] == 3
    assert -0.01 * 0.03 <= m["min_gap"] < 0.0  # radius 0.03 m: the bound is -0.01 r
    assert 0.0 < m["final_kinetic_energy"] < 1e-8  # settled, not frozen
    assert abs(m["min_clearance"]) < 1e-9
    ke = np.asarray(r.trajectory["kinetic_energy"])
    assert ke[-1] < 1e-4 * ke.max()


def test_n_counts_vertices_in_every_compact_scene():
    for name in ("helix-gravity", "drag-root", "drop-cylinders"):
        r = run_scene(name, n=7, t_end=0.04, dt=0.02)
        assert r.metrics["n_vertices"] == 7 and r.trajectory["x"].shape[1] == 7
        assert r.trajectory["rod_offsets"].tolist() == [0, 7]
        assert math.isfinite(r.metrics["us_per_step"])
