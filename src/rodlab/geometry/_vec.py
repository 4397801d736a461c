"""Shared numba options of every compiled kernel (the one definition; import, do not redefine).

``error_model="numpy"`` lets LLVM vectorise loops that divide (the default "python" model's
zero-division checks block it); ``cache=True`` keeps compiled kernels across processes.

* :data:`JIT` - the default: strict IEEE arithmetic.
* :data:`JIT_FM` - ``fastmath`` reassociation, FMA contraction and no signed zeros only, so that dot
  products and sums vectorize (changes the rounding of each sum, never the handling of infinities or
  NaNs): for inner products whose caller's bound logic runs under :data:`JIT`.
* :data:`JIT_FMA` - FMA contraction only (multiply-subtract chains in substitutions).

Use ``@njit(**JIT)`` or ``@njit(parallel=True, **JIT)``; ``fastmath`` is part of each dict, so pick
the dict rather than passing ``fastmath=`` again.
"""
FASTMATH_REASSOC = frozenset({"reassoc", "contract", "nsz"})

JIT = dict(cache=True, error_model="numpy", fastmath=False)
JIT_FM = dict(JIT, fastmath=set(FASTMATH_REASSOC))
JIT_FMA = dict(JIT, fastmath={"contract"})
