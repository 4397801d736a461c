"""Rendering cost per frame (rodlab.render); writes the "Rendering" table of docs/benchmarks.md.

    python bench/bench_render.py              # both cases, the matplotlib comparison, the hairstyle simulation
    python bench/bench_render.py --no-sim     # skip the hairstyle simulation used for comparison
    python bench/bench_render.py --no-write   # print only

Cases: one wavy rod of 200 vertices (radius 5 mm: a tube of 12 sides, 4800 triangles) and the
``hairstyle`` scene's geometry with 1000 strands x 32 vertices (radius 50 um: under 4 px on
screen, so each strand is drawn as a camera-facing strip of 2 triangles per edge, widened to
1.5 px). Each frame moves the rods a little; the camera is fitted once (as in an animation).
Timed: :func:`rodlab.render.render_frame` from positions to the RGB array (mesh + z-buffer +
downsampling), wall clock, median over ``FRAMES`` frames x ``REPEATS`` repeats, one thread; at
800 x 600 with 2 x 2 supersampling (the pictures) and 640 x 480 without (the animations). For
comparison: the same tube mesh drawn by matplotlib's ``Poly3DCollection`` (depth-sorted polygons)
and saved to PNG, and the ``hairstyle`` scene's simulation cost per recorded frame (der-implicit,
1000 strands x 32 vertices, the scene's default frame spacing; the same measurement as
bench/bench_exports.py).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import io
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from rodlab.render import RenderScene, render_frame
from rodlab.render.scene import build_mesh, scene_camera

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
FRAMES = 5
REPEATS = 3
BEGIN, END = "<!-- BEGIN bench_render (generated: do not edit by hand) -->", "<!-- END bench_render -->"


def one_rod():
    s = np.linspace(0.0, 1.0, 200)
    x0 = np.stack([s, 0.1 * np.sin(6 * s), 0.2 * s**2], axis=1)
    return RenderScene.from_arrays([0, 200], 0.005), x0


def hair():
    from rodlab.world import WorldBuilder
    from rodlab.world.hairstyle import add_hairstyle

    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    add_hairstyle(b, strands=1000, vertices=32, length=0.25, style="wavy", seed=0)
    world = b.build()
    return RenderScene.from_world(world), np.array(world.vertex_rest_x)


def frames_of(x0: np.ndarray) -> np.ndarray:
    z = x0[:, 2:3] - x0[:, 2].max()
    return np.stack([x0 + np.sin(0.3 * k) * np.array([0.01, 0.0, -0.005]) * z for k in range(FRAMES)])


def time_render(scene, xs, width, height, supersample) -> tuple[float, int, bool]:
    camera = scene_camera(scene, xs, width=width, height=height)
    bounds = (xs.reshape(-1, 3).min(axis=0), xs.reshape(-1, 3).max(axis=0))
    _, info = render_frame(scene, xs[0], camera=camera, bounds=bounds, supersample=supersample)  # compile, buffers
    times = []
    for _ in range(REPEATS):
        for x in xs:
            t0 = time.perf_counter()
            render_frame(scene, x, camera=camera, bounds=bounds, supersample=supersample)
            times.append(time.perf_counter() - t0)
    return statistics.median(times), info.n_triangles, info.strips


def time_matplotlib(scene, x, width=800, height=600) -> float:
    """One frame of the same mesh through Poly3DCollection (flat colours, matplotlib's depth sort), saved to PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    camera = scene_camera(scene, x, width=width, height=height)
    _, info = render_frame(scene, x, camera=camera, supersample=1)
    toward = None
    if info.strips:
        from rodlab.render.mesh import _normalize

        toward = _normalize(camera.eye - x)
    mesh, _ = build_mesh(scene, x, radius_scale=info.radius_scale, ribbon_toward=toward)
    t0 = time.perf_counter()
    fig = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    ax = fig.add_subplot(projection="3d")
    ax.add_collection3d(Poly3DCollection(mesh.vertices[mesh.triangles], facecolors=mesh.colors, linewidths=0))
    lo, hi = x.min(axis=0), x.max(axis=0)
    ax.set_xlim(lo[0], hi[0]), ax.set_ylim(lo[1], hi[1]), ax.set_zlim(lo[2], hi[2])
    fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)
    return time.perf_counter() - t0


def hairstyle_sim_ms() -> float:
    spec = importlib.util.spec_from_file_location("bench_exports", ROOT / "bench" / "bench_exports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.hairstyle_cost_per_frame() * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-sim", action="store_true", help="skip the hairstyle simulation comparison")
    ap.add_argument("--no-mpl", action="store_true", help="skip the matplotlib comparison")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = ap.parse_args(argv)
    rows = []
    for label, make in (("1 rod x 200 vertices", one_rod), ("1000 strands x 32 vertices", hair)):
        scene, x0 = make()
        xs = frames_of(x0)
        pic, n_tri, strips = time_render(scene, xs, 800, 600, 2)
        anim, _, _ = time_render(scene, xs, 640, 480, 1)
        mpl = "" if args.no_mpl else f"{time_matplotlib(scene, x0) * 1e3:.0f}"
        rows.append(f"| {label} | {'strips' if strips else 'tubes'}, {n_tri} | {pic * 1e3:.1f} | {anim * 1e3:.1f} | {mpl} |")
        print(rows[-1], flush=True)
    lines = ["| run | drawn as, triangles | picture 800x600, 2x2 supersampled [ms/frame] | animation 640x480 [ms/frame] "
             "| matplotlib Poly3DCollection 800x600 [ms/frame] |", "| --- | --- | ---: | ---: | ---: |", *rows, ""]
    if not args.no_sim:
        lines.append(f"Simulation for comparison: `hairstyle` with 1000 strands x 32 vertices (der-implicit) costs "
                     f"{hairstyle_sim_ms():.1f} ms per recorded frame at the scene's default frame spacing.")
        lines.append("")
    load = f", load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores" if hasattr(os, "getloadavg") else ""
    lines.append(f"Median of {FRAMES} frames x {REPEATS}; {platform.processor() or platform.machine()}{load}, "
                 f"Python {platform.python_version()}, {datetime.date.today().isoformat()} (the simulation and the "
                 "rendering are timed in the same run, so their ratio holds on a shared machine).")
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        text = DOC.read_text()
        block = f"{BEGIN}\n{table}\n{END}"
        if BEGIN in text:
            text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
        else:
            text = text.rstrip("\n") + ("\n\n## Rendering (bench/bench_render.py)\n\nCost of one picture of "
                                        "`rodlab.render` (docs/pictures.md) against the simulation's cost per frame.\n\n"
                                        f"{block}\n")
        DOC.write_text(text)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
