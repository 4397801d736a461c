"""Every cached compilation of rodlab has its own numba cache entry.

numba files a cached function's machine code under its module, qualified name and first line and
keys it by signature, CPU and bytecode, not by the compile options: two dispatchers of one Python
function (``njit(parallel=True)(f)`` and ``njit()(f)``) share one entry, and a later process loads
whichever was written last into both. The der-implicit batch's parallel driver then ran the serial
code (no speed-up from 1 to 2 threads, issue #13); ``geometry._vec.njit_as`` gives each compilation
its own name. This test imports every rodlab module and fails on any two cached dispatchers that
share an index file."""
from __future__ import annotations

import importlib
import pkgutil
from collections import defaultdict

from numba.core.registry import CPUDispatcher

import rodlab


def _cached_dispatchers():
    seen = {}
    for info in pkgutil.walk_packages(rodlab.__path__, "rodlab."):
        if info.name.endswith("__main__"):  # the command line, run on import
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (viewer, dask) not installed here
            continue
        for name, obj in vars(mod).items():
            # (a dispatcher without cache=True has a NullCache: no cache file, nothing to share)
            if isinstance(obj, CPUDispatcher) and getattr(obj._cache, "_cache_file", None) is not None \
                    and id(obj) not in seen:
                seen[id(obj)] = (f"{info.name}.{name}", obj)
    return list(seen.values())


def test_no_two_cached_dispatchers_share_a_cache_entry():
    found = _cached_dispatchers()
    assert len(found) > 50  # the walk found the kernels
    by_index = defaultdict(list)
    for label, disp in found:
        by_index[disp._cache._cache_file._index_path].append(label)
    shared = {path: labels for path, labels in by_index.items() if len(labels) > 1}
    assert not shared, f"dispatchers sharing one numba cache entry (use geometry._vec.njit_as): {shared}"


def test_batch_drivers_have_their_own_entries_and_options():
    from rodlab.compact import batch as compact_batch
    from rodlab.der_implicit import batch as implicit_batch
    for parallel, serial in ((implicit_batch.advance_parallel, implicit_batch.advance_serial),
                             (compact_batch.advance_rods, compact_batch.advance_rods_serial)):
        assert parallel.targetoptions.get("parallel") is True
        assert not serial.targetoptions.get("parallel")
        assert parallel._cache._cache_file._index_path != serial._cache._cache_file._index_path
        assert parallel.py_func.__code__ is serial.py_func.__code__  # one body, two compilations
