"""``bench_sagfree_dask.py --costs``: where a Dask groom's overhead goes (docs/dask.md, "Speed"). Prints
CPU per 256-strand task for moving strands and results as lists of arrays and packed, the CPU an idle
2-worker LocalCluster burns per second with Dask's monitor intervals and with rodlab's, the scheduler's
round trip per no-op task, and a LocalCluster's start with spawned and with forked workers."""
from __future__ import annotations

import time

import numpy as np

from rodlab.distributed import connect
from rodlab.hair.generator import synthetic_hairstyle
from rodlab.inverse.cli import work_batch, warm_kernels
from rodlab.inverse.strand_batches import BatchResults, StrandBatch


def _cpu_ms(fn, repeats=20):
    """Median CPU time of ``fn()`` [ms] over ``repeats`` calls, and its last result."""
    times, out = [], None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return 1e3 * float(np.median(times)), out


def serialization(opts, vertices, strands=256):
    """CPU [ms] per task of ``strands`` strands: client (send the strands, read the results) and worker
    (read the strands, send the results), with Dask's own serialization of the lists and packed."""
    from distributed.protocol import dumps, loads
    from distributed.protocol.serialize import Serialize

    jobs = [(k, np.ascontiguousarray(x)) for k, x in
            enumerate(synthetic_hairstyle(strands, vertices, style="wavy", length=0.25, seed=0))]
    rows = work_batch(jobs, opts)
    out = {}
    for form, pack_in, unpack_in, pack_out, unpack_out in (
            ("lists", lambda: jobs, lambda b: b, lambda: rows, lambda r: r),
            ("packed", lambda: StrandBatch.pack(jobs), lambda b: b.jobs(), lambda: BatchResults.pack(rows),
             lambda r: r.unpack())):
        c_pack, batch = _cpu_ms(pack_in)
        c_send, frames_in = _cpu_ms(lambda: dumps({"x": Serialize(batch)}))
        w_recv, got = _cpu_ms(lambda: loads(frames_in)["x"])
        w_unpack, _ = _cpu_ms(lambda: unpack_in(got))
        w_pack, res = _cpu_ms(pack_out)
        w_send, frames_out = _cpu_ms(lambda: dumps({"x": Serialize(res)}))
        c_recv, back = _cpu_ms(lambda: loads(frames_out)["x"])
        c_unpack, _ = _cpu_ms(lambda: unpack_out(back))
        out[form] = dict(client=c_pack + c_send + c_recv + c_unpack, worker=w_recv + w_unpack + w_pack + w_send,
                         frames=(len(frames_in), len(frames_out)))
        print(f"{form:6s} per {strands}-strand task: client {out[form]['client']:.2f} ms (pack {c_pack:.2f}, send "
              f"{c_send:.2f}, receive {c_recv:.2f}, unpack {c_unpack:.2f}); worker {out[form]['worker']:.2f} ms "
              f"(receive {w_recv:.2f}, unpack {w_unpack:.2f}, pack {w_pack:.2f}, send {w_send:.2f}); frames in/out "
              f"{len(frames_in)}/{len(frames_out)}", flush=True)
    return out


def _idle_cpu_per_s(client, seconds=10.0):
    import psutil

    me = psutil.Process()
    kids = me.children(recursive=True)
    time.sleep(1.0)

    def cpu(p):
        t = p.cpu_times()
        return t.user + t.system

    k0, m0 = sum(cpu(k) for k in kids), time.process_time()
    time.sleep(seconds)
    return 1e3 * (time.process_time() - m0) / seconds, 1e3 * (sum(cpu(k) for k in kids) - k0) / seconds


def idle_clusters(repeats=2):
    """CPU [ms/s] of an idle 2-worker LocalCluster, this process (scheduler, nannies, client) and the
    workers: Dask's memory and system monitor intervals against rodlab's (both with the profiler off and a
    1 s tick), interleaved."""
    import dask

    before = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}
    for r in range(repeats):
        for label in ("Dask's monitors", "rodlab's"):
            if label == "rodlab's":
                with connect(workers=2) as client:
                    main, workers = _idle_cpu_per_s(client)
            else:
                with dask.config.set(before), connect(workers=2, dask_defaults=True) as client:
                    main, workers = _idle_cpu_per_s(client)
            print(f"idle 2-worker LocalCluster, {label}: this process {main:.1f} ms/s, workers {workers:.1f} ms/s "
                  f"(round {r})", flush=True)


def round_trips(tasks=400):
    """Wall and client CPU per no-op task (``abs``) on a 2-worker LocalCluster: all submitted at once, and one at a time."""
    with connect(workers=2) as client:
        client.gather([client.submit(abs, i, pure=False) for i in range(20)])
        t, c = time.perf_counter(), time.process_time()
        client.gather([client.submit(abs, i, pure=False) for i in range(tasks)])
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"{tasks} no-op tasks at once: {1e3 * wall / tasks:.2f} ms wall, {1e3 * cpu / tasks:.2f} ms CPU of this "
              "process per task", flush=True)
        t, c = time.perf_counter(), time.process_time()
        for i in range(50):
            client.submit(abs, i, pure=False).result()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"50 no-op tasks one at a time: {1e3 * wall / 50:.2f} ms wall, {1e3 * cpu / 50:.2f} ms CPU of this "
              "process per round trip", flush=True)


def cluster_starts(repeats=2):
    """Seconds to start a 2-worker LocalCluster with the warm-up plugin, workers spawned (Dask's default)
    against forked (``rodlab sagfree``'s, on Linux), interleaved, and the warm-up per worker."""
    for r in range(repeats):
        for fork in (False, True):
            t = time.perf_counter()
            with connect(workers=2, warmup=warm_kernels, fork_workers=fork) as client:
                start = time.perf_counter() - t
                warm = client.run(lambda dask_worker: dask_worker.rodlab_warmup_s)
            print(f"2-worker LocalCluster, workers {'forked' if fork else 'spawned'}: start {start:.2f} s, warm-up per "
                  f"worker {', '.join(f'{v:.2f}' for v in warm.values())} s (round {r})", flush=True)


def costs(opts, vertices):
    import os

    print("load", open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?", flush=True)
    warm_kernels()
    serialization(opts, vertices)
    idle_clusters()
    round_trips()
    cluster_starts()
