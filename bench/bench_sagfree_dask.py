"""Sag-free grooms on Dask (`rodlab sagfree`'s engine, `rodlab.inverse.cli.optimize_groom`) against the
process pool that `rodlab sagfree` used before (ProcessPoolExecutor.map of one strand per call, chunksize
N / (8 workers)), optimization only (no drift simulation). Writes its section of docs/benchmarks-sagfree.md.
Strands: a synthetic wavy hairstyle of 100-vertex strands (10^4 distinct strands; a 10^5 groom is that one
repeated 10 times, which is the same work).

The two engines run interleaved (pool, dask, pool, dask, ...) ``--rounds`` times for each groom size and
worker count, so that both see the same load on a shared machine; the table gives the median and range
over the rounds and the per-round ratio Dask / pool. The section is rewritten after every run, so an
interrupted benchmark still leaves what it measured. About 8 minutes per round of 10^4 strands on 1 and
2 workers and 8 minutes per round of 10^5 on 2 workers on the quiet 2-core machine:

    python bench/bench_sagfree_dask.py [--strands 10000] [--workers 1 2] [--rounds 3]
                                       [--big 100000] [--big-rounds 3] [--vertices 100]

``--costs`` instead measures where a Dask run's overhead goes (docs/dask.md, "Speed"), printing: the CPU of
serializing one task of 256 strands and its results as lists of arrays and packed
(`rodlab.inverse.strand_batches`), the CPU an idle 2-worker LocalCluster burns per second with Dask's monitor
intervals and with rodlab's, the wall and client CPU per no-op task (the scheduler's round trip), and the
start of a 2-worker LocalCluster with spawned and with forked workers.

``--probe N`` instead compares the CPU of N strands run in this process with the same strands in one task
on a 1-worker LocalCluster with rodlab's worker settings (``quiet``) and with Dask's defaults (``dask``),
``--repeats`` times interleaved, and prints what each run measured (docs/dask.md, "Speed"); it writes no
docs. Per run: median per-strand and total CPU of the thread that ran the strands, the worker process's
CPU above it, the task thread's GIL waits (voluntary context switches) and minor page faults per strand,
and the things ruled out as causes: the strands' array flags, flush-to-zero / denormals-are-zero, numba
kernels with more than one compiled specialization. ``--probe N --probe-workers W`` (W > 1) instead runs
the N strands in 8 tasks on W workers of each of the three engines (the old process pool, Dask with
rodlab's worker settings, Dask with its own), interleaved: wall time, and the CPU of the worker processes
and of their task threads summed over the tasks.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _sagfree_md import machine, table, write_section  # noqa: E402

from rodlab.distributed import connect  # noqa: E402
from rodlab.hair.generator import synthetic_hairstyle  # noqa: E402
from rodlab.inverse.cli import _work, optimize_groom, warm_kernels  # noqa: E402

OPTS = dict(radius=5e-4, E=5e8, rho=1000.0, scheme="alm", delta=0.4, max_iters=200, t_end=0.0, precond="asc-schur")


def _pool_init():
    os.environ["NUMBA_NUM_THREADS"] = "1"


def _load() -> float:
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return float("nan")


def _cpu(proc) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def run_pool(jobs, workers) -> dict:
    """The old `rodlab sagfree --workers N` engine; wall time includes the process start, as it did. ``cpu``:
    CPU of this process and of the pool's processes (reaped at shutdown) over the run [s]."""
    ru0, p0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time()
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers, initializer=_pool_init) as ex:
        res = list(ex.map(_work, [(k, x, OPTS) for k, x in jobs], chunksize=max(1, len(jobs) // (8 * workers))))
    wall = time.perf_counter() - t
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - p0 + (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    return dict(res=res, wall=wall, cpu=cpu, setup=f"chunks of {max(1, len(jobs) // (8 * workers))}", start=0.0)


def run_dask(jobs, workers) -> dict:
    """`rodlab sagfree`'s engine on a new LocalCluster (workers forked on Linux, as `rodlab sagfree` starts them); ``wall`` from the first submit to the last result,
    ``start``: the cluster start and worker warm-up before it [s]; ``cpu``: CPU of this process (client,
    scheduler, nannies) and of the worker processes over ``wall`` [s]."""
    import psutil

    t = time.perf_counter()
    with connect(workers=workers, warmup=warm_kernels, fork_workers=True) as client:
        start = time.perf_counter() - t
        warm = client.run(lambda dask_worker: dask_worker.rodlab_warmup_s)
        me = psutil.Process()
        kids = me.children(recursive=True)
        c0, p0 = sum(_cpu(k) for k in kids), time.process_time()
        t = time.perf_counter()
        res, batch, tasks = optimize_groom(client, jobs, OPTS, workers=workers)
        wall = time.perf_counter() - t
        cpu = time.process_time() - p0 + sum(_cpu(k) for k in kids) - c0
    return dict(res=res, wall=wall, cpu=cpu, setup=f"{tasks} tasks x {batch}", start=start,
                warm=float(np.mean(list(warm.values()))), batch=batch)


def _probe_loop(jobs):
    """Run ``jobs`` one by one on this thread; what :func:`probe` reports about the run."""
    from numba.core.registry import CPUDispatcher

    import rodlab.inverse.kernels as K
    import rodlab.inverse.qp as Q

    first = jobs[0][1]
    per = []
    ru0, t0, p0 = resource.getrusage(resource.RUSAGE_THREAD), time.thread_time(), time.process_time()
    for k, x in jobs:
        t = time.thread_time()
        _work((k, x, OPTS))
        per.append(time.thread_time() - t)
    ru1, cpu, proc = resource.getrusage(resource.RUSAGE_THREAD), time.thread_time() - t0, time.process_time() - p0
    multi = [n for m in (K, Q) for n, f in vars(m).items() if isinstance(f, CPUDispatcher) and len(f.signatures) > 1]
    return dict(median_ms=1e3 * float(np.median(per)), cpu_s=cpu, process_extra=proc / cpu - 1.0,
                gil_waits=ru1.ru_nvcsw - ru0.ru_nvcsw, faults_per_strand=(ru1.ru_minflt - ru0.ru_minflt) / len(jobs),
                writeable=bool(first.flags.writeable), c_contiguous=bool(first.flags.c_contiguous),
                ftz=bool((np.array([1e-308]) / 1e10)[0] == 0), daz=bool((np.array([5e-324]) * 2.0)[0] == 0),
                multi_specialized=multi)


def probe(n, vertices, repeats):
    """Plain process against a Dask task, interleaved (module docstring); prints one JSON line per run."""
    jobs = [(k, np.ascontiguousarray(x)) for k, x in
            enumerate(synthetic_hairstyle(n, vertices, style="wavy", length=0.25, seed=0))]
    warm_kernels()
    runs = {"plain": []}
    with connect(workers=1, warmup=warm_kernels) as quiet, \
            connect(workers=1, warmup=warm_kernels, dask_defaults=True) as dflt:
        for r in range(repeats):
            for mode, client in (("plain", None), ("quiet", quiet), ("dask", dflt)):
                load = open("/proc/loadavg").read().split()[0]
                res = _probe_loop(jobs) if client is None else client.submit(_probe_loop, jobs, pure=False).result()
                runs.setdefault(mode, []).append(res)
                print(json.dumps(dict(run=r, mode=mode, load=load, **{k: round(v, 4) if isinstance(v, float) else v
                                                                     for k, v in res.items()})), flush=True)
    for mode, rs in runs.items():
        med = {k: float(np.median([x[k] for x in rs])) for k in ("median_ms", "cpu_s", "process_extra", "gil_waits",
                                                                  "faults_per_strand")}
        print(mode, "medians over", len(rs), "runs:", {k: round(v, 4) for k, v in med.items()})


def _probe_task(batch):
    """One task of :func:`probe_groom`: wall [s], thread and process CPU [s], minor page faults."""
    ru0 = resource.getrusage(resource.RUSAGE_THREAD)
    w, t, p = time.perf_counter(), time.thread_time(), time.process_time()
    for k, x in batch:
        _work((k, x, OPTS))
    ru1 = resource.getrusage(resource.RUSAGE_THREAD)
    return dict(thread=time.thread_time() - t, process=time.process_time() - p, task_wall=time.perf_counter() - w,
                faults=ru1.ru_minflt - ru0.ru_minflt)


def probe_groom(n, vertices, workers, repeats):
    """The old pool against Dask with rodlab's and with Dask's worker settings on ``workers`` workers,
    interleaved; prints one JSON line per run."""
    jobs = [(k, np.ascontiguousarray(x)) for k, x in
            enumerate(synthetic_hairstyle(n, vertices, style="wavy", length=0.25, seed=0))]
    size = -(-n // 8)
    batches = [jobs[i:i + size] for i in range(0, n, size)]
    warm_kernels()
    with connect(workers=workers, warmup=warm_kernels) as quiet, \
            connect(workers=workers, warmup=warm_kernels, dask_defaults=True) as dflt, \
            ProcessPoolExecutor(max_workers=workers, initializer=_pool_init) as pool:
        list(pool.map(warm_kernels_task, range(workers)))
        for r in range(repeats):
            for mode, client in (("pool", None), ("quiet", quiet), ("dask", dflt)):
                load = open("/proc/loadavg").read().split()[0]
                t = time.perf_counter()
                if client is None:
                    parts = list(pool.map(_probe_task, batches))
                else:
                    parts = client.gather([client.submit(_probe_task, b, pure=False) for b in batches])
                wall = time.perf_counter() - t
                tot = {k: round(sum(p[k] for p in parts), 3) for k in parts[0]}
                extra = round(tot["process"] / tot["thread"] - 1, 4)
                print(json.dumps(dict(run=r, mode=mode, load=load, wall=round(wall, 3), strands_per_s=round(n / wall, 1),
                                      process_extra=extra, **tot)), flush=True)


def warm_kernels_task(_):
    warm_kernels()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strands", type=int, default=10000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3, help="interleaved pool/dask rounds per worker count")
    ap.add_argument("--big", type=int, default=100000, help="a larger groom run on the most workers only (0: skip)")
    ap.add_argument("--big-rounds", type=int, default=3, help="interleaved rounds of the larger groom")
    ap.add_argument("--vertices", type=int, default=100)
    ap.add_argument("--costs", action="store_true", help="only the overhead breakdown (see above)")
    ap.add_argument("--probe", type=int, default=0, metavar="N", help="only the CPU probe on N strands (see above)")
    ap.add_argument("--repeats", type=int, default=4, help="interleaved runs of each probe mode")
    ap.add_argument("--probe-workers", type=int, default=1, help="workers of the probe (> 1: the groom probe)")
    a = ap.parse_args()
    if a.costs:
        from _dask_costs import costs

        return costs(OPTS, a.vertices)
    if a.probe:
        if a.probe_workers > 1:
            return probe_groom(a.probe, a.vertices, a.probe_workers, a.repeats)
        return probe(a.probe, a.vertices, a.repeats)
    where = machine()
    t = time.perf_counter()
    warm_kernels()
    warm_main = time.perf_counter() - t
    base = [np.ascontiguousarray(x) for x in synthetic_hairstyle(a.strands, a.vertices, style="wavy", length=0.25, seed=0)]
    runs = []
    plan = [(a.strands, w, a.rounds) for w in sorted(a.workers, reverse=True)]
    plan += [(a.big, max(a.workers), a.big_rounds)] if a.big and a.big_rounds else []
    for n, w, rounds in plan:
        jobs = [(k, base[k % len(base)] + np.array([0.0, 0.0, 0.01 * (k // len(base))])) for k in range(n)]
        for r in range(rounds):
            for engine in ("pool", "dask"):
                load = _load()
                out = (run_pool if engine == "pool" else run_dask)(jobs, w)
                res = out.pop("res")
                work = sum(r_["cpu_s"] for r_ in res)
                runs.append(dict(engine=engine, n=n, w=w, round=r, load=load, work=work,
                                 converged=sum(bool(r_.get("success")) for r_ in res), **out))
                print(json.dumps({k: v for k, v in runs[-1].items()}), flush=True)
                write(a, where, warm_main, runs)


def _med(vals, fmt="{:.3g}") -> str:
    """``median [min - max]`` of ``vals``."""
    v = np.asarray(vals, dtype=float)
    return (fmt + " [" + fmt + " - " + fmt + "]").format(np.median(v), v.min(), v.max())


def summarize(runs) -> tuple[list[list], dict]:
    """Table rows (median [range] over the rounds per engine, groom size and worker count) and per
    (engine, n, w) the medians used by the projection."""
    rows, med = [], {}
    for key in dict.fromkeys((r["n"], r["w"], r["engine"]) for r in runs):
        n, w, engine = key
        rs = [r for r in runs if (r["n"], r["w"], r["engine"]) == key]
        sps = [n / r["wall"] for r in rs]
        sps_start = [n / (r["wall"] + r["start"]) for r in rs]
        eff = [r["work"] / (r["wall"] * w) for r in rs]
        over_wall = [1e3 * max(r["wall"] * w - r["work"], 0.0) / n for r in rs]
        over_cpu = [1e3 * (r["cpu"] - r["work"]) / n for r in rs]
        work = [1e3 * r["work"] / n for r in rs]
        share = [(r["cpu"] - r["work"]) / r["work"] for r in rs]
        paired = []
        if engine == "dask":
            pools = {r["round"]: r for r in runs if (r["n"], r["w"], r["engine"]) == (n, w, "pool")}
            paired = [(n / (r["wall"] + r["start"])) / (n / pools[r["round"]]["wall"]) for r in rs if r["round"] in pools]
        rows.append([engine, n, w, rs[0]["setup"], len(rs), f"{min(r['converged'] for r in rs)}",
                     _med(sps, "{:.0f}"), _med(sps_start, "{:.0f}") if engine == "dask" else "(start in wall)",
                     _med(paired, "{:.3f}") if paired else "-", _med(eff, "{:.3f}"), _med(work, "{:.2f}"),
                     _med(over_wall, "{:.2f}"), _med(over_cpu, "{:.3f}"), _med([100 * x for x in share], "{:.1f}"),
                     _med([r["start"] for r in rs], "{:.2f}") if engine == "dask" else "in wall",
                     _med([r["load"] for r in rs], "{:.2f}")])
        med[key] = dict(work=float(np.median(work)) / 1e3, over_cpu=float(np.median(over_cpu)) / 1e3,
                        over_wall=float(np.median(over_wall)) / 1e3, start=float(np.median([r["start"] for r in rs])),
                        batch=rs[0].get("batch", 0))
    return rows, med


def projection(a, med) -> list[str]:
    """The projected time of 10^5 and of 915 strands on 8 and 64 cores from the largest Dask run at
    ``a.strands``: per-strand work, CPU overhead per strand, one task's tail and the cluster start."""
    keys = [k for k in med if k[2] == "dask" and k[0] == a.strands]
    if not keys:
        return []
    n, w, _ = max(keys, key=lambda k: k[1])
    m = med[(n, w, "dask")]
    c, o, start = m["work"], m["over_cpu"], m["start"]

    def proj(strands, cores):
        batch = max(1, min(256, -(-strands // (4 * cores))))  # rodlab sagfree's default batch
        base = strands * c / cores
        full = strands * (c + o) / cores + batch * c + start
        return f"{base:.2f} - {full:.2f}" if base < 10 else f"{base:.0f} - {full:.0f}"

    rows = [[p, proj(100000, p), proj(915, p)] for p in (8, 64)]
    return [f"Projection from the {n}-strand Dask runs on {w} workers (medians): per-strand work {1e3 * c:.2f} ms "
            f"of CPU, CPU overhead {1e3 * o:.3f} ms per strand (client, scheduler, nannies and the workers' own "
            f"threads: {100 * o / c:.1f} % of the work), cluster start {start:.1f} s. Lower bound: strands x work / "
            "cores; upper: strands x (work + overhead) / cores + one task's work (the last task's tail, with "
            "`rodlab sagfree`'s default batch of min(256, strands / (4 cores))) + the cluster start. Left out: the "
            "loss of per-core speed when many cores share memory bandwidth (the issue measured a speed-up of only "
            "2.5 from 16 cores with the old pool), and the client's unpacking and writing of the outputs "
            "(`params.npz`, the tables) after the last result. The paper (Takahashi and Batty, \"Optimizing Parameters "
            "for Static Equilibrium of Discrete Elastic Rods with Active-Set Cholesky\"): 915 strands x 100 vertices "
            "in 84 s on 8 cores.", "",
            table(["cores", "10^5 strands [s]", "915 strands [s] (paper: 84 s on 8 cores)"], rows)]


def write(a, where, warm_main, runs):
    rows, med = summarize(runs)
    body = ["## Grooms on Dask (`bench/bench_sagfree_dask.py`)", "",
            f"Machine: {where} (2 cores, shared with other jobs).", "",
            f"Synthetic wavy strands x {a.vertices} vertices (length 0.25 m +- 10 %, radius 5e-4 m, E = 5e8 Pa), "
            "optimization only, default options. The engines ran interleaved (pool, dask, pool, dask, ...; `runs` "
            "rounds each); every cell is the median [min - max] over the rounds. `dask`: a new LocalCluster of that "
            "many worker processes (1 thread each) per run, strands in tasks of up to 256 (`rodlab sagfree`'s "
            "engine); wall time from the first submit to the last result, the cluster start (with the per-worker "
            "kernel warm-up from the numba cache) apart. `pool`: the process pool `rodlab sagfree` used before, its "
            "wall time including its process start (forked, so no kernel loading). strands/s incl. start: Dask's "
            "wall plus its cluster start; dask / pool: that rate over the same round's pool rate. Work = the strands' "
            "own CPU (their thread's CPU time, summed); efficiency = work / (wall x workers), so time descheduled by "
            "other jobs on the shared machine counts as lost; wall overhead = (wall x workers - work) / strands; CPU "
            "overhead = (CPU of every process of the engine (this process: client, scheduler, nannies; the workers) "
            "- work) / strands, which the load changes little; load = the 1-minute load average when the run "
            f"started. Main-process kernel warm-up (cache load): {warm_main:.2f} s.", "",
            table(["engine", "strands", "workers", "tasks", "runs", "converged (min)", "strands/s", "strands/s incl. start",
                   "dask / pool", "efficiency", "work [ms/strand]", "wall overhead [ms/strand]", "CPU overhead [ms/strand]",
                   "CPU overhead / work [%]", "cluster start [s]", "load"], rows), ""]
    body += projection(a, med)
    write_section("dask", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    main()
