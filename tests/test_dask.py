"""rodlab on Dask (docs/dask.md): a groom on a LocalCluster equals the single-process run, a sweep equals
direct runs, a sweep survives a killed worker, and both commands explain how to install Dask without it.
One LocalCluster (2 worker processes, 1 thread each) for the whole module."""
import csv
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
import cloudpickle  # noqa: E402  (a dependency of distributed)

from rodlab.cli import main  # noqa: E402
from rodlab.distributed import connect, sweep  # noqa: E402
from rodlab.distributed.paramsweep import SweepInputError, plan_sweep, run_one  # noqa: E402
from rodlab.hair.generator import synthetic_hairstyle  # noqa: E402
from rodlab.inverse.cli import optimize_groom, warm_kernels, work_batch  # noqa: E402
from rodlab.scenes.registry import run_scene  # noqa: E402

# the crashing task below is defined here: ship it by value (the workers cannot import this test module)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

TIMING = ("wall_s", "us_per", "ms_per", "cpu_s")
CHEAP = {"t_end": 0.02, "method": "der"}


@pytest.fixture(scope="module")
def client():
    warm_kernels()  # compile here once; the workers load the numba cache
    run_scene("cantilever", n=6, **CHEAP)
    with connect(workers=2, warmup=warm_kernels) as c:
        yield c


def _same_metrics(a: dict, b: dict):
    keys = {k for k in a if not any(t in k for t in TIMING)}
    assert keys, "no metrics compared"
    for k in keys:
        assert b[k] == a[k], (k, a[k], b[k])


def _forked_marker(dask_worker):
    import rodlab.distributed.cluster as C

    return getattr(C, "_test_marker_of_the_client", None)


def test_groom_on_dask_equals_single_process():
    # on rodlab sagfree's cluster: workers forked from this process on Linux (they see its module state)
    strands = synthetic_hairstyle(200, 8, style="wavy", seed=3)
    jobs = [(k, np.ascontiguousarray(x, dtype=float)) for k, x in enumerate(strands)]
    opts = dict(radius=5e-4, E=5e8, rho=1000.0, scheme="alm", delta=0.4, max_iters=200, t_end=0.0, precond="asc-schur")
    single = work_batch(jobs, opts)
    import rodlab.distributed.cluster as C

    C._test_marker_of_the_client = 17
    try:
        with connect(workers=2, warmup=warm_kernels, fork_workers=True) as forked:
            marks = list(forked.run(_forked_marker).values())
            dist, batch, tasks = optimize_groom(forked, jobs, opts, workers=2)
    finally:
        del C._test_marker_of_the_client
    assert marks == ([17, 17] if sys.platform.startswith("linux") else [None, None])
    assert (batch, tasks) == (25, 8)  # 200 strands / (4 tasks x 2 workers)
    assert [r["index"] for r in dist] == list(range(200))
    for a, b in zip(single, dist):
        assert a["success"] and b["success"]
        assert a["iterations"] == b["iterations"]
        for name, v in a["arrays"].items():
            np.testing.assert_allclose(b["arrays"][name], v, rtol=1e-13, atol=1e-300, err_msg=f"strand {a['index']} {name}")


def _worker_profiler_and_kernels(dask_worker):
    """On a worker: (its profiler callbacks, its event-loop tick, memory and system monitor intervals [ms],
    signatures per compiled sag-free kernel)."""
    from numba.core.registry import CPUDispatcher

    import rodlab.inverse.kernels as K

    sigs = {n: len(f.signatures) for n, f in vars(K).items() if isinstance(f, CPUDispatcher) and f.signatures}
    pcs = dask_worker.periodic_callbacks
    intervals = tuple(pcs[k].callback_time for k in ("tick", "memory_monitor", "monitor"))
    return sorted(k for k in pcs if k.startswith("profile")), intervals, sigs


def _page_faults_per_strand(jobs, opts):
    """In a task: minor page faults of this thread per strand, on a second pass over ``jobs``."""
    import resource

    work_batch(jobs, opts)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    work_batch(jobs, opts)
    return (resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before) / len(jobs)


def test_local_workers_run_strands_quietly_with_one_specialization_per_kernel(client):
    # a worker's event loop takes the GIL from the numba kernels at every tick and profiler sample,
    # costing worker CPU (docs/dask.md, "Speed"): on rodlab's LocalCluster, profiler off and a 1 s tick
    jobs = [(k, np.ascontiguousarray(x, dtype=float)) for k, x in enumerate(synthetic_hairstyle(4, 8, seed=1))]
    opts = dict(radius=5e-4, E=5e8, rho=1000.0, scheme="alm", delta=0.4, max_iters=200, t_end=0.0, precond="asc-schur")
    rows, _, _ = optimize_groom(client, jobs, opts, workers=2, batch=2)
    assert all(r["success"] for r in rows)
    for profiler, intervals_ms, sigs in client.run(_worker_profiler_and_kernels).values():
        assert profiler == [] and intervals_ms == (1000, 1000, 2000)
        # the strands arrive writable and C-contiguous: one compiled specialization per kernel, the one
        # the warm-up plugin loaded (a read-only or strided array would compile another inside a task)
        assert sigs.get("sf_optimize") == 1 and all(v == 1 for v in sigs.values()), sigs
    # the monitors of the nannies and the scheduler, which run in this (the client's) process, as slow
    nanny_pcs = [w.periodic_callbacks for w in client.cluster.workers.values()]
    assert all(pcs["memory_monitor"].callback_time == 1000 for pcs in nanny_pcs)
    assert client.cluster.scheduler.periodic_callbacks["monitor"].callback_time == 2000
    # malloc keeps freed memory: with Dask's MALLOC_TRIM_THRESHOLD_=65536 alone a 100-vertex strand
    # faulted ~100 fresh pages back in (docs/dask.md, "Speed")
    if all(client.run(lambda dask_worker: dask_worker.rodlab_malloc).values()):
        big = [(k, np.ascontiguousarray(x)) for k, x in enumerate(synthetic_hairstyle(8, 100, length=0.25, seed=4))]
        assert client.submit(_page_faults_per_strand, big, opts, pure=False).result() < 10


def test_strand_cpu_time_is_its_own_threads(monkeypatch):
    # cpu_s counts the thread that optimized the strand, not the process: a Dask worker's event loop and
    # monitors (here: a thread hashing outside the GIL) must not be charged to its strands
    import hashlib
    import threading
    import time

    stop, running = threading.Event(), threading.Event()
    data = bytes(8 << 20)

    def burn():
        while not stop.is_set():
            hashlib.sha256(data).digest()  # releases the GIL: runs beside the strand on the other core
            running.set()

    jobs = [(k, np.ascontiguousarray(x, dtype=float)) for k, x in enumerate(synthetic_hairstyle(12, 60, seed=2))]
    opts = dict(radius=5e-4, E=5e8, rho=1000.0, scheme="alm", delta=0.4, max_iters=200, t_end=0.0, precond="asc-schur")
    work_batch(jobs[:1], opts)
    t = threading.Thread(target=burn)
    t.start()
    try:
        assert running.wait(10.0)
        # on a loaded CI machine (pytest-xdist workers on every core) the burner may get no core during one
        # batch: retry until it demonstrably ran beside the strands, else the test proves nothing
        for _attempt in range(8):
            c0, p0 = time.thread_time(), time.process_time()
            rows = work_batch(jobs, opts)
            thread_cpu, process_cpu = time.thread_time() - c0, time.process_time() - p0
            if process_cpu > thread_cpu + 0.01:
                break
    finally:
        stop.set()
        t.join()
    assert process_cpu > thread_cpu + 0.01  # the burner ran (else the test proves nothing)
    assert 0 < sum(r["cpu_s"] for r in rows) <= thread_cpu + 1e-3


def test_sweep_2x2_equals_direct_runs(client, tmp_path):
    grid = {"n": ["6", "8"], "E": ["1e7", "1e8"]}
    res = sweep("cantilever", grid, {"t_end": "0.02", "method": "der"}, tmp_path, client=client, plots=["tip_z:E"],
                progress=False)
    assert not res.failed and not res.problems
    assert [(r["n"], r["E"]) for r in res.rows] == [(6, 1e7), (6, 1e8), (8, 1e7), (8, 1e8)]
    for r in res.rows:
        direct = run_scene("cantilever", n=r["n"], E=r["E"], **CHEAP).metrics
        direct.pop("success")
        _same_metrics(direct, r)
        written = json.loads((tmp_path / r["folder"] / "metrics.json").read_text())
        assert written["tip_z"] == r["tip_z"] and (tmp_path / r["folder"] / "trajectory.npz").exists()
    # softer rods sag more: the table is not a copy of one run
    assert res.rows[0]["tip_z"] < res.rows[1]["tip_z"] < 0
    with open(tmp_path / "sweep.csv") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 4 and float(table[2]["tip_z"]) == res.rows[2]["tip_z"]
    assert list(table[0])[:7] == ["run", "folder", "n", "E", "success", "error", "wall_s"]
    assert (tmp_path / "sweep_tip_z_vs_E.png").stat().st_size > 1000


def test_sweep_of_a_scene_file_reports_a_failed_run_as_a_row(client, tmp_path):
    example = Path(__file__).parents[1] / "examples" / "cantilever-der.toml"
    res = sweep(str(example), {"simulation.options.projection_tol": ["1e-6", "-1"]},
                {"simulation.t_end": "0.02", "rod[0].n": "8"}, tmp_path, client=client, progress=False)
    good, bad = res.rows
    assert good["success"] and good["error"] is None and good["simulation.options.projection_tol"] == 1e-6
    assert not bad["success"] and "projection_tol must be > 0" in bad["error"] and math.isfinite(bad["wall_s"])
    assert (tmp_path / bad["folder"] / "error.txt").exists()
    assert good["n_vertices"] == 8 and res.failed == [bad]


def _crash_on_first_try(job):
    """Kill the worker process the first time any task of the sweep runs (marker file), then run normally."""
    marker = Path(job["folder"]).parent / "killed-a-worker"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return run_one(job)
    os.close(fd)
    os._exit(1)


def test_sweep_survives_a_killed_worker(client, tmp_path):
    res = sweep("cantilever", {"n": ["6", "7", "8"]}, {"t_end": "0.02", "method": "der"}, tmp_path, client=client,
                task=_crash_on_first_try, progress=False)
    assert (tmp_path / "killed-a-worker").exists()
    assert [r["n"] for r in res.rows] == [6, 7, 8] and all(r["success"] for r in res.rows)
    for r in res.rows:
        _same_metrics({k: v for k, v in run_scene("cantilever", n=r["n"], **CHEAP).metrics.items() if k != "success"}, r)


def test_sweep_command_on_an_existing_scheduler(client, tmp_path, capsys):
    args = ["sweep", "cantilever", "--grid", "n=6,8", "--set", "t_end=0.02", "--set", "method=der", "--no-progress",
            "--scheduler", client.scheduler.address, "--out", str(tmp_path)]
    assert main(args + ["--plot", "tip_z:n"]) == 0
    assert "2/2 runs succeeded" in capsys.readouterr().out
    assert (tmp_path / "sweep.csv").exists() and (tmp_path / "sweep_tip_z_vs_n.png").exists()
    assert sorted(p.name for p in tmp_path.glob("run*")) == ["run000_n=6", "run001_n=8"]
    assert main(args + ["--plot", "tip_zz:n"]) == 2  # an unknown metric: known only after the runs
    assert "no successful run has a numeric metric 'tip_zz'; metrics:" in capsys.readouterr().err


def test_sweep_checks_its_input_before_running(tmp_path, capsys):
    with pytest.raises(SweepInputError, match=r"n=1 out of range: expected int in \[4, 20000\]"):
        plan_sweep("cantilever", {"n": ["8", "1"]})
    with pytest.raises(SweepInputError, match="no parameter 'bogus'"):
        plan_sweep("cantilever", {"bogus": ["1"]})
    with pytest.raises(SweepInputError, match="both swept"):
        plan_sweep("cantilever", {"n": ["8"]}, {"n": "9"})
    assert main(["sweep", "cantilever", "--grid", "E=1e7,-5", "--out", str(tmp_path)]) == 2
    assert "E=-5.0 out of range" in capsys.readouterr().err
    assert main(["sweep", "cantilever", "--grid", "E=1e7", "--plot", "tip_z:n", "--out", str(tmp_path)]) == 2
    assert "'n' is not a swept parameter" in capsys.readouterr().err
    assert main(["sweep", "examples/cantilever-der.toml", "--grid", "rod[0].n=1", "--out", str(tmp_path)]) == 2
    assert "rod[0].n" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing ran


def test_without_dask_both_commands_say_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    assert main(["sweep", "cantilever", "--grid", "n=6,8", "--out", str(tmp_path / "s")]) == 1
    assert 'pip install "rodlab[distributed]"' in capsys.readouterr().err
    out = tmp_path / "g"
    assert main(["sagfree", "synthetic:straight:2:8", "--out", str(out), "--workers", "2", "--t-end", "0", "--no-plot"]) == 0
    err = capsys.readouterr().err
    assert "run in this one process" in err and 'pip install "rodlab[distributed]"' in err
    assert json.loads((out / "report.json").read_text())["summary"]["backend"] == "single process"
