"""rodlab's methods on the cosseratbench suite, beside PyElastica and MuJoCo's cable.

    python -m pip install -e . -r bench/requirements-peers.txt   # once (registers the adapters)
    python bench/bench_cosseratbench.py [--quick] [--experiments NAME ...] [--solvers NAME ...] [--elements N ...]

Runs every cosseratbench experiment that a rodlab adapter supports (the others are listed as
unsupported with the adapter's reason), at the suite's resolutions (the experiment's default
element count, and half and twice it, as ``cosseratbench run --vary resolution`` does;
``--quick``: the default only), with each rodlab solver and the peers ``pyelastica`` and
``mujoco`` through the suite's own ``cosseratbench.run`` (a warm-up run first, so compilation is
excluded from the wall time). Writes the scores (the experiment's error metrics and wall times)
into docs/benchmarks.md (section ``bench_cosseratbench``).
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import logging
import math
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rodlab.bench_adapters.report import command_line, machine, md_table, write_section  # noqa: E402

RODLAB = ("rodlab-der", "rodlab-der-implicit", "rodlab-compact", "rodlab-galpha")
PEERS = ("pyelastica", "mujoco")


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{v:.3g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="default resolution only, no docs update")
    ap.add_argument("--experiments", nargs="*", help="run only these experiments; the docs table keeps the other "
                                                      "experiments' rows and notes from its last full run")
    ap.add_argument("--solvers", nargs="*", help="run only these solvers (default: rodlab's four and the peers)")
    ap.add_argument("--elements", nargs="*", type=int, help="run only these resolutions (with --experiments: "
                                                            "the table keeps the other resolutions' rows)")
    args = ap.parse_args(argv)
    logging.getLogger("rodlab").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    try:
        import cosseratbench as cb
        from cosseratbench import registry
    except ImportError:
        print("cosseratbench is not installed: python -m pip install -r bench/requirements-peers.txt", file=sys.stderr)
        return 2
    from rodlab.bench_adapters.cosseratbench import SOLVERS as RODLAB_SOLVERS

    solvers, notes = {}, []
    for name in RODLAB + PEERS:
        if args.solvers and name not in args.solvers:
            continue
        try:
            solvers[name] = registry.load_solver(name) if name in registry.names(registry.SOLVERS) else RODLAB_SOLVERS[name]()
        except Exception as exc:  # a peer that will not import: say so
            notes.append(f"{name}: not run ({type(exc).__name__}: {exc})")
    names = args.experiments or registry.names(registry.EXPERIMENTS)
    experiments = [registry.load_experiment(n) for n in names]
    supported, driven = [], {}
    for ex in experiments:
        reasons = []
        for name in RODLAB:
            if name not in solvers:
                continue
            missing = ex.requires - solvers[name].capabilities
            if missing:
                reasons.append(f"{name}: lacks {', '.join(sorted(c.value for c in missing))}")
                continue
            try:  # a short probe: does the adapter drive this scenario at all?
                driven.setdefault(name, [])
                solvers[name].run(ex.scenario._replace(duration=1e-4) if hasattr(ex.scenario, "_replace") else
                                  __import__("dataclasses").replace(ex.scenario, duration=ex.scenario.duration * 1e-4),
                                  n_elements=max(ex.n_elements // 4, 4), n_frames=2)
                supported.append(ex.name) if ex.name not in supported else None
                driven[name].append(ex.name)
            except NotImplementedError as exc:
                msg = str(exc)
                reasons.append(msg if msg.startswith(name) else f"{name}: {msg}")
            except Exception as exc:  # noqa: BLE001 - a probe failure is reported, not fatal
                reasons.append(f"{name}: probe failed ({type(exc).__name__}: {exc})")
        if ex.name not in supported:
            notes.append(f"{ex.name}: no rodlab adapter supports it ({'; '.join(reasons)})")
    rows = []
    undriven, skipped_peer = set(), set()
    t_start = time.perf_counter()
    for ex in experiments:
        if ex.name not in supported:
            continue
        resolutions = (ex.n_elements,) if args.quick else (max(ex.n_elements // 2, 2), ex.n_elements, 2 * ex.n_elements)
        if args.elements:
            resolutions = tuple(n for n in resolutions if n in args.elements)
        metric_names = list(ex.metrics)
        for n in resolutions:
            for name, solver in solvers.items():
                if name == "mujoco" and n > ex.n_elements:
                    # its step is its explicit stability limit (~h^2): one run at twice the default
                    # resolution takes 5-7 minutes here, over this script's budget
                    skipped_peer.add(f"{ex.name} at {n} elements")
                    continue
                t0 = time.perf_counter()
                try:
                    r = cb.run(ex, solver, n_elements=n)
                except Exception as exc:  # noqa: BLE001 - an adapter crash is a result too
                    rows.append([ex.name, n, name, f"error: {type(exc).__name__}: {str(exc)[:80]}", "", "", ""])
                    print(rows[-1], flush=True)
                    continue
                if r.outcome == "unsupported" and name in RODLAB and "not driven" in " ".join(r.missing):
                    undriven.add(name)
                    continue
                if r.outcome == "unsupported":
                    outcome = "unsupported: " + "; ".join(r.missing)[:100]
                elif r.outcome == "diverged":
                    outcome = f"diverged: {str(r.failure)[:80]}"
                else:
                    outcome = "completed"
                mets = ", ".join(f"{k} {_fmt(r.metrics.get(k))}" for k in metric_names) if r.metrics else ""
                strain = r.observations.get("max_strain") if r.observations else None
                rows.append([ex.name, n, name, outcome, mets, _fmt(strain), _fmt(r.wall_time)])
                print(f"{ex.name:10s} n={n:<4d} {name:20s} {outcome[:40]:40s} {mets} strain {_fmt(strain)} wall {_fmt(r.wall_time)} s "
                      f"(total {time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"all runs: {time.perf_counter() - t_start:.0f} s")
    if undriven:
        notes.append(f"{', '.join(sorted(undriven))}: the adapter does not drive scenarios for this method yet "
                     "(every run reported unsupported; rows omitted)")
    if skipped_peer:
        notes.append("mujoco not run at twice the default resolution (" + ", ".join(sorted(skipped_peer)) +
                     "): its time step is its explicit stability limit, ~h^2, and one such run took 5-7 minutes on this machine")
    skipped_solvers = [name for name in RODLAB + PEERS if args.solvers and name not in args.solvers]
    if skipped_solvers:
        notes.append(f"{', '.join(skipped_solvers)}: not run on {', '.join(names)} in this pass "
                     f"(`--solvers {' '.join(args.solvers)}`)")
    for line in notes:
        print(line)
    if args.quick:
        return 0
    if args.experiments:  # keep the other experiments' rows, notes and driven lists from the page
        old_rows, old_notes, old_driven = _previous(ROOT / "docs" / "benchmarks.md")
        order = registry.names(registry.EXPERIMENTS)
        rerun = {(r[0], int(r[1])) for r in rows}
        rows = sorted([r for r in old_rows if (r[0], int(r[1])) not in rerun if r[0] not in names or args.elements] + rows,
                      key=lambda r: (order.index(r[0]) if r[0] in order else len(order), int(r[1])))
        notes = [n for n in old_notes if args.elements or not any(n.startswith(f"{e}:") for e in names)] + notes
        notes = list(dict.fromkeys(notes))  # a note repeated by a partial run appears once
        for name in RODLAB:
            kept = [e for e in old_driven.get(name, []) if e not in names]
            driven[name] = [e for e in order if e in kept or e in driven.get(name, [])]
    table = md_table(["experiment", "elements", "solver", "outcome", "error metrics", "max strain", "wall [s]"], rows)
    import importlib.metadata as md

    versions = []
    for pkg in ("cosseratbench", "pyelastica", "mujoco"):
        try:
            versions.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            versions.append(f"{pkg} not installed")
    body = "\n".join([
        "## cosseratbench (`bench/bench_cosseratbench.py`)",
        "",
        f"Produced by `{command_line()}` on {machine()}; {', '.join(versions)}" +
        (" (rows this command did not re-run are kept from earlier runs of this script; the first, of the whole suite "
         "with every solver, gave those of cantilever, catenary, pendulum and twist)" if args.experiments else "") +
        ". Each run through `cosseratbench.run` "
        "(the suite's own metrics; wall time of the timed run after the suite's warm-up run, so compilation is excluded). "
        "Resolutions: each experiment's default element count, half and twice it. Error metrics are the experiment's "
        "(relative errors against its analytic reference; `settling_residual` how settled the final state is). "
        "rodlab's adapters: `src/rodlab/bench_adapters/cosseratbench.py` (`cb_compact.py`, `cb_galpha.py`; the contact "
        "experiments on a rodlab World: `cb_contact.py`); "
        "what each one drives: " + "; ".join(f"{name}: {', '.join(driven.get(name, [])) or 'nothing'}" for name in RODLAB if name in solvers) + ".",
        "",
        table,
        "",
        *[f"- {line}" for line in notes],
    ])
    write_section(ROOT / "docs" / "benchmarks.md", "bench_cosseratbench", body, title="Benchmarks")
    print("wrote docs/benchmarks.md")
    return 0


def _previous(path: Path) -> tuple[list[list[str]], list[str], dict[str, list[str]]]:
    """The table rows, notes and per-solver driven experiments of the page's current
    ``bench_cosseratbench`` section (for a run restricted with ``--experiments``)."""
    import re

    text = path.read_text()
    begin, end = text.find("<!-- BEGIN bench_cosseratbench"), text.find("<!-- END bench_cosseratbench")
    if begin < 0 or end < 0:
        return [], [], {}
    rows, notes, driven = [], [], {}
    for line in text[begin:end].splitlines():
        if line.startswith("| ") and not line.startswith("| experiment ") and len(line.split(" | ")) == 7:
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif line.startswith("- "):
            notes.append(line[2:])
        m = re.search(r"what each one drives: (.*)\.$", line)
        if m:
            for part in m.group(1).split("; "):
                name, _, what = part.partition(": ")
                driven[name] = [] if what == "nothing" else what.split(", ")
    return rows, notes, driven


if __name__ == "__main__":
    raise SystemExit(main())
