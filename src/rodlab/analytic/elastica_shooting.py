"""A second, independent solver for the planar cantilever elastica: single shooting.

Same problem as :mod:`rodlab.analytic.elastica` (clamp at the origin along +x, gravity along -z,
weight ``w`` per length, dead tip force ``(P_x, P_z)``), solved differently: integrate the initial
value problem from the clamp with :func:`scipy.integrate.solve_ivp` (DOP853, rtol 1e-12) for an
unknown root curvature ``k0`` and solve the free-end condition ``theta'(L) = 0`` with brentq.
For large loads the shooting map has several roots (the unstable ones loop upwards), so the stable
branch is followed by continuation in the load factor (30 geometric levels from 1e-3), each level
bracketing the root symmetrically around the previous root scaled with the load. Used only to
cross-check the collocation solver (tests and ``rodlab validate``); accurate to ~1e-10 L for
``w L^3/EI`` up to about 150 (the shooting map's sensitivity grows like exp(2/3 sqrt(w L^3/EI))).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq


def shooting_cantilever_tip(length: float, EI: float, w: float, tip_force=(0.0, 0.0), levels: int = 30) -> np.ndarray:
    """Tip ``[x, z]`` [m] of the cantilever elastica by single shooting (see the module docstring)."""
    px_full, pz_full = float(tip_force[0]), float(tip_force[1])

    def end(k0: float, lam: float) -> np.ndarray:
        px, pz, wl = lam * px_full, lam * pz_full, lam * w

        def rhs(s, y):
            th, k = y[0], y[1]
            nz = pz - wl * (length - s)
            return [k, (px * np.sin(th) - nz * np.cos(th)) / EI, np.cos(th), np.sin(th)]

        return solve_ivp(rhs, (0.0, length), [0.0, k0, 0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-14).y[:, -1]

    k0 = 0.0
    prev = 0.0
    for lam in np.geomspace(1e-3, 1.0, levels):
        if prev:
            guess = k0 * lam / prev
        else:  # linear theory at the first level: EI theta'(0) = -w L^2/2 + P_z L
            guess = lam * (-w * length**2 / 2 + pz_full * length) / EI

        def f(k, lam=lam):
            return end(k, lam)[1]

        d = 0.01 * abs(guess) + 1e-9
        fa, fb = f(guess - d), f(guess + d)
        while fa * fb > 0:
            d *= 1.5
            fa, fb = f(guess - d), f(guess + d)
            if d > 1e6 * (abs(guess) + 1.0):
                raise RuntimeError(f"shooting: no bracket for the root curvature at load factor {lam:.3g}")
        k0 = brentq(f, guess - d, guess + d, xtol=1e-15, rtol=1e-15)
        prev = lam
    return end(k0, 1.0)[2:].copy()
