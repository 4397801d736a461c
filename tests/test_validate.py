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


class _FakeScenes:
    """Stands in for the registered scenes: their parameter values and a run function."""

    def __init__(self, values, run):
        self.values, self.run = values, run

    def install(self, monkeypatch):
        def resolve(scene, params):
            if scene not in self.values:
                raise V.Unavailable(f"scene {scene!r} is not registered")
            return {**self.values[scene], **params}

        def run(ctx, scene, **params):
            resolve(scene, params)
            return self.run(scene, params)

        monkeypatch.setattr(V, "_resolve", resolve)
        monkeypatch.setattr(V, "_run", run)


def test_helical_michell_uniform_twist_cases_with_fake_scenes(tmp_path, monkeypatch):
    import math

    from rodlab.analytic.helical_buckling import helical_buckling_theory, theoretical_centerline
    from rodlab.scenes.registry import SceneResult

    th = helical_buckling_theory(9.29, 1.345, 0.789, 27, 0.3)
    crit = 2 * math.pi * math.sqrt(3) * 1.0 / 0.5
    x = theoretical_centerline(th, n=300)[None]

    def run(scene, params):
        if scene == "helical-buckling":
            m = {"phi0": th.phi0 * 1.01, "phi0_theory": th.phi0, "envelope_error": 0.01}
            return SceneResult(m, {"t": [0.0], "x": x})
        if scene == "michell":
            return SceneResult({"stable": params["twist"] < crit, "critical_twist_theory": crit}, {})
        return SceneResult({"max_twist_deviation": 3e-9}, {})

    fake = _FakeScenes({
        "helical-buckling": dict(n=300, L=9.29, alpha=1.345, beta=0.789, turns=27.0, shortening=0.3),
        "michell": dict(alpha=1.0, beta=0.5, twist=1.0),
        "uniform-twist": dict(n=20),
    }, run)
    fake.install(monkeypatch)
    ctx = V.Context(tmp_path, quick=True)
    rows = V.case_helical(ctx) + V.case_michell(ctx) + V.case_uniform_twist(ctx)
    assert [r.status for r in rows] == ["pass"] * len(rows), V.format_table(rows)
    items = " ".join(r.item for r in rows)
    assert "computed here" in items and "1.25 x critical" in items
    assert (tmp_path / "helical-buckling.png").exists()

    # a Michell scene that never goes unstable fails; a missing metric is an error
    fake.run = lambda scene, params: (SceneResult({"stable": True, "critical_twist_theory": crit}, {}) if scene == "michell"
                                      else SceneResult({}, {}))
    rows = V.case_michell(ctx)
    assert [r.status for r in rows] == ["pass", "pass", "FAIL"]
    # a Michell scene whose own critical twist disagrees with the closed form fails
    fake.run = lambda scene, params: SceneResult({"stable": params["twist"] < crit, "critical_twist_theory": 1.01 * crit}, {})
    assert [r.status for r in V.case_michell(ctx)] == ["pass", "FAIL", "pass"]
    assert V.case_uniform_twist(ctx)[0].status == "error"
    # a helical scene whose phi0 is 10 % off fails
    fake.run = lambda scene, params: SceneResult({"phi0": 1.1 * th.phi0, "envelope_error": 0.01}, {"t": [0.0], "x": x})
    rows = V.case_helical(ctx)
    assert rows[0].status == "FAIL" and rows[0].error == pytest.approx(0.1, rel=1e-6)


def test_cantilever_case_marks_missing_methods_not_available(tmp_path, monkeypatch):
    """A method whose package is missing is 'not available' (and not retried for every n and E)."""
    calls = []

    def fake_error(ctx, method, n, E):
        calls.append(method)
        if method == "galpha":
            raise V.Unavailable("method=galpha is not available in this build")
        import numpy as np

        return 1e-4, np.array([0.9, -0.4]), np.array([0.9, -0.4001]), type("R", (), {"trajectory": {}})()

    monkeypatch.setattr(V, "_cantilever_error", fake_error)
    rows = V.case_cantilever(V.Context(tmp_path, quick=True))
    status = [(r.case, r.status) for r in rows]
    assert ("cantilever/galpha", "not available") in status
    assert calls.count("galpha") == 1
    assert sum(s == "pass" for _, s in status) == 3 * len(V.CANTILEVER_LOADS_QUICK)


def test_only_case_slash_method_restricts_the_methods(tmp_path, monkeypatch):
    import numpy as np

    seen = []

    def fake_error(ctx, method, n, E):
        seen.append(method)
        return 1e-4, np.array([0.9, -0.4]), np.array([0.9, -0.4001]), type("R", (), {"trajectory": {}})()

    monkeypatch.setattr(V, "_cantilever_error", fake_error)
    out = []
    assert V.run_validation(tmp_path, ["cantilever/compact"], True, echo=out.append) is True
    assert set(seen) == {"compact"}
    data = json.loads((tmp_path / "validation.json").read_text())
    assert data["summary"]["cases"] == ["cantilever"]
    assert {r["case"] for r in data["rows"]} == {"cantilever/compact"}


def test_helical_refinement_study_in_full_mode(tmp_path, monkeypatch):
    from rodlab.analytic.helical_buckling import helical_buckling_theory, theoretical_centerline
    from rodlab.scenes.registry import SceneResult

    th = helical_buckling_theory(9.29, 1.345, 0.789, 27, 0.3)
    x = theoretical_centerline(th, n=300)[None]
    ran = []

    def run(scene, params):
        n = params.get("n", 320)
        ran.append(n)
        return SceneResult({"phi0": th.phi0 * (1 - 200.0 / n**2), "envelope_error": 0.01}, {"t": [0.0], "x": x})

    _FakeScenes({"helical-buckling": dict(L=9.29, alpha=1.345, beta=0.789, turns=27.0, shortening=0.3, n=320)}, run).install(monkeypatch)
    rows = V.case_helical(V.Context(tmp_path, quick=False))
    order = [r for r in rows if r.item == "phi0 convergence order"][0]
    assert order.status == "pass" and order.measured == pytest.approx(2.0, abs=1e-6)
    assert sorted(set(ran)) == [80, 160, 320]


def test_html_page_has_every_row_and_each_case_figure_embedded(tmp_path):
    """Read back with the standard library's HTML parser (not our writer): one table row per
    validation row with its status class, and the case's figure as a decodable PNG under it."""
    import base64
    from html.parser import HTMLParser

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def with_figure(ctx):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot([0, 1], [0, 1])
        V._savefig(ctx, fig, "fake-good.png")
        return [V.compare("fake-good", "a number", 1.0, 1.0, 1e-6)]

    cases = _fake_cases()
    cases["fake-good"] = V.Case("fake-good", "", with_figure)
    V.run_validation(tmp_path, None, True, cases=cases, echo=lambda s: None, html=True)

    class Page(HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows, self.images, self.headings, self._h2 = [], [], [], False

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "tr" and "class" in a:
                self.rows.append(a["class"])
            if tag == "img":
                self.images.append((self.headings[-1], a["src"]))
            self._h2 = tag == "h2"

        def handle_data(self, data):
            if self._h2:
                self.headings.append(data)
                self._h2 = False

    page = Page()
    page.feed((tmp_path / "validation.html").read_text())
    assert sorted(page.rows) == ["error", "fail", "na", "pass"]
    assert page.headings == ["fake-good", "fake-bad", "fake-missing", "fake-crash"]
    assert len(page.images) == 1 and page.images[0][0] == "fake-good"
    png = base64.b64decode(page.images[0][1].split("base64,", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "validation.html").read_text().count("http")  # offline: no external resources
