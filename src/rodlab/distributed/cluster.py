"""Connecting to Dask: a LocalCluster on this machine or an existing scheduler, a per-worker warm-up
plugin (compiled kernels loaded once per worker process) and a gather loop with a progress bar.

Fault tolerance: a task whose worker dies (killed, out of memory) is rescheduled by the scheduler on
another worker, up to ``distributed.scheduler.allowed-failures`` times (Dask's default 3; a LocalCluster's
nannies restart the dead worker); a task that raises is re-run ``retries`` times (``Client.submit(...,
retries=)``). Only then does its future hold the error, which callers turn into failed rows.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from typing import Callable, Iterable

from ..model import ModelError

INSTALL_HINT = 'pip install "rodlab[distributed]"'

try:  # the plugin must subclass Dask's WorkerPlugin; without Dask it is never registered
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # pragma: no cover - exercised only without the extra
    _WorkerPlugin = object


# Dask settings for the workers of the LocalClusters that rodlab starts. A worker's event-loop thread
# wakes every 20 ms to measure its own latency (``admin.tick.interval``) and every 10 ms to sample the
# task thread's stack (``worker.profile``); each wake-up runs Python in the worker process and takes the
# GIL from the task thread. With both, a worker spent 5.3-7.2 % more CPU than its task thread on sag-free
# strands at load 5-6; with the tick at 1 s and the profiler off, 1.3-3.2 % (docs/dask.md, "Speed"). Tasks
# of rodlab are long kernel calls whose stack samples say nothing; a blocked loop is still reported (> 3 s).
# The memory monitors (every 100 ms in each nanny, which live in the client's process, and in each worker)
# and the system monitors (every 500 ms in the scheduler, nannies and workers: psutil's CPU, memory and
# network counters) cost an idle 2-worker LocalCluster 34 ms of CPU per second, 14 ms with them at 1 s and
# 2 s (docs/dask.md, "Speed"); a worker over its memory limit is then stopped within 1 s instead of 0.1 s.
LOCAL_WORKER_CONFIG = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
                       "distributed.worker.memory.monitor-interval": "1s",
                       "distributed.admin.system-monitor.interval": "2s"}

# ``connect(fork_workers=True)`` on Linux: the worker processes are forked from the client's process (Dask
# spawns them by default), so they inherit its imported modules and the numba kernels it loaded
# (``warm_kernels``), as the old process pool's workers did. A 2-worker LocalCluster then started in 0.5 s
# instead of 12 s at load 17, of which ~6 s per worker was loading the kernels from the cache (docs/dask.md,
# "Speed"). Only for tasks without parallel numba kernels (the sag-free path has none): a forked worker keeps
# the client's numba thread count, and forking after numba's thread pool started is unsafe. Elsewhere fork is
# unsafe (macOS system libraries) or missing, and Dask's spawn stays.
FORK_WORKER_CONFIG = {"distributed.worker.multiprocessing-method": "fork"}

# glibc malloc settings for those workers [bytes]. Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536,
# which hands freed heap back to the OS whenever 64 KiB are free at its top (and fixes the mmap threshold at
# 128 KiB): each sag-free strand then faults ~100 fresh pages back in (0.12-0.18 ms of kernel CPU, ~3 % of a
# 100-vertex strand). These are glibc's own upper values for its adaptive thresholds.
MALLOC_TRIM_THRESHOLD = 64 << 20
MALLOC_MMAP_THRESHOLD = 32 << 20


def malloc_keep_freed_memory() -> bool:
    """Tell glibc's malloc in this process to keep freed memory up to :data:`MALLOC_TRIM_THRESHOLD` bytes
    and to serve blocks below :data:`MALLOC_MMAP_THRESHOLD` bytes from its heap (``mallopt``). Returns
    False (and changes nothing) where the C library is not glibc."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    trim_ok = bool(mallopt(m_trim_threshold, MALLOC_TRIM_THRESHOLD))
    return bool(mallopt(m_mmap_threshold, MALLOC_MMAP_THRESHOLD)) and trim_ok


class LocalWorkerPlugin(_WorkerPlugin):
    """Applies :func:`malloc_keep_freed_memory` on every worker of a LocalCluster that rodlab started
    (also on a worker its nanny restarts); ``worker.rodlab_malloc`` says whether it took effect."""

    idempotent = True
    name = "rodlab-local-worker"

    def setup(self, worker):
        worker.rodlab_malloc = malloc_keep_freed_memory()


class DaskMissing(ModelError):
    """Dask's distributed scheduler is not installed; the message says how to install it."""


def dask_available() -> bool:
    """True when ``dask.distributed`` imports."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def require_dask(command: str = "this command") -> None:
    """Raise :class:`DaskMissing` naming ``command`` and the install command unless Dask imports."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise DaskMissing(f"{command} runs on Dask's distributed scheduler, which is not installed ({exc}); "
                          f"install it with: {INSTALL_HINT}") from None


class WarmUpPlugin(_WorkerPlugin):
    """Calls ``fn()`` once when a worker starts (also on workers that join or are restarted later), so the
    numba kernels are loaded from the on-disk cache once per worker process, not inside the first task of
    each. The seconds it took are kept as ``worker.rodlab_warmup_s`` (read them with
    ``client.run(lambda dask_worker: dask_worker.rodlab_warmup_s)``)."""

    idempotent = True

    def __init__(self, fn: Callable[[], object], name: str = "rodlab-warmup"):
        self.fn = fn
        self.name = name

    def setup(self, worker):
        start = time.perf_counter()
        self.fn()
        worker.rodlab_warmup_s = time.perf_counter() - start


@contextlib.contextmanager
def connect(scheduler: str | None = None, workers: int = 0, *, warmup: Callable[[], object] | None = None,
            connect_timeout: float = 30.0, dask_defaults: bool = False, fork_workers: bool = False):
    """A Dask ``Client``: to the scheduler at ``scheduler`` (``tcp://host:8786``; its workers must import
    rodlab and see the same files), else to a new LocalCluster of ``workers`` processes (default: all
    cores) with one thread each, ``NUMBA_NUM_THREADS=1``, malloc keeping freed memory
    (:class:`LocalWorkerPlugin`), the worker profiler off, a 1 s event-loop tick, memory monitors every 1 s
    and system monitors every 2 s (:data:`LOCAL_WORKER_CONFIG`); ``fork_workers=True``: on Linux the workers
    are forked from this process, with its loaded kernels (:data:`FORK_WORKER_CONFIG`; only for tasks without
    parallel numba kernels). ``dask_defaults=True`` leaves its workers as Dask sets them up (for
    comparisons), and an existing cluster keeps its own settings. ``warmup``: a picklable function run
    once per worker (:class:`WarmUpPlugin`). Closes what it opened.

    Raises
    ------
    DaskMissing
        Dask is not installed.
    ModelError
        ``workers`` is negative or the scheduler cannot be reached within ``connect_timeout`` seconds.
    """
    require_dask("rodlab on Dask")
    import dask
    from distributed import Client, LocalCluster

    if workers < 0:
        raise ModelError(f"workers must be >= 0 (0: all cores), got {workers}")
    cluster = None
    dask_log = logging.getLogger("distributed")
    level = dask_log.level
    dask_log.setLevel(logging.WARNING)  # the scheduler's start/stop chatter; lost workers still show
    if scheduler:
        try:
            client = Client(scheduler, timeout=connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise ModelError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None
    else:
        n = workers or os.cpu_count() or 1
        # each nanny hands its worker (also one it restarts) the configuration of the nanny's start
        config = {} if dask_defaults else dict(LOCAL_WORKER_CONFIG)
        if fork_workers and sys.platform.startswith("linux"):
            config.update(FORK_WORKER_CONFIG)
        with dask.config.set(config):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                                   silence_logs=logging.ERROR, env={"NUMBA_NUM_THREADS": "1"})
        client = Client(cluster)
    try:
        if cluster is not None and not dask_defaults:
            client.register_plugin(LocalWorkerPlugin())
        if warmup is not None:
            client.register_plugin(WarmUpPlugin(warmup))
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        dask_log.setLevel(level)


def gather_as_completed(futures: Iterable, on_done: Callable, on_error: Callable) -> None:
    """Wait for ``futures`` in completion order: ``on_done(future, result)`` for each that finished,
    ``on_error(future, exc)`` for each that failed for good (its task raised after its retries, or its
    workers died ``allowed-failures`` times: ``distributed.KilledWorker``)."""
    from distributed import as_completed

    for fut in as_completed(list(futures)):
        try:
            result = fut.result()
        except Exception as exc:  # noqa: BLE001 - every failure becomes a reported row, never a crash
            on_error(fut, exc)
        else:
            on_done(fut, result)
        fut.release()
