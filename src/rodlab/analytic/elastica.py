"""Planar large-deflection cantilever: the inextensible, unshearable Euler elastica.

Setting (SI units). The rod occupies arc length ``s in [0, L]``; it is clamped at the origin with
its tangent along +x; gravity acts along -z with weight ``w`` per unit length [N/m]; an optional
dead tip force ``P = (P_x, P_z)`` [N] acts at ``s = L``; the bending stiffness is ``EI`` [N m^2].
``theta(s)`` is the angle of the tangent ``t = (cos theta, sin theta)`` measured from +x towards +z
(so a sagging rod has ``theta < 0``).

Equations (Kirchhoff rod, planar, inextensible, unshearable; see e.g. Antman, *Nonlinear Problems
of Elasticity*, ch. 4). With ``n(s)`` the force the part ``(s, L]`` exerts on ``[0, s]`` and
``m(s) = EI theta'(s)`` the bending moment:

    n' + f = 0,  f = (0, -w)          =>  n(s) = (P_x, P_z - w (L - s))
    m' + t x n = 0  (2D cross product a x b = a_x b_z - a_z b_x)
    => EI theta'' = n_x sin theta - n_z cos theta
    x' = cos theta,  z' = sin theta
    theta(0) = 0,  x(0) = z(0) = 0,  theta'(L) = 0  (free, moment-free tip)

It is solved in dimensionless form (``sigma = s/L``, ``q = w L^3/EI``, ``p = P L^2/EI``) with
:func:`scipy.integrate.solve_bvp`, by continuation in the load factor starting from the linear
(small-deflection) solution ``theta = -q/6 (1 - (1-sigma)^3) + p_z (sigma - sigma^2/2)``:
intermediate load levels at collocation tolerance 1e-3 (they only provide the next guess), the
full load at 1e-8 (relative residual). Measured against a multiple-shooting solution with DOP853
at rtol 1e-13 the tip is then accurate to <= 1e-11 L for q = 0.04 ... 1300 (docs/validation.md);
tests/test_analytic_elastica.py checks it against an independent single-shooting solution.

Limit: the continuation scales all loads together, so a compressive tip force above the Euler load
``pi^2 EI/(4 L^2)`` (with at most a small lateral component) stays on the straight or near-straight
(unstable) branch instead of the buckled one. Gravity-dominated loads, the validation range, are
unaffected.
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_bvp

log = logging.getLogger(__name__)

_BVP_TOL = 1e-8  # final collocation tolerance: tip error <~ 1e-11 L (measured against multiple shooting)
_BC_TOL = 1e-12
_CONT_TOL = 1e-3  # intermediate continuation steps only need a good starting guess


class ElasticaError(RuntimeError):
    """The elastica boundary-value problem did not converge (the message says where and why)."""


@dataclass(frozen=True)
class ElasticaSolution:
    """Result of :func:`solve_cantilever_elastica` (dimensional: metres, radians).

    ``sol`` is the dimensionless :class:`scipy.integrate._bvp.BVPResult`-style callable
    ``sol(sigma) -> [theta, theta' L, x/L, z/L]`` on ``sigma = s/L in [0, 1]``.
    """

    length: float
    EI: float
    w: float
    tip_force: tuple[float, float]
    tip: np.ndarray  # [tip_x, tip_z] [m]
    root_moment: float  # EI theta'(0) [N m]
    success: bool
    message: str
    continuation_steps: int
    bvp_iterations: int
    nodes: int
    max_residual: float
    sol: object

    def shape(self, n: int = 200) -> dict:
        sigma = np.linspace(0.0, 1.0, int(n))
        y = self.sol(sigma)
        return {
            "s": sigma * self.length,
            "x": y[2] * self.length,
            "z": y[3] * self.length,
            "theta": y[0].copy(),
        }


def _check_inputs(length, EI, w, tip_force) -> tuple[float, float, float, tuple[float, float]]:
    length = float(length)
    EI = float(EI)
    w = float(w)
    if not (math.isfinite(length) and length > 0):
        raise ValueError(f"length must be a finite number > 0 m (got {length})")
    if not (math.isfinite(EI) and EI > 0):
        raise ValueError(f"EI must be a finite number > 0 N m^2 (got {EI})")
    if not math.isfinite(w):
        raise ValueError(f"w must be a finite weight per length [N/m] (got {w})")
    tf = tuple(float(v) for v in np.asarray(tip_force, dtype=float).ravel())
    if len(tf) != 2 or not all(math.isfinite(v) for v in tf):
        raise ValueError(f"tip_force must be two finite numbers (P_x, P_z) [N] (got {tip_force!r})")
    return length, EI, w, tf


def _rhs_factory(q: float, px: float, pz: float):
    def rhs(sigma, y):
        theta, kappa = y[0], y[1]
        nx = px
        nz = pz - q * (1.0 - sigma)
        c = np.cos(theta)
        s = np.sin(theta)
        return np.vstack((kappa, nx * s - nz * c, c, s))

    return rhs


def _bc(ya, yb):
    return np.array([ya[0], ya[2], ya[3], yb[1]])


def _linear_guess(sigma: np.ndarray, q: float, pz: float) -> np.ndarray:
    """Small-deflection solution (theta linear in the load) and its integrated positions."""
    u = 1.0 - sigma
    theta = -q / 6.0 * (1.0 - u**3) + pz * (sigma - 0.5 * sigma**2)
    kappa = -0.5 * q * u**2 + pz * u
    # positions to first order: x = sigma, z = integral of theta
    z = -q / 6.0 * (sigma - (1.0 - u**4) / 4.0) + pz * (0.5 * sigma**2 - sigma**3 / 6.0)
    return np.vstack((theta, kappa, sigma.copy(), z))


def _solve_dimensionless(q: float, px: float, pz: float):
    """Continuation in the load factor lambda in (0, 1] applied to (q, px, pz)."""
    load = max(abs(q), abs(px), abs(pz))
    sigma = np.linspace(0.0, 1.0, 41)
    if load == 0.0:
        y = np.vstack((np.zeros_like(sigma), np.zeros_like(sigma), sigma, np.zeros_like(sigma)))
        res = solve_bvp(_rhs_factory(0.0, 0.0, 0.0), _bc, sigma, y, tol=_BVP_TOL, bc_tol=_BC_TOL)
        return res, 1, res.niter
    # first load level: small enough that the linear solution is an excellent guess
    lam = min(1.0, 0.2 / load)
    step = 2.0
    guess_x, guess_y = sigma, _linear_guess(sigma, lam * q, lam * pz)
    steps = 0
    iters = 0
    last = None
    while True:
        res = solve_bvp(_rhs_factory(lam * q, lam * px, lam * pz), _bc, guess_x, guess_y,
                        tol=_CONT_TOL if lam < 1.0 else _BVP_TOL, bc_tol=1e-8 if lam < 1.0 else _BC_TOL,
                        max_nodes=200000)
        steps += 1
        iters += res.niter
        if res.success:
            last = (lam, res)
            if lam >= 1.0:
                return res, steps, iters
            guess_x, guess_y = res.x, res.y
            step = min(step * 1.25, 3.0)
            lam = min(1.0, lam * step)
        else:
            if last is None:
                raise ElasticaError(f"elastica: first continuation step failed at load factor {lam:.3g}: {res.message}")
            step = 1.0 + 0.5 * (step - 1.0)
            if step < 1.0 + 1e-4:
                raise ElasticaError(
                    f"elastica: continuation stalled at load factor {last[0]:.6g} of 1 "
                    f"(q = w L^3/EI = {q:.6g}, P L^2/EI = ({px:.6g}, {pz:.6g})) after {steps} steps: {res.message}")
            lam = min(1.0, last[0] * step)
            guess_x, guess_y = last[1].x, last[1].y
        if steps > 500:
            raise ElasticaError(f"elastica: continuation did not reach the full load in 500 steps (at {last[0]:.6g})")


@functools.lru_cache(maxsize=256)
def _solve_cached(length: float, EI: float, w: float, tip_force: tuple[float, float]) -> ElasticaSolution:
    q = w * length**3 / EI
    px = tip_force[0] * length**2 / EI
    pz = tip_force[1] * length**2 / EI
    res, steps, iters = _solve_dimensionless(q, px, pz)
    resid = float(np.max(res.rms_residuals)) if res.rms_residuals.size else 0.0
    tip = np.array([res.y[2, -1], res.y[3, -1]]) * length
    sol = ElasticaSolution(
        length=length, EI=EI, w=w, tip_force=tip_force, tip=tip, root_moment=float(res.y[1, 0] * EI / length),
        success=bool(res.success), message=str(res.message), continuation_steps=steps, bvp_iterations=iters,
        nodes=int(res.x.size), max_residual=resid, sol=res.sol,
    )
    log.debug("elastica q=%.4g p=(%.4g, %.4g): %d continuation steps, %d nodes, residual %.2g",
              q, px, pz, steps, sol.nodes, resid)
    return sol


def solve_cantilever_elastica(length: float, EI: float, w: float, tip_force=(0.0, 0.0)) -> ElasticaSolution:
    """Solve the planar cantilever elastica (see the module docstring); results are cached.

    Raises :class:`ElasticaError` when the continuation cannot reach the full load.
    """
    return _solve_cached(*_check_inputs(length, EI, w, tip_force))


def cantilever_elastica_tip(length: float, EI: float, w: float, tip_force=(0.0, 0.0)) -> np.ndarray:
    """Tip position ``[tip_x, tip_z]`` [m] of a cantilever clamped at the origin along +x.

    ``EI`` [N m^2] bending stiffness, ``w`` [N/m] weight per length (gravity along -z),
    ``tip_force`` ``(P_x, P_z)`` [N] a dead load at the tip. Accurate to about 1e-10 L.
    """
    return solve_cantilever_elastica(length, EI, w, tip_force).tip.copy()


def cantilever_elastica_shape(length: float, EI: float, w: float, tip_force=(0.0, 0.0), n: int = 200) -> dict:
    """Equilibrium shape sampled at ``n`` equally spaced arc lengths.

    Returns ``{"s", "x", "z", "theta"}`` (arrays of length ``n``; metres and radians).
    """
    if int(n) < 2:
        raise ValueError(f"n must be an integer >= 2 (got {n})")
    return solve_cantilever_elastica(length, EI, w, tip_force).shape(n)


def small_deflection_tip(length: float, EI: float, w: float, tip_force=(0.0, 0.0)) -> np.ndarray:
    """Linear (Euler-Bernoulli) tip position: ``z = -w L^4/(8 EI) + P_z L^3/(3 EI)``, ``x = L``."""
    length, EI, w, tf = _check_inputs(length, EI, w, tip_force)
    return np.array([length, -w * length**4 / (8.0 * EI) + tf[1] * length**3 / (3.0 * EI)])
