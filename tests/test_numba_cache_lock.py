"""rodlab._numba_cache: numba's cache index is written under an exclusive lock and read under a
shared one, so processes compiling different signatures of one function cannot interleave."""
from __future__ import annotations

import fcntl
import os
import threading
import time

import pytest
from numba.core.caching import IndexDataCacheFile

import rodlab  # noqa: F401  (installs the lock)
from rodlab import _numba_cache


def _cache_file(tmp_path):
    return IndexDataCacheFile(str(tmp_path), "kernel-1.py311", b"stamp")


def _call_in_thread(fn):
    done = threading.Event()

    def run():
        fn()
        done.set()
    threading.Thread(target=run, daemon=True).start()
    return done


def test_install_is_idempotent_and_marks_the_class():
    assert _numba_cache.install() is True
    assert _numba_cache.install() is True
    assert IndexDataCacheFile._rodlab_locked


@pytest.mark.parametrize("holder, call, blocks", [
    (fcntl.LOCK_EX, "save", True),   # a writer waits for another writer
    (fcntl.LOCK_SH, "save", True),   # ... and for a reader
    (fcntl.LOCK_EX, "load", True),   # a reader waits for a writer
    (fcntl.LOCK_SH, "load", False),  # readers share
])
def test_save_and_load_take_the_index_lock(tmp_path, holder, call, blocks):
    cf = _cache_file(tmp_path)
    cf.save(("sig", 1), b"payload-1")
    fd = os.open(cf._index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, holder)
        done = _call_in_thread((lambda: cf.save(("sig", 2), b"payload-2")) if call == "save" else (lambda: cf.load(("sig", 1))))
        finished_while_held = done.wait(0.3)
        assert finished_while_held is (not blocks)
    finally:
        os.close(fd)
    assert done.wait(5.0)
    assert cf.load(("sig", 1)) == b"payload-1" and (call != "save" or cf.load(("sig", 2)) == b"payload-2")


def test_two_signatures_saved_by_interleaving_writers_keep_their_own_data(tmp_path):
    """Two cache files over one index (two processes), each saving its own new signature while the
    other has already read the index: with the lock the second writer sees the first one's entry and
    takes the next data file, so each signature loads its own bytes."""
    a, b = _cache_file(tmp_path), _cache_file(tmp_path)
    started = threading.Event()
    original = IndexDataCacheFile._load_index

    def slow_load_index(self):  # the first writer pauses between reading the index and writing it
        out = original(self)
        if self is a and not started.is_set():
            started.set()
            time.sleep(0.3)
        return out
    IndexDataCacheFile._load_index = slow_load_index
    try:
        done_a = _call_in_thread(lambda: a.save(("sig", "A"), b"code-A"))
        assert started.wait(5.0)
        b.save(("sig", "B"), b"code-B")
        assert done_a.wait(5.0)
    finally:
        IndexDataCacheFile._load_index = original
    fresh = _cache_file(tmp_path)
    assert fresh.load(("sig", "A")) == b"code-A"
    assert fresh.load(("sig", "B")) == b"code-B"
