"""Run the seven generalized-alpha scenes (GA paper, Sec. 5) with their default parameters and
tabulate the metrics; with --write the table goes into docs/benchmarks-galpha.md.

    python bench/bench_galpha_scenes.py [--write]
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

from rodlab.scenes.registry import run_scene

SCENES = ("galpha-sinus", "galpha-helix-load", "galpha-torque", "galpha-spring", "galpha-buckling", "galpha-tress",
          "galpha-tress-gravity")


def main():
    logging.disable(logging.WARNING)
    lines = ["## Scenes (bench/bench_galpha_scenes.py)", "",
             "Default parameters (100 segments except galpha-tress-gravity: 30 segments x 4 settings). "
             "ms/step: time inside the stepper per step (compilation excluded); iterations: mean Newton iterations per step; "
             "residual: largest final row-scaled residual of the recorded steps; substeps: steps that needed halving.", "",
             "| scene | steps | dt [s] | ms / step | Newton iterations | residual | substeps | wall [s] |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in SCENES:
        m = run_scene(name).metrics
        lines.append(f"| {name} | {m['steps']} | {m['dt']:.3g} | {m['ms_per_step']:.2f} | {m['newton_iters']:.2f} | "
                     f"{m['residual']:.1e} | {m['substeps']} | {m['wall_s']:.1f} |")
        print(lines[-1], flush=True)
    if "--write" in sys.argv:
        out = Path(__file__).resolve().parents[1] / "docs" / "benchmarks-galpha.md"
        text = out.read_text() if out.exists() else "# Generalized-alpha benchmarks\n\nMachine: 2-core x86_64 (shared).\n\n"
        start = text.find("## Scenes")
        if start >= 0:
            end = text.find("\n## ", start + 5)
            text = text[:start] + (text[end + 1:] if end >= 0 else "")
        out.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
