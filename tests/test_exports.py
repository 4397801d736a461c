"""Exports (issue #12 item 3): every format is read back with an independent reader.

VTK ``.vtp`` with VTK's own ``vtkXMLPolyDataReader`` and the ``.pvd`` with ``xml.etree``; USD with
``pxr.Usd.Stage.Open``; PLY with ``plyfile``; ``.hair`` / ``.data`` with rodlab's hair readers.
Expected values come from the trajectory and from the repo's own geometry kernels, not from the
exporter.
"""
import math
import sys
import xml.etree.ElementTree as ET

import numpy as np
import plyfile
import pytest
# only VTK's XML reader and numpy bridge: the umbrella ``import vtk`` would load the rendering
# modules, which need libGL on the machine
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOXML import vtkXMLPolyDataReader

from rodlab.cli import main
from rodlab.geometry.curves import compute_curvature_binormals, reference_twist
from rodlab.hair.formats import read_data, read_hair
from rodlab.io.exports import ExportError, export
from rodlab.state import load_arrays, save_arrays

ALL = ("vtk", "usd", "ply", "hair", "data")


def _have_pxr():
    try:
        import pxr  # noqa: F401
    except ImportError:
        return False
    return True


needs_pxr = pytest.mark.skipif(not _have_pxr(), reason="usd-core (module pxr) is not installed: pip install 'rodlab[usd]'")


@pytest.fixture(scope="module")
def hair_run(tmp_path_factory):
    """3 strands x 5 vertices, exported by ``rodlab run --export`` (every format but usd where pxr is missing)."""
    out = tmp_path_factory.mktemp("hair") / "run"
    flags = [a for f in ALL if f != "usd" or _have_pxr() for a in ("--export", f)]
    assert main(["run", "hairstyle", "--set", "strands=3", "--set", "vertices=5", "--set", "t_end=0.02",
                 "--set", "frames=4", "--no-plot", "--out", str(out), *flags]) == 0
    return out


@pytest.fixture(scope="module")
def cant_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cant") / "run"
    assert main(["run", "cantilever", "--set", "n=10", "--set", "t_end=0.05", "--no-plot", "--out", str(out)]) == 0
    return out


def _traj(run_dir):
    arrays, meta = load_arrays(run_dir / "trajectory.npz")
    n = arrays["x"].shape[1]
    offsets = arrays.get("rod_offsets", np.array([0, n]))
    return arrays, meta, offsets


def read_vtp(path):
    reader = vtkXMLPolyDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    poly = reader.GetOutput()
    assert reader.GetErrorCode() == 0 and poly.GetNumberOfPoints() > 0, path
    pd = poly.GetPointData()
    fields = {pd.GetArrayName(i): vtk_to_numpy(pd.GetArray(i)) for i in range(pd.GetNumberOfArrays())}
    lines = poly.GetLines()
    offs, conn = vtk_to_numpy(lines.GetOffsetsArray()), vtk_to_numpy(lines.GetConnectivityArray())
    cells = [conn[offs[i]:offs[i + 1]] for i in range(len(offs) - 1)]
    time = vtk_to_numpy(poly.GetFieldData().GetArray("TimeValue"))
    return vtk_to_numpy(poly.GetPoints().GetData()), fields, cells, time


def read_pvd(path):
    root = ET.parse(path).getroot()
    assert root.get("type") == "Collection"
    return [(float(d.get("timestep")), path.parent / d.get("file")) for d in root.iter("DataSet")]


def curvature_by_kernel(x, offsets, closed=None):
    """|kb| / Voronoi length per vertex from the repo's DER kernel (Bergou et al. 2008, Eq. 1)."""
    out = np.zeros(x.shape[0])
    for r, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        p = x[a:b]
        c = bool(closed[r]) if closed is not None else False
        e = np.roll(p, -1, axis=0) - p if c else p[1:] - p[:-1]
        l = np.linalg.norm(e, axis=1)
        nj = e.shape[0] if c else e.shape[0] - 1
        kb = np.empty((nj, 3))
        compute_curvature_binormals(e / l[:, None], c, kb)
        nxt = (np.arange(nj) + 1) % e.shape[0]
        out[a + (np.arange(nj) + 1) % (b - a)] = np.linalg.norm(kb, axis=1) / (0.5 * (l[:nj] + l[nxt]))
    return out


@pytest.mark.parametrize("which", ["hair", "cant"])
def test_vtk_frames_match_the_trajectory(which, hair_run, cant_run, tmp_path):
    run_dir = hair_run if which == "hair" else cant_run
    if which == "cant":
        assert main(["export", str(run_dir), "--format", "vtk"]) == 0
    arrays, meta, offsets = _traj(run_dir)
    t, x = arrays["t"], arrays["x"]
    entries = read_pvd(run_dir / "export" / f"{meta['scene']}.pvd")
    assert [e[0] for e in entries] == t.tolist()          # times exactly as simulated
    velocity = np.gradient(x, t, axis=0)                   # numpy's non-uniform 2nd-order differences
    from rodlab.world.hairstyle import HAIR_RADIUS

    radius = meta["params"]["radius"] if which == "cant" else HAIR_RADIUS  # each run's world radius
    assert len(entries) == x.shape[0] >= 2
    for k, (_, path) in enumerate(entries):
        points, fields, cells, time = read_vtp(path)
        np.testing.assert_array_equal(points, x[k])
        assert time.tolist() == [t[k]]
        assert len(cells) == len(offsets) - 1
        for r, cell in enumerate(cells):
            np.testing.assert_array_equal(cell, np.arange(offsets[r], offsets[r + 1]))
        assert set(fields) == {"velocity", "radius", "curvature", "twist"}  # twist from edge_m1; no contact
        assert np.all(np.isfinite(fields["twist"]))
        if which == "cant":   # a planar cantilever does not twist (float32 directors: ~1e-6 rad)
            assert np.abs(fields["twist"]).max() < 1e-3
        np.testing.assert_allclose(fields["velocity"], velocity[k], rtol=1e-10, atol=1e-12 * np.abs(velocity).max())
        np.testing.assert_array_equal(fields["radius"], np.full(x.shape[1], radius))
        np.testing.assert_allclose(fields["curvature"], curvature_by_kernel(x[k], offsets), rtol=1e-12, atol=1e-12)
    if which == "hair":
        assert np.abs(fields["curvature"]).max() > 1.0    # wavy strands: the check above is not 0 == 0


@needs_pxr
def test_usd_points_counts_widths_and_time(hair_run):
    from pxr import Usd, UsdGeom

    arrays, meta, offsets = _traj(hair_run)
    t, x = arrays["t"], arrays["x"]
    stage = Usd.Stage.Open(str(hair_run / "export" / "hairstyle.usd"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z and UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    curves = UsdGeom.BasisCurves(stage.GetPrimAtPath("/Rods/open"))
    assert curves and curves.GetTypeAttr().Get() == UsdGeom.Tokens.linear
    assert not stage.GetPrimAtPath("/Rods/closed")
    assert list(curves.GetCurveVertexCountsAttr().Get()) == np.diff(offsets).tolist() == [5, 5, 5]
    from rodlab.world.hairstyle import HAIR_RADIUS

    # the run records its world's rod radii (rod_radius): widths are the hair's diameter
    np.testing.assert_array_equal(np.array(curves.GetWidthsAttr().Get()), np.full(15, 2 * HAIR_RADIUS, dtype=np.float32))
    assert curves.GetWidthsInterpolation() == UsdGeom.Tokens.vertex
    tps = stage.GetTimeCodesPerSecond()
    assert tps == pytest.approx((len(t) - 1) / (t[-1] - t[0]), rel=1e-12)
    codes = curves.GetPointsAttr().GetTimeSamples()
    assert len(codes) == len(t)
    np.testing.assert_allclose(np.array(codes) / tps, t - t[0], rtol=1e-12, atol=1e-12)
    for k in (1, len(t) - 1):
        pts = np.array(curves.GetPointsAttr().Get(Usd.TimeCode(codes[k])))
        np.testing.assert_array_equal(pts, x[k].astype(np.float32))
    assert not np.array_equal(x[1], x[-1])


def test_ply_read_with_plyfile(hair_run, cant_run):
    assert main(["export", str(cant_run), "--format", "ply", "--frame", "0", "--out", str(cant_run / "first.ply")]) == 0
    for run_dir, path, k in ((hair_run, hair_run / "export" / "hairstyle.ply", -1), (cant_run, cant_run / "first.ply", 0)):
        arrays, meta, offsets = _traj(run_dir)
        ply = plyfile.PlyData.read(str(path))
        v = ply["vertex"]
        np.testing.assert_array_equal(np.stack([v["x"], v["y"], v["z"]], axis=1), arrays["x"][k].astype(np.float32))
        pairs = np.stack([ply["edge"]["vertex1"], ply["edge"]["vertex2"]], axis=1)
        expected = np.concatenate([np.stack([np.arange(a, b - 1), np.arange(a + 1, b)], axis=1)
                                   for a, b in zip(offsets[:-1], offsets[1:])])
        np.testing.assert_array_equal(pairs, expected)


@pytest.mark.parametrize("fmt,reader", [("hair", read_hair), ("data", read_data)])
def test_hair_files_read_back(fmt, reader, hair_run, cant_run):
    arrays, _, offsets = _traj(hair_run)
    strands = reader(hair_run / "export" / f"hairstyle.{fmt}")
    assert len(strands) == 3
    for r, s in enumerate(strands):
        np.testing.assert_array_equal(s, arrays["x"][-1, offsets[r]:offsets[r + 1]].astype(np.float32))
    assert main(["export", str(cant_run), "--format", fmt, "--frame", "-2"]) == 0
    arrays, _, _ = _traj(cant_run)
    (s,) = reader(cant_run / "export" / f"cantilever.{fmt}")
    np.testing.assert_array_equal(s, arrays["x"][-2].astype(np.float32))


# ---- synthetic runs: closed rods, twist, stored velocity and contact force -------------------------
def _polygon(n, radius, z=0.0):
    phi = 2 * np.pi * np.arange(n) / n
    return np.stack([radius * np.cos(phi), radius * np.sin(phi), np.full(n, z)], axis=1)


def _helix(n):
    s = np.linspace(0.0, 1.0, n)
    return np.stack([0.1 * np.cos(6 * s), 0.1 * np.sin(6 * s), 0.3 * s + 0.02 * s ** 2], axis=1)


def _frames(x0, t):
    return np.stack([x0 * (1.0 + 0.1 * tk) + np.array([0.0, 0.0, tk]) for tk in t])


def _unit_normal(t, rng):
    d = rng.normal(size=t.shape)
    d -= np.einsum("ij,ij->i", d, t)[:, None] * t
    return d / np.linalg.norm(d, axis=1)[:, None]


@pytest.fixture
def synthetic(tmp_path):
    """Rod 0 an open helix (12 vertices), rod 1 a closed 8-gon of radius 0.05 m; 4 frames."""
    rng = np.random.default_rng(3)
    t = np.array([0.0, 0.1, 0.25, 0.3])
    x0 = np.concatenate([_helix(12), _polygon(8, 0.05, z=1.0)])
    x = _frames(x0, t)
    n, nj = x.shape[1], 10 + 8
    arrays = {"t": t, "x": x, "rod_offsets": np.array([0, 12, 20]), "rod_closed": np.array([False, True]),
              "rod_radius": np.array([0.002, 0.004]), "v": rng.normal(size=(4, n, 3)),
              "contact_force": rng.normal(size=(4, n, 3)), "twist_density": rng.normal(size=(4, nj))}
    run_dir = tmp_path / "syn"
    run_dir.mkdir()
    save_arrays(run_dir / "trajectory.npz", arrays, {"scene": "syn"})
    return run_dir, arrays


def test_closed_rods_stored_fields_and_joint_placement(synthetic):
    run_dir, a = synthetic
    entries = read_pvd(export(run_dir, "vtk")[0])
    joint_vertex = np.concatenate([np.arange(1, 11), 12 + (np.arange(8) + 1) % 8])
    for k, (time, path) in enumerate(entries):
        points, fields, cells, _ = read_vtp(path)
        assert time == a["t"][k]
        np.testing.assert_array_equal(cells[1], [12, 13, 14, 15, 16, 17, 18, 19, 12])   # closed polyline
        np.testing.assert_array_equal(fields["velocity"], a["v"][k])                      # stored, not differenced
        np.testing.assert_array_equal(fields["contact_force"], a["contact_force"][k])
        np.testing.assert_array_equal(fields["radius"], np.repeat([0.002, 0.004], [12, 8]))
        twist = np.zeros(20)
        twist[joint_vertex] = a["twist_density"][k]
        np.testing.assert_array_equal(fields["twist"], twist)
        # a regular 8-gon of circumradius R: |kb| = 2 tan(pi/8), edge 2 R sin(pi/8), at every vertex
        scale = 1.0 + 0.1 * a["t"][k]
        edge = 2 * 0.05 * scale * math.sin(math.pi / 8)
        np.testing.assert_allclose(fields["curvature"][12:], 2 * math.tan(math.pi / 8) / edge, rtol=1e-12)
        np.testing.assert_allclose(fields["curvature"], curvature_by_kernel(points, [0, 12, 20], [False, True]), rtol=1e-12)
        assert fields["curvature"][0] == fields["curvature"][11] == 0.0
    if _have_pxr():
        from pxr import Usd, UsdGeom

        stage = Usd.Stage.Open(str(export(run_dir, "usd", out=run_dir / "s.usda")[0]))
        closed = UsdGeom.BasisCurves(stage.GetPrimAtPath("/Rods/closed"))
        assert closed.GetWrapAttr().Get() == UsdGeom.Tokens.periodic
        assert list(closed.GetCurveVertexCountsAttr().Get()) == [8]
        np.testing.assert_array_equal(np.array(closed.GetPointsAttr().Get(Usd.TimeCode(0))), a["x"][0, 12:].astype(np.float32))
        np.testing.assert_array_equal(np.array(closed.GetWidthsAttr().Get()), np.full(8, 0.008, dtype=np.float32))


@pytest.mark.parametrize("source", ["theta", "edge_m1"])
def test_twist_from_theta_and_reference_directors_matches_the_der_reference_twist(tmp_path, source):
    """twist = theta_{k+1} - theta_k + reference twist (Bergou et al. 2008), with the repo's kernel
    giving the reference twist of arbitrary reference directors; divided by the Voronoi length.
    ``edge_m1``: the same material directors as a recording keeps them (float32, a frame axis)."""
    rng = np.random.default_rng(7)
    x = np.concatenate([_helix(9), _polygon(6, 0.05)])[None]
    offsets, closed = [0, 9, 15], [False, True]
    thetas, d1s, m1s, expected = [], [], [], np.zeros(15)
    for r, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        p = x[0, a:b]
        e = np.roll(p, -1, axis=0) - p if closed[r] else p[1:] - p[:-1]
        l = np.linalg.norm(e, axis=1)
        tang = e / l[:, None]
        d1, theta = _unit_normal(tang, rng), rng.uniform(-1.0, 1.0, e.shape[0])
        nj = e.shape[0] if closed[r] else e.shape[0] - 1
        ref = np.empty(nj)
        reference_twist(tang, d1, closed[r], np.zeros(nj), ref)
        nxt = (np.arange(nj) + 1) % e.shape[0]
        m = theta[nxt] - theta[:nj] + ref
        m = (m + np.pi) % (2 * np.pi) - np.pi
        expected[a + (np.arange(nj) + 1) % (b - a)] = m / (0.5 * (l[:nj] + l[nxt]))
        thetas.append(theta)
        d1s.append(d1)
        m1s.append(np.cos(theta)[:, None] * d1 + np.sin(theta)[:, None] * np.cross(tang, d1))
    assert np.abs(expected).max() > 1.0
    run_dir = tmp_path / "tw"
    run_dir.mkdir()
    arrays = {"t": np.zeros(1), "x": x, "rod_offsets": np.array(offsets), "rod_closed": np.array(closed)}
    if source == "theta":
        arrays |= {"theta": np.concatenate(thetas), "ref_d1": np.concatenate(d1s)}
    else:
        arrays["edge_m1"] = np.concatenate(m1s)[None].astype(np.float32)
    save_arrays(run_dir / "trajectory.npz", arrays, {"scene": "tw"})
    (path,) = [p for _, p in read_pvd(export(run_dir, "vtk", radius=0.01)[0])]
    _, fields, _, _ = read_vtp(path)
    tol = dict(rtol=1e-10, atol=1e-12) if source == "theta" else dict(rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(fields["twist"], expected, **tol)
    assert "velocity" not in fields   # one frame: nothing to difference


@pytest.mark.parametrize("args,needle", [
    (["export", "{nodir}", "--format", "vtk"], "does not exist"),
    (["export", "{empty}", "--format", "vtk"], "trajectory.npz is missing"),
    (["export", "{run}", "--format", "ply", "--frame", "4"], "frame must be in [-4, 3]"),
    (["export", "{run}", "--format", "hair", "--frame", "-5"], "frame must be in [-4, 3]"),
    (["export", "{run}", "--format", "vtk", "--radius", "0"], "radius must be a finite number > 0 m"),
    (["export", "{run}", "--format", "data", "--out", "{run}/x.hair"], "must end with .data"),
    (["export", "{bad}", "--format", "vtk"], "x must have shape"),
])
def test_bad_input_exits_2_and_says_why(args, needle, synthetic, tmp_path, capsys):
    run_dir, _ = synthetic
    (tmp_path / "empty").mkdir()
    bad = tmp_path / "bad"
    bad.mkdir()
    save_arrays(bad / "trajectory.npz", {"t": np.zeros(2), "x": np.zeros((2, 5))})
    paths = {"nodir": tmp_path / "nope", "empty": tmp_path / "empty", "run": run_dir, "bad": bad}
    assert main([a.format(**paths) for a in args]) == 2
    assert needle in capsys.readouterr().err


def test_unknown_format_and_missing_pxr_are_clear(synthetic, monkeypatch):
    run_dir, _ = synthetic
    with pytest.raises(ExportError, match="format must be one of vtk, usd, ply, hair, data"):
        export(run_dir, "obj")
    with pytest.raises(SystemExit) as exc:
        main(["export", str(run_dir), "--format", "obj"])
    assert exc.value.code == 2
    monkeypatch.setitem(sys.modules, "pxr", None)   # import pxr now raises ImportError
    with pytest.raises(ExportError, match=r"pip install 'rodlab\[usd\]'"):
        export(run_dir, "usd")
    assert not (run_dir / "export" / "syn.usd").exists()


def test_velocity_differences_on_uneven_frames(synthetic):
    run_dir, a = synthetic
    arrays, meta = load_arrays(run_dir / "trajectory.npz")
    del arrays["v"]
    save_arrays(run_dir / "trajectory.npz", arrays, meta)
    expected = np.gradient(a["x"], a["t"], axis=0)   # t = 0, 0.1, 0.25, 0.3: uneven steps
    for k, (_, path) in enumerate(read_pvd(export(run_dir, "vtk")[0])):
        np.testing.assert_allclose(read_vtp(path)[1]["velocity"], expected[k], rtol=1e-12, atol=1e-14)
