"""`rodlab sagfree` end to end on a small synthetic hairstyle and on files."""
import json

import numpy as np

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
    hs = synthetic_hairstyle(4, 10, style="wavy", seed=2)
    write_data(tmp_path / "h.data", hs)
    write_hair(tmp_path / "h.hair", hs)
    for name in ("h.data", "h.hair"):
        out = tmp_path / name.replace(".", "_")
        assert main(["sagfree", str(tmp_path / name), "--out", str(out), "--workers", "2", "--t-end", "0", "--no-plot"]) == 0
        rep = json.loads((out / "report.json").read_text())
        assert rep["summary"]["strands"] == 4


def test_sagfree_cli_rejects_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.data"
    bad.write_bytes(b"\x05\x00\x00\x00")
    assert main(["sagfree", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "strand count" in capsys.readouterr().err
    assert main(["sagfree", "synthetic", "--out", str(tmp_path / "o"), "--radius", "-1"]) == 2
