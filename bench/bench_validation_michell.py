"""Michell's critical twist, numerically (rodlab.analytic.michell_numeric) vs 2 pi sqrt(3) alpha/beta.

    python bench/bench_validation_michell.py [N ...]      # default N = 16 24 32 48
"""
from __future__ import annotations

import math
import sys
import time

from rodlab.analytic.classic import michell_critical_twist
from rodlab.analytic.michell_numeric import critical_twists

if __name__ == "__main__":
    Ns = [int(a) for a in sys.argv[1:]] or [16, 24, 32, 48]
    for alpha, beta, R in ((1.0, 1.0, 1.0), (1.0, 0.5, 2.0)):
        theory = michell_critical_twist(alpha, beta)
        prev = None
        for N in Ns:
            t0 = time.perf_counter()
            th, info = critical_twists(N, alpha, beta, R)
            rich = ""
            if prev is not None:
                ext = (N**2 * th[0] - prev[0] ** 2 * prev[1]) / (N**2 - prev[0] ** 2)
                rich = f"; Richardson (p=2) with N={prev[0]}: {ext:.5f} ({ext / theory - 1:+.2e})"
            print(f"alpha={alpha} beta={beta} R={R} N={N:3d}: critical twist {th[0]:.5f} (theory {theory:.5f}, "
                  f"rel err {th[0] / theory - 1:+.2e}){rich}; next pair {th[2]:.4f} {th[3]:.4f} "
                  f"(n=3 theory {theory * math.sqrt(8 / 3):.4f}); min eig A {info['min_A']:.3g}, "
                  f"|grad Wr| {info['grad_writhe']:.1e}, {time.perf_counter() - t0:.1f} s")
            prev = (N, th[0])
