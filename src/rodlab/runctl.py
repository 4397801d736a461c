"""Run control: Ctrl-C, run-size limits and the numba compile watch shared by the recording loop
(:func:`rodlab.experiment.record`), the scene registry and the command line.

- :func:`session` (the CLI wraps every run in one): a first Ctrl-C (SIGINT) inside the recording
  loop only sets a flag, which the loop checks between its chunks of at most ~0.2 s and turns into
  :class:`Interrupted` with the recording up to the last good state; outside the loop (building
  a world, compiling) it raises at once; a second Ctrl-C always raises at once. The session also
  shows ``compiling kernels (first run only)`` while numba compiles and carries ``force`` (run
  sizes over the limits of :func:`check_run_size` allowed) and ``checkpoint`` (the run's
  :class:`rodlab.checkpoint.Checkpointer`, docs/checkpoints.md).
- :func:`compile_seconds`: seconds spent compiling numba kernels so far in this process (the
  ``numba:compile`` events of numba's event API; loading a kernel from the cache is not a
  compile), so timings and ETAs can leave compilation out.
- :func:`check_run_size`: refuses (:class:`RunTooLarge`, a :class:`rodlab.model.ModelError`) a run
  of more than :data:`MAX_STEPS` steps, or whose frames need more memory than the machine has
  available, with an estimate of its steps, bytes and time.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from .model import ModelError

MAX_STEPS = 10**8
"""A run of more steps than this is refused unless forced (``rodlab run --force``)."""
CHUNK_S = 0.2
"""Longest wall time [s] of one compiled ``advance`` call of the recording loop (a target)."""


class Interrupted(KeyboardInterrupt):
    """The run was stopped by Ctrl-C (SIGINT). ``recording``: what was computed up to the last
    good state (a :class:`rodlab.experiment.Recording`), or None when stepping had not started."""

    def __init__(self, message: str = "interrupted", recording=None):
        super().__init__(message)
        self.recording = recording


class RunTooLarge(ModelError):
    """A run over the step or memory limits (:func:`check_run_size`); ``rodlab run --force`` runs it."""


# ---- numba compile watch ---------------------------------------------------------------------
class _CompileWatch:
    """Listener on numba's ``numba:compile`` events: nesting depth, seconds compiled (outermost
    events only) and the callbacks of the spinner."""

    def __init__(self):
        self.depth = 0
        self.total_s = 0.0
        self.started = 0.0
        self.last_end = 0.0
        self.lock = threading.Lock()

    def on_start(self, event) -> None:
        with self.lock:
            if self.depth == 0:
                self.started = time.perf_counter()
            self.depth += 1

    def on_end(self, event) -> None:
        with self.lock:
            self.depth = max(self.depth - 1, 0)
            if self.depth == 0:
                now = time.perf_counter()
                self.total_s += now - self.started
                self.last_end = now

    def compiling(self) -> bool:
        return self.depth > 0

    def seconds(self) -> float:
        with self.lock:
            return self.total_s + (time.perf_counter() - self.started if self.depth else 0.0)


_WATCH: _CompileWatch | None = None


def _watch() -> _CompileWatch:
    global _WATCH
    if _WATCH is None:
        watch = _CompileWatch()
        try:
            from numba.core import event

            class _Listener(event.Listener):
                def on_start(self, ev):
                    watch.on_start(ev)

                def on_end(self, ev):
                    watch.on_end(ev)

            event.register("numba:compile", _Listener())
        except ImportError:  # pragma: no cover - numba is a dependency
            pass
        _WATCH = watch
    return _WATCH


def compile_seconds() -> float:
    """Seconds spent compiling numba kernels in this process so far (0 before the first compile)."""
    return _watch().seconds()


class _Spinner:
    """Shows ``compiling kernels (first run only)`` on stderr while numba compiles: a spinner with
    the seconds elapsed on a terminal, one line at the start and one at the end otherwise. A burst
    of compiles (gaps under 0.5 s) counts as one."""

    FRAMES = "|/-\\"

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="rodlab-compile-spinner", daemon=True)
        self.shown_at = None

    def start(self):
        self.thread.start()
        return self

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed stream: nothing to show
            pass

    def _loop(self):
        watch, i = _watch(), 0
        seen_end = watch.last_end  # a compile that ends between two polls still counts
        while not self.stop_event.wait(0.1):
            fresh = watch.last_end > seen_end
            seen_end = watch.last_end
            busy = watch.compiling() or fresh or (self.shown_at is not None and time.perf_counter() - watch.last_end < 0.5)
            if busy and self.shown_at is None:
                self._show()
            if busy and self.tty:
                i += 1
                self._write(f"\r{self.FRAMES[i % 4]} compiling kernels (first run only) "
                            f"{time.perf_counter() - self.shown_at:5.1f} s")
            if not busy and self.shown_at is not None:
                self._done()
        if self.shown_at is None and (watch.compiling() or watch.last_end > seen_end):
            self._show()  # compiled after the last poll (a short run)
        if self.shown_at is not None:
            self._done()

    def _show(self):
        self.shown_at = time.perf_counter()
        if not self.tty:
            self._write("compiling kernels (first run only) ...\n")

    def _done(self):
        took = time.perf_counter() - self.shown_at
        self._write(("\r\033[K" if self.tty else "") + f"compiled kernels in {took:.1f} s (cached for later runs)\n")
        self.shown_at = None

    def stop(self):
        self.stop_event.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout=1.0)


# ---- session: Ctrl-C and force -------------------------------------------------------------------
class Control:
    """The active session's settings and flags (module docstring)."""

    def __init__(self, force: bool = False, checkpoint=None):
        self.force = bool(force)
        self.checkpoint = checkpoint  # a rodlab.checkpoint.Checkpointer, or None
        self.interrupt_requested = False
        self.in_loop = 0
        self.partial = None  # the recording of the last record() that stopped early
        self.spinner = None

    def handle_sigint(self, signum, frame):
        if self.in_loop and not self.interrupt_requested:
            self.interrupt_requested = True
            return
        raise Interrupted("interrupted")


_ACTIVE: Control | None = None


def active() -> Control | None:
    """The running :func:`session`'s :class:`Control`, or None outside a session."""
    return _ACTIVE


@contextlib.contextmanager
def session(*, force: bool = False, spinner: bool = True, checkpoint=None):
    """Run inside a controlled session (module docstring); yields its :class:`Control`.
    The SIGINT handler is installed only from the main thread. ``checkpoint``: a
    :class:`rodlab.checkpoint.Checkpointer` that the recording loop writes checkpoints with (and
    resumes from), or None."""
    global _ACTIVE
    ctl, previous = Control(force, checkpoint), _ACTIVE
    _ACTIVE = ctl
    _watch()
    handler = None
    if threading.current_thread() is threading.main_thread():
        handler = signal.signal(signal.SIGINT, ctl.handle_sigint)
    spin = ctl.spinner = _Spinner().start() if spinner else None
    try:
        yield ctl
    finally:
        if spin is not None:
            spin.stop()
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        _ACTIVE = previous


@contextlib.contextmanager
def stepping():
    """Marks the recording loop (a first Ctrl-C inside it only sets the flag)."""
    ctl = _ACTIVE
    if ctl is not None:
        ctl.in_loop += 1
    try:
        yield
    finally:
        if ctl is not None:
            ctl.in_loop -= 1


def stop_spinner() -> None:
    """End the session's compile message now (before a final line is printed)."""
    if _ACTIVE is not None and _ACTIVE.spinner is not None:
        _ACTIVE.spinner.stop()


def interrupt_requested() -> bool:
    return _ACTIVE is not None and _ACTIVE.interrupt_requested


def remember_partial(recording) -> None:
    """Keep the recording of a run stopped early, for the CLI to write."""
    if _ACTIVE is not None:
        _ACTIVE.partial = recording


# ---- run size ---------------------------------------------------------------------------------
def available_memory_bytes() -> int:
    """Memory available to a new allocation [bytes]: ``MemAvailable`` of /proc/meminfo, else the
    physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 2**63


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def _fmt_seconds(s: float) -> str:
    if s < 120:
        return f"{s:.3g} s"
    if s < 2 * 3600:
        return f"{s / 60:.3g} min"
    if s < 2 * 86400:
        return f"{s / 3600:.3g} h"
    if s < 2 * 365 * 86400:
        return f"{s / 86400:.3g} days"
    return f"{s / (365.25 * 86400):.3g} years"


def check_run_size(nsteps: int, frame_bytes: int, *, seconds_per_step: float | None = None,
                   force: bool | None = None) -> None:
    """Refuse a run of more than :data:`MAX_STEPS` steps or whose frames (``frame_bytes`` [bytes]
    in all) need more memory than is available, with the estimate (steps, bytes, and the time
    when ``seconds_per_step`` [s] is known); ``force`` (default: the session's) allows it."""
    if force is None:
        force = _ACTIVE is not None and _ACTIVE.force
    if force:
        return
    over = []
    if nsteps > MAX_STEPS:
        over.append(f"more than {MAX_STEPS:.0e} steps")
    avail = available_memory_bytes()
    if frame_bytes > avail:
        over.append(f"frames need more memory than is available ({_fmt_bytes(avail)})")
    if not over:
        return
    est = f"{nsteps:.3g} steps, {_fmt_bytes(frame_bytes)} of frames"
    if seconds_per_step is not None and seconds_per_step > 0:
        est += f", about {_fmt_seconds(nsteps * seconds_per_step)} of stepping"
    raise RunTooLarge(f"run too large ({'; '.join(over)}): {est}; shorten t_end, raise dt or coarsen the "
                      "rod, or pass --force to run it anyway")
