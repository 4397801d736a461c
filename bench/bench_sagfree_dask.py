"""Sag-free grooms on Dask (`rodlab sagfree`'s engine, `rodlab.inverse.cli.optimize_groom`) against the
process pool that `rodlab sagfree` used before (ProcessPoolExecutor.map of one strand per call, chunksize
N / (8 workers)), strands x workers, optimization only (no drift simulation). Writes its section of
docs/benchmarks-sagfree.md. Strands: a synthetic wavy hairstyle of 100-vertex strands (10^4 distinct
strands; a 10^5 groom is that one repeated 10 times, which is the same work). About 10 minutes on the
2-core machine:

    python bench/bench_sagfree_dask.py [--strands 10000] [--big 100000] [--workers 1 2] [--vertices 100]

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


def run_pool(jobs, workers):
    """The old `rodlab sagfree --workers N` engine; wall time includes the process start, as it did."""
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers, initializer=_pool_init) as ex:
        res = list(ex.map(_work, [(k, x, OPTS) for k, x in jobs], chunksize=max(1, len(jobs) // (8 * workers))))
    return res, time.perf_counter() - t


def run_dask(jobs, workers):
    t = time.perf_counter()
    with connect(workers=workers, warmup=warm_kernels) as client:
        startup = time.perf_counter() - t
        warm = client.run(lambda dask_worker: dask_worker.rodlab_warmup_s)
        t = time.perf_counter()
        res, batch, tasks = optimize_groom(client, jobs, OPTS, workers=workers)
        wall = time.perf_counter() - t
    return res, wall, startup, float(np.mean(list(warm.values()))), batch, tasks


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
    ap.add_argument("--big", type=int, default=100000, help="a larger groom run on the most workers only (0: skip)")
    ap.add_argument("--vertices", type=int, default=100)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--probe", type=int, default=0, metavar="N", help="only the CPU probe on N strands (see above)")
    ap.add_argument("--repeats", type=int, default=4, help="interleaved runs of each probe mode")
    ap.add_argument("--probe-workers", type=int, default=1, help="workers of the probe (> 1: the groom probe)")
    a = ap.parse_args()
    if a.probe:
        if a.probe_workers > 1:
            return probe_groom(a.probe, a.vertices, a.probe_workers, a.repeats)
        return probe(a.probe, a.vertices, a.repeats)
    where = machine()
    t = time.perf_counter()
    warm_kernels()
    warm_main = time.perf_counter() - t
    base = [np.ascontiguousarray(x) for x in synthetic_hairstyle(a.strands, a.vertices, style="wavy", length=0.25, seed=0)]
    rows, cost = [], {}
    # most workers first, the big groom last; the section is rewritten after every run, so an interrupted
    # benchmark still leaves what it measured
    sizes = [(a.strands, w) for w in sorted(a.workers, reverse=True)] + ([(a.big, max(a.workers))] if a.big else [])
    for n, w in sizes:
        jobs = [(k, base[k % len(base)] + np.array([0.0, 0.0, 0.01 * (k // len(base))])) for k in range(n)]
        for engine in ("dask", "pool"):
            load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
            if engine == "dask":
                res, wall, startup, warm, batch, tasks = run_dask(jobs, w)
                extra = f"{startup:.2f} (warm-up {warm:.2f} per worker)"
                setup = f"{tasks} tasks x {batch}"
            else:
                res, wall = run_pool(jobs, w)
                extra, setup = "in wall", f"chunks of {max(1, n // (8 * w))}"
            work = sum(r["cpu_s"] for r in res)
            conv = sum(bool(r.get("success")) for r in res)
            cost[(engine, n, w)] = (work / n, wall)
            rows.append([engine, n, w, setup, conv, wall, n / wall, extra, work, work / (wall * w),
                         1e3 * max(wall * w - work, 0.0) / n, load])
            print(rows[-1], flush=True)
            write(a, where, warm_main, rows, cost)


def write(a, where, warm_main, rows, cost):
    body = ["## Grooms on Dask (`bench/bench_sagfree_dask.py`)", "", f"Machine: {where} (2 cores, shared).", "",
            f"Synthetic wavy strands x {a.vertices} vertices (length 0.25 m +- 10 %, radius 5e-4 m, E = 5e8 Pa), "
            "optimization only, default options. `dask`: a LocalCluster of that many worker processes (1 thread each), "
            "strands in tasks of up to 256 (`rodlab sagfree`'s engine); wall time from the first submit to the last "
            "result, the cluster start and the per-worker warm-up (kernels loaded from the numba cache once per worker) "
            "listed apart. `pool`: the process pool `rodlab sagfree` used before, its wall time including its process "
            "start and each process's first cache load. Work = per-strand CPU time summed over strands (measured in the "
            "workers, so time spent descheduled by other jobs on the shared machine counts as lost efficiency); "
            "efficiency = work / (wall x workers); overhead per strand = (wall x workers - work) / strands; load = the "
            f"machine's 1-minute load average when the run started. Main-process kernel warm-up (cache load): {warm_main:.2f} s.",
            "", table(["engine", "strands", "workers", "tasks", "converged", "wall [s]", "strands/s", "cluster start [s]",
                       "work [s]", "efficiency", "overhead [ms/strand]", "load"], rows), ""]
    key = max((k for k in cost if k[0] == "dask" and k[1] == a.strands), key=lambda k: k[2], default=None)
    if key is not None:
        w = key[2]
        c, wall = cost[key]
        over = max(wall * w / a.strands - c, 0.0)
        proj = [[p, f"{1e5 * c / p:.0f} - {1e5 * (c + over) / p:.0f}", f"{915 * c / p:.2f} - {915 * (c + over) / p:.2f}"]
                for p in (8, 64)]
        body += [f"Projection from the {a.strands}-strand run on {w} workers: per-strand work {1e3 * c:.2f} ms of CPU, "
                 f"measured overhead {1e3 * over:.2f} ms/strand (on this shared machine mostly time descheduled by other "
                 "jobs); time = strands x work / cores (no overhead) to strands x (work + overhead) / cores. Left out: the "
                 "cluster start (a few seconds) and the loss of per-core speed when many cores share memory bandwidth "
                 "(the issue measured a speed-up of only 2.5 from 16 cores with the old pool).", "",
                 table(["cores", "10^5 strands [s]", "915 strands [s] (paper: 84 s on 8 cores)"], proj)]
    write_section("dask", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    main()
