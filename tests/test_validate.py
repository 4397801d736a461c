"""The `rodlab validate` machinery: statuses, table, files, exit status (no simulator needed)."""
from __future__ import annotations

import json

import pytest

from rodlab import validate as V


def _fake_cases():
    def good(ctx):
        return [V.compare("fake-good", "a number", 1.0, 1.0 + 1e-9, 1e-6, relative=True)]

    def bad(ctx):
        return [V.compare("fake-bad", "a number", 1.0, 1.1, 1e-3)]

    def _missing(ctx):
        try:
            V._run(ctx, "no-such-scene-xyz")
        except V.Unavailable as exc:
            return [V.Row("fake-missing", "scene", status=V.NA, note=str(exc))]
        raise AssertionError("an unregistered scene must be 'not available'")

    def crash(ctx):
        raise RuntimeError("boom")

    return {
        "fake-good": V.Case("fake-good", "", good),
        "fake-bad": V.Case("fake-bad", "", bad),
        "fake-missing": V.Case("fake-missing", "", _missing),
        "fake-crash": V.Case("fake-crash", "", crash),
    }


def test_statuses_files_and_result(tmp_path):
    out = []
    ok = V.run_validation(tmp_path, None, True, cases=_fake_cases(), echo=out.append)
    assert ok is False  # one FAIL and one error
    data = json.loads((tmp_path / "validation.json").read_text())
    status = {r["case"]: r["status"] for r in data["rows"]}
    assert status == {"fake-good": "pass", "fake-bad": "FAIL", "fake-missing": "not available", "fake-crash": "error"}
    passes = {r["case"]: r["pass"] for r in data["rows"]}
    assert passes == {"fake-good": True, "fake-bad": False, "fake-missing": None, "fake-crash": False}
    assert data["summary"]["passed"] == 1 and data["summary"]["failed"] == 1
    assert data["summary"]["not_available"] == 1 and data["summary"]["errors"] == 1
    md = (tmp_path / "validation.md").read_text()
    assert "| fake-bad | a number | 1 | 1.1 | 0.1 | 0.001 | FAIL |" in md
    text = "\n".join(out)
    assert "RuntimeError: boom" in text and "not available" in text
    # the printed table is aligned: every data line starts its status column at the same place
    lines = [ln for ln in text.splitlines() if ln.startswith("fake-")]
    cols = {ln.index(s) for ln in lines for s in ("pass", "FAIL", "not available", "error") if ln.rstrip().endswith(s)}
    assert len(cols) == 1


def test_not_available_does_not_fail_and_only_filters(tmp_path):
    cases = _fake_cases()
    assert V.run_validation(tmp_path, ["fake-good", "fake-missing"], False, cases=cases, echo=lambda s: None) is True
    data = json.loads((tmp_path / "validation.json").read_text())
    assert data["summary"]["cases"] == ["fake-good", "fake-missing"]
    with pytest.raises(SystemExit):
        V.run_validation(tmp_path, ["nothing-matches"], False, cases=cases, echo=lambda s: None)


def test_compare_and_order():
    assert V.compare("c", "i", 2.0, 2.1, 0.06, relative=True).status == V.PASS
    assert V.compare("c", "i", 2.0, 2.2, 0.06, relative=True).status == V.FAIL
    assert V.compare("c", "i", 1.0, float("nan"), 1.0).status == V.FAIL
    assert V.observed_order([10, 20, 40], [1e-2, 2.5e-3, 6.25e-4]) == pytest.approx(2.0)


def test_cli_elastica_reference_quick(tmp_path, capsys):
    from rodlab.cli import main

    rc = main(["validate", "--only", "elastica-reference", "--quick", "--out", str(tmp_path)])
    assert rc == 0
    assert (tmp_path / "validation.md").exists() and (tmp_path / "elastica-reference.png").exists()
    data = json.loads((tmp_path / "validation.json").read_text())
    assert data["summary"]["ok"] and data["summary"]["passed"] >= 5
    assert all(r["status"] == "pass" for r in data["rows"])
    assert "elastica-reference" in capsys.readouterr().out
