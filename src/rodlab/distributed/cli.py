"""``rodlab sweep SCENE --grid NAME=V1,V2,... [--grid ...] [--set NAME=VALUE ...] [--out DIR]``: a parameter
sweep on Dask (docs/dask.md).

SCENE is a scene name (``rodlab scenes``; parameters: ``rodlab params SCENE``) or a scene file PATH.toml
(keys ``section.key``, e.g. ``simulation.dt``, ``rod[0].E``). Every combination of the ``--grid`` values
is one scene run, one Dask task, on a LocalCluster with the machine's cores (``--workers``) or on an
existing cluster (``--scheduler tcp://HOST:8786``, whose workers must see DIR and the scene file at the
same paths). Each run writes its own folder under DIR (``run003_n=12_E=1e7``: metrics.json,
trajectory.npz, pictures with ``--pictures``); DIR/sweep.csv (and sweep.parquet when pyarrow is
installed) has one row per run: run, folder, the swept parameters, success, error, wall_s [s], then
the scene's metrics. ``--plot METRIC:PARAM`` draws DIR/sweep_METRIC_vs_PARAM.png.

Exit status: 0 when every run succeeded; 1 when Dask is not installed; 2 for bad input (an unknown
parameter or a value outside its range, checked before anything runs; an unknown plot metric); 3 when
some runs failed (their rows carry the error; the table is still written).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_subcommand(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="parameter sweep of a scene or scene file on Dask: one run per task, one table",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scene", help="a scene name (rodlab scenes) or a scene file PATH.toml")
    p.add_argument("--grid", action="append", required=True, metavar="NAME=V1,V2,...",
                   help="a swept parameter and its values (repeatable: the runs are the Cartesian product)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="fix a parameter for every run (repeatable)")
    p.add_argument("--out", help="output folder (default rodlab-sweep/SCENE)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (tcp://host:8786); default: a LocalCluster")
    p.add_argument("--workers", type=int, default=0, help="LocalCluster worker processes (default: all cores)")
    p.add_argument("--plot", action="append", default=[], metavar="METRIC:PARAM", help="plot a metric against a swept parameter (repeatable)")
    p.add_argument("--pictures", action="store_true", help="also write each run's pictures (default: metrics and trajectory only)")
    p.add_argument("--retries", type=int, default=1, help="re-runs of a task that raised on the cluster (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(fn=cmd_sweep)


def cmd_sweep(args) -> int:
    from .cluster import DaskMissing, require_dask
    from .paramsweep import SweepInputError, parse_grid, parse_plot, parse_sets, plan_sweep

    try:
        require_dask("rodlab sweep")
    except DaskMissing as exc:
        print(f"rodlab sweep: error: {exc}", file=sys.stderr)
        return 1
    try:
        if args.workers < 0 or args.retries < 0:
            raise SweepInputError(f"--workers and --retries must be >= 0 (got {args.workers}, {args.retries})")
        grid, sets = parse_grid(args.grid), parse_sets(args.set)
        plan = plan_sweep(args.scene, grid, sets)  # every value checked before a cluster starts
        for spec in args.plot:
            parse_plot(spec, plan.names)
    except SweepInputError as exc:
        print(f"rodlab sweep: error: {exc}", file=sys.stderr)
        return 2
    from ..model import ModelError
    from .cluster import connect
    from .paramsweep import sweep

    out = Path(args.out) if args.out else Path("rodlab-sweep") / Path(args.scene).stem
    try:
        with connect(args.scheduler, args.workers) as client:
            res = sweep(args.scene, grid, sets, out, client=client, plots=args.plot, pictures=args.pictures,
                        retries=args.retries, progress=not args.no_progress)
    except ModelError as exc:
        print(f"rodlab sweep: error: {exc}", file=sys.stderr)
        return 2
    print(f"rodlab sweep: {len(res.rows) - len(res.failed)}/{len(res.rows)} runs succeeded in {res.wall_s:.2f} s; "
          f"wrote {', '.join(str(f) for f in res.files + res.plots)}")
    for problem in res.problems:
        print(f"rodlab sweep: error: {problem}", file=sys.stderr)
    for r in res.failed[:10]:
        print(f"rodlab sweep: run {r['run']} ({r['folder']}) failed: {r['error']}", file=sys.stderr)
    if len(res.failed) > 10:
        print(f"rodlab sweep: ... and {len(res.failed) - 10} more failed runs (see {out / 'sweep.csv'})", file=sys.stderr)
    if res.problems:
        return 2
    return 3 if res.failed else 0
