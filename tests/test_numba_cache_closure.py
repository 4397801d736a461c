"""numba's on-disk cache keyed by the import closure (rodlab._numba_cache, "third flaw"): a cached
caller compiled over a callee in another file must compile again when that file changes, and load
from the cache when nothing changed."""
import os
import subprocess
import sys
import textwrap

import pytest

from rodlab import _numba_cache as C

CALLER = """
from numba import njit
from .callee import g, OFFSET


@njit(cache=True)
def f(x):
    return g(x) + OFFSET
"""
CALLEE = """
from numba import njit

OFFSET = {offset}


@njit
def g(x):
    return {factor} * x
"""
RUN = """
import sys
sys.path.insert(0, {parent!r})
from rodlab import _numba_cache as C
C._PACKAGE_ROOTS.append({root!r})
from pkgx.caller import f
print(f(3), f.stats.cache_hits.get(f.signatures[0], 0) if f.signatures else -1)
"""


def _package(tmp_path, factor, offset):
    root = tmp_path / "pkgx"
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    (root / "caller.py").write_text(CALLER)
    callee = root / "callee.py"
    callee.write_text(CALLEE.format(factor=factor, offset=offset))
    st = callee.stat()  # a later edit must not share the file's time stamp
    os.utime(callee, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9 * factor * (offset + 1)))
    return root


def _run(tmp_path, root):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", RUN.format(parent=str(tmp_path), root=str(root))], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    value, hits = out.stdout.split()
    return int(value), int(hits)


def test_a_callee_edit_in_another_file_recompiles_the_cached_caller(tmp_path):
    root = _package(tmp_path, 2, 1)
    assert _run(tmp_path, root) == (7, 0)  # compiled and saved
    assert _run(tmp_path, root) == (7, 1)  # loaded from the cache
    _package(tmp_path, 5, 1)  # the callee's body changes, the caller's file does not
    assert _run(tmp_path, root) == (16, 0)
    _package(tmp_path, 5, 4)  # a constant the caller froze into its code
    assert _run(tmp_path, root) == (19, 0)
    assert _run(tmp_path, root) == (19, 1)


def test_closure_follows_relative_and_module_imports(tmp_path):
    root = tmp_path / "pkgy"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from .plain import X\n")
    (root / "sub" / "__init__.py").write_text("from .deep import h\n")
    (root / "sub" / "deep.py").write_text("from numba import njit\nfrom ..consts import K\n\n@njit\ndef h():\n    return K\n")
    (root / "consts.py").write_text("from .plain import X\nK = 3\n")
    (root / "plain.py").write_text("X = 1\n")
    (root / "a.py").write_text(textwrap.dedent("""
        from numba import njit
        from . import consts
        from .sub import (
            h,
        )

        @njit
        def f():
            return h() + consts.K
        """))
    C._PACKAGE_ROOTS.append(str(root))
    try:
        closure = {os.path.relpath(p, root) for p in C._import_closure(str(root / "a.py"), str(root))}
        s1 = C.closure_stamp(str(root / "a.py"))
        C._closure_stamp.cache_clear()
        (root / "consts.py").write_text("from .plain import X\nK = 4\n")
        s2 = C.closure_stamp(str(root / "a.py"))
    finally:
        C._PACKAGE_ROOTS.remove(str(root))
    # consts.py has no compiled code: hashed, its own imports (plain.py) not followed; the top
    # __init__ is not reached (no kernel calls the public API)
    assert closure == {"a.py", "consts.py", os.path.join("sub", "__init__.py"), os.path.join("sub", "deep.py")}
    assert s1 != s2


def test_files_outside_the_packages_keep_numbas_stamp(tmp_path):
    from numba.core.caching import _hash_source_file

    f = tmp_path / "m.py"
    f.write_text("x = 1\n")
    st = f.stat()
    assert C.closure_stamp(str(f)) == _hash_source_file(str(f.resolve()), st.st_mtime, st.st_size)


@pytest.mark.parametrize("name", ["der/contact_loop.py", "der/batch.py"])
def test_rodlab_kernels_closure_holds_their_callees(name):
    root = C._PACKAGE_ROOTS[0]
    closure = {os.path.relpath(p, root) for p in C._import_closure(os.path.join(root, name), root)}
    assert {"der/projection.py", "der/kernels.py", "geometry/_vec.py"} <= closure
    assert "__init__.py" not in closure and "scenes/registry.py" not in closure
