"""``rodlab sagfree INPUT --out DIR``: sag-free parameters for every strand of a hairstyle.

INPUT is a USC-HairSalon ``.data`` file, a Cem Yuksel ``.hair`` file, or ``synthetic[:STYLE[:STRANDS[:VERTICES]]]``
(STYLE straight | wavy | curly; defaults wavy, 100 strands, 30 vertices). Coordinates are scaled by
``--scale`` into metres. Every strand's first edge is its clamped root edge. Strands are optimized in
parallel over ``--workers`` processes (default: all cores) with a progress bar.

Writes into DIR:
  params.npz     per strand (arrays named s<k>_<name>): optimized stretching stiffness ks [N], rest
                 lengths lbar [m], bending stiffness kbend [N m^2], rest 4D curvature wbar, twisting
                 stiffness ktwist [N m^2], rest twist mbar [rad], and the parameter vectors p, p0
  report.json    per-strand force residual (net force / vertex weight) before and after, parameter
                 changes, outer and MPRGP iterations, wall time, max drift of a forward simulation
                 (naive vs optimized, over strand length) and a summary
  report.md      the summary as a table
  sagfree_report.png  residuals, drifts and parameter changes per strand

Exit status: 0 when every strand converged, 2 for bad input (a malformed file, a bad option), 3 when
a strand was skipped or did not converge (the report is still written; stderr names the first
failed strand). report.json is strict JSON: a quantity that could not be computed is ``null`` with
a ``<name>_reason`` beside it.
"""
from __future__ import annotations

import logging
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def add_subcommand(subparsers) -> None:
    p = subparsers.add_parser("sagfree", help="sag-free parameter optimization of every strand of a hair file",
                              description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("input", help=".data or .hair file, or synthetic[:STYLE[:STRANDS[:VERTICES]]]")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--scheme", default="alm", choices=("alm", "penalty", "rest"))
    p.add_argument("--delta", type=float, default=0.4, help="allowed change of rest curvature and twist (default 0.4)")
    p.add_argument("--radius", type=float, default=5e-4, help="strand radius [m] (default 5e-4)")
    p.add_argument("--E", type=float, default=5e8, help="Young's modulus [Pa] (default 5e8)")
    p.add_argument("--rho", type=float, default=1000.0, help="density [kg/m^3] (default 1000)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply input coordinates by this to get metres")
    p.add_argument("--max-iters", type=int, default=200, help="outer iteration cap per strand (default 200)")
    p.add_argument("--precond", default="asc-schur", choices=("asc", "asc-schur", "ic", "mic", "ssor", "diag", "none"),
                   help="MPRGP preconditioner (default asc-schur: the paper's active-set Cholesky factor applied "
                        "exactly on the current face by a Schur-complement correction, docs/sagfree.md; asc: the "
                        "paper's filtered application)")
    p.add_argument("--t-end", type=float, default=1.0, help="forward simulation for the drift report [s]; 0 skips it")
    p.add_argument("--workers", type=int, default=0, help="processes (default: all cores)")
    p.add_argument("--max-strands", type=int, default=0, help="only the first N strands (0: all)")
    p.add_argument("--no-plot", action="store_true", help="skip the report figure")
    p.set_defaults(fn=run_sagfree)


def _load(spec: str, scale: float):
    from ..hair.formats import read_hair_file
    from ..hair.generator import STYLES, synthetic_hairstyle

    if spec.startswith("synthetic"):
        parts = spec.split(":")
        style = parts[1] if len(parts) > 1 and parts[1] else "wavy"
        if style not in STYLES:
            raise ValueError(f"synthetic style must be one of {', '.join(STYLES)} (got {style!r})")
        ns = int(parts[2]) if len(parts) > 2 else 100
        nv = int(parts[3]) if len(parts) > 3 else 30
        if ns < 1 or nv < 4:
            raise ValueError(f"synthetic needs >= 1 strand of >= 4 vertices (got {ns} x {nv})")
        return synthetic_hairstyle(ns, nv, style=style)
    return [s * scale for s in read_hair_file(spec)]


def _work(args):
    k, x, opts = args
    from ..inverse.sagfree import SagFreeOptions, forward_drift, make_problem, optimize_strand

    out = {"index": k, "n": int(x.shape[0])}
    try:
        e = np.linalg.norm(np.diff(x, axis=0), axis=1)
        if x.shape[0] < 4:
            raise ValueError(f"strand has {x.shape[0]} vertices (need >= 4)")
        if not np.all(e > 1e-9 * max(e.max(), 1e-300)):
            raise ValueError("strand has a zero-length edge")
        problem = make_problem(x, radius=opts["radius"], E=opts["E"], G=opts["E"] / 3.0, rho=opts["rho"])
        res = optimize_strand(problem, SagFreeOptions(scheme=opts["scheme"], delta=opts["delta"], max_iters=opts["max_iters"],
                                                      precond=opts["precond"]))
        m = res.model
        out.update(success=res.success, message=res.message, residual=res.residual, residual_initial=res.initial_residual,
                   iterations=res.iterations, mprgp_iters_mean=res.qp_iterations_mean, wall_s=res.wall_s,
                   stiffness_change_max=res.stiffness_change_max, rest_change_max=res.rest_change_max,
                   bounds_ok=res.bounds_ok,
                   arrays=dict(ks=m.ks, lbar=m.lbar, kbend=m.kbend, wbar=m.wbar, ktwist=m.ktwist, mbar=m.mbar, p=res.params, p0=res.params0))
        if opts["t_end"] > 0:
            out["drift"] = forward_drift(problem, m, opts["t_end"])[0]
            out["drift_naive"] = forward_drift(problem, problem.model, opts["t_end"])[0]
    except (ValueError, FloatingPointError) as exc:
        out.update(success=False, message=f"skipped: {exc}", error=True)
    return out


def _init_worker():
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def run_sagfree(args) -> int:
    from ..hair.formats import HairFormatError
    from tqdm import tqdm

    for name, v in (("radius", args.radius), ("E", args.E), ("rho", args.rho), ("delta", args.delta), ("scale", args.scale)):
        if not (v > 0 and math.isfinite(v)):
            print(f"rodlab sagfree: error: --{name} must be a finite number > 0 (got {v})", file=sys.stderr)
            return 2
    if args.t_end < 0 or args.max_iters < 0 or args.workers < 0 or args.max_strands < 0:
        print("rodlab sagfree: error: --t-end, --max-iters, --workers and --max-strands must be >= 0", file=sys.stderr)
        return 2
    try:
        strands = _load(args.input, args.scale)
    except (HairFormatError, ValueError, OSError) as exc:
        print(f"rodlab sagfree: error: {exc}", file=sys.stderr)
        return 2
    if args.max_strands:
        strands = strands[: args.max_strands]
    if not strands:
        print("rodlab sagfree: error: the input has no strands", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    opts = dict(radius=args.radius, E=args.E, rho=args.rho, scheme=args.scheme, delta=args.delta,
                max_iters=args.max_iters, t_end=args.t_end, precond=args.precond)
    workers = args.workers or os.cpu_count() or 1
    jobs = [(k, np.ascontiguousarray(s, dtype=float), opts) for k, s in enumerate(strands)]
    # compile once in this process so workers load the numba cache instead of compiling in parallel
    _work((0, jobs[0][1], dict(opts, t_end=min(opts["t_end"], 1.0 / 60.0), max_iters=1)))
    t0 = time.perf_counter()
    results = []
    bar = tqdm(total=len(jobs), desc="sagfree", unit="strand")
    if workers == 1 or len(jobs) == 1:
        for j in jobs:
            results.append(_work(j))
            bar.update(1)
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker) as ex:
            for r in ex.map(_work, jobs, chunksize=max(1, len(jobs) // (8 * workers))):
                results.append(r)
                bar.update(1)
    bar.close()
    wall = time.perf_counter() - t0
    arrays = {}
    rows = []
    for r in results:
        a = r.pop("arrays", None)
        if a is not None:
            for name, v in a.items():
                arrays[f"s{r['index']}_{name}"] = v
        rows.append(r)
    np.savez_compressed(out / "params.npz", **arrays)
    ok = [r for r in rows if r.get("success")]
    done = [r for r in rows if "residual" in r]

    def stat(key, fn):
        vals = [r[key] for r in done if key in r]
        return float(fn(vals)) if vals else float("nan")

    summary = dict(
        input=args.input, strands=len(rows), converged=len(ok), skipped=sum(1 for r in rows if r.get("error")),
        workers=workers, wall_s=wall, scheme=args.scheme, delta=args.delta, radius=args.radius, E=args.E, rho=args.rho,
        residual_max=stat("residual", max), residual_initial_max=stat("residual_initial", max),
        iterations_mean=stat("iterations", np.mean), mprgp_iters_mean=stat("mprgp_iters_mean", np.mean),
        stiffness_change_max=stat("stiffness_change_max", max), rest_change_max=stat("rest_change_max", max),
        drift_max=stat("drift", max), drift_naive_max=stat("drift_naive", max),
        optimization_s_total=stat("wall_s", sum),
    )
    from ..io.jsonsafe import dumps

    why_none = "no strand was optimised (every strand was skipped)" if not done else None
    reasons = {k: why_none for k in summary if why_none and isinstance(summary[k], float) and not math.isfinite(summary[k])}
    if args.t_end == 0:
        reasons.update(drift_max="--t-end 0 skips the forward simulation", drift_naive_max="--t-end 0 skips the forward simulation")
    (out / "report.json").write_text(dumps({"summary": summary, "strands": rows}, reasons=reasons, indent=1, default=float))
    lines = ["# rodlab sagfree report", "", "| quantity | value |", "| --- | --- |"]
    lines += [f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in summary.items()]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    if not args.no_plot and done:
        _plot(done, out / "sagfree_report.png")
    def fmt(v):
        return f"{v:.3g}" if math.isfinite(v) else "n/a"

    print(f"rodlab sagfree: {len(ok)}/{len(rows)} strands converged (max residual {fmt(summary['residual_max'])}, "
          f"max drift {fmt(summary['drift_max'])} vs naive {fmt(summary['drift_naive_max'])}) in {wall:.2f} s on {workers} workers; "
          f"wrote {out}")
    failed = [r for r in rows if not r.get("success")]
    if failed:
        first = failed[0]
        print(f"rodlab sagfree: error: {len(failed)} of {len(rows)} strands failed (first: strand {first['index']}: "
              f"{first.get('message', 'did not converge')}); see {out / 'report.json'}", file=sys.stderr)
        return 3
    return 0


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    idx = [r["index"] for r in rows]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    ax[0].semilogy(idx, [max(r["residual_initial"], 1e-17) for r in rows], "o", ms=3, label="naive")
    ax[0].semilogy(idx, [max(r["residual"], 1e-17) for r in rows], "o", ms=3, label="optimized")
    ax[0].set_title("force residual / vertex weight")
    ax[0].set_xlabel("strand")
    ax[0].legend()
    if "drift" in rows[0]:
        ax[1].semilogy(idx, [max(r["drift_naive"], 1e-17) for r in rows], "o", ms=3, label="naive")
        ax[1].semilogy(idx, [max(r["drift"], 1e-17) for r in rows], "o", ms=3, label="optimized")
        ax[1].set_title("max drift / strand length")
        ax[1].legend()
    ax[1].set_xlabel("strand")
    ax[2].plot(idx, [r["stiffness_change_max"] for r in rows], "o", ms=3, label="stiffness scale")
    ax[2].plot(idx, [r["rest_change_max"] for r in rows], "o", ms=3, label="rest shape")
    ax[2].set_title("max parameter change")
    ax[2].set_xlabel("strand")
    ax[2].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
