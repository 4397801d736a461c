"""Tiny compiled 3-vector helpers shared by the geometry kernels.

Kept inline-able (``inline="always"``) so numba fuses them into the loops that call them;
a hot loop never allocates a temporary 3-vector.
"""
from __future__ import annotations

import math

from numba import njit

JIT = dict(cache=True, error_model="numpy", fastmath=False)


@njit(inline="always", **JIT)
def dot3(a0, a1, a2, b0, b1, b2):
    return a0 * b0 + a1 * b1 + a2 * b2


@njit(inline="always", **JIT)
def cross3(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(inline="always", **JIT)
def norm3(a0, a1, a2):
    return math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
