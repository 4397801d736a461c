"""Localized helical buckling of a clamped, twisted, naturally straight isotropic rod.

Reference for Bergou et al. 2008, Sec. 9.1 / Fig. 7, after van der Heijden & Thompson 2000
("Helical and localised buckling in twisted rods: a unified analysis of the symmetric case",
Nonlinear Dynamics 21). Units: any consistent set (the paper's are "units"); lengths in the units of
``L``, stiffnesses ``alpha`` (bending) and ``beta`` (twisting) in force x length^2.

Theory (derived in docs/validation.md). A long isotropic Kirchhoff rod under axial tension ``T`` and
twisting moment ``M`` (equal axial and twist components, as at the straight far field) has the first
integral, with ``phi`` the angle between the tangent and the clamp axis ``e_x``::

    alpha/2 phi'^2 = (1 - cos phi) (T - M^2 / (2 alpha (1 + cos phi)))

whose solution homoclinic to the straight state is::

    f(phi) = (cos phi - cos phi0) / (1 - cos phi0) = tanh^2(s / s*)
    cos phi0 = M^2 / (2 alpha T) - 1,    1/s* = sqrt(T (1 - cos phi0) / (2 alpha))
                                            = (M / (2 alpha)) sqrt((1 - cos phi0) / (1 + cos phi0))

The last form is the paper's ``s/s* = (beta m / (2 alpha)) sqrt(...) s`` with its ``m`` read as
the *twist density* ``M / beta`` (twist angle per length). Integrating over the pattern gives the
end shortening ``D = int (1 - cos phi) ds = 2 s* (1 - cos phi0)`` and (Fuller's formula) the writhe
``2 pi Wr = 4 acos(sqrt((1 + cos phi0)/2))``; the clamp rotation is twist plus writhe,
``2 pi N = M L / beta + 2 pi Wr``. In the dimensionless variables used by the paper's source,

    m = M L / alpha  (moment scaled by alpha / L),   t = T L^2 / alpha  (tension scaled by alpha / L^2),
    d = D / L        (lengths scaled by the rod length L), gamma = beta / alpha,

these read ``d = sqrt(16/t (1 - m^2/(4t)))``, ``2 pi N = m/gamma + 4 acos(m / (2 sqrt t))`` and
``cos phi0 = m^2/(2t) - 1``. With ``mu = m / (2 sqrt t) = cos(phi0/2)`` they reduce to one equation
``2 pi N = 8 mu sqrt(1 - mu^2) / (d gamma) + 4 acos(mu)``, solved by brentq on the branch
``mu in [1/sqrt 2, 1)`` (``phi0 <= pi/2``), the one connected to the straight rod (``phi0 -> 0``
as ``D -> 0``). The theory is for an infinitely long rod: it applies when ``s* << L``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq


@dataclass(frozen=True)
class HelicalBucklingTheory:
    """Solution of the localized-buckling equations (see the module docstring).

    Dimensionless: ``m = M L/alpha``, ``t = T L^2/alpha``, ``mu = m/(2 sqrt t) = cos(phi0/2)``.
    Dimensional (units of the inputs): ``moment`` M, ``tension`` T, ``twist_density`` M/beta,
    ``s_star`` [length] the envelope's length scale, ``phi0`` [rad] the maximal deviation.
    """

    L: float
    alpha: float
    beta: float
    turns: float
    shortening: float
    m: float
    t: float
    mu: float
    phi0: float
    s_star: float
    moment: float
    tension: float
    twist_density: float
    writhe: float
    residual: float
    localized: bool
    success: bool
    message: str


def _positive(name: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0 (got {value})")
    return value


def helical_buckling_theory(L: float, alpha: float, beta: float, turns: float, shortening: float) -> HelicalBucklingTheory:
    """Solve for the twisting moment and tension of the localized helical buckling pattern.

    ``L`` rod length, ``alpha`` bending and ``beta`` twisting stiffness, ``turns`` the number N of
    full turns of one clamp relative to the other, ``shortening`` the end shortening D (absolute,
    same length unit as L). Bergou et al. 2008 Fig. 7: L = 9.29, alpha = 1.345, beta = 0.789,
    N = 27, D = 0.3 give phi0 = 0.919.

    Raises ``ValueError`` when no solution exists on the branch connected to the straight rod
    (too many turns for the requested shortening: ``2 pi N > 4/(d gamma) + pi``). ``localized`` in
    the result says whether ``s* < L/10``, i.e. whether the infinite-rod theory is meaningful.
    """
    L = _positive("L", L)
    alpha = _positive("alpha", alpha)
    beta = _positive("beta", beta)
    turns = _positive("turns", turns)
    shortening = _positive("shortening", shortening)
    if shortening >= L:
        raise ValueError(f"shortening must be < L = {L} (got {shortening})")
    gamma = beta / alpha
    d = shortening / L
    target = 2.0 * math.pi * turns

    def g(mu: float) -> float:
        return 8.0 * mu * math.sqrt(max(1.0 - mu * mu, 0.0)) / (d * gamma) + 4.0 * math.acos(min(mu, 1.0)) - target

    lo = 1.0 / math.sqrt(2.0)
    if g(lo) < 0.0:
        raise ValueError(
            f"no localized helical solution: turns={turns} too large for shortening={shortening} "
            f"(needs 2 pi N <= 4/(d gamma) + pi = {4.0 / (d * gamma) + math.pi:.6g} rad, got {target:.6g})")
    mu = brentq(g, lo, 1.0, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    sqrt_t = 4.0 * math.sqrt(1.0 - mu * mu) / d
    t = sqrt_t**2
    m = 2.0 * mu * sqrt_t
    cos_phi0 = m * m / (2.0 * t) - 1.0
    phi0 = math.acos(cos_phi0)
    # residuals of the two published equations
    r1 = math.sqrt(16.0 / t * (1.0 - m * m / (4.0 * t))) - d
    r2 = m / gamma + 4.0 * math.acos(m / (2.0 * sqrt_t)) - target
    moment = m * alpha / L
    tension = t * alpha / L**2
    s_star = 1.0 / ((m / (2.0 * L)) * math.sqrt((1.0 - cos_phi0) / (1.0 + cos_phi0)))
    residual = max(abs(r1) / d, abs(r2) / target)
    return HelicalBucklingTheory(
        L=L, alpha=alpha, beta=beta, turns=turns, shortening=shortening, m=m, t=t, mu=mu, phi0=phi0,
        s_star=s_star, moment=moment, tension=tension, twist_density=moment / beta,
        writhe=4.0 * math.acos(mu) / (2.0 * math.pi), residual=residual, localized=s_star < 0.1 * L, success=residual < 1e-10,
        message="ok" if residual < 1e-10 else f"residual {residual:.3g}",
    )


def helical_envelope(s, theory: HelicalBucklingTheory) -> np.ndarray:
    """Theoretical envelope ``f = tanh^2(s/s*)`` at arc lengths ``s`` (length units) from the centre."""
    return np.tanh(np.asarray(s, dtype=float) / theory.s_star) ** 2


def helical_phi(s, theory: HelicalBucklingTheory) -> np.ndarray:
    """Theoretical deviation ``phi(s) = acos(cos phi0 + (1 - cos phi0) tanh^2(s/s*))`` [rad]."""
    c0 = math.cos(theory.phi0)
    return np.arccos(np.clip(c0 + (1.0 - c0) * helical_envelope(s, theory), -1.0, 1.0))


def envelope_f(phi, phi0: float) -> np.ndarray:
    """``f(phi) = (cos phi - cos phi0) / (1 - cos phi0)`` (Bergou et al. 2008, Sec. 9.1)."""
    c0 = math.cos(float(phi0))
    return (np.cos(np.asarray(phi, dtype=float)) - c0) / (1.0 - c0)


def envelope_from_centerline(x, axis=(1.0, 0.0, 0.0), phi0: float | None = None) -> dict:
    """Envelope of a computed centerline ``x`` (n, 3) about the clamp axis.

    Tangents are taken per edge and sampled at edge midpoints (arc length from the first vertex).
    ``phi = acos(t . e_axis)``; the centre ``s = 0`` is the maximum of ``phi``, located to sub-edge
    accuracy by a parabola through the largest sample and its neighbours. ``axis`` is oriented along
    the rod (its sign is flipped if the rod runs the other way). ``f`` uses ``phi0`` if given, else
    the measured maximum.

    Returns ``{"s", "phi", "f", "phi_max", "s_center"}`` (s measured from the centre, length units).
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < 3:
        raise ValueError(f"x must be an (n, 3) array of vertex positions with n >= 3 (got shape {x.shape})")
    a = np.asarray(axis, dtype=float).ravel()
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) == 0:
        raise ValueError(f"axis must be a nonzero 3-vector (got {axis!r})")
    a = a / np.linalg.norm(a)
    e = np.diff(x, axis=0)
    le = np.linalg.norm(e, axis=1)
    if np.any(le <= 0):
        raise ValueError("x has coincident consecutive vertices (zero-length edge)")
    tang = e / le[:, None]
    if np.sum(tang @ a) < 0:
        a = -a
    phi = np.arccos(np.clip(tang @ a, -1.0, 1.0))
    s_mid = np.concatenate(([0.0], np.cumsum(le)[:-1])) + 0.5 * le
    i = int(np.argmax(phi))
    s_c, phi_max = s_mid[i], phi[i]
    if 0 < i < phi.size - 1:
        # parabola through (s_{i-1}, s_i, s_{i+1}) for the location and value of the maximum
        xs = s_mid[i - 1:i + 2]
        c2, c1, c0 = np.polyfit(xs - xs[1], phi[i - 1:i + 2], 2)
        if c2 < 0:
            ds = -c1 / (2.0 * c2)
            if abs(ds) <= max(xs[2] - xs[1], xs[1] - xs[0]):
                s_c = xs[1] + ds
                phi_max = c0 + c1 * ds + c2 * ds * ds
    ref = phi_max if phi0 is None else float(phi0)
    return {"s": s_mid - s_c, "phi": phi, "f": envelope_f(phi, ref), "phi_max": float(phi_max), "s_center": float(s_c)}


def envelope_error(x, axis, theory: HelicalBucklingTheory, window: float = 3.0, phi0: float | None = None) -> float:
    """Largest ``|f(phi(s)) - tanh^2(s/s*)|`` over ``|s| <= window * s*`` (Fig. 7 plots |s/s*| <= 3)."""
    env = envelope_from_centerline(x, axis, phi0=phi0)
    mask = np.abs(env["s"]) <= window * theory.s_star
    if not np.any(mask):
        raise ValueError("no centerline samples within the envelope window")
    return float(np.max(np.abs(env["f"][mask] - helical_envelope(env["s"][mask], theory))))


def theoretical_centerline(theory: HelicalBucklingTheory, n: int = 2001, half_width: float | None = None) -> np.ndarray:
    """Centerline (n, 3) of the localized solution over ``|s| <= half_width`` (default 8 s*), axis e_x.

    The azimuth of the tangent turns at ``psi' = M / (alpha (1 + cos phi))`` (moment balance with
    equal axial and twist moments); positions are integrated with the trapezoidal rule on a fine grid.
    Used to test :func:`envelope_from_centerline` and by the validation's plots.
    """
    hw = 8.0 * theory.s_star if half_width is None else float(half_width)
    s = np.linspace(-hw, hw, int(n))
    phi = helical_phi(s, theory)
    dpsi = theory.moment / (theory.alpha * (1.0 + np.cos(phi)))
    psi = np.concatenate(([0.0], np.cumsum(0.5 * (dpsi[1:] + dpsi[:-1]) * np.diff(s))))
    tang = np.stack((np.cos(phi), np.sin(phi) * np.cos(psi), np.sin(phi) * np.sin(psi)), axis=1)
    ds = np.diff(s)[:, None]
    x = np.concatenate((np.zeros((1, 3)), np.cumsum(0.5 * (tang[1:] + tang[:-1]) * ds, axis=0)))
    return x
