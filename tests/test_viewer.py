"""``rodlab view``: the page's data, the CLI, and the page itself in real headless Chromium.

Chromium is driven over its DevTools protocol (``--remote-debugging-port``, websocket-client); WebGL
runs on SwiftShader (software), so no GPU is needed. The browser tests skip only when no Chromium
binary is found (``apt-get install -y chromium``; .ci/run installs it and sets
``RODLAB_REQUIRE_BROWSER=1``, which turns that skip into a failure; ``RODLAB_CHROMIUM`` names one).
"""
from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from rodlab.cli import main
from rodlab.state import save_arrays
from rodlab.viewer import ViewerError, decimate, obstacles_of, page_data, write_html
from rodlab.viewer.cli import make_server

F, N = 9, 24
SCENE_FILE = """description = "test"
[[obstacle]]
kind = "sphere"
center = [0.2, 0.0, -0.25]
radius = 0.04
"""


def _positions() -> np.ndarray:
    """A rod of N vertices along x, 0.4 m long, falling by 0.3 m over F frames (F, N, 3) [m]."""
    x = np.zeros((F, N, 3))
    x[:, :, 0] = np.linspace(0.0, 0.4, N)
    x[:, :, 2] = -0.3 * np.linspace(0.0, 1.0, F)[:, None]
    return x


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("viewer_run")
    save_arrays(d / "trajectory.npz", {"t": np.linspace(0.0, 0.8, F), "x": _positions(), "rod_offsets": np.array([0, N]),
                                       "rod_radius": np.array([0.006])},
                {"scene": "falling-rod", "method": "der", "scene_file": SCENE_FILE})
    (d / "metrics.json").write_text(json.dumps({"scene": "falling-rod", "inextensibility": 1.5e-4, "steps": 80,
                                                "tip": [0.4, 0.0, -0.3]}))
    return d


# ---- data, without a browser ---------------------------------------------------------------------
def _embedded(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="rodlab-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def test_html_embeds_positions_radius_obstacles_and_metrics(run_dir, tmp_path):
    path = tmp_path / "sub" / "view.html"
    assert main(["view", str(run_dir), "--html", str(path)]) == 0
    html = path.read_text()
    assert "Three.js Authors" in html and "SPDX-License-Identifier: MIT" in html   # licence header kept
    links = re.findall(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="([^"]*)"', html)
    assert all(u.startswith("data:") for u in links), links               # nothing to fetch at view time
    data = _embedded(html)
    x = np.frombuffer(base64.b64decode(data["x_b64"]), dtype="<f4").reshape(F, N, 3)
    np.testing.assert_array_equal(x, _positions().astype(np.float32))
    r = np.frombuffer(base64.b64decode(data["radius_b64"]), dtype="<f4")
    np.testing.assert_array_equal(r, np.full(N, 0.006, dtype=np.float32))
    assert data["t"] == pytest.approx(np.linspace(0.0, 0.8, F).tolist(), abs=0)
    assert data["obstacles"] == [{"kind": "sphere", "center": [0.2, 0.0, -0.25], "radius": 0.04}]
    assert data["metrics"]["inextensibility"] == 1.5e-4 and data["rod_offsets"] == [0, N]
    assert "radius: trajectory rod_radius" in data["notes"]


def test_decimation_keeps_ends_and_fits_the_limit():
    offsets = np.array([0, 100, 300])
    d = decimate(1000, offsets, 200 * 300 * 12)        # all vertices, 200 of 1000 frames
    assert d.vertices.size == 300 and d.frames.size == 200 and d.frames[0] == 0 and d.frames[-1] == 999
    assert np.all(np.diff(d.frames) > 0)
    d = decimate(1000, offsets, 10 * 300 * 12)         # too few frames would fit: vertices halved first
    assert d.vertex_stride > 1 and d.vertices.size * 12 * d.frames.size <= 10 * 300 * 12
    assert {0, 99, 100, 299} <= set(d.vertices.tolist()) and d.rod_offsets[-1] == d.vertices.size
    assert decimate(5, offsets, 1e9).frames.tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ViewerError, match="max_mb"):
        decimate(5, offsets, 10)


def test_decimation_is_stated_in_the_page(run_dir):
    data = page_data(run_dir, max_mb=3 * 2 * 12 / 1e6)       # room for 3 frames of 2 vertices
    assert data["frame_index"] == [0, 4, 8] and data["t"] == pytest.approx([0.0, 0.4, 0.8])
    x = np.frombuffer(base64.b64decode(data["x_b64"]), dtype="<f4").reshape(3, 2, 3)
    np.testing.assert_array_equal(x, _positions()[[0, 4, 8]][:, [0, N - 1]].astype(np.float32))
    assert any("showing 3 of 9 frames and 2 of 24 vertices" in n for n in data["notes"])
    data = page_data(run_dir, max_mb=F * 13 * 12 / 1e6)      # all frames, every 2nd vertex + the last
    assert len(data["t"]) == F and data["rod_offsets"] == [0, 13]


def test_obstacles_from_a_recorded_scene_file_or_world():
    obs, note = obstacles_of({})
    assert obs == [] and "does not record obstacles" in note
    obs, _ = obstacles_of({"scene_file": '[[obstacle]]\nkind = "plane"\nnormal = [0, 0, 2]\n'})
    assert obs == [{"kind": "plane", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 2.0]}]
    with pytest.raises(ViewerError, match=r"obstacle\[0\].kind"):
        obstacles_of({"scene_file": '[[obstacle]]\nkind = "cone"\n'})


def test_a_named_scene_run_records_its_obstacles_and_rod_radius(tmp_path):
    """A named scene's run folder carries its world's obstacles and radii, read back by the viewer
    and by the exporters' loader (drop-cylinders: three cylinders, rod radius 0.03 m)."""
    from rodlab.io.exports import load_run
    from rodlab.io.outputs import write_scene_outputs
    from rodlab.scenes.registry import get_scene, run_scene

    params = get_scene("drop-cylinders").resolve({"n": 11, "t_end": 0.02})
    result = run_scene("drop-cylinders", **params)
    write_scene_outputs("drop-cylinders", params, result, tmp_path, plot=False)
    run = load_run(tmp_path)
    assert run.radius_source == "trajectory rod_radius" and np.allclose(run.vertex_radius, 0.03)
    from rodlab.state import load_arrays

    _, meta = load_arrays(tmp_path / "trajectory.npz")
    obs, note = obstacles_of(meta)
    assert [o["kind"] for o in obs] == ["cylinder"] * 3 and "from the scene's world" in note
    assert [o["point"][0] for o in obs] == [-params["spacing"], 0.0, params["spacing"]]
    assert all(o["radius"] == params["cylinder_radius"] for o in obs)


def test_bad_input_names_the_parameter(run_dir, tmp_path, capsys):
    assert main(["view", str(tmp_path / "missing"), "--html", str(tmp_path / "a.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["view", str(run_dir), "--radius", "0", "--html", str(tmp_path / "a.html")]) == 2
    assert "radius must be" in capsys.readouterr().err
    assert main(["view", str(run_dir), "--max-mb", "-1", "--html", str(tmp_path / "a.html")]) == 2
    assert "max-mb must be" in capsys.readouterr().err
    assert main(["view", str(run_dir), "--port", "70000", "--no-browser"]) == 2
    assert "port must be in [0, 65535]" in capsys.readouterr().err
    assert main(["view", str(run_dir), "--html", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


# ---- the page in headless Chromium ---------------------------------------------------------------
def _chromium() -> str | None:
    for name in (os.environ.get("RODLAB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Chromium:
    """Headless Chromium with one page, driven over the DevTools protocol; collects console
    errors and uncaught exceptions in ``errors``."""

    def __init__(self, binary: str, profile: Path):
        import websocket  # websocket-client, in the test extra

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--no-first-run", "--disable-gpu-sandbox",
             "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--window-size=1000,700",
             "--hide-scrollbars", "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError(f"{binary} did not open its DevTools port")
            time.sleep(0.05)
        try:
            port = int(port_file.read_text().split()[0])
            targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
            page = next(t for t in targets if t["type"] == "page")
            self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=20, suppress_origin=True)
        except Exception:
            self.close()
            raise
        self.next_id, self.errors, self.events, self.requests = 0, [], [], []
        for method in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(method)

    def _event(self, msg: dict) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append(f"exception: {d.get('exception', {}).get('description', d.get('text'))}")
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            self.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.errors.append(f"log: {p['entry']['text']}")
        elif method == "Network.requestWillBeSent":
            self.requests.append(p["request"]["url"])
        self.events.append(method)

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def evaluate(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, url: str) -> None:
        self.errors.clear()
        self.events.clear()
        self.requests.clear()
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 20
        while not self.evaluate("!!(window.rodlabViewer && window.rodlabViewer.ready)"):
            if time.monotonic() > deadline or self.errors:
                raise AssertionError(f"the page did not become ready: {self.errors}")
            time.sleep(0.05)

    def screenshot(self) -> np.ndarray:
        from PIL import Image

        png = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64) / 255.0

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    binary = _chromium()
    if binary is None:
        if os.environ.get("RODLAB_REQUIRE_BROWSER") == "1":  # set by .ci/run: CI must run these tests
            pytest.fail("RODLAB_REQUIRE_BROWSER=1 but no Chromium binary was found (chromium, chromium-browser, "
                        "google-chrome, chrome or RODLAB_CHROMIUM)")
        pytest.skip("no Chromium binary (apt-get install -y chromium, or set RODLAB_CHROMIUM)")
    b = Chromium(binary, tmp_path_factory.mktemp("chromium_profile"))
    yield b
    b.close()


@pytest.fixture(scope="module")
def page(browser, run_dir, tmp_path_factory):
    path = write_html(run_dir, tmp_path_factory.mktemp("viewer_html") / "view.html")
    browser.open(path.resolve().as_uri())
    return browser


VIEW_WIDTH = 1000 - 340   # the 3D view: the page's left part (viewer.css #view), the panel on the right


def _rod_mask(img: np.ndarray) -> np.ndarray:
    """Pixels of rod 0's blue (#1f77b4, shaded) in the 3D view: blue well above red. Background
    and panel are white / grey, the obstacle grey; the panel's blue slider is cut off."""
    mask = (img[..., 2] - img[..., 0] > 0.15) & (img[..., 2] > 0.2)
    mask[:, VIEW_WIDTH:] = False
    return mask


def _rod_hits(img, points, half: int = 3) -> float:
    """Fraction of ``points`` (CSS px) with a rod pixel within ``half`` px."""
    mask = _rod_mask(img)
    hits = [mask[max(int(y) - half, 0):int(y) + half + 1, max(int(x) - half, 0):int(x) + half + 1].any() for x, y in points]
    return float(np.mean(hits))


def test_page_loads_without_console_errors(page):
    assert page.errors == []
    assert all(u.startswith(("file:", "data:")) for u in page.requests), page.requests   # offline
    assert page.evaluate("window.rodlabViewer.nFrames") == F
    assert page.evaluate("document.querySelectorAll('#metrics tr').length") == 4
    assert "frame 0 / 8" in page.evaluate("document.getElementById('counter').textContent")
    assert page.evaluate("!!document.querySelector('#view canvas').getContext('webgl2')")
    assert page.evaluate("document.querySelector('#view canvas').getBoundingClientRect().right") == VIEW_WIDTH


def test_screenshot_shows_the_rod_where_it_projects(page):
    page.evaluate("window.rodlabViewer.setFrame(0)")
    img = page.screenshot()
    points = page.evaluate("window.rodlabViewer.screenPoints()")
    assert len(points) == N
    assert _rod_hits(img, points[1:-1]) == 1.0              # every inner vertex is drawn
    mask = _rod_mask(img)
    assert 200 < mask.sum() < 0.2 * mask.size               # a tube, not a line or a flood
    pts = np.array(points)
    far = pts + [0.0, 150.0]                                 # 150 px below the rod: background / obstacle, no rod
    assert _rod_hits(img, far[1:-1]) == 0.0


def test_slider_moves_the_frame_and_the_rod(page):
    page.evaluate("window.rodlabViewer.setFrame(0)")
    img0 = page.screenshot()
    p0 = np.array(page.evaluate("window.rodlabViewer.screenPoints()"))
    rect = page.evaluate("(() => { const r = document.getElementById('slider').getBoundingClientRect();"
                         " return [r.right, r.top + r.height / 2]; })()")
    for kind in ("mousePressed", "mouseReleased"):           # a real click at the slider's right end
        page.call("Input.dispatchMouseEvent", type=kind, x=rect[0] - 2, y=rect[1], button="left", clickCount=1)
    frame = page.evaluate("window.rodlabViewer.frame()")
    assert frame == int(page.evaluate("document.getElementById('slider').value")) and frame >= F - 2
    assert f"frame {frame} / {F - 1}" in page.evaluate("document.getElementById('counter').textContent")
    img1 = page.screenshot()
    p1 = np.array(page.evaluate("window.rodlabViewer.screenPoints()"))
    assert np.abs(img1 - img0).max() > 0.5                    # the picture changed
    assert _rod_hits(img1, p1[1:-1]) == 1.0 and _rod_hits(img1, p0[1:-1]) == 0.0   # the rod left its old place
    ys0, xs0 = np.nonzero(_rod_mask(img0))
    ys1, xs1 = np.nonzero(_rod_mask(img1))
    moved = np.array([xs1.mean() - xs0.mean(), ys1.mean() - ys0.mean()])
    expected = p1.mean(axis=0) - p0.mean(axis=0)             # the rod falls: downwards on screen
    assert expected[1] > 40 and np.linalg.norm(moved - expected) < 0.15 * np.linalg.norm(expected)
    assert page.errors == []


def test_rodlab_view_serves_the_page(browser, run_dir):
    from rodlab.viewer import page_html

    server = make_server(page_html(page_data(run_dir)), 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        browser.open(url)
        assert browser.errors == [] and browser.evaluate("window.rodlabViewer.nFrames") == F
        assert all(u.startswith((url, "data:")) for u in browser.requests), browser.requests
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(url + "other", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


# ---- twist stripe and bodies ---------------------------------------------------------------------
TWIST = 1.5  # [rad] turn of the material frame from the first edge to the last, at the last frame


def _twisted_m1() -> np.ndarray:
    """(F, N - 1, 3) directors of the rod of :func:`_positions` (along x): frame f turns edge j by
    ``TWIST f / (F - 1) j / (N - 2)`` about +x, starting from +y."""
    phi = TWIST * np.linspace(0.0, 1.0, F)[:, None] * np.linspace(0.0, 1.0, N - 1)[None, :]
    return np.stack([np.zeros_like(phi), np.cos(phi), np.sin(phi)], axis=-1)


@pytest.fixture(scope="module")
def twisted_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("viewer_twist")
    body_x = np.zeros((F, 1, 3))
    body_x[:, 0] = [0.45, 0.0, 0.0]
    body_x[:, 0, 2] = -0.3 * np.linspace(0.0, 1.0, F)
    save_arrays(d / "trajectory.npz", {"t": np.linspace(0.0, 0.8, F), "x": _positions(), "rod_radius": np.array([0.01]),
                                       "edge_m1": _twisted_m1().astype(np.float32), "body_x": body_x},
                {"scene": "twisted-rod", "bodies": [{"half": [0.02, 0.03, 0.04], "axes": [1, 0, 0, 0, 1, 0, 0, 0, 1],
                                                      "position": [0.45, 0.0, 0.0], "orientation": [1, 0, 0, 0]}]})
    return d


def test_page_carries_the_recorded_twist_and_bodies(twisted_dir, run_dir):
    data = page_data(twisted_dir)
    assert data["stripe"] == "material" and any("recorded material frames" in n for n in data["notes"])
    m1 = np.frombuffer(base64.b64decode(data["m1_b64"]), dtype="<f4").reshape(F, N, 3)
    want = _twisted_m1()
    np.testing.assert_allclose(m1[:, :-1], want, atol=1e-7)          # vertex i: edge i
    np.testing.assert_allclose(m1[:, -1], want[:, -1], atol=1e-7)     # the last vertex: the last edge
    assert data["bodies"] == [{"half": [0.02, 0.03, 0.04], "axes": [1.0, 0, 0, 0, 1, 0, 0, 0, 1],
                               "x0": [0.45, 0.0, 0.0], "q0": [1.0, 0, 0, 0]}]
    bx = np.frombuffer(base64.b64decode(data["body_x_b64"]), dtype="<f4").reshape(F, 1, 3)
    assert bx[-1, 0, 2] == pytest.approx(-0.3) and data["body_q_b64"] is None
    old = page_data(run_dir)  # a run without edge_m1: transported frames, and the page says so
    assert old["stripe"] == "transported" and old["m1_b64"] is None
    assert any("twist is not shown" in n for n in old["notes"])


def test_stripe_follows_the_recorded_twist_in_the_browser(browser, twisted_dir, tmp_path):
    path = write_html(twisted_dir, tmp_path / "twist.html")
    browser.open(path.resolve().as_uri())
    assert browser.errors == []
    assert browser.evaluate("window.rodlabViewer.stripe") == "material"
    assert browser.evaluate("window.rodlabViewer.nBodies") == 1
    want = _twisted_m1()
    for k in (0, F - 1):
        browser.evaluate(f"window.rodlabViewer.setFrame({k})")
        got = np.array([browser.evaluate(f"window.rodlabViewer.stripeDirection({i})") for i in range(N - 1)])
        np.testing.assert_allclose(got, want[k], atol=2e-5)            # the ring's point 0 lies along m1
        turn = np.arctan2(got[-1, 2], got[-1, 1]) - np.arctan2(got[0, 2], got[0, 1])
        assert turn == pytest.approx(TWIST * k / (F - 1), abs=1e-4)   # turned by the twist angle along the rod
    img = browser.screenshot()
    tan = (np.abs(img[..., 0] - 0.69) < 0.12) & (np.abs(img[..., 1] - 0.55) < 0.12) & (np.abs(img[..., 2] - 0.34) < 0.14)
    assert tan[:, :VIEW_WIDTH].sum() > 30                            # the body's box is drawn (its brown)
