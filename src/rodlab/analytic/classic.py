"""Classical closed forms for rods (SI units unless stated; stiffnesses EI, alpha, beta in N m^2).

- Euler buckling of a straight column (Euler 1744): ``P_cr = pi^2 EI / (K L)^2``.
- Michell's instability of a twisted ring (Michell 1889; Goriely 2006; Bergou et al. 2008 Sec. 9.1).
- Small-deflection (Euler-Bernoulli) cantilever deflections and slopes.
- Uniform twist of a straight isotropic rod clamped at both ends (Bergou et al. 2008, Eq. 5 / Sec. 6).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: effective-length factors K in ``P_cr = pi^2 EI / (K L)^2``.  clamped-pinned: K = pi / 4.4934...
#: where 4.4934 is the first positive root of tan(x) = x.
EULER_K = {
    "clamped-free": 2.0,
    "pinned-pinned": 1.0,
    "clamped-pinned": math.pi / 4.493409457909064,
    "clamped-clamped": 0.5,
}


def _pos(name: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0 (got {value})")
    return value


def euler_buckling_load(EI: float, length: float, ends: str = "clamped-free") -> float:
    """Critical axial compressive load ``pi^2 EI / (K L)^2`` [N] (K from :data:`EULER_K`).

    ``ends``: "clamped-free" (K = 2), "clamped-clamped" (K = 0.5), "pinned-pinned" (K = 1),
    "clamped-pinned" (K = 0.699).
    """
    EI = _pos("EI", EI)
    length = _pos("length", length)
    if ends not in EULER_K:
        raise ValueError(f"ends={ends!r} not known: expected one of {', '.join(EULER_K)}")
    return math.pi**2 * EI / (EULER_K[ends] * length) ** 2


def beam_column_tip_deflection(EI: float, length: float, axial_compression: float, lateral_tip_load: float) -> float:
    """Linearised tip deflection of a clamped-free column under axial compression ``P`` and a small
    lateral tip load ``Q``: ``Q (tan kL - kL) / (P k)``, ``k = sqrt(P/EI)``; diverges at the Euler
    load ``kL = pi/2``. ``P = 0`` gives ``Q L^3 / (3 EI)``."""
    EI = _pos("EI", EI)
    length = _pos("length", length)
    P = float(axial_compression)
    if P < 0 or not math.isfinite(P):
        raise ValueError(f"axial_compression must be >= 0 N (got {P}); tension is not covered")
    if P == 0:
        return lateral_tip_load * length**3 / (3.0 * EI)
    k = math.sqrt(P / EI)
    if k * length >= math.pi / 2:
        raise ValueError(f"axial_compression={P} is at or above the Euler load {euler_buckling_load(EI, length):.6g} N")
    return lateral_tip_load * (math.tan(k * length) - k * length) / (P * k)


def michell_critical_twist(alpha: float, beta: float) -> float:
    """Critical total twist ``2 pi sqrt(3) alpha / beta`` [rad] of a closed, naturally straight,
    isotropic ring (Michell 1889; Goriely 2006; Bergou et al. 2008 Sec. 9.1, Fig. 8).

    Derivation (docs/validation.md): a ring of radius R carrying total twist Theta has uniform twist
    density ``tau = Theta / (2 pi R)`` and twisting moment ``M = beta tau``. Linearising the
    Kirchhoff equations about the ring, a perturbation with ``n`` waves around the ring is neutral
    when ``(M R / alpha)^2 = n^2 - 1``; n = 0, 1 are rigid motions, so the ring first loses
    stability at n = 2, ``M R / alpha = sqrt(3)``. Then ``Theta_c = 2 pi R M / beta =
    2 pi sqrt(3) alpha / beta``: R cancels, the threshold is independent of the radius.
    """
    return 2.0 * math.pi * math.sqrt(3.0) * _pos("alpha", alpha) / _pos("beta", beta)


def michell_critical_moment(alpha: float, radius: float) -> float:
    """Critical twisting moment ``sqrt(3) alpha / R`` [N m] of Michell's ring."""
    return math.sqrt(3.0) * _pos("alpha", alpha) / _pos("radius", radius)


def cantilever_uniform_load_deflection(x, w: float, length: float, EI: float) -> np.ndarray:
    """Small-deflection downward deflection ``v(x) = w x^2 (6 L^2 - 4 L x + x^2) / (24 EI)`` [m]
    of a cantilever clamped at x = 0 under weight ``w`` per length; ``v(L) = w L^4 / (8 EI)``."""
    length = _pos("length", length)
    EI = _pos("EI", EI)
    x = np.asarray(x, dtype=float)
    return w * x**2 * (6 * length**2 - 4 * length * x + x**2) / (24.0 * EI)


def cantilever_tip_load_deflection(x, P: float, length: float, EI: float) -> np.ndarray:
    """Small-deflection deflection ``v(x) = P x^2 (3 L - x) / (6 EI)`` [m] (in the direction of the
    tip load ``P``); ``v(L) = P L^3 / (3 EI)``."""
    length = _pos("length", length)
    EI = _pos("EI", EI)
    x = np.asarray(x, dtype=float)
    return P * x**2 * (3 * length - x) / (6.0 * EI)


def cantilever_small_deflection_tip(w: float, P: float, length: float, EI: float) -> dict:
    """Tip deflection ``w L^4/(8 EI) + P L^3/(3 EI)`` [m] and tip slope ``w L^3/(6 EI) + P L^2/(2 EI)``
    [rad], both positive in the direction of the loads (superposition, linear theory)."""
    length = _pos("length", length)
    EI = _pos("EI", EI)
    return {
        "deflection": w * length**4 / (8 * EI) + P * length**3 / (3 * EI),
        "slope": w * length**3 / (6 * EI) + P * length**2 / (2 * EI),
    }


@dataclass(frozen=True)
class UniformTwist:
    """Equilibrium of a straight isotropic rod clamped at both ends with material angles
    ``theta_0`` and ``theta_n`` [rad] at the ends (Bergou et al. 2008 Eq. 5 and Sec. 6):
    the twist density ``(theta_n - theta_0)/L`` is uniform, the torque is ``beta`` times it and the
    twisting energy is ``beta (theta_n - theta_0)^2 / (2 L)``."""

    twist_density: float  # [rad/m]
    torque: float  # [N m]
    energy: float  # [J]

    def angle(self, s, theta_0: float = 0.0) -> np.ndarray:
        """Material angle at arc length ``s`` (linear interpolation between the clamps)."""
        return theta_0 + self.twist_density * np.asarray(s, dtype=float)


def uniform_twist(theta_0: float, theta_n: float, length: float, beta: float) -> UniformTwist:
    """Twist density, torque and energy of a clamped straight isotropic rod (see :class:`UniformTwist`)."""
    length = _pos("length", length)
    beta = _pos("beta", beta)
    tau = (float(theta_n) - float(theta_0)) / length
    return UniformTwist(twist_density=tau, torque=beta * tau, energy=0.5 * beta * tau * tau * length)
