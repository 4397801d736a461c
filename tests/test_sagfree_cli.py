"""`rodlab sagfree` end to end on a small synthetic hairstyle and on files."""
import csv
import json

import numpy as np
import pytest

from rodlab.cli import main
from rodlab.hair.formats import write_data, write_hair
from rodlab.hair.generator import synthetic_hairstyle


def test_sagfree_cli_synthetic(tmp_path):
    out = tmp_path / "out"
    rc = main(["sagfree", "synthetic:straight:3:12", "--out", str(out), "--workers", "1", "--t-end", "0.2"])
    assert rc == 0
    rep = json.loads((out / "report.json").read_text())
    assert rep["summary"]["strands"] == 3
    for r in rep["strands"]:
        assert r["residual"] <= r["residual_initial"]
        assert "drift" in r and "drift_naive" in r
    data = np.load(out / "params.npz")
    assert data["s0_kbend"].shape == (12,) and data["s2_wbar"].shape == (12, 4)
    assert (out / "report.md").exists() and (out / "sagfree_report.png").exists()


def test_sagfree_cli_reads_files_in_parallel(tmp_path):
    """Both file formats; the .data file once on a 2-worker Dask LocalCluster and once in this process:
    the same parameters to round-off, and the per-strand table."""
    pytest.importorskip("distributed")
    hs = synthetic_hairstyle(4, 10, style="wavy", seed=2)
    write_data(tmp_path / "h.data", hs)
    write_hair(tmp_path / "h.hair", hs)
    runs = {"dask": ("h.data", "2"), "single": ("h.data", "1"), "hair": ("h.hair", "1")}
    for key, (name, workers) in runs.items():
        assert main(["sagfree", str(tmp_path / name), "--out", str(tmp_path / key), "--workers", workers, "--t-end", "0",
                     "--no-plot", "--batch", "3"]) == 0
        rep = json.loads((tmp_path / key / "report.json").read_text())
        assert rep["summary"]["strands"] == 4
    s = json.loads((tmp_path / "dask" / "report.json").read_text())["summary"]
    assert (s["backend"], s["workers"], s["tasks"], s["batch"]) == ("dask LocalCluster", 2, 2, 3)
    a, b = np.load(tmp_path / "dask" / "params.npz"), np.load(tmp_path / "single" / "params.npz")
    assert sorted(a.files) == sorted(b.files) and len(a.files) == 4 * 8
    for name in a.files:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-13, atol=1e-300, err_msg=name)
    with open(tmp_path / "dask" / "strands.csv") as fh:
        table = list(csv.DictReader(fh))
    assert [int(r["strand"]) for r in table] == [0, 1, 2, 3]
    assert list(table[0])[:6] == ["strand", "success", "iterations", "residual", "residual_initial", "drift"]
    assert all(r["success"] == "True" and float(r["residual"]) < 1e-7 and float(r["time_s"]) > 0 for r in table)


def test_sagfree_cli_reports_strands_that_do_not_converge(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["sagfree", "synthetic:wavy:3:12", "--out", str(out), "--workers", "1", "--t-end", "0", "--no-plot",
               "--max-iters", "2"])
    assert rc == 3
    err = capsys.readouterr().err
    rows = json.loads((out / "report.json").read_text())["strands"]
    assert all(not r["success"] and r["iterations"] == 2 for r in rows)
    for r in rows:  # index, iterations and residual of each failed strand on stderr
        assert f"strand {r['index']}: 2 iterations, residual {r['residual']:.3g}" in err
    with open(out / "strands.csv") as fh:
        assert [r["success"] for r in csv.DictReader(fh)] == ["False"] * 3
    assert (out / "params.npz").exists()  # the rest is still written


def test_sagfree_cli_rejects_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.data"
    bad.write_bytes(b"\x05\x00\x00\x00")
    assert main(["sagfree", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "strand count" in capsys.readouterr().err
    assert main(["sagfree", "synthetic", "--out", str(tmp_path / "o"), "--radius", "-1"]) == 2
