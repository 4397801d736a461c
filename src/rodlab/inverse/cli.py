"""``rodlab sagfree INPUT --out DIR``: sag-free parameters for every strand of a hairstyle.

INPUT is a USC-HairSalon ``.data`` file, a Cem Yuksel ``.hair`` file, or ``synthetic[:STYLE[:STRANDS[:VERTICES]]]``
(STYLE straight | wavy | curly; defaults wavy, 100 strands, 30 vertices). Coordinates are scaled by
``--scale`` into metres. Every strand's first edge is its clamped root edge. Strands are optimized as
Dask tasks of ``--batch`` strands (default: up to 256, at least 4 tasks per worker) on a LocalCluster of
``--workers`` processes (default: all cores), or on an existing cluster (``--scheduler tcp://HOST:8786``),
with a progress bar; ``--workers 1`` (or Dask not installed: ``pip install "rodlab[distributed]"``) runs
them in this process. A task whose worker dies is re-run on another worker; a task that raises is re-run
``--retries`` times; a batch lost for good is reported per strand (docs/dask.md).

Writes into DIR:
  params.npz     per strand (arrays named s<k>_<name>): optimized stretching stiffness ks [N], rest
                 lengths lbar [m], bending stiffness kbend [N m^2], rest 4D curvature wbar, twisting
                 stiffness ktwist [N m^2], rest twist mbar [rad], and the parameter vectors p, p0
  report.json    per-strand force residual (net force / vertex weight) before and after, parameter
                 changes, outer and MPRGP iterations, wall time, max drift of a forward simulation
                 (naive vs optimized, over strand length) and a summary
  report.md      the summary as a table
  sagfree_report.png  residuals, drifts and parameter changes per strand
  strands.csv    one row per strand: strand, success, iterations, residual, residual_initial, drift,
                 drift_naive (max drift / strand length), time_s (all work on the strand, wall [s]),
                 cpu_s (the same in CPU time of the thread that ran it [s]: a Dask worker's own threads are
                 not counted), optimization_s [s], message; also strands.parquet
                 when pyarrow is installed

Exit status: 0 when every strand converged, 2 for bad input (a malformed file, a bad option), 3 when
a strand was skipped or did not converge (the report is still written; stderr names the failed
strands with their iterations and residual). report.json is strict JSON: a quantity that could not be
computed is ``null`` with a ``<name>_reason`` beside it.
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
    p.add_argument("--workers", type=int, default=0,
                   help="LocalCluster worker processes (default: all cores; 1: this process, no Dask)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (tcp://host:8786) instead of a LocalCluster")
    p.add_argument("--batch", type=int, default=0, help="strands per Dask task (default 0: up to 256, >= 4 tasks per worker)")
    p.add_argument("--retries", type=int, default=1, help="re-runs of a task that raised on the cluster (default 1)")
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
    """One strand ``(index, x (n, 3) [m], opts)``: its result row. ``cpu_s`` is the CPU time [s] of the
    calling thread (its kernels are single-threaded), not of the process: inside a Dask worker the
    process time also holds the worker's event loop, heartbeats and monitors (docs/dask.md, "Speed")."""
    k, x, opts = args
    from ..inverse.sagfree import SagFreeOptions, forward_drift, make_problem, optimize_strand

    start, cpu = time.perf_counter(), time.thread_time()
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
    out["time_s"], out["cpu_s"] = time.perf_counter() - start, time.thread_time() - cpu
    return out


def work_batch(batch, opts) -> list[dict]:
    """Optimize the strands ``batch`` (``[(index, x), ...]``) with the options ``opts``: their result rows."""
    return [_work((k, x, opts)) for k, x in batch]


def work_packed(batch, opts):
    """One Dask task: :func:`work_batch` on a :class:`~rodlab.inverse.strand_batches.StrandBatch`, its rows
    returned packed (:class:`~rodlab.inverse.strand_batches.BatchResults`), so that the task's input and
    result each cross the network as a few arrays, not one per strand (docs/dask.md, "Speed")."""
    from .strand_batches import BatchResults

    return BatchResults.pack(work_batch(batch.jobs(), opts))


_WARM_OPTS = dict(radius=5e-4, E=5e8, rho=1000.0, scheme="alm", delta=0.4, max_iters=1, t_end=1.0 / 60.0, precond="asc-schur")


def warm_kernels() -> None:
    """Compile (or load from the numba cache) every kernel a strand's optimization and drift check use,
    with one iteration on a small strand: run once here before the workers start (so the cache is
    written once) and once per worker (:class:`rodlab.distributed.WarmUpPlugin`), not per task."""
    from ..hair.generator import synthetic_hairstyle

    x = np.ascontiguousarray(synthetic_hairstyle(1, 8, style="wavy", seed=0)[0], dtype=float)
    _work((0, x, _WARM_OPTS))


def _batch_size(n: int, workers: int, batch: int) -> int:
    return batch if batch else max(1, min(256, math.ceil(n / (4 * max(workers, 1)))))


def _lost(batch, exc) -> list[dict]:
    """Failed rows for the strands of the :class:`StrandBatch` ``batch`` whose task failed with ``exc``."""
    return [{"index": int(k), "n": int(n), "success": False, "error": True,
             "message": f"lost: its task failed on the cluster after its retries ({type(exc).__name__}: {exc})"}
            for k, n in zip(batch.indices, batch.vertex_counts())]


def optimize_groom(client, jobs, opts, *, workers: int, batch: int = 0, retries: int = 1,
                   bar=None) -> tuple[list[dict], int, int]:
    """Optimize the strands ``jobs`` (``[(index, x), ...]``) on the Dask ``client`` in tasks of ``batch``
    strands (0: up to 256, >= 4 tasks per worker), each submitted with ``retries``. Returns the per-strand
    results in strand order (a batch whose task failed for good: its strands with ``success = False`` and
    ``message`` starting ``lost:``), the batch size and the number of tasks."""
    from ..distributed.cluster import gather_as_completed
    from .strand_batches import StrandBatch

    size = _batch_size(len(jobs), workers, batch)
    batches = [StrandBatch.pack(jobs[i:i + size]) for i in range(0, len(jobs), size)]
    futures = {client.submit(work_packed, b, opts, pure=False, retries=retries): b for b in batches}
    results = []

    def done(fut, packed):
        rows = packed.unpack()
        results.extend(rows)
        if bar is not None:
            bar.update(len(rows))

    def error(fut, exc):
        results.extend(_lost(futures[fut], exc))
        if bar is not None:
            bar.update(len(futures[fut]))

    gather_as_completed(futures, done, error)
    results.sort(key=lambda r: r["index"])
    return results, size, len(batches)


def _run_dask(jobs, opts, args, bar) -> tuple[list[dict], dict]:
    """The strands on Dask; returns the per-strand results and what ran (backend, workers, tasks,
    batch, startup_s: cluster start and worker warm-up [s])."""
    from ..distributed.cluster import connect

    t0 = time.perf_counter()
    with connect(args.scheduler, args.workers, warmup=warm_kernels, fork_workers=True) as client:
        if args.scheduler:
            workers = len(client.scheduler_info(n_workers=-1)["workers"])
        else:
            workers = args.workers or os.cpu_count() or 1
        startup = time.perf_counter() - t0
        results, size, tasks = optimize_groom(client, jobs, opts, workers=workers, batch=args.batch, retries=args.retries,
                                              bar=bar)
    info = dict(backend="dask scheduler " + args.scheduler if args.scheduler else "dask LocalCluster", workers=workers,
                tasks=tasks, batch=size, startup_s=startup)
    return results, info


def run_sagfree(args) -> int:
    from ..hair.formats import HairFormatError
    from tqdm import tqdm

    for name, v in (("radius", args.radius), ("E", args.E), ("rho", args.rho), ("delta", args.delta), ("scale", args.scale)):
        if not (v > 0 and math.isfinite(v)):
            print(f"rodlab sagfree: error: --{name} must be a finite number > 0 (got {v})", file=sys.stderr)
            return 2
    if args.t_end < 0 or min(args.max_iters, args.workers, args.max_strands, args.batch, args.retries) < 0:
        print("rodlab sagfree: error: --t-end, --max-iters, --workers, --max-strands, --batch and --retries must be >= 0",
              file=sys.stderr)
        return 2
    from ..distributed.cluster import INSTALL_HINT, dask_available

    use_dask = bool(args.scheduler) or args.workers != 1
    if use_dask and not dask_available():
        if args.scheduler:
            print(f"rodlab sagfree: error: --scheduler needs Dask's distributed scheduler, which is not installed; "
                  f"install it with: {INSTALL_HINT}", file=sys.stderr)
            return 2
        print(f"rodlab sagfree: Dask is not installed, so the strands run in this one process; for all cores or a "
              f"cluster install it with: {INSTALL_HINT}", file=sys.stderr)
        use_dask = False
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
    jobs = [(k, np.ascontiguousarray(s, dtype=float)) for k, s in enumerate(strands)]
    # compile once in this process, so that the workers load the numba cache instead of compiling in parallel
    warm_kernels()
    t0 = time.perf_counter()
    bar = tqdm(total=len(jobs), desc="sagfree", unit="strand")
    if use_dask:
        from ..model import ModelError

        try:
            results, info = _run_dask(jobs, opts, args, bar)
        except ModelError as exc:  # e.g. the scheduler cannot be reached
            bar.close()
            print(f"rodlab sagfree: error: {exc}", file=sys.stderr)
            return 2
    else:
        info = dict(backend="single process", workers=1, tasks=len(jobs), batch=1, startup_s=0.0)
        results = []
        for k, x in jobs:
            results.append(_work((k, x, opts)))
            bar.update(1)
    bar.close()
    wall = time.perf_counter() - t0
    workers = info["workers"]
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
        workers=workers, wall_s=wall, compute_s=wall - info["startup_s"], scheme=args.scheme, delta=args.delta, radius=args.radius, E=args.E, rho=args.rho,
        residual_max=stat("residual", max), residual_initial_max=stat("residual_initial", max),
        iterations_mean=stat("iterations", np.mean), mprgp_iters_mean=stat("mprgp_iters_mean", np.mean),
        stiffness_change_max=stat("stiffness_change_max", max), rest_change_max=stat("rest_change_max", max),
        drift_max=stat("drift", max), drift_naive_max=stat("drift_naive", max),
        optimization_s_total=stat("wall_s", sum), strand_s_total=stat("time_s", sum),
        **{k: v for k, v in info.items() if k != "workers"},
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
    from ..distributed.tables import write_table

    write_table([{"strand": r["index"], "success": bool(r.get("success")), "iterations": r.get("iterations"),
                  "residual": r.get("residual"), "residual_initial": r.get("residual_initial"), "drift": r.get("drift"),
                  "drift_naive": r.get("drift_naive"), "time_s": r.get("time_s"), "cpu_s": r.get("cpu_s"),
                  "optimization_s": r.get("wall_s"),
                  "message": r.get("message")} for r in rows], out / "strands")
    if not args.no_plot and done:
        _plot(done, out / "sagfree_report.png")
    def fmt(v):
        return f"{v:.3g}" if math.isfinite(v) else "n/a"

    print(f"rodlab sagfree: {len(ok)}/{len(rows)} strands converged (max residual {fmt(summary['residual_max'])}, "
          f"max drift {fmt(summary['drift_max'])} vs naive {fmt(summary['drift_naive_max'])}) in {wall:.2f} s on {workers} workers; "
          f"wrote {out}")
    failed = [r for r in rows if not r.get("success")]
    if failed:
        print(f"rodlab sagfree: error: {len(failed)} of {len(rows)} strands failed; see {out / 'report.json'} and "
              f"{out / 'strands.csv'}", file=sys.stderr)
        for r in failed[:10]:
            res = r.get("residual")
            what = (f"{r.get('iterations')} iterations, residual {res:.3g}" if res is not None
                    else "not optimized")
            print(f"  strand {r['index']}: {what}: {r.get('message', 'did not converge')}", file=sys.stderr)
        if len(failed) > 10:
            print(f"  ... and {len(failed) - 10} more", file=sys.stderr)
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
