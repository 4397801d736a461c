"""Run one benchmark trial in a forked child process under a CPU-time limit (bench scripts only).

A peer simulator may spend a whole run inside one call that a benchmark's own budget checks never
interrupt (cosseratbench's MuJoCo adapter steps a whole simulation in one ``run``). Running the
trial in a child whose CPU time is capped by the kernel (``setrlimit(RLIMIT_CPU)``, POSIX) stops any
of them: at the soft limit the child gets SIGXCPU, which raises :class:`CpuLimitExceeded` in the
child's Python code (a ``BaseException``, so a peer's ``except Exception`` does not swallow it); a
child stuck in compiled code past the hard limit (soft + ``grace_s``) is killed by the kernel with
SIGKILL; a child that neither finishes nor uses CPU (a hang) is killed by the parent after
``wall_limit_s``. The trial reports how far it got through :func:`report_progress` (shared memory,
so the numbers survive a kill), from which the caller projects the cost of the whole run.

Linux / POSIX only (``os.fork``): the trial is a closure, inherited by the child, never pickled;
only its return value is (sent back through a pipe).
"""
from __future__ import annotations

import math
import mmap
import os
import pickle
import resource
import select
import signal
import time
from dataclasses import dataclass, field

import numpy as np

_FIELDS = ("t", "cpu_s", "per_step_s")  # the progress a trial can report (NaN: not reported)
_PROGRESS: np.ndarray | None = None     # set in the child only: a view of the shared progress record
_GRACE_S: list = []                     # set in the child only: [grace_s] of run_with_cpu_limit


class CpuLimitExceeded(BaseException):
    """Raised in the child at its CPU-time soft limit (SIGXCPU)."""


@dataclass
class ChildOutcome:
    """How a trial run by :func:`run_with_cpu_limit` ended.

    ``status``: ``"done"`` (``value`` is the trial's return value), ``"cpu_limit"`` (stopped at the
    CPU soft limit, or killed at the hard limit), ``"wall_limit"`` (killed by the parent after
    ``wall_limit_s``), ``"error"`` (the trial raised; ``message`` says what) or ``"crashed"`` (the
    child died otherwise, e.g. a segfault; ``message`` gives the signal or exit status).
    ``cpu_s``: the child's whole CPU time [s] (user + system, from ``wait4``); ``wall_s`` [s];
    ``progress``: the last values the trial passed to :func:`report_progress` (NaN when never)."""

    status: str
    value: object = None
    message: str = ""
    cpu_s: float = math.nan
    wall_s: float = math.nan
    progress: dict = field(default_factory=dict)


def report_progress(**values: float) -> None:
    """Record the trial's progress (``t``: simulated time reached [s], ``cpu_s``: the child's CPU
    time then [s], ``per_step_s``: a measured CPU cost per step [s]); a no-op outside a child of
    :func:`run_with_cpu_limit`."""
    for name in values:
        if name not in _FIELDS:
            raise ValueError(f"report_progress: unknown field {name!r} (known: {', '.join(_FIELDS)})")
    if _PROGRESS is None:
        return
    for name, v in values.items():
        _PROGRESS[_FIELDS.index(name)] = float(v)


def rearm_cpu_limit(seconds: float) -> None:
    """In a child of :func:`run_with_cpu_limit`: from now on allow ``seconds`` more CPU seconds (soft
    limit; the hard one ``grace_s`` later), e.g. a trial whose untimed setup had a larger allowance
    and whose timed part gets the budget. Limits only ever come down (an unprivileged process cannot
    raise its hard limit): a re-arm past the current limits keeps them. A no-op outside a child."""
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"rearm_cpu_limit: seconds must be a positive finite number, got {seconds!r}")
    if not _GRACE_S:
        return
    old_soft, old_hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = min(int(math.ceil(time.process_time() + seconds)), old_soft)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, min(soft + int(math.ceil(_GRACE_S[0])), old_hard)))


def run_with_cpu_limit(trial, cpu_limit_s: float, wall_limit_s: float, grace_s: float = 5.0) -> ChildOutcome:
    """Run ``trial()`` in a forked child whose CPU time is capped at ``cpu_limit_s`` seconds (soft
    limit, rounded up to whole seconds as the kernel takes it; hard limit ``grace_s`` later) and whose
    wall time is capped at ``wall_limit_s``; return how it ended (:class:`ChildOutcome`)."""
    if not (cpu_limit_s > 0 and math.isfinite(cpu_limit_s)):
        raise ValueError(f"cpu_limit_s must be a positive finite number of seconds, got {cpu_limit_s!r}")
    if not wall_limit_s > 0:
        raise ValueError(f"wall_limit_s must be > 0 seconds, got {wall_limit_s!r}")
    if not grace_s >= 1:
        raise ValueError(f"grace_s must be >= 1 second, got {grace_s!r}")
    shared = mmap.mmap(-1, 8 * len(_FIELDS))
    progress = np.frombuffer(shared, dtype=np.float64)
    progress[:] = math.nan
    read_fd, write_fd = os.pipe()
    w0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(trial, progress, write_fd, cpu_limit_s, grace_s)
    os.close(write_fd)
    try:
        data, timed_out = _read_until_eof(read_fd, w0 + wall_limit_s)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
    finally:
        os.close(read_fd)
    out = ChildOutcome("crashed", cpu_s=usage.ru_utime + usage.ru_stime, wall_s=time.perf_counter() - w0,
                       progress={k: float(v) for k, v in zip(_FIELDS, progress)})
    del progress
    shared.close()
    if timed_out:
        out.status, out.message = "wall_limit", f"killed after {wall_limit_s:.0f} s of wall time"
    elif os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGKILL, signal.SIGXCPU):
        out.status, out.message = "cpu_limit", f"killed by signal {signal.Signals(os.WTERMSIG(status)).name} at the CPU limit"
    elif os.WIFSIGNALED(status):
        out.message = f"died of signal {signal.Signals(os.WTERMSIG(status)).name}"
    elif data:
        out.status, payload = pickle.loads(data)
        out.value = payload if out.status == "done" else None
        out.message = payload if out.status == "error" else ("stopped at the CPU limit" if out.status == "cpu_limit" else "")
    else:
        out.message = f"exited with status {os.WEXITSTATUS(status)} and no result"
    return out


def _on_sigxcpu(signum, frame):  # noqa: ARG001 - signal handler signature
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # once: the kernel repeats SIGXCPU every second
    raise CpuLimitExceeded()


def _child(trial, progress: np.ndarray, write_fd: int, cpu_limit_s: float, grace_s: float) -> None:
    global _PROGRESS
    try:
        try:
            _PROGRESS = progress
            _GRACE_S.append(grace_s)
            used = time.process_time()  # a forked child starts near 0 s; the kernel limit counts from its start
            soft = int(math.ceil(used + cpu_limit_s))
            resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + int(math.ceil(grace_s))))
            signal.signal(signal.SIGXCPU, _on_sigxcpu)
            try:
                result = ("done", trial())
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                result = ("error", f"{type(exc).__name__}: {exc}"[:300])
        except CpuLimitExceeded:  # in the trial, or in its error handling
            result = ("cpu_limit", None)
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        data = pickle.dumps(result)
        with os.fdopen(write_fd, "wb") as f:
            f.write(data)
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child into the parent's code
        os._exit(70)
    os._exit(0)


def _read_until_eof(fd: int, deadline: float) -> tuple[bytes, bool]:
    """All bytes from ``fd`` until EOF, or (what came, True) once ``deadline`` (perf_counter) passes."""
    chunks = []
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)
