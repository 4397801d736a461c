"""Process-safe numba on-disk cache: one writer at a time per cached function.

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
before, unlocked. Installed once by ``import rodlab``, before any kernel compiles.
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


def install() -> bool:
    """Lock numba's cache index while it is read or written (idempotent). Returns whether the
    lock is in place (False where ``fcntl`` or numba's cache class is missing)."""
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
