"""Shared numba options of every compiled kernel (the one definition; import, do not redefine).

``error_model="numpy"`` lets LLVM vectorise loops that divide (the default "python" model's
zero-division checks block it); ``cache=True`` keeps compiled kernels across processes.

* :data:`JIT` - the default: strict IEEE arithmetic.
* :data:`JIT_FM` - ``fastmath`` reassociation, FMA contraction and no signed zeros only, so that dot
  products and sums vectorize (changes the rounding of each sum, never the handling of infinities or
  NaNs): for inner products whose caller's bound logic runs under :data:`JIT`.
* :data:`JIT_FMA` - FMA contraction only (multiply-subtract chains in substitutions).
* :data:`JIT_INNER` - :data:`JIT` without the Python and C wrappers: kernels called only from
  compiled code (less to compile; never call one from Python, see :func:`python_entry`).

Use ``@njit(**JIT)`` or ``@njit(parallel=True, **JIT)``; ``fastmath`` is part of each dict, so pick
the dict rather than passing ``fastmath=`` again. To compile one Python function twice with
different options (in parallel and on one thread), use :func:`njit_as`, never ``njit(...)(f)`` twice.
"""
import types

from numba import njit
FASTMATH_REASSOC = frozenset({"reassoc", "contract", "nsz"})

JIT = dict(cache=True, error_model="numpy", fastmath=False)
JIT_FM = dict(JIT, fastmath=set(FASTMATH_REASSOC))
JIT_FMA = dict(JIT, fastmath={"contract"})

# Kernels called only from other compiled code: no CPython and no C wrapper. Each wrapper is
# generated, optimized and compiled to machine code with its kernel (the CPython one unboxes every
# argument), and nothing in a compiled call tree uses them. A Python call of such a kernel crashes
# the interpreter (numba 0.68): give it a private name, and Python callers :func:`python_entry`.
JIT_INNER = dict(JIT, no_cpython_wrapper=True, no_cfunc_wrapper=True)
JIT_FM_INNER = dict(JIT_FM, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # reductions LLVM may vectorise


def njit_as(name: str, fn, **options):
    """``njit(**options)`` of a copy of ``fn`` named ``name``: one of several compilations of one
    Python function with different options (``parallel=True`` and not, say).

    numba's on-disk cache files a function's machine code under its module, qualified name and
    first line, keyed by signature, CPU and bytecode hash, but not by the options: two
    ``njit(...)(f)`` of one ``f`` share one cache entry, and every later process loads whichever
    compilation was written last into both dispatchers (a "parallel" driver then runs the serial
    code on one thread, or a serial one launches the thread pool on every call). Measured on the
    der-implicit many-strands batch (issue #13): 1 -> 2 threads gave no speed-up. The copy's own
    qualified name gives each compilation its own cache entry."""
    clone = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    clone.__qualname__ = name
    clone.__module__ = fn.__module__
    clone.__doc__ = fn.__doc__
    clone.__kwdefaults__ = fn.__kwdefaults__
    return njit(**options)(clone)


def python_entry(kernel, name: str):
    """The Python-callable compilation of ``kernel`` (a :data:`JIT_INNER` dispatcher), named
    ``name``: the same function with its CPython wrapper (``njit(**JIT)`` of a copy, so that both
    have their own cache entries; :func:`njit_as`). It calls the same inner kernels, so a Python
    call compiles only the wrapper's level again, and nothing until then."""
    return njit_as(name, kernel.py_func, **JIT)
