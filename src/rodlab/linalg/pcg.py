"""Preconditioned conjugate gradients for a symmetric positive-definite operator given as functions.

A plain reference implementation (NumPy, callables); the compact rod method has its own compiled
PCG over its O(n) operator (rodlab.compact.pcg). Stops when ``|r|_2 <= max(atol, rtol |b|_2)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class PCGResult:
    x: np.ndarray
    success: bool
    iterations: int
    residual: float
    message: str


def pcg(matvec: Callable[[np.ndarray], np.ndarray], b: np.ndarray, *, precond: Callable | None = None,
        x0: np.ndarray | None = None, rtol: float = 1e-10, atol: float = 0.0, maxiter: int | None = None) -> PCGResult:
    """Solve ``A x = b`` by PCG; ``precond(r)`` applies ``P^{-1}`` (identity if None)."""
    b = np.asarray(b, dtype=float)
    x = np.zeros_like(b) if x0 is None else np.array(x0, dtype=float)
    maxiter = 10 * b.size if maxiter is None else int(maxiter)
    if maxiter < 0:
        raise ValueError(f"maxiter must be >= 0 (got {maxiter})")
    r = b - matvec(x) if x0 is not None else b.copy()
    stop = max(atol, rtol * float(np.linalg.norm(b)))
    rn = float(np.linalg.norm(r))
    if rn <= stop:
        return PCGResult(x, True, 0, rn, "converged")
    z = precond(r) if precond is not None else r.copy()
    d = z.copy()
    rz = float(r @ z)
    for it in range(1, maxiter + 1):
        Ad = matvec(d)
        dAd = float(d @ Ad)
        if not dAd > 0:
            return PCGResult(x, False, it, rn, f"operator not positive definite (d^T A d = {dAd:.3e})")
        alpha = rz / dAd
        x += alpha * d
        r -= alpha * Ad
        rn = float(np.linalg.norm(r))
        if rn <= stop:
            return PCGResult(x, True, it, rn, "converged")
        z = precond(r) if precond is not None else r
        rz_new = float(r @ z)
        d = z + (rz_new / rz) * d
        rz = rz_new
    return PCGResult(x, False, maxiter, rn, f"no convergence in {maxiter} iterations (residual {rn:.3e}, target {stop:.3e})")
