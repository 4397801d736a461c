"""Parameter sweeps on Dask: the Cartesian product of parameter values of a scene (a registered scene or a
``.toml`` scene file), one scene run per Dask task, each writing its own folder, gathered into one table.

    plan = plan_sweep("cantilever", {"n": ["8", "12"], "E": ["1e7", "1e8"]}, {"t_end": "0.05"})   # checks every value
    with connect(workers=2) as client:
        result = sweep("cantilever", {"n": ["8", "12"], "E": ["1e7", "1e8"]}, {"t_end": "0.05"}, "out", client=client,
                       plots=[("tip_z", "E")])
    result.rows          # one dict per run: run, folder, the parameters, success, error, wall_s, the metrics

A run that raises (or whose scene reports ``success = false``) is a row with ``success = False`` and its
error message; the sweep goes on. Folders are named from the run index and the parameters
(``run002_n=12_E=1e7``); a failed run leaves ``error.txt`` (the traceback) in its folder.
"""
from __future__ import annotations

import itertools
import json
import math
import re
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..model import ModelError
from .tables import columns_of, write_table

RESERVED = ("run", "folder", "success", "error", "wall_s")


class SweepInputError(ModelError):
    """A bad ``--grid`` / ``--set`` / ``--plot`` (unknown parameter, value out of range, malformed item)."""


def split_values(text: str) -> list[str]:
    """Split ``v1,v2,...`` on the commas outside brackets and quotes (``[0,0,-9.81],[0,0,0]`` is two values)."""
    out, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """``["n=8,12", "E=1e7,1e8"]`` -> ``{"n": ["8", "12"], "E": ["1e7", "1e8"]}`` (order kept).

    Raises
    ------
    SweepInputError
        An item without ``=``, an empty value, or a name given twice.
    """
    grid: dict[str, list[str]] = {}
    for item in items or []:
        if "=" not in item:
            raise SweepInputError(f"--grid expects NAME=V1,V2,... (got {item!r})")
        name, values = (s.strip() for s in item.split("=", 1))
        vals = split_values(values)
        if not name or any(v == "" for v in vals):
            raise SweepInputError(f"--grid {item!r}: expected a name and one or more non-empty comma-separated values")
        if name in grid:
            raise SweepInputError(f"--grid {name} is given twice: put all its values in one --grid {name}=V1,V2,...")
        grid[name] = vals
    return grid


def parse_sets(items: list[str]) -> dict[str, str]:
    """``["t_end=0.1"]`` -> ``{"t_end": "0.1"}``; raises :class:`SweepInputError` on an item without ``=``."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise SweepInputError(f"--set expects NAME=VALUE (got {item!r})")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


@dataclass
class SweepPlan:
    """A checked sweep: ``kind`` "scene" (registry name) or "file" (absolute path of a .toml), the grid
    parameter ``names``, the fixed ``sets`` and one job per run (dicts: index, params (typed values of the
    grid parameters), overrides (what the run gets: sets and grid values), label (folder name))."""

    scene: str
    kind: str
    names: list[str]
    sets: dict
    jobs: list[dict] = field(default_factory=list)


def _label(index: int, raw: dict) -> str:
    text = "_".join(f"{k}={v}" for k, v in raw.items())
    return f"run{index:03d}_" + re.sub(r"[^A-Za-z0-9._=+-]", "-", text)[:120]


def plan_sweep(scene: str, grid: dict[str, list[str]], sets: dict[str, str] | None = None) -> SweepPlan:
    """Check every grid value and fixed value against the scene's parameters and build one job per point
    of the Cartesian product (the last parameter varies fastest).

    Raises
    ------
    SweepInputError
        Unknown scene or file, unknown parameter, a value outside its allowed range (the message names the
        parameter and the range), a parameter both in the grid and fixed, an empty grid.
    """
    sets = dict(sets or {})
    if not grid:
        raise SweepInputError("a sweep needs at least one --grid NAME=V1,V2,...")
    both = sorted(set(grid) & set(sets))
    if both:
        raise SweepInputError(f"parameter {both[0]} is both swept (--grid) and fixed (--set): give it once")
    if scene.lower().endswith(".toml"):
        from ..scenefile import load
        from ..scenefile.schema import parse_override_value

        path = str(Path(scene).resolve())
        try:
            load(path, sets)
            for k, values in grid.items():
                for v in values:
                    load(path, {**sets, k: v})
        except ModelError as exc:  # SceneFileError names the file, the key and the allowed values
            raise SweepInputError(str(exc)) from None
        typed = {k: [parse_override_value(v) for v in vals] for k, vals in grid.items()}
        plan = SweepPlan(path, "file", list(grid), sets)
    else:
        from ..scenes.registry import SceneError, get_scene

        try:
            sc = get_scene(scene)
            fixed = {k: sc.param(k).parse(v) for k, v in sets.items()}
            typed = {k: [sc.param(k).parse(v) for v in vals] for k, vals in grid.items()}
        except SceneError as exc:
            raise SweepInputError(str(exc)) from None
        plan = SweepPlan(scene, "scene", list(grid), fixed)
    for i, combo in enumerate(itertools.product(*(range(len(v)) for v in grid.values()))):
        raw = {k: grid[k][j] for k, j in zip(grid, combo)}
        params = {k: typed[k][j] for k, j in zip(grid, combo)}
        overrides = {**plan.sets, **(raw if plan.kind == "file" else params)}
        plan.jobs.append({"index": i, "params": params, "overrides": overrides, "label": _label(i, raw)})
    return plan


def run_one(job: dict) -> dict:
    """Run one point of a sweep (the Dask task): the scene with ``job["overrides"]``, outputs written to
    ``job["folder"]`` (metrics.json, trajectory.npz, pictures when ``job["pictures"]``). Never raises for
    a failed run: returns its row with ``success = False`` and ``error``, and writes ``error.txt``."""
    folder = Path(job["folder"])
    row = {"run": job["index"], "folder": folder.name, **job["params"], "success": False, "error": None, "wall_s": math.nan}
    start = time.perf_counter()
    metrics = {}
    try:
        if job["kind"] == "file":
            from ..scenefile import run_scene_file

            metrics = dict(run_scene_file(job["scene"], out=folder, overrides=job["overrides"], plot=job["pictures"]).metrics)
        else:
            from ..cli import run_and_write

            metrics = dict(run_and_write(job["scene"], job["overrides"], folder, plot=job["pictures"], quiet=True)[0].metrics)
    except Exception as exc:  # noqa: BLE001 - a failed run is a row, not a crashed sweep
        row["error"] = _error_text(exc, folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "error.txt").write_text(traceback.format_exc())
    row["wall_s"] = time.perf_counter() - start
    if row["error"] is None:
        ok = bool(metrics.pop("success", True))
        row["success"] = ok
        if not ok:
            row["error"] = str(metrics.get("message") or "the scene reported success = false")
    for k, v in metrics.items():
        row[f"metric_{k}" if k in RESERVED or k in job["params"] else k] = v
    return row


def _error_text(exc: BaseException, folder: Path) -> str:
    """The error of a failed run: the ``error`` that ``rodlab run`` wrote into metrics.json for a failed
    simulation (its exception then carries only the exit status), else the exception itself."""
    try:
        written = json.loads((folder / "metrics.json").read_text()).get("error")
    except (OSError, ValueError, AttributeError):
        written = None
    return str(written) if written else f"{type(exc).__name__}: {exc}"


def _failed_row(job: dict, exc: BaseException) -> dict:
    return {"run": job["index"], "folder": Path(job["folder"]).name, **job["params"], "success": False,
            "error": f"{type(exc).__name__}: {exc} (the task failed on the cluster after its retries)", "wall_s": math.nan}


def parse_plot(spec: str, names: list[str]) -> tuple[str, str]:
    """``"tip_z:E"`` -> ``("tip_z", "E")``; the parameter must be one of the swept ``names``."""
    metric, sep, param = spec.partition(":")
    if not sep or not metric or not param:
        raise SweepInputError(f"--plot expects METRIC:PARAM (got {spec!r})")
    if param not in names:
        raise SweepInputError(f"--plot {spec}: {param!r} is not a swept parameter; swept: {', '.join(names)}")
    return metric, param


@dataclass
class SweepResult:
    """``rows`` (one per run, in run order), the table ``files``, the ``plots`` written, the ``failed``
    rows, ``problems`` (plots that could not be drawn, e.g. an unknown metric) and the ``wall_s``."""

    rows: list[dict]
    files: list[Path]
    plots: list[Path]
    failed: list[dict]
    problems: list[str]
    wall_s: float


def sweep(scene: str, grid: dict[str, list[str]], sets: dict[str, str] | None, out, *, client,
          task: Callable[[dict], dict] | None = None, plots=(), pictures: bool = False, retries: int = 1,
          progress: bool = True) -> SweepResult:
    """Run the sweep on the Dask ``client`` (:func:`rodlab.distributed.connect`): one task per run
    (``task(job)``, default :func:`run_one`, submitted with ``retries``), each writing ``out/<label>``;
    then ``out/sweep.csv`` (+ ``sweep.parquet`` with pyarrow), ``out/sweep.json`` (the plan and counts)
    and one PNG per ``(metric, param)`` in ``plots`` (``out/sweep_<metric>_vs_<param>.png``). ``out`` must
    be reachable from every worker at the same path."""
    from tqdm import tqdm

    plan = plan_sweep(scene, grid, sets)
    plot_specs = [parse_plot(p, plan.names) if isinstance(p, str) else tuple(p) for p in plots]
    for _, param in plot_specs:
        if param not in plan.names:
            raise SweepInputError(f"plot parameter {param!r} is not a swept parameter; swept: {', '.join(plan.names)}")
    if retries < 0:
        raise SweepInputError(f"retries must be >= 0, got {retries}")
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    jobs = [dict(j, folder=str(out / j["label"]), kind=plan.kind, scene=plan.scene, pictures=pictures) for j in plan.jobs]
    start = time.perf_counter()
    tag = uuid.uuid4().hex[:8]
    fn = task or run_one
    futures = {client.submit(fn, job, key=f"rodlab-sweep-{tag}-{job['index']}", pure=False, retries=retries): job
               for job in jobs}
    rows: list[dict | None] = [None] * len(jobs)
    bar = tqdm(total=len(jobs), desc=f"sweep {Path(scene).stem}", unit="run", disable=not progress)

    def done(fut, row):
        rows[futures[fut]["index"]] = row
        bar.update(1)

    def error(fut, exc):
        job = futures[fut]
        rows[job["index"]] = _failed_row(job, exc)
        bar.update(1)

    from .cluster import gather_as_completed

    gather_as_completed(futures, done, error)
    bar.close()
    wall = time.perf_counter() - start
    head = ["run", "folder", *plan.names, "success", "error", "wall_s"]
    cols = head + [c for c in columns_of(rows) if c not in head]
    files = write_table(rows, out / "sweep", columns=cols)
    failed = [r for r in rows if not r["success"]]
    summary = {"scene": plan.scene, "kind": plan.kind, "grid": grid, "sets": dict(sets or {}), "runs": len(rows),
               "failed": len(failed), "wall_s": wall}
    (out / "sweep.json").write_text(json.dumps(summary, indent=1) + "\n")
    files.append(out / "sweep.json")
    pngs, problems = [], []
    for metric, param in plot_specs:
        try:
            pngs.append(plot_metric(rows, metric, param, plan.names, out / f"sweep_{metric}_vs_{param}.png"))
        except SweepInputError as exc:
            problems.append(str(exc))
    return SweepResult(rows, files, pngs, failed, problems, wall)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def plot_metric(rows: list[dict], metric: str, param: str, names: list[str], path) -> Path:
    """``metric`` against ``param`` over the successful rows, one line per combination of the other swept
    parameters; raises :class:`SweepInputError` when no successful run has a numeric ``metric``."""
    ok = [r for r in rows if r["success"] and _number(r.get(metric))]
    if not ok:
        have = sorted({k for r in rows if r["success"] for k, v in r.items() if _number(v) and k not in RESERVED})
        raise SweepInputError(f"--plot {metric}:{param}: no successful run has a numeric metric {metric!r}; "
                              f"metrics: {', '.join(have) or 'none (every run failed)'}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    others = [n for n in names if n != param]
    xs_all = [r[param] for r in ok]
    numeric = all(_number(x) for x in xs_all)
    cats = list(dict.fromkeys(xs_all))
    groups: dict[tuple, list] = {}
    for r in ok:
        groups.setdefault(tuple(r[n] for n in others), []).append(r)
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r[param] if numeric else cats.index(r[param]))
        x = [r[param] if numeric else cats.index(r[param]) for r in rs]
        label = ", ".join(f"{n}={v}" for n, v in zip(others, key)) or None
        ax.plot(x, [r[metric] for r in rs], "o-", label=label)
    if numeric and min(xs_all) > 0 and max(xs_all) >= 100 * min(xs_all):
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(cats)), [str(c) for c in cats])
    ax.set_xlabel(param)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs {param}")
    if others:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)
