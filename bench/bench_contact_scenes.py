"""Time per step of every contact scene, and of the rigid-body `tree`, side by side with its paper
(Bergou et al. 2008, Table 1; Zhao et al., Table 1) and its issue's target (#11: 10x faster than the
paper; #13: `tree` <= 1 ms); writes docs/benchmarks-contact-scenes.md.

    python bench/bench_contact_scenes.py [--quick] [--only SCENE ...]

Each scene runs through :func:`rodlab.scenes.registry.run_scene` (the call ``rodlab run SCENE``
makes) with its defaults, except the overrides listed in the table (to bound the run time); the
time per step is the scene's own ``ms_per_step`` metric (the whole ``advance`` calls of its
recording loop, Python included; compilation excluded: :func:`rodlab.experiment.record` takes one
warm-up step on a copy of the state before it starts the clock). ``--quick`` runs
every scene for a tenth of its simulated time; ``--only`` runs the scenes named and replaces their
rows of the table already written (the others are kept as they were, with their date).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks-contact-scenes.md"

# scene, overrides, paper figure, paper [ms/step] (None: the paper gives none), issue #11's target
# [ms/step], the paper's vertices and time step [s] (Bergou et al. 2008, Table 1; Zhao et al., Table 1 and
# the text of Sec. 4.1; None: not given)
SCENES = (
    ("knot-tighten", {}, "Zhao et al., Fig. 15", 43.0, 4.3, 100, 0.003),
    ("strand-through-springs", {}, "Zhao et al., Fig. 14", 52.7, 5.3, 333, 0.003),
    ("plectoneme", {}, "Zhao et al., Fig. 16", 20.2, 2.0, 51, None),
    ("drop-cylinders", {}, "Zhao et al., Fig. 17", 36.9, 3.7, 201, None),
    ("plectonemes-hanging", {}, "Bergou et al. 2008, Fig. 9", 0.92, 0.09, 275, 1e-3),
    ("hanging-chain", {}, "Bergou et al. 2008, Fig. 10", 0.2, 0.02, 31, 1e-3),
    # the paper's size (31 vertices: 4 links of 8) at half its step (at 1 ms, this chain's last step before the
    # break is infeasible: docs/contact-der.md, "What is and is not guaranteed")
    ("hanging-chain", {"links": 4, "n": 8, "dt": 5e-4}, "Bergou et al. 2008, Fig. 10", 0.2, 0.02, 31, 1e-3),
    ("trefoil-twist", {}, "Bergou et al. 2008, Fig. 1", 0.31, 0.031, 60, 4e-3),
    ("trefoil-twist", {"dt": 4e-3}, "Bergou et al. 2008, Fig. 1", 0.31, 0.031, 60, 4e-3),  # the paper's step
    ("tree", {}, "Bergou et al. 2008, Fig. 12 (rigid bodies, no contact)", 22.0, 1.0, 2158, 1e-4),
    ("incline", {}, "-", None, None, None, None),
    ("capstan", {}, "-", None, None, None, None),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of each scene's simulated time")
    ap.add_argument("--only", nargs="+", metavar="SCENE", choices=[s[0] for s in SCENES],
                    help="run these scenes and replace their rows of the table already written")
    args = ap.parse_args(argv)
    from rodlab.scenes.registry import get_scene, run_scene

    rows, start = [], time.perf_counter()
    for name, overrides, figure, paper, target, paper_nv, paper_dt in SCENES:
        if args.only and name not in args.only:
            continue
        params = get_scene(name).resolve(overrides)
        if args.quick and "t_end" in params:
            params["t_end"] = params["t_end"] / 10
        m = run_scene(name, **params).metrics
        ms = m.get("ms_per_step")
        dt = m.get("dt", params.get("dt"))  # the scene's step: its metric, else its parameter
        rows.append((name, figure, {k: v for k, v in overrides.items()}, m.get("n_vertices"), dt, ms, paper,
                     target, paper_nv, paper_dt, m.get("min_gap"), m.get("mean_contacts"), m.get("max_contacts")))
        print(f"{name:24s} {ms:9.3f} ms/step (paper {paper}, target {target})", flush=True)
    command = "python bench/bench_contact_scenes.py" + (" --quick" if args.quick else "")
    if args.only:
        return _replace_rows(rows, command + " --only " + " ".join(args.only), time.perf_counter() - start)
    lines = ["# Contact scenes (and the tree): time per step", "",
             f"Written by `{command}` on {datetime.date.today()} ({platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}, {time.perf_counter() - start:.0f} s). `ms_per_step` is each scene's "
             "own metric: the whole `advance` calls of its recording loop, Python included, compilation excluded. "
             "Target: issue #11's (10x faster than the paper); `tree`: issue #13's (1 ms). The paper's vertices and "
             "time step are its Table 1's (Bergou et al. 2008; Zhao et al. give the step in the text): a time per step "
             "compares like with like only at the same size and step, so the rows with overrides run two scenes "
             "at the paper's size or step too (docs/benchmarks.md, \"Contact scenes beside the papers: sizes and time steps\").", "",
             "| scene | paper figure | overrides | vertices | dt [s] | ms/step | paper [ms/step] | target [ms/step] | "
             "paper: vertices, dt [s] | min_gap [m] | contacts mean / max |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"]
    lines += [_row_text(*row) for row in rows]
    DOC.write_text("\n".join(lines) + "\n")
    print(f"wrote {DOC}")
    return 0


def _row_head(name, figure, ov) -> str:
    """The start of a row that names it (scene, figure, overrides): what ``--only`` replaces."""
    ov_text = ", ".join(f"{k}={v}" for k, v in ov.items()) or "-"
    return f"| `{name}` | {figure} | {ov_text} |"


def _row_text(name, figure, ov, nv, dt, ms, paper, target, paper_nv, paper_dt, gap, mean, mx) -> str:
    gap_text = "-" if gap is None else f"{gap:.3g}"
    mean_text = "-" if mean is None else f"{mean:.3g} / {mx}"
    dash = lambda v, fmt="{}": "-" if v is None else fmt.format(v)  # noqa: E731
    return (f"{_row_head(name, figure, ov)} {nv} | {dash(dt, '{:.3g}')} | {ms:.3g} | {dash(paper)} | {dash(target)} | "
            f"{dash(paper_nv)}, {dash(paper_dt, '{:.3g}')} | {gap_text} | {mean_text} |")


def _replace_rows(rows, command: str, seconds: float) -> int:
    """Replace the rows of ``rows``' scenes in the table of :data:`DOC` and note the run under it."""
    old = DOC.read_text().splitlines()
    new = {_row_head(*row[:3]): _row_text(*row) for row in rows}
    out, replaced = [], set()
    for line in old:
        head = next((h for h in new if line.startswith(h)), None)
        out.append(new[head] if head else line)
        if head:
            replaced.add(head)
    missing = [h for h in new if h not in replaced]
    if missing:
        raise SystemExit(f"{DOC} has no row for {missing}: run the whole benchmark first")
    out.append("")
    out.append(f"Rows of {', '.join(f'`{row[0]}`' for row in rows)} re-measured by `{command}` on "
               f"{datetime.date.today()} ({platform.machine()}, {os.cpu_count()} cores, load average "
               f"{os.getloadavg()[0]:.1f} at the end, {seconds:.0f} s).")
    DOC.write_text("\n".join(out) + "\n")
    print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
