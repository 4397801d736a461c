"""Export cost per frame; writes the "Cost" table of docs/exports.md.

    python bench/bench_exports.py            # 1 rod x 200 vertices and 1000 strands x 32 vertices
    python bench/bench_exports.py --no-sim   # skip the hairstyle simulation used for comparison

The runs are synthetic: wavy strands from :func:`rodlab.hair.generator.synthetic_hairstyle` (one
200-vertex strand, or 1000 strands of 32 vertices), moved a little per frame, ``FRAMES`` frames,
1 mm radius. VTK and USD write every frame and are timed per frame (total / frames, every field
of the VTK files computed: velocity by finite differences, radius, curvature); PLY, ``.hair`` and
``.data`` write one frame. Times are the median of ``REPEATS`` repeats, wall clock, one process
(exports are not parallel). For comparison the ``hairstyle`` scene is run with 1000 strands x 32
vertices (der-implicit, the scene's default) and its cost per recorded frame at the scene's
default frame spacing (t_end 0.5 s over 50 frames) is printed beside.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rodlab.hair.generator import synthetic_hairstyle
from rodlab.io.exports import export_run
from rodlab.io.exports.run import RunData

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "exports.md"
FRAMES = 10
REPEATS = 3
CASES = (("1 rod x 200 vertices", 1, 200), ("1000 strands x 32 vertices", 1000, 32))
FORMATS = ("vtk", "usd", "ply", "hair", "data")


def synthetic_run(strands: int, vertices: int, frames: int = FRAMES) -> RunData:
    rods = synthetic_hairstyle(strands, vertices, seed=1)
    x0 = np.concatenate(rods)
    t = np.linspace(0.0, 0.1 * (frames - 1), frames)
    sway = np.array([0.01, 0.0, -0.005])
    x = np.stack([x0 + np.sin(tk) * sway * (x0[:, 2:3] - x0[:, 2].max()) for tk in t])
    offsets = np.concatenate([[0], np.cumsum([r.shape[0] for r in rods])])
    return RunData(t, x, offsets, np.zeros(strands, dtype=bool), np.full(x0.shape[0], 1e-3), "bench", "bench")


def time_format(run: RunData, fmt: str, out: Path) -> float | None:
    """Median seconds per frame of exporting ``fmt``; None when its package is missing."""
    if fmt == "usd":
        try:
            import pxr  # noqa: F401
        except ImportError:
            return None
    per = run.n_frames if fmt in ("vtk", "usd") else 1
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        export_run(run, fmt, out)
        times.append((time.perf_counter() - t0) / per)
    return statistics.median(times)


def hairstyle_cost_per_frame() -> float:
    from rodlab.scenes.registry import get_scene, run_scene

    scene = get_scene("hairstyle")
    defaults = scene.resolve({})
    params = scene.resolve({"strands": 1000, "vertices": 32, "t_end": 0.05, "frames": 5})
    m = run_scene("hairstyle", **params).metrics
    steps_per_frame = defaults["t_end"] / m["dt"] / defaults["frames"]
    return m["us_per_step"] * 1e-6 * steps_per_frame


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-sim", action="store_true", help="skip the hairstyle simulation comparison")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/exports.md alone")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, strands, vertices in CASES:
            run = synthetic_run(strands, vertices)
            cells = []
            for fmt in FORMATS:
                s = time_format(run, fmt, Path(tmp) / f"{strands}-{fmt}")
                cells.append("missing pxr" if s is None else f"{s * 1e3:.2f}")
            rows.append(f"| {label} | " + " | ".join(cells) + " |")
    lines = ["| run | vtk [ms/frame] | usd [ms/frame] | ply [ms] | hair [ms] | data [ms] |",
             "| --- | ---: | ---: | ---: | ---: | ---: |", *rows, ""]
    if not args.no_sim:
        sim = hairstyle_cost_per_frame()
        lines.append(f"Simulation for comparison: `hairstyle` with 1000 strands x 32 vertices (der-implicit) costs "
                     f"{sim * 1e3:.1f} ms per recorded frame at the scene's default frame spacing.")
        lines.append("")
    lines.append(f"{FRAMES} frames, median of {REPEATS}; {platform.processor() or platform.machine()}, "
                 f"Python {platform.python_version()}, {datetime.date.today().isoformat()}.")
    table = "\n".join(lines)
    print(table)
    if not args.no_write:
        text = DOC.read_text()
        new = re.sub(r"<!-- cost:begin -->.*?<!-- cost:end -->",
                     lambda _: f"<!-- cost:begin -->\n{table}\n<!-- cost:end -->", text, flags=re.S)
        DOC.write_text(new)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
