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

A third flaw: numba keys a cached function by its own source file only (a hash of that file), but
its machine code also holds every function it calls, inlined or linked, from other files. Edit a
callee's file and the caller's entry still loads, running the old callee (found here: a stale
cache gave a rod without gravity, and no error). :func:`install` therefore wraps numba's source
stamp for files of this package: the stamp of ``A.py`` also hashes every rodlab module in the
closure of ``A.py``'s imports (its ``from .x import ...`` and ``rodlab.x`` imports, at any depth,
read from the source text), so an edit of any file whose code ``A``'s functions can reach makes
``A``'s entries stale and they compile again. Installed packages are not affected (every file is
rewritten on upgrade); git checkouts and merges in a working tree are.

Installed once by ``import rodlab``, before any kernel compiles.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sys

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


# ---- source stamps over the import closure (module docstring, third flaw) ----------------------------
_PACKAGE_ROOTS = [os.path.dirname(os.path.abspath(__file__))]  # rodlab/; tests add temporary packages
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)|import[ \t]+([\w., \t]+))",
                     re.MULTILINE)


def _package_of(path: str):
    """The registered package root that holds ``path``, or None."""
    for root in _PACKAGE_ROOTS:
        if path.startswith(root + os.sep):
            return root
    return None


def _module_file(root: str, parts: list) -> list:
    """Files of the module ``parts`` (path components below the package's parent): ``x.py``, or
    ``x/__init__.py`` for a package; [] when neither exists."""
    base = os.path.join(os.path.dirname(root), *parts)
    for cand in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(cand):
            return [cand]
    return []


@functools.lru_cache(maxsize=None)
def _imports_of(path: str, root: str) -> tuple:
    """The files of this package that ``path``'s import statements name (relative ``from .x import
    a, b``, where ``a`` may itself be a module, and absolute ``rodlab.x`` imports)."""
    top = os.path.basename(root)
    here = os.path.relpath(os.path.dirname(path), os.path.dirname(root)).split(os.sep)
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    out = []
    for m in _IMPORT.finditer(text):
        source, names, plain = m.group(1), m.group(2), m.group(3)
        if plain is not None:  # import rodlab.x.y [as z], ...
            for item in plain.split(","):
                dotted = item.strip().split(" ")[0].split(".")
                if dotted and dotted[0] == top:
                    out += _module_file(root, dotted)
            continue
        dots = len(source) - len(source.lstrip("."))
        rest = [p for p in source[dots:].split(".") if p]
        if dots:
            if dots - 1 > len(here) - 1:
                continue
            parts = here[:len(here) - (dots - 1)] + rest
        elif rest and rest[0] == top:
            parts = rest
        else:
            continue
        base = _module_file(root, parts)
        for name in names.strip("()").replace("\n", " ").split(","):
            name = name.strip().split(" ")[0]
            sub = _module_file(root, parts + [name]) if name and name != "*" else []
            out += sub or base  # "from . import batch": the module; "from .x import f": x
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _import_closure(path: str, root: str) -> tuple:
    """``path`` and the files of its package that its compiled code may reach through import
    statements (:func:`_may_reach_compiled_code`), sorted."""
    seen = {path}
    todo = [path]
    top = os.path.join(root, "__init__.py")
    while todo:
        for dep in _imports_of(todo.pop(), root):
            if dep not in seen:
                seen.add(dep)
                if dep != top and _may_reach_compiled_code(dep):
                    todo.append(dep)
    return tuple(sorted(seen))


_NUMBA_MARK = re.compile(r"\b(?:njit|jit|overload|overload_method|intrinsic|vectorize|guvectorize|register_jitable)\b")


@functools.lru_cache(maxsize=None)
def _may_reach_compiled_code(path: str) -> bool:
    """Whether compiled code can reach further files through ``path``: it defines compiled code
    (whose callees are in its imports) or is a subpackage's ``__init__`` (re-exports). A plain
    module is hashed (compiled callers freeze its constants) but its own imports are not followed;
    neither are the package's top ``__init__`` imports (the public API, which no kernel calls)."""
    if os.path.basename(path) == "__init__.py":
        return True
    with open(path, encoding="utf-8", errors="replace") as f:
        return _NUMBA_MARK.search(f.read()) is not None


def closure_stamp(path: str):
    """numba's source stamp of ``path`` (a hash of the file) combined with the hashes of every file
    in its import closure within its package; numba's own stamp for files outside the packages.
    Computed once per file and process (the closure's files are read once each)."""
    path = os.path.abspath(path)
    st = os.stat(path)
    return _closure_stamp(path, st.st_mtime, st.st_size)


@functools.lru_cache(maxsize=None)
def _closure_stamp(path: str, st_mtime: float, st_size: int):
    from numba.core.caching import _hash_source_file

    own = _hash_source_file(path, st_mtime, st_size)
    root = _package_of(path)
    if root is None:
        return own
    h = hashlib.sha256(own)
    for dep in _import_closure(path, root):
        d = os.stat(dep)
        h.update(os.path.relpath(dep, root).encode())
        h.update(_hash_source_file(dep, d.st_mtime, d.st_size))
    return h.digest()


def _install_closure_stamp() -> bool:
    """Make numba's source stamp of this package's files cover their import closure (module
    docstring); idempotent. Returns whether it is in place."""
    try:
        from numba.core.caching import _SourceFileBackedLocatorMixin
    except ImportError:
        return False
    if getattr(_SourceFileBackedLocatorMixin, "_rodlab_closure", False):
        return True
    stamp = _SourceFileBackedLocatorMixin.get_source_stamp

    def get_source_stamp(self):
        path = getattr(self, "_py_file", None)
        if path is None or getattr(sys, "frozen", False) or _package_of(os.path.abspath(path)) is None:
            return stamp(self)
        return closure_stamp(path)

    _SourceFileBackedLocatorMixin.get_source_stamp = get_source_stamp
    _SourceFileBackedLocatorMixin._rodlab_closure = True
    return True


def install() -> bool:
    """Lock numba's cache index while it is read or written and keep the threading layer's
    reloader of cached parallel code (module docstring); idempotent. Returns whether the lock is
    in place (False where ``fcntl`` or numba's cache class is missing)."""
    _install_reload_init()
    _install_closure_stamp()
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
