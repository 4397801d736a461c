"""rodlab._numba_cache: a cached caller of a ``parallel=True`` function keeps numba's threading-layer
reloader (``_reload_parfors``) when it was compiled in a process that loaded the parallel callee
from the cache, and an entry saved without it (by plain numba) still loads and runs.

Without the fix the caller's entry is saved with an empty ``reload_init`` and the next process
that loads it segfaults on the first parallel loop (the crash of ``der.bodies.advance_world``
after the parallel test suite, docs/architecture.md). Each step is a fresh process on a small
module in ``tmp_path``, as the cache only matters across processes."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import rodlab

_MODULE = """
import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def add_one(x):
    for k in prange(x.shape[0]):
        x[k] += 1.0


@njit(cache=True)
def add_one_and_sum(x):
    add_one(x)
    return x.sum()
"""

_DRIVER = """
import glob
import pickle
import sys

if sys.argv[1] == "inspect":  # the reload_init saved in the caller's (single) cache entry
    (path,) = glob.glob("__pycache__/parallel_callee.add_one_and_sum-*.nbc")
    with open(path, "rb") as fh:
        print(" ".join(fn.__name__ for fn in pickle.load(fh)[7]), "END")
    sys.exit(0)
if sys.argv[1] == "rodlab":
    import rodlab  # installs rodlab._numba_cache
import numpy as np
import parallel_callee
print(parallel_callee.add_one_and_sum(np.zeros(64)))
"""


def _run(folder: Path, mode: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_NUM_THREADS"] = "2"
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(Path(rodlab.__file__).parents[1])])
    return subprocess.run([sys.executable, str(folder / "driver.py"), mode],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def _caller_entries(folder: Path) -> list[str]:
    return glob.glob(str(folder / "__pycache__" / "parallel_callee.add_one_and_sum-*"))


def _caller_reload_init(folder: Path) -> list[str]:
    """The names of the ``reload_init`` functions saved in the caller's cache entry."""
    proc = _run(folder, "inspect")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()[:-1]


def _check_ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode} (-11 is a segfault): {proc.stderr[-2000:]}"
    assert float(proc.stdout.split()[-1]) == 64.0


def test_caller_compiled_over_a_cached_parallel_callee_loads_and_runs(tmp_path):
    (tmp_path / "parallel_callee.py").write_text(textwrap.dedent(_MODULE))
    (tmp_path / "driver.py").write_text(textwrap.dedent(_DRIVER))
    _check_ok(_run(tmp_path, "rodlab"))  # compiles and saves callee and caller
    for path in _caller_entries(tmp_path):  # the caller alone is compiled again, over the cached callee
        os.remove(path)
    _check_ok(_run(tmp_path, "rodlab"))
    assert "_reload_parfors" in _caller_reload_init(tmp_path)  # the fix: the saved caller keeps the reloader
    _check_ok(_run(tmp_path, "rodlab"))  # a process loading the caller from the cache

    # an entry written by plain numba lacks the reloader; rodlab adds it when loading
    for path in _caller_entries(tmp_path):
        os.remove(path)
    _check_ok(_run(tmp_path, "numba"))
    if "_reload_parfors" not in _caller_reload_init(tmp_path):  # numba's flaw (0.68)
        _check_ok(_run(tmp_path, "rodlab"))
