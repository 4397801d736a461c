"""Process-safe numba on-disk cache: one writer at a time per cached function, and cached callers
of parallel code that start numba's threading layer when loaded.

numba's cache (``@njit(cache=True)``) keeps, per function, an index file mapping each compiled
signature to a data file ``NAME.1.nbc``, ``NAME.2.nbc``, ... A new signature takes the first name
the index does not use yet, so two processes compiling *different* signatures of one function at
the same time (two pytest-xdist workers, Dask workers, two `rodlab run`s sharing ``__pycache__``)
can both pick ``NAME.1.nbc``; when their writes interleave, the index ends up naming one
signature's file while the file holds the other's machine code, and the next process that loads
that signature jumps into the wrong code (a segmentation fault, or silently wrong results).

:func:`install` wraps numba's ``IndexDataCacheFile.save`` and ``load`` in an advisory file lock
(``fcntl.flock`` on ``INDEX.lock`` beside the index): saving holds it exclusively from reading the
index to writing the data, loading holds it shared from reading the index to reading the data. A
cache folder that cannot hold the lock file (read-only) and systems without ``fcntl`` work as
before, unlocked.

A second flaw (numba 0.68; upstream issue #8578 reports the crash): a function compiled with
``parallel=True`` needs numba's threading layer, which ``_launch_threads`` sets up (it gives the
JIT the addresses of ``numba_parallel_for``, ``do_scheduling_*``, ``get_num_threads``, ...). numba
records that need as the function's ``reload_init`` (``_reload_parfors``, run when its cache entry
is loaded), and a caller compiled in the same process inherits it when it links the callee's code
library. But a callee *loaded from the cache* comes back with a fresh code library whose
``_reload_init`` is empty, so a caller compiled in a process where its parallel callees came from
the cache is saved without ``_reload_parfors``; a later process that loads only that caller never
starts the threading layer and segfaults on the first parallel loop. It takes two processes: one
saves the callees, a second compiles the caller over them before the first has saved the caller
(two pytest-xdist workers compiling ``der.bodies.advance_world``: the first saves its parallel
callees minutes before it saves ``advance_world``), or compiles another signature of the caller
later. :func:`install` therefore wraps numba's ``CompileResultCacheImpl.rebuild`` (the cache load
of a compiled function): the loaded library keeps its entry's ``reload_init``, so callers compiled
over it inherit it; and an entry whose object code names a threading-layer symbol but lacks
``_reload_parfors`` (written before this fix, or by a process without it) gets it added, so such
an entry loads and runs instead of crashing.

Installed once by ``import rodlab``, before any kernel compiles.
"""
from __future__ import annotations

import contextlib
import os

try:
    import fcntl
except ImportError:  # not POSIX: numba's own behaviour
    fcntl = None


@contextlib.contextmanager
def _index_lock(cache_file, exclusive: bool):
    """Hold the advisory lock of ``cache_file``'s index (exclusive or shared) for the block."""
    try:
        fd = os.open(cache_file._index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


# the entry points of numba's threading layer that _launch_threads hands to the JIT: compiled code
# naming any of them needs the layer started before it is loaded
_THREADING_SYMBOLS = (b"numba_parallel_for", b"do_scheduling_signed", b"do_scheduling_unsigned",
                      b"get_num_threads", b"get_sched_size")


def _calls_threading_layer(libdata) -> bool:
    """Whether a serialized code library (``(name, kind, data)`` of ``serialize_using_object_code``)
    refers to a threading-layer symbol: its object code's symbol table names every symbol it
    imports."""
    name, kind, data = libdata
    if kind != "object":
        return False
    object_code = data[0]
    return any(symbol in object_code for symbol in _THREADING_SYMBOLS)


def _install_reload_init() -> bool:
    """Wrap numba's cache load of a compiled function so that its ``reload_init`` is kept by the
    loaded code library (and so inherited by callers compiled over it), adding the threading
    layer's reloader to an entry whose code needs it but lacks it (module docstring). Idempotent.
    Returns whether it is in place (False on a numba without these internals)."""
    try:
        from numba.core.caching import CompileResultCacheImpl
        from numba.core.typed_passes import _reload_parfors
    except ImportError:
        return False
    if getattr(CompileResultCacheImpl, "_rodlab_reload_init", False):
        return True
    rebuild = CompileResultCacheImpl.rebuild

    def rebuild_with_reload_init(self, target_context, payload):
        # payload: libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init, envs
        payload = tuple(payload)
        reload_init = list(payload[7] or ())
        if _reload_parfors not in reload_init and _calls_threading_layer(payload[0]):
            reload_init.append(_reload_parfors)
        cres = rebuild(self, target_context, payload[:7] + (reload_init,) + payload[8:])
        inherited = getattr(cres.library, "_reload_init", None)  # what callers linking it inherit
        if inherited is not None:
            inherited.update(cres.reload_init)
        return cres

    CompileResultCacheImpl.rebuild = rebuild_with_reload_init
    CompileResultCacheImpl._rodlab_reload_init = True
    return True


def install() -> bool:
    """Lock numba's cache index while it is read or written and keep the threading layer's
    reloader of cached parallel code (module docstring); idempotent. Returns whether the lock is
    in place (False where ``fcntl`` or numba's cache class is missing)."""
    _install_reload_init()
    if fcntl is None:
        return False
    try:
        from numba.core.caching import IndexDataCacheFile
    except ImportError:  # a numba without this class: leave it alone
        return False
    if getattr(IndexDataCacheFile, "_rodlab_locked", False):
        return True
    save, load = IndexDataCacheFile.save, IndexDataCacheFile.load

    def locked_save(self, key, data):
        with _index_lock(self, exclusive=True):
            return save(self, key, data)

    def locked_load(self, key):
        with _index_lock(self, exclusive=False):
            return load(self, key)

    IndexDataCacheFile.save, IndexDataCacheFile.load = locked_save, locked_load
    IndexDataCacheFile._rodlab_locked = True
    return True
