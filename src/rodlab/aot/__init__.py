"""Ahead-of-time compiled kernels: a cold first run without numba's JIT compile.

``pip install`` builds the extension module ``rodlab.aot._kernels`` with ``numba.pycc`` (the
repository's ``setup.py``, :mod:`rodlab.aot.build`): the kernels that a run calls from Python
(:mod:`rodlab.aot.spec`, with their exact signatures), compiled for this machine's CPU (the CPU
name and features numba's JIT would use here). A run then calls these instead of compiling the
same functions on first use (docs/benchmarks-cold-start.md, "Ahead-of-time kernels").

The compiled code is the JIT's own: each exported entry is a one-line call of the kernel's numba
dispatcher, compiled with that dispatcher's options (``error_model``, ``fastmath``) and its callees
linked in, for the same CPU target, so results are bitwise the JIT's (tests/test_aot.py).

The module is used only when all of these hold, else every kernel runs through its JIT dispatcher
as before (:func:`unavailable_reason` says which failed):

- ``RODLAB_JIT_ONLY`` is unset, empty or ``0`` (set it to ``1`` to force the JIT path);
- the module was built (a source checkout run with ``PYTHONPATH=src`` and no build has none);
- it was built by the installed numba and llvmlite, for this CPU (name and features), from
  exactly the installed source files (a SHA-256 over every ``.py`` of the package: an edited
  kernel after ``pip install -e .`` falls back to the JIT until the next install);
- the call's arguments have one of the entry's signatures as numba's dispatcher types them
  (dtype, dimensions, C order, writeable, alignment; ``int``/``float``/``bool`` scalars, ``None``).

An entry is used through its kernel's own numba dispatcher (:func:`seed`): it is inserted there as
the compiled code of its signature, and numba's C type dispatch, the one every JIT call goes
through, runs it for a call of exactly that signature; any other call compiles as before. Callers
keep calling the dispatcher (or a :func:`kernel` handle, which seeds at its first call): there is
no argument check in Python.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

JIT_ONLY_ENV = "RODLAB_JIT_ONLY"
BUILD_INFO = "_kernels_build.json"  # written beside the extension module by the build
PACKAGE_ROOT = Path(__file__).resolve().parents[1]

_loaded = None  # (module or None, reason) once decided; refresh() forgets it
_generation = [0]  # bumped by refresh(): Kernel handles seed their dispatchers again
_seeded = {}  # dispatcher -> the argument types of the entries seed() inserted; refresh() takes them out


def host_target() -> tuple[str, str]:
    """The CPU name and feature string numba's JIT compiles for on this machine (its
    ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` overrides included)."""
    import llvmlite.binding as ll
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    name = config.CPU_NAME if config.CPU_NAME is not None else ll.get_host_cpu_name()
    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else get_host_cpu_features()
    return name, features


def source_digest() -> str:
    """SHA-256 over the relative path and bytes of every ``.py`` file of the package."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        h.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def build_info() -> dict:
    """What the extension module must match at run time (written by the build)."""
    import llvmlite
    import numba

    cpu, features = host_target()
    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__, "cpu": cpu, "features": features,
            "source_sha256": source_digest()}


def _load():
    if os.environ.get(JIT_ONLY_ENV, "") not in ("", "0"):
        return None, f"{JIT_ONLY_ENV}={os.environ[JIT_ONLY_ENV]} forces the JIT"
    try:
        from . import _kernels
    except ImportError as exc:
        return None, f"the extension module is not built ({exc})"
    try:
        built = json.loads((Path(_kernels.__file__).parent / BUILD_INFO).read_text())
    except (OSError, ValueError) as exc:
        return None, f"no readable {BUILD_INFO} beside the extension module ({exc})"
    now = build_info()
    stale = [key for key in now if built.get(key) != now[key]]
    if stale:
        return None, f"the extension module was built for another {', '.join(stale)} (rebuild: pip install -e .)"
    return _kernels, ""


def module():
    """The extension module when it may be used (module docstring), else None."""
    global _loaded
    if _loaded is None:
        _loaded = _load()
    return _loaded[0]


def unavailable_reason() -> str:
    """Why :func:`module` is None ("" when it is not)."""
    module()
    return _loaded[1]


def refresh() -> None:
    """Decide again (after ``RODLAB_JIT_ONLY`` changed, say): every :class:`Kernel` seeds again at its
    next call, and every
    seeded dispatcher (:func:`seed`) drops what it holds (its JIT compilations load again from numba's
    cache at their next call) until it is seeded again."""
    global _loaded
    _loaded = None
    _generation[0] += 1
    for dispatcher, inserted in _seeded.items():
        if inserted:
            dispatcher._reset_overloads()
    _seeded.clear()


def seed(dispatcher) -> int:
    """Insert the compiled entries of ``dispatcher`` (a numba dispatcher named in
    :data:`rodlab.aot.spec.ENTRIES`) into the dispatcher itself, each under its signature, the way
    numba adds a JIT compilation (``Dispatcher._insert``, the C-level table ``add_overload`` fills;
    the module was built by this very numba: :func:`build_info`). A Python call whose arguments numba
    types as an entry's signature (its own C type dispatch: dtype, dimensions, layout, read-only)
    then runs the entry at the per-call cost of a JIT overload, with no check in Python; any other
    call compiles as before. For a per-call path: the callers keep calling the dispatcher.

    An entry is not inserted for a signature the dispatcher already compiled (the JIT's code, the
    same bits), and is not listed in ``dispatcher.overloads`` / ``signatures`` (there is no compile
    result: compiled code that calls the dispatcher gets a JIT compilation). Done once per
    :func:`refresh`; returns the number of entries the dispatcher holds from this module."""
    from . import spec

    if dispatcher in _seeded:
        return len(_seeded[dispatcher])
    mod = module()
    key = (dispatcher.py_func.__module__, dispatcher.py_func.__name__)
    inserted = []
    if mod is not None and key in spec.ENTRIES:
        for k, sig in enumerate(spec.ENTRIES[key]):
            if tuple(sig.args) not in dispatcher.overloads:
                dispatcher._insert([a._code for a in sig.args], getattr(mod, spec.symbol(*key, k)), False)
                inserted.append(tuple(sig.args))
    _seeded[dispatcher] = tuple(inserted)
    return len(inserted)


def seeded(dispatcher) -> tuple:
    """The argument types (tuples of numba types) of the entries :func:`seed` inserted into
    ``dispatcher`` since the last :func:`refresh` (empty: none)."""
    return _seeded.get(dispatcher, ())


class Kernel:
    """A Python caller's handle on a compiled kernel: its first call (after each :func:`refresh`)
    seeds the kernel's ahead-of-time entries into its numba dispatcher (:func:`seed`), and every
    call then calls that dispatcher, which runs an entry for a call of its exact signature and the
    JIT for any other (the same results, bitwise). For handles made at import time, before the
    module may be decided; a caller that exists per simulator can seed once and call the dispatcher."""

    __slots__ = ("jit", "_generation", "__name__")

    def __init__(self, jit):
        self.jit = jit
        self._generation = -1
        self.__name__ = jit.py_func.__name__

    def __call__(self, *args):
        if self._generation != _generation[0]:
            seed(self.jit)
            self._generation = _generation[0]
        return self.jit(*args)

    def __repr__(self):
        return f"<rodlab.aot.Kernel {self.__name__}>"


def kernel(dispatcher) -> Kernel:
    """:class:`Kernel` of ``dispatcher``."""
    return Kernel(dispatcher)


__all__ = ["JIT_ONLY_ENV", "Kernel", "build_info", "host_target", "kernel", "module", "refresh", "seed", "seeded",
           "source_digest", "unavailable_reason"]
