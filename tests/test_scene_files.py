"""Scene files (``rodlab run FILE.toml``): checking, round trips, the world they build, every
example runs, the trajectory layout, clean errors and exit status 2."""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rodlab.cli import main
from rodlab.hair.formats import write_data
from rodlab.scenefile import SceneFileError, dumps, load, loads, run_scene_file
from rodlab.scenefile.runner import build_world_indexed, make_scene_simulator
from rodlab.solvers import METHODS
from rodlab.world import WorldBuilder, shapes

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))

ROD = """
[[rod]]
n = 10
length = 1.0
radius = 0.01
E = 1.0e8
G = 3.3e7
rho = 1000.0
clamp = ["start"]
"""


def _write(tmp_path, text, name="bad.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _check_all(path, overrides=None):
    """Everything a run checks before stepping: file, world, simulator."""
    spec = load(path, overrides)
    world, _ = build_world_indexed(spec)
    make_scene_simulator(spec, world)


def _method_available(method):
    import importlib

    module = METHODS[method].split(":")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        pytest.skip(f"{module} is not importable yet ({exc})")


# ---- bad files: the message names the file, the key and what is allowed ----------------------
BAD = [
    ("syntax", "[simulation\nmethod = 'der'\n", ["bad.toml", "TOML syntax error", "line 1"]),
    ("unknown section", "[simulatoin]\n" + ROD, ["bad.toml", "simulatoin", "unknown section", "allowed: description, simulation"]),
    ("unknown rod key", ROD + "nn = 5\n", ["rod[0].nn", "unknown key", "allowed keys for a straight rod", "n, length, start"]),
    ("n too small", ROD.replace("n = 10", "n = 1"), ["rod[0].n", "1 is out of range", "an integer >= 2"]),
    ("n of rod 1 a string", ROD + ROD.replace("n = 10", 'n = "ten"'), ["rod[1].n", "expected an integer >= 2", "'ten'"]),
    ("method", "[simulation]\nmethod = 'verlet'\n" + ROD,
     ["simulation.method", "'verlet' is not allowed", "'der', 'der-implicit', 'compact', 'galpha'"]),
    ("radius", ROD.replace("radius = 0.01", "radius = -0.01"), ["rod[0].radius", "-0.01 is out of range", "> 0 m"]),
    ("clamp end", ROD.replace('clamp = ["start"]', 'clamp = ["middle"]'), ["rod[0].clamp[0]", "'middle'", "'start', 'end'"]),
    ("pin range", ROD + "pin = [10]\n", ["rod[0].pin[0]", "10 is out of range", "[-10, 9]"]),
    ("material and stiffness", ROD + "bending = 0.1\n", ["rod[0].bending", "not both"]),
    ("helix turns", "[[rod]]\nshape = 'helix'\nhelix_radius = 0.1\npitch = 0.1\n", ["rod[0].turns", "missing", "> 0"]),
    ("helix key on straight", ROD + "turns = 3\n", ["rod[0].turns", "unknown key", "for a straight rod"]),
    ("gravity", "[simulation]\ngravity = [0.0, -9.81]\n" + ROD, ["simulation.gravity", "3-vector"]),
    ("dt", "[simulation]\ndt = 0.0\n" + ROD, ["simulation.dt", "0.0 is out of range", "> 0 s"]),
    ("t_end", "[simulation]\nt_end = -1\n" + ROD, ["simulation.t_end", "-1.0 is out of range", ">= 0 s"]),
    ("unknown option", "[simulation.options]\nbogus = 1\n" + ROD,
     ["simulation.options.bogus", "method der has no option 'bogus'", "its options: dt, ", "damping_scheme"]),
    ("bad option value", "[simulation.options]\ndamping_scheme = 'sideways'\n" + ROD,
     ["simulation.options.damping_scheme", "sideways"]),
    ("unsupported feature", "[simulation]\nmethod = 'galpha'\n" + ROD + "[[obstacle]]\nkind = 'plane'\nnormal = [0.0, 0.0, 1.0]\npoint = [0.0, 0.0, -1.0]\n",
     ["simulation.method", "method galpha does not support obstacles"]),
    ("wind drag", ROD + "[wind]\nvelocity = [1.0, 0.0, 0.0]\ndrag = 0\n", ["wind.drag", "> 0 N s/m^2"]),
    ("weld rod", ROD + "[[body]]\nmass = 1.0\ninertia = [1.0, 1.0, 1.0]\n[[weld]]\nrod = 3\nend = 'end'\nbody = 0\n",
     ["weld[0].rod", "3 is out of range", "rods 0..0"]),
    ("weld clamped end", ROD + "[[body]]\nmass = 1.0\ninertia = [1.0, 1.0, 1.0]\n[[weld]]\nrod = 0\nend = 'start'\nbody = 0\n",
     ["weld[0]", "both clamped and welded"]),
    ("body inertia", ROD + "[[body]]\nmass = 1.0\ninertia = [1.0, 1.0]\n", ["body[0].inertia", "3 principal moments"]),
    ("point force vertex", ROD + "[[point_force]]\nrod = 0\nvertex = 12\nforce = [0.0, 0.0, 1.0]\n",
     ["point_force[0]", "vertex of rod 0 must be in [-10, 9]"]),
    ("obstacle kind", ROD + "[[obstacle]]\nkind = 'cone'\n", ["obstacle[0].kind", "'cone'", "'plane', 'sphere', 'capsule'"]),
    ("mesh degenerate", ROD + "[[obstacle]]\nkind = 'mesh'\nvertices = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]\n"
     "triangles = [[0, 1, 2]]\n", ["obstacle[0]", "degenerate"]),
    ("hair file", "[[rod]]\nshape = 'file'\nfile = 'nowhere.data'\n", ["rod[0]", "nowhere.data", "no such file"]),
    ("hairstyle style", "[[hairstyle]]\nstrands = 2\nvertices = 5\nstyle = 'afro'\n",
     ["hairstyle[0].style", "'straight', 'wavy', 'curly'"]),
    ("open circle", "[[rod]]\nshape = 'circle'\nclosed = false\n", ["rod[0].closed", "closed must be true"]),
    ("closed straight", ROD + "closed = true\n", ["rod[0].closed", "only circle and points rods"]),
    ("no rods", "[simulation]\nt_end = 1.0\n", ["rod", "at least one [[rod]] or [[hairstyle]]"]),
    ("rest_d1 count", ROD + "rest_d1 = [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]\n", ["rod[0].rest_d1", "9 (one per edge), got 2"]),
    ("rest_d1 along the rod", ROD + "rest_d1 = [1.0, 0.0, 0.0]\n", ["rod[0].rest_d1", "parallel to edge 0"]),
    ("points n", "[[rod]]\nshape = 'points'\npoints = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]\nn = 3\n",
     ["rod[0].n", "points has 2 vertices"]),
    ("frames twice", "[simulation]\nframes = 10\n[output]\nframes = 20\n" + ROD, ["simulation.frames", "disagrees"]),
    ("clamp table twice", ROD + "[[clamp]]\nrod = 0\nend = 'start'\nslide_axis = [1.0, 0.0, 0.0]\n",
     ["clamp[0].end", "clamped twice", "not both"]),
    ("clamp table rod", ROD + "[[clamp]]\nrod = 2\nend = 'end'\n", ["clamp[0].rod", "2 is out of range", "rods 0..0"]),
    ("clamp table end", ROD + "[[clamp]]\nrod = 0\nend = 'middle'\n", ["clamp[0].end", "'middle'", "'start', 'end'"]),
    ("clamp twist axis without rate", ROD + "[[clamp]]\nrod = 0\nend = 'end'\ntwist_axis = [1.0, 0.0, 0.0]\n",
     ["clamp[0].twist_rate", "missing"]),
    ("clamp slide axis zero", ROD + "[[clamp]]\nrod = 0\nend = 'end'\nslide_axis = [0.0, 0.0, 0.0]\n",
     ["clamp[0].slide_axis", "nonzero"]),
    ("weld a clamp-table end", ROD + "[[clamp]]\nrod = 0\nend = 'end'\nslide_axis = [1.0, 0.0, 0.0]\n[[body]]\nmass = 1.0\n"
     "inertia = [1.0, 1.0, 1.0]\n[[weld]]\nrod = 0\nend = 'end'\nbody = 0\n", ["weld[0]", "both clamped and welded"]),
]


@pytest.mark.parametrize("text,needles", [pytest.param(t, n, id=i) for i, t, n in BAD])
def test_bad_file_names_file_key_and_allowed_values(tmp_path, text, needles):
    path = _write(tmp_path, text)
    with pytest.raises(SceneFileError) as info:
        _check_all(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"


@pytest.mark.parametrize("overrides,needles", [
    ({"rod[3].n": "5"}, ["--set rod[3].n", "1 [[rod]] table", "out of range"]),
    ({"simulation.t_end": "-1"}, ["simulation.t_end", "-1.0 is out of range"]),
    ({"simulation.method": "verlet"}, ["simulation.method", "'verlet' is not allowed"]),
    ({"rod.n": "5"}, ["--set rod.n", "rod is an array of tables: index it"]),
    ({"simulation.nope": "1"}, ["simulation.nope", "unknown key"]),
])
def test_bad_overrides_are_named(tmp_path, overrides, needles):
    path = _write(tmp_path, ROD)
    with pytest.raises(SceneFileError) as info:
        _check_all(path, overrides)
    for needle in needles:
        assert needle in str(info.value)


def test_missing_file_and_wrong_extension(tmp_path):
    with pytest.raises(SceneFileError, match="no such file"):
        load(tmp_path / "absent.toml")
    with pytest.raises(SceneFileError, match="must end in .toml"):
        load(_write(tmp_path, ROD, "scene.txt"))


# ---- normalization, overrides and round trips -----------------------------------------------
def test_defaults_are_filled_and_numbers_normalized(tmp_path):
    spec = loads("[[rod]]\nn = 5\nlength = 2\nE = 3e8\n")
    sim, rod, out = spec.data["simulation"], spec.data["rod"][0], spec.data["output"]
    assert sim == {"method": "der", "t_end": 1.0, "static": False, "gravity": [0.0, 0.0, -9.81], "damping": 0.0,
                   "options": {}}
    assert rod["length"] == 2.0 and isinstance(rod["length"], float)
    assert rod["G"] == pytest.approx(1e8) and rod["rho"] == 1000.0 and rod["radius"] == 0.01
    assert rod["direction"] == [1.0, 0.0, 0.0] and rod["clamp"] == [] and rod["closed"] is False
    assert out == {"frames": 100, "pictures": True}
    assert loads("[simulation]\nframes = 7\n[[rod]]\n").frames == 7


def test_override_values_are_read_as_toml(tmp_path):
    path = _write(tmp_path, ROD + ROD)
    spec = load(path, {"simulation.t_end": "0.5", "simulation.method": "compact", "rod[1].start": "[0, 1, 0]",
                       "simulation.options.newton_iters": "3", "output.pictures": "false", "rod[0].n": 12})
    assert spec.data["simulation"]["t_end"] == 0.5 and spec.method == "compact"
    assert spec.data["rod"][1]["start"] == [0.0, 1.0, 0.0] and spec.data["rod"][0]["n"] == 12
    assert spec.data["simulation"]["options"] == {"newton_iters": 3} and spec.pictures is False


FULL = """
description = "every section"
[simulation]
method = "der"
dt = 1e-4
t_end = 0.5
static = false
gravity = [0.0, 0.0, -9.81]
damping = 1.5
[simulation.options]
damping_scheme = "exponential"
[[rod]]
n = 8
clamp = ["start", "end"]
rest_d1 = [0.0, 0.0, 1.0]
[[rod]]
shape = "helix"
helix_radius = 0.1
pitch = 0.05
turns = 2
bending = [0.1, 0.2]
twisting = 0.05
linear_density = 0.3
stretching = 100.0
pin = [0, -1]
[[rod]]
shape = "circle"
n = 12
[[rod]]
shape = "points"
points = [[0, 0, 0], [0, 0, 1], [0, 1, 1]]
[[rod]]
shape = "file"
file = "strands.data"
max_strands = 2
strands = [2, 0, 1]
scale = 0.01
clamp = ["start"]
[[hairstyle]]
strands = 3
vertices = 6
style = "curly"
[[body]]
mass = 2.0
inertia = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]]
position = [0.0, 0.0, -1.0]
[[weld]]
rod = 3
end = "end"
body = 0
[[obstacle]]
kind = "plane"
normal = [0, 0, 1]
[[obstacle]]
kind = "sphere"
center = [0, 0, 0]
radius = 0.1
[[obstacle]]
kind = "capsule"
a = [0, 0, 0]
b = [1, 0, 0]
radius = 0.1
[[obstacle]]
kind = "cylinder"
point = [0, 0, 0]
axis = [0, 1, 0]
radius = 0.1
[[obstacle]]
kind = "mesh"
vertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
triangles = [[0, 1, 2]]
[[point_force]]
rod = 0
vertex = 4
force = [0.0, 1.0, 0.0]
[wind]
velocity = [1.0, 0.0, 0.0]
drag = 0.01
[output]
frames = 10
pictures = false
"""


def _strands_file(folder: Path) -> list[np.ndarray]:
    strands = [np.column_stack([np.full(5, float(k)), np.zeros(5), -np.arange(5.0)]) for k in range(3)]
    write_data(folder / "strands.data", strands)
    return strands


@pytest.mark.parametrize("path", [*EXAMPLES, "FULL"], ids=lambda p: getattr(p, "stem", p))
def test_parse_dump_parse_round_trip(tmp_path, path):
    spec = loads(FULL, base_dir=tmp_path) if path == "FULL" else load(path)
    text = dumps(spec)
    again = loads(text, base_dir=tmp_path)
    assert again == spec
    assert dumps(again) == text


def test_dump_quotes_odd_keys_and_strings():
    spec = loads('[simulation.options]\n"odd key" = "a\\"b\\\\c\\u00e9"\nlist = [1, 2.5]\n[[rod]]\nE = 1e-300\n')
    text = dumps(spec)
    assert '"odd key" = "a\\"b\\\\c\u00e9"' in text
    assert loads(text) == spec and spec.data["simulation"]["options"]["odd key"] == 'a"b\\c\u00e9'
    assert loads(text).data["rod"][0]["E"] == 1e-300


def test_full_scene_builds_the_world_it_describes(tmp_path):
    strands = _strands_file(tmp_path)
    spec = loads(FULL, base_dir=tmp_path)
    world, groups = build_world_indexed(spec)
    assert groups == [[0], [1], [2], [3], [4, 5], [6, 7, 8]]
    assert world.n_rods == 9 and world.n_bodies == 1 and len(world.obstacles) == 5
    assert world.loads.damping == 1.5 and world.loads.gravity == (0.0, 0.0, -9.81)
    np.testing.assert_allclose(world.rods[4].rest_positions, 0.01 * strands[2])
    np.testing.assert_allclose(world.rods[5].rest_positions, 0.01 * strands[0])
    assert world.rods[4].boundary.clamps[0].edge == 0
    assert world.welds[0].rod == 3 and world.welds[0].edge == 1 and world.welds[0].body == 0
    assert [c.edge for c in world.rods[0].boundary.clamps] == [0, 6]
    assert world.rods[1].boundary.fixed_vertices == (0, 49)
    np.testing.assert_allclose(world.rods[1].bending_stiffness[0], [0.1, 0.2])
    assert world.rod_closed.tolist() == [False, False, True, False, False, False, False, False, False]
    assert world.features() >= {"rigid bodies", "obstacles", "wind", "point forces", "closed rods", "pinned vertices",
                                "anisotropic bending", "rods given by stiffness"}
    # rest_d1 = z for a rod along x: normal to the edges as given
    np.testing.assert_allclose(world.rods[0].rest_d1, np.tile([0.0, 0.0, 1.0], (7, 1)), atol=1e-15)


def test_scene_file_world_matches_the_builder(tmp_path):
    """The file's keys land on the builder's arguments (direction, start, material, clamps)."""
    text = ("[simulation]\ngravity = [0.0, -2.0, 0.0]\ndamping = 0.5\n[[rod]]\nn = 7\nlength = 0.3\nstart = [1, 2, 3]\n"
            "direction = [0, 0, 2]\nradius = 0.002\nE = 2e9\nG = 7e8\nrho = 900\nclamp = ['end']\npin = [1]\n")
    world = loads(text).build_world()
    b = WorldBuilder(gravity=(0, -2, 0), damping=0.5)
    r = b.add_rod(shapes.straight(7, 0.3, (1, 2, 3), (0, 0, 1)), E=2e9, G=7e8, rho=900, radius=0.002)
    b.clamp(r, "end")
    b.pin(r, 1)
    ref = b.build()
    for name in ("vertex_rest_x", "vertex_mass", "vertex_fixed", "edge_rest_length", "edge_bend_stiffness",
                 "edge_twist_stiffness", "edge_rest_d1"):
        np.testing.assert_allclose(getattr(world, name), getattr(ref, name), rtol=1e-14, atol=1e-15, err_msg=name)
    assert world.loads.gravity == ref.loads.gravity and world.loads.damping == 0.5


def test_hair_file_strand_selection_errors(tmp_path):
    _strands_file(tmp_path)
    text = "[[rod]]\nshape = 'file'\nfile = 'strands.data'\nstrands = [0, 3]\n"
    with pytest.raises(SceneFileError, match=r"rod\[0\]\.strands\[1\]: strand 3 is out of range: .* has strands 0\.\.2"):
        loads(text, base_dir=tmp_path).build_world()
    text = "[[rod]]\nshape = 'file'\nfile = 'strands.data'\npin = [7]\n"
    with pytest.raises(SceneFileError, match=r"rod\[0\] \(strand 0\): pin vertex of rod 0 must be in \[-5, 4\]"):
        loads(text, base_dir=tmp_path).build_world()


# ---- running -------------------------------------------------------------------------------
def _short(path):
    """Overrides that keep every example to a few steps."""
    spec = load(path)
    if spec.data["simulation"]["static"]:
        return {}
    return {"simulation.t_end": 0.01, "output.frames": 3}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_runs(tmp_path, path):
    _method_available(load(path).method)
    run = run_scene_file(path, tmp_path / "out", _short(path), plot=False)
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["scene"] == path.stem and m["method"] == run.spec.method
    assert m["n_vertices"] == run.world.n_vertices and m["n_rods"] == run.world.n_rods
    for k, v in m.items():
        if isinstance(v, float):
            assert math.isfinite(v), k
    assert m["inextensibility"] < 1e-4  # der-implicit stretches a little (a penalty, not a constraint)
    if m["static"]:
        assert m["static_success"] is True and m["static_residual"] < 1e-6
    else:
        assert m["steps"] >= 1 and m["t_end"] == pytest.approx(m["steps"] * m["dt"])
        assert abs(m["t_end"] - 0.01) <= m["dt"]


def test_trajectory_layout_rod_offsets_and_loads(tmp_path):
    path = EXAMPLES[0].parent / "three-rods.toml"
    out = tmp_path / "three"
    run_scene_file(path, out, {"rod[1].n": 11, "simulation.t_end": 0.05, "output.frames": 4}, plot=False)
    with np.load(out / "trajectory.npz") as data:
        t, x, off = data["t"], data["x"], data["rod_offsets"]
    assert off.tolist() == [0, 25, 36, 61]
    assert x.shape == (len(t), 61, 3) and len(t) >= 5 and t[0] == 0.0 and t[-1] == pytest.approx(0.05, abs=1e-3)
    starts = [0.0, 0.2, 0.4]
    for r in range(3):
        rod = x[:, off[r]:off[r + 1]]
        np.testing.assert_allclose(rod[0], shapes.straight(off[r + 1] - off[r], 0.8, (0, starts[r], 0)), atol=1e-15)
        np.testing.assert_allclose(rod[:, :2], np.broadcast_to(rod[0, :2], rod[:, :2].shape), atol=1e-12)  # clamped
    tips = x[-1, off[1:] - 1]
    assert np.all(tips[:, 2] < -1e-3)                 # gravity pulls every tip down
    assert tips[2, 1] > 0.4 + 1e-5                    # the tip force pushes rod 2 towards +y
    assert abs(tips[0, 1]) < 1e-12 and abs(tips[1, 1] - 0.2) < 1e-12


def test_welded_body_stays_on_the_rod_end_and_wind_blows_downwind(tmp_path):
    from rodlab.solvers.der import DERSimulator

    if not {"rigid bodies", "wind"} <= DERSimulator.supports:
        pytest.skip("der does not support rigid bodies and wind yet")
    folder = EXAMPLES[0].parent
    run_scene_file(folder / "weld-body.toml", tmp_path / "weld", {"simulation.t_end": 0.05, "output.frames": 5}, plot=False)
    with np.load(tmp_path / "weld" / "trajectory.npz") as data:
        x, body_x, body_q = data["x"], data["body_x"], data["body_q"]
    assert body_x.shape == (x.shape[0], 1, 3) and body_q.shape == (x.shape[0], 1, 4)
    gap = np.linalg.norm(body_x[:, 0] - x[:, -1], axis=1)  # body centre to the welded end vertex
    assert gap[0] < 1e-3 and np.ptp(gap) < 1e-9
    assert np.linalg.norm(body_x[-1, 0] - body_x[0, 0]) > 1e-4  # it moved
    run = run_scene_file(folder / "wind.toml", None, {"simulation.t_end": 0.05, "simulation.gravity": "[0, 0, 0]"})
    tips = run.state.vertex_x[run.world.rod_vertex_start[1:] - 1]
    assert np.all(tips[:, 0] > 1e-4) and np.all(np.abs(tips[:, 1] - [0.0, 0.1, 0.2]) < 1e-12)


def test_static_cantilever_matches_euler_bernoulli(tmp_path):
    """A stiff rod's static tip deflection through the file converges to w = q L^4 / (8 E I),
    q = rho A g, at first order in the edge length: the Richardson extrapolation of n = 20 and
    n = 40 (2 w_40 - w_20) lands within 1 % (each alone is 10 % and 5 % short)."""
    E, r, L, rho, g = 1e10, 0.01, 1.0, 1000.0, 9.81
    tips = []
    for n in (20, 40):
        text = (f"[simulation]\nstatic = true\ngravity = [0.0, 0.0, {-g}]\n[[rod]]\nn = {n}\nlength = {L}\n"
                f"radius = {r}\nE = {E}\nG = {E / 3}\nrho = {rho}\nclamp = ['start']\n")
        run = run_scene_file(_write(tmp_path, text, f"beam{n}.toml"), tmp_path / f"beam{n}", plot=False)
        assert run.metrics["static_success"] and run.recording.x.shape == (2, n, 3)
        assert abs(run.metrics["tip_y"]) < 1e-12
        tips.append(run.metrics["tip_z"])
    q, inertia = rho * math.pi * r**2 * g, math.pi * r**4 / 4
    expected = -q * L**4 / (8 * E * inertia)
    assert 0.85 < tips[0] / expected < tips[1] / expected < 1.0
    assert 2 * tips[1] - tips[0] == pytest.approx(expected, rel=0.01)


# ---- command line --------------------------------------------------------------------------
def test_cli_runs_a_scene_file_with_sets_and_picture(tmp_path, capsys):
    out = tmp_path / "pend"
    code = main(["run", str(EXAMPLES[0].parent / "pendulum.toml"), "--out", str(out),
                 "--set", "simulation.t_end=0.02", "--set", "rod[0].n=12"])
    assert code == 0
    stdout = capsys.readouterr().out
    assert "scene pendulum" in stdout and "tip_z" in stdout and "wrote" in stdout
    assert json.loads((out / "metrics.json").read_text())["n_vertices"] == 12
    assert (out / "world.png").stat().st_size > 5000


@pytest.mark.parametrize("args,needle", [
    (["--set", "rod[0].n=1"], "rod[0].n: 1 is out of range"),
    (["--set", "nonsense"], "--set expects section.key=value"),
    (["--set", "simulation.options.bogus=2"], "simulation.options.bogus: method der has no option 'bogus'"),
])
def test_cli_bad_input_exits_2(tmp_path, capsys, args, needle):
    path = _write(tmp_path, ROD, "scene.toml")
    assert main(["run", str(path), "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rodlab: error: ") and needle in err


def test_world_picture_checks_its_layout(tmp_path):
    from rodlab.viz.world_plots import plot_world_frame

    x = np.zeros((7, 3))
    with pytest.raises(ValueError, match="rod_offsets"):
        plot_world_frame(x, [0, 3, 8], tmp_path / "bad.png")
    x[:, 0] = np.arange(7.0)
    path = plot_world_frame(x, [0, 3, 7], tmp_path / "ok.png", rod_closed=[False, True], x_initial=x, body_x=[[0, 0, 1]])
    assert path.stat().st_size > 5000


def test_cli_syntax_error_exits_2_without_traceback(tmp_path):
    path = _write(tmp_path, "[[rod]]\nn = \n")
    proc = subprocess.run([sys.executable, "-m", "rodlab", "run", str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "error:" in proc.stderr and "line 2" in proc.stderr


CONTACT_SCENE = """
[simulation]
method = "der-implicit"
[[rod]]
n = 5
E = 1e7
G = 3e6
rho = 1000.0
[[rod]]
n = 5
start = [0, 0.1, 0]
E = 1e7
G = 3e6
rho = 1000.0
[[obstacle]]
kind = "plane"
normal = [0, 0, 1]
friction = 0.4
[contact]
friction = 0.2
pair_friction = [[0, 1, 0.5]]
thickness = 0.02
"""


def test_contact_section_and_obstacle_friction_build_the_world_and_round_trip():
    spec = loads(CONTACT_SCENE)
    world = spec.build_world()
    assert world.obstacle_friction(0) == 0.4
    assert world.contact.rods and world.contact.thickness == 0.02 and world.contact.skip == "auto"
    assert world.contact.rod_friction(0, 1) == 0.5 and world.contact.rod_friction(1, 1) == 0.2
    assert {"rod contact", "friction"} <= world.features()
    assert loads(dumps(spec)).data == spec.data


@pytest.mark.parametrize("section, needles", [
    ("[contact]\nfriction = -1", ["contact.friction", ">= 0"]),
    ("[contact]\npair_friction = [[0, 7, 0.1]]", ["contact.pair_friction[0]", "rods 0..1"]),
    ("[contact]\npair_friction = [[0, 1]]", ["contact.pair_friction[0]", "[rod_a, rod_b, mu]"]),
    ("[contact]\nspeed = 1", ["contact.speed", "unknown key", "pair_friction"]),
])
def test_bad_contact_sections_are_named(section, needles):
    text = CONTACT_SCENE.split("[contact]")[0] + section
    with pytest.raises(SceneFileError) as err:
        loads(text).build_world()
    for needle in needles:
        assert needle in str(err.value)


def test_clamp_tables_slide_and_twist():
    """``[[clamp]]``: a sliding clamp along x turned at 10 rad/s about its rest edge (ramped in over
    0.1 s): the world's clamp carries the axis, and its motion turns by the ramped angle."""
    text = ROD + ("[[clamp]]\nrod = 0\nend = 'end'\nslide_axis = [1.0, 0.0, 0.0]\ntwist_rate = 10.0\n"
                  "twist_ramp = 0.1\n")
    spec = loads(text)
    assert loads(dumps(spec)).data == spec.data
    clamps = {c.edge % 9: c for c in spec.build_world().rods[0].boundary.clamps}
    assert sorted(clamps) == [0, 8] and clamps[0].motion is None and clamps[0].slide_axis is None
    end = clamps[8]
    assert end.slide_axis == (1.0, 0.0, 0.0) and not end.free_rotation
    for t, angle in ((0.05, 10.0 * 0.05**2 / 0.2), (0.5, 10.0 * (0.5 - 0.05))):
        R, d = end.motion(t)
        assert np.allclose(d, 0.0)
        assert np.allclose(R @ [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], atol=1e-12)  # about the edge (x)
        assert abs(math.remainder(math.atan2(R[2, 1], R[1, 1]) - angle, 2 * math.pi)) < 1e-12
