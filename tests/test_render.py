"""The tube renderer (rodlab.render): pixel geometry against a known camera, the d1 stripe
following the material frame, depth order, obstacles, and animations read back by independent
decoders (imageio's ffmpeg reader for MP4, Pillow for GIF)."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from rodlab.model import CrossSection, ModelError
from rodlab.render import Camera, RenderScene, render_frame, render_state
from rodlab.world import State, WorldBuilder
from rodlab.world.obstacles import Capsule, Cylinder, Plane, Sphere, TriangleMesh

WHITE = np.array([255, 255, 255])


def _down_camera(height_m=1.0, px=200, sign=1.0):
    """Orthographic camera looking along -sign z onto the origin; image up = +y."""
    return Camera(eye=(0.5, 0.0, 5.0 * sign), target=(0.5, 0.0, 0.0), up=(0.0, 1.0, 0.0), width=px, height=px,
                  ortho_height=height_m)


def _straight(n=41, length=1.0):
    s = np.linspace(0.0, length, n)
    return np.stack([s, np.zeros(n), np.zeros(n)], axis=1)


def _covered(image):
    return np.any(image != WHITE, axis=2)


def _stripe(image):
    """Pixels of the cream stripe: nearly grey-balanced (min/max channel > 0.7), not background."""
    img = image.astype(float)
    ratio = img.min(axis=2) / np.maximum(img.max(axis=2), 1.0)
    return _covered(image) & (ratio > 0.7)


def test_tube_covers_two_radii_per_column_orthographic():
    r = 0.05
    scene = RenderScene.from_arrays([0, 41], r)
    image, info = render_frame(scene, _straight(), camera=_down_camera(), supersample=1, min_pixels=0)
    assert image.shape == (200, 200, 3) and image.dtype == np.uint8
    counts = _covered(image)[:, 40:160].sum(axis=0)  # away from the end caps
    pixel = 1.0 / 200
    assert np.all(np.abs(counts - 2 * r / pixel) <= 1.0), counts
    assert info.radius_scale == 1.0
    rows = np.flatnonzero(_covered(image)[:, 100])
    assert abs(0.5 * (rows.min() + rows.max() + 1) - 100.0) <= 0.5  # centred on the axis


def test_tube_width_in_perspective():
    r, dist, fov = 0.02, 2.0, 30.0
    cam = Camera(eye=(0.5, 0.0, dist), target=(0.5, 0.0, 0.0), up=(0.0, 1.0, 0.0), width=240, height=240, fov_deg=fov)
    image, _ = render_frame(RenderScene.from_arrays([0, 41], r), _straight(), camera=cam, supersample=1, min_pixels=0)
    focal = 0.5 * 240 / math.tan(math.radians(fov / 2))
    expected = 2 * focal * r / math.sqrt(dist**2 - r**2)  # the silhouette of a cylinder at distance dist
    assert abs(_covered(image)[:, 120].sum() - expected) <= 1.0


def test_elliptical_section_follows_the_material_frame():
    """a1 along m1, a2 along m2: seen from +z, m1 = +z shows 2 a2 across, m1 = +y shows 2 a1."""
    b = WorldBuilder()
    b.add_rod(_straight(), E=1e6, G=4e5, rho=1000.0, section=CrossSection(0.05, 0.02))
    world = b.build()
    scene = RenderScene.from_world(world)
    assert scene.rod_a1[0] == pytest.approx(0.05, rel=1e-12) and scene.rod_a2[0] == pytest.approx(0.02, rel=1e-12)
    for m1, half in (((0.0, 0.0, 1.0), 0.02), ((0.0, 1.0, 0.0), 0.05)):
        edge_m1 = np.tile(m1, (40, 1))
        image, _ = render_frame(scene, _straight(), edge_m1=edge_m1, camera=_down_camera(), supersample=1, min_pixels=0)
        counts = _covered(image)[:, 40:160].sum(axis=0)
        assert np.all(np.abs(counts - 2 * half * 200) <= 1.0), (m1, counts)


def _twisted_state(total_twist):
    b = WorldBuilder()
    b.add_rod(_straight(), E=1e6, G=4e5, rho=1000.0, radius=0.05)
    world = b.build()
    state = State.zeros_for(world)
    state.edge_ref_d1[:] = (0.0, 0.0, 1.0)
    s_mid = 0.5 * (state.vertex_x[:-1, 0] + state.vertex_x[1:, 0])
    state.edge_theta[:] = total_twist * s_mid  # m1 = cos(theta) z + sin(theta) (x cross z) = cos z - sin y
    return world, state


def test_stripe_rotates_with_twist():
    world, state = _twisted_state(math.pi)
    m1, _ = state.material_frames()
    assert m1[0] @ [0, 0, 1] > 0.99 and m1[-1] @ [0, 0, -1] > 0.99
    top, info = render_state(world, state, camera=_down_camera(), supersample=1, min_pixels=0)
    bottom, _ = render_state(world, state, camera=_down_camera(sign=-1.0), supersample=1, min_pixels=0)
    assert info.frames == "material frames" and "material frame" in info.caption()
    near, far = slice(3, 12), slice(188, 197)  # columns over the first and the last edges
    assert _stripe(top)[:, near].sum() >= 9 * 3 and _stripe(top)[:, far].sum() == 0
    # seen from below the image is mirrored (world x grows to the left): the far end is on the left
    assert _stripe(bottom)[:, near].sum() >= 9 * 3 and _stripe(bottom)[:, far].sum() == 0
    # a quarter along, theta = pi/4: m1 = (z - y)/sqrt 2, so from above the stripe lies on the -y
    # side of the axis, below it in the image (rows grow downwards); a twist of the other sign
    # would put it above
    stripe = _stripe(top)[:, 45:55]
    rows = np.nonzero(stripe)[0]
    assert rows.size > 0 and rows.mean() > 100.5
    _, opposite = _twisted_state(-math.pi)
    flipped, _ = render_state(world, opposite, camera=_down_camera(), supersample=1, min_pixels=0)
    assert np.nonzero(_stripe(flipped)[:, 45:55])[0].mean() < 99.5


def test_untwisted_stripe_runs_the_whole_length():
    world, state = _twisted_state(0.0)
    image, _ = render_state(world, state, camera=_down_camera(), supersample=1, min_pixels=0)
    cols = _stripe(image)[:, 3:197].sum(axis=0)
    assert np.all(cols >= 3)


def test_positions_only_use_a_transported_frame_and_say_so():
    image, info = render_frame(RenderScene.from_arrays([0, 41], 0.05), _straight(), camera=_down_camera(), supersample=1)
    assert info.frames == "parallel-transported frames" and "parallel-transported" in info.caption()
    assert _stripe(image)[:, 3:197].sum(axis=0).min() >= 3  # first edge along x: d1 = +z, towards the camera


@pytest.mark.parametrize("orthographic", [True, False])
def test_near_rod_hides_far_rod_whatever_the_order(orthographic):
    red, blue = (0.8, 0.1, 0.1), (0.1, 0.1, 0.8)
    a = np.stack([np.linspace(0.0, 1.0, 21), np.zeros(21), np.zeros(21)], axis=1)  # along x at z = 0
    b = np.stack([np.full(21, 0.5), np.linspace(-0.5, 0.5, 21), np.full(21, 0.2)], axis=1)  # along y at z = 0.2
    cam_up = Camera(eye=(0.5, 0.0, 4.0), target=(0.5, 0.0, 0.0), up=(0, 1, 0), width=101, height=101,
                    ortho_height=1.2 if orthographic else None)
    cam_down = Camera(eye=(0.5, 0.0, -4.0), target=(0.5, 0.0, 0.0), up=(0, 1, 0), width=101, height=101,
                      ortho_height=1.2 if orthographic else None)
    for first, second, c1, c2 in ((a, b, red, blue), (b, a, blue, red)):
        scene = RenderScene.from_arrays([0, 21, 42], 0.1, colors=[c1, c2])
        x = np.vstack([first, second])
        for cam, winner in ((cam_up, 2), (cam_down, 0)):  # from +z rod b (blue) is nearer; from -z rod a (red)
            # where both rods cover the image, off both stripes (which face the eye along the axes)
            pixel = render_frame(scene, x, camera=cam, supersample=1, min_pixels=0, sides=12)[0][47, 47].astype(int)
            assert int(np.argmax(pixel)) == winner, (cam.eye, pixel)


def test_obstacles_and_bodies_are_drawn():
    rod = _straight(11)
    b = WorldBuilder()
    b.add_rod(rod, E=1e6, G=4e5, rho=1000.0, radius=0.01)
    body = b.add_body(mass=1.0, inertia=np.eye(3) * 1e-3, position=(0.5, 0.0, 0.3))
    b.add_obstacle(Plane((0.0, 0.0, -0.5), (0.0, 0.0, 1.0)))
    b.add_obstacle(Sphere((0.0, 0.0, 0.3), 0.1))
    b.add_obstacle(Capsule((1.0, -0.2, 0.3), (1.0, 0.2, 0.3), 0.05))
    b.add_obstacle(Cylinder((0.5, 0.0, -0.3), (0.0, 1.0, 0.0), 0.05))
    b.add_obstacle(TriangleMesh([[0.2, -0.3, -0.2], [0.8, -0.3, -0.2], [0.5, 0.3, -0.2]], [[0, 1, 2]]))
    world = b.build()
    scene = RenderScene.from_world(world)
    assert body == 0 and scene.body_half.shape == (1, 3)
    # a uniform cube of mass 1 kg and inertia 1e-3 kg m^2: side sqrt(6e-3 * 2 / ... ) = sqrt(12 I / (2 m))
    assert np.allclose(2 * scene.body_half[0], math.sqrt(6e-3), rtol=1e-9)
    state = State.zeros_for(world)
    cam = Camera(eye=(0.5, 0.0, 5.0), target=(0.5, 0.0, 0.0), up=(0, 1, 0), width=160, height=160, ortho_height=1.6)
    image, _ = render_state(world, state, camera=cam, supersample=1)
    f = 160 / 1.6  # px per m; image column of world x, row of world y
    px = lambda xw, yw: (int(80 - f * yw), int(80 + f * (xw - 0.5)))
    for name, (xw, yw) in {"sphere": (0.0, 0.0), "capsule": (1.0, 0.15), "body": (0.5, 0.0), "mesh": (0.5, -0.25),
                           "plane": (0.05, 0.6)}.items():
        assert _covered(image)[px(xw, yw)], name


def test_bad_input_is_refused_with_the_parameter_named():
    scene = RenderScene.from_arrays([0, 41], 0.05)
    with pytest.raises(ModelError, match="positions"):
        render_frame(scene, _straight(40))
    with pytest.raises(ModelError, match="finite"):
        render_frame(scene, np.full((41, 3), np.nan))
    with pytest.raises(ModelError, match="fov_deg"):
        Camera(eye=(0, 0, 1), target=(0, 0, 0), up=(0, 1, 0), fov_deg=0.0)
    with pytest.raises(ModelError, match="radius"):
        RenderScene.from_arrays([0, 41], -1.0)
    with pytest.raises(ModelError, match="supersample"):
        render_frame(scene, _straight(), supersample=9)


def test_thin_rods_are_widened_to_stay_visible_and_the_caption_says_so():
    image, info = render_frame(RenderScene.from_arrays([0, 41], 1e-5), _straight(), width=200, height=150, supersample=1)
    assert info.radius_scale > 10 and info.strips and "their radius" in info.caption()
    assert _covered(image).sum() > 100


def _frames(F=6, n=21):
    t = np.linspace(0.0, 0.5, F)
    s = np.linspace(0.0, 1.0, n)
    x = np.stack([np.stack([s, 0.2 * np.sin(3 * s + 4 * tk), 0.1 * s], axis=1) for tk in t])
    return t, x


def test_mp4_is_decoded_by_imageio_with_the_frame_count_and_size(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    import imageio.v3 as iio

    from rodlab.render.animate import write_animation

    t, x = _frames()
    scene = RenderScene.from_arrays([0, x.shape[1]], 0.03)
    path = write_animation(tmp_path / "animation.mp4", scene, x, t, width=200, height=150)
    frames = np.stack(list(iio.imiter(path)))
    assert frames.shape == (6, 160, 208, 3)  # sizes rounded up to multiples of 16
    # the rod is there: the decoded first frame matches a direct render up to compression
    assert np.mean(np.any(frames[0] < 200, axis=2)) > 0.005
    assert not np.array_equal(frames[0], frames[-1])


def test_gif_is_read_by_pillow(tmp_path):
    pytest.importorskip("imageio")
    from PIL import Image

    from rodlab.render.animate import write_animation

    t, x = _frames(F=4)
    path = write_animation(tmp_path / "a.gif", RenderScene.from_arrays([0, x.shape[1]], 0.03), x, t, width=96, height=64)
    with Image.open(path) as gif:
        assert gif.n_frames == 4 and gif.size == (96, 64)


def test_mp4_without_imageio_ffmpeg_names_the_extra(tmp_path, monkeypatch):
    pytest.importorskip("imageio")
    from rodlab.render.animate import write_animation

    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    t, x = _frames(F=2)
    with pytest.raises(ModelError, match=r"rodlab\[render\]"):
        write_animation(tmp_path / "a.mp4", RenderScene.from_arrays([0, x.shape[1]], 0.03), x, t)
    with pytest.raises(ModelError, match="format"):
        write_animation(tmp_path / "a.avi", RenderScene.from_arrays([0, x.shape[1]], 0.03), x, t)


def test_cli_run_animate_writes_tube_picture_and_film(tmp_path):
    pytest.importorskip("imageio")
    from PIL import Image

    from rodlab.cli import main

    out = tmp_path / "run"
    assert main(["run", "helix-gravity", "--set", "n=12", "--set", "t_end=0.06", "--set", "dt=0.02",
                 "--out", str(out), "--animate", "gif"]) == 0
    with Image.open(out / "animation.gif") as gif:
        traj = np.load(out / "trajectory.npz")
        assert gif.n_frames == traj["x"].shape[0] >= 2
    with Image.open(out / "scene.png") as pic:
        assert pic.size[0] > 800
    assert (out / "frames.png").exists()  # the old line plots stay as the secondary picture


def test_scene_file_animate_key(tmp_path):
    pytest.importorskip("imageio")
    from PIL import Image

    from rodlab.scenefile import runner

    toml = tmp_path / "rod.toml"
    toml.write_text('[simulation]\nmethod = "der"\nt_end = 0.004\nframes = 3\n\n'
                    '[[rod]]\nshape = "straight"\nn = 6\nlength = 0.1\nradius = 0.002\nE = 1e7\nG = 3e6\nrho = 1000.0\n'
                    'clamp = ["start"]\n\n[output]\nanimate = "gif"\n')
    run = runner.run_scene_file(toml, tmp_path / "out")
    names = {p.name for p in run.files}
    assert {"world.png", "world_views.png", "animation.gif"} <= names
    with Image.open(tmp_path / "out" / "animation.gif") as gif:
        assert gif.n_frames == 4  # the initial frame and 3 more
    bad = tmp_path / "bad.toml"
    bad.write_text(toml.read_text().replace('animate = "gif"', 'animate = "avi"'))
    with pytest.raises(Exception, match="animate"):
        runner.run_scene_file(bad, tmp_path / "out2")


def test_animate_an_existing_run_folder_with_a_given_radius(tmp_path):
    pytest.importorskip("imageio")
    from PIL import Image

    from rodlab.state import save_arrays
    from rodlab.viz.tubes import animate_run_dir

    t, x = _frames(F=3)
    save_arrays(tmp_path / "trajectory.npz", {"t": t, "x": x}, {"scene": "synthetic"})
    path = animate_run_dir(tmp_path, "gif", radius=0.02)
    with Image.open(path) as gif:
        assert gif.n_frames == 3
    with pytest.raises(ModelError, match="radius"):
        animate_run_dir(tmp_path, "gif", radius=-1.0)


def test_energy_series_of_a_free_fall_match_the_metrics_definitions():
    from rodlab.render.figure import series_from_run

    g = 9.81
    b = WorldBuilder(gravity=(0.0, 0.0, -g))
    b.add_rod(_straight(11), E=1e6, G=4e5, rho=1000.0, radius=0.01)
    world = b.build()
    t = np.linspace(0.0, 0.3, 7)
    x = world.vertex_rest_x[None] - 0.5 * g * t[:, None, None] ** 2 * np.array([0.0, 0.0, 1.0])
    series = {s.title: s for s in series_from_run(t, {}, x=x, world=world)}
    energy = series["energy [J]"]
    mass = world.vertex_mass.sum()
    assert np.allclose(energy.values[:, 0], 0.5 * mass * (g * t) ** 2, rtol=1e-9, atol=1e-12)  # kinetic
    assert np.allclose(energy.values[:, 1], -0.5 * mass * (g * t) ** 2, rtol=1e-9, atol=1e-12)  # gravity falls
    assert np.allclose(series["tip of rod 0 [m]"].values[:, 2], -0.5 * g * t**2)


def test_cli_animate_without_imageio_ffmpeg_fails_before_the_run(tmp_path, monkeypatch, capsys):
    from rodlab.cli import main

    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    assert main(["run", "helix-gravity", "--out", str(tmp_path / "o"), "--animate"]) == 2
    assert "rodlab[render]" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before any work


def test_recorded_twist_reaches_trajectory_and_animation(tmp_path, monkeypatch):
    """``uniform-twist`` turned by a quarter turn: ``trajectory.npz`` keeps m1 per edge and frame,
    turning about the rod axis (+x) by the clamp's angle ``min(rate t, pi/2)`` from the first edge
    to the last, linearly along the rod (uniform twist, equal edges); the film of the run folder
    draws every frame with those directors (no transported fallback)."""
    pytest.importorskip("imageio")
    from rodlab.cli import main
    from rodlab.render import animate
    from rodlab.viz.tubes import animate_run_dir

    out = tmp_path / "twist"
    assert main(["run", "uniform-twist", "--no-plot", "--out", str(out), "--set", "n=9", "--set", "turns=0.25",
                 "--set", "grading=1", "--set", "anisotropy=1", "--set", "t_end=0.05"]) == 0
    traj = np.load(out / "trajectory.npz")
    m1, t = traj["edge_m1"], traj["t"]
    assert m1.dtype == np.float32 and m1.shape == (t.size, 8, 3)
    angle = np.unwrap(np.arctan2(m1[..., 2], m1[..., 1]), axis=1)
    turned = angle - angle[:, :1]
    expected = np.minimum(2 * math.pi * 0.25 / 0.05 * t, math.pi / 2)[:, None] * np.linspace(0.0, 1.0, 8)[None, :]
    assert np.abs(turned - expected).max() < 1e-5  # a twist of the other sign would be off by up to pi
    assert np.abs(m1[..., 0]).max() < 1e-6         # normal to the straight rod
    seen = []
    real = animate.render_frame

    def spy(scene, x, **kw):
        seen.append(kw.get("edge_m1"))
        return real(scene, x, **kw)

    monkeypatch.setattr(animate, "render_frame", spy)
    animate_run_dir(out, "gif", radius=0.01)
    assert len(seen) == t.size and all(s is not None for s in seen)
    np.testing.assert_array_equal(seen[-1], m1[-1].astype(float))
