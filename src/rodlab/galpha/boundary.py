"""Boundary conditions of the generalized-alpha rod, through one interface (GA paper, Sec. 3.4.1).

Six conditions at each end. At s = 0 the root is *kinematic*: its world velocity ``v(t)`` [m/s]
and angular velocity ``w(t)`` [rad/s] are prescribed (``u(0) = R0^T v``, ``omega(0) = R0^T w``,
the paper's ``F_u(t), F_omega(t)``); the root pose is integrated from them. At s = L the tip is
either

* ``TipLoad`` (natural): world force ``F(t)`` [N] and torque ``T(t)`` [N m] at the end,
  ``n(L) = R_L^T F`` and ``kappa(L) = kappa_hat(L) + K^-1 R_L^T T`` (free end: zero loads), or
* ``TipMotion`` (kinematic): world velocity and angular velocity of the end (the buckling case's
  moving end), or :func:`line_constraint` (the tress case, Sec. 5 item 6: the end slides along a
  world line ``a`` at speed ``lam``: ``u(L) = lam R_L^T a``, ``omega(L) = 0``).

``Boundary.tip`` may also be a function of time returning one of these (switching, e.g. "pulled
until t1, then free"). Loads and velocities given in world coordinates are converted with the
current end frame, lagged by one Newton iterate as in Algorithm 1 (lines 16-18).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union

import numpy as np

Vec = Union[np.ndarray, tuple, Callable[[float], np.ndarray]]


def _eval(v, t: float) -> np.ndarray:
    a = np.asarray(v(t) if callable(v) else v, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"boundary value must be a finite 3-vector (got {a!r} at t={t})")
    return a


@dataclass(frozen=True)
class RootMotion:
    """Kinematic root at s = 0: world velocity and angular velocity (constants or functions of t)."""

    velocity: Vec = (0.0, 0.0, 0.0)
    angular_velocity: Vec = (0.0, 0.0, 0.0)

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        return _eval(self.velocity, t), _eval(self.angular_velocity, t)


@dataclass(frozen=True)
class TipLoad:
    """Natural tip: world force [N] and torque [N m] at s = L (zero: free end)."""

    force: Vec = (0.0, 0.0, 0.0)
    torque: Vec = (0.0, 0.0, 0.0)
    KIND = 1

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        return _eval(self.force, t), _eval(self.torque, t)


@dataclass(frozen=True)
class TipMotion:
    """Kinematic tip: world velocity [m/s] and angular velocity [rad/s] of the end at s = L."""

    velocity: Vec = (0.0, 0.0, 0.0)
    angular_velocity: Vec = (0.0, 0.0, 0.0)
    KIND = 0

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        return _eval(self.velocity, t), _eval(self.angular_velocity, t)


def line_constraint(direction, speed: float) -> TipMotion:
    """End point moving along the world line ``direction`` at ``speed`` [m/s], frame not rotating
    (GA paper, Sec. 5 item 6: ``{v, omega} = {lam d_k3, 0}``)."""
    a = np.asarray(direction, dtype=float)
    a = a / np.linalg.norm(a)
    return TipMotion(velocity=speed * a, angular_velocity=(0.0, 0.0, 0.0))


@dataclass(frozen=True)
class Boundary:
    """Both ends. ``tip`` is a :class:`TipLoad` / :class:`TipMotion` or ``t -> either``."""

    root: RootMotion = field(default_factory=RootMotion)
    tip: object = field(default_factory=TipLoad)

    def tip_at(self, t: float):
        tip = self.tip(t) if callable(self.tip) and not isinstance(self.tip, (TipLoad, TipMotion)) else self.tip
        if not isinstance(tip, (TipLoad, TipMotion)):
            raise TypeError(f"boundary tip must be TipLoad or TipMotion (got {type(tip).__name__})")
        return tip

    def values(self, t: float) -> tuple[int, np.ndarray]:
        """(tip kind: 1 natural / 0 kinematic, array (4, 3): root v, root w, tip a, tip b)."""
        tip = self.tip_at(t)
        v0, w0 = self.root.at(t)
        a, b = tip.at(t)
        return tip.KIND, np.ascontiguousarray(np.stack([v0, w0, a, b]))


def free_mask(n_nodes: int, tip_kind: int) -> np.ndarray:
    """Boolean (N, 15): which nodal unknowns Newton iterates on (GA paper, Sec. 4.3: the
    reduced state x~ without the boundary values). Root: u, omega, g fixed; tip: kappa, n fixed
    (natural) or u, omega fixed (kinematic)."""
    m = np.ones((n_nodes, 15), dtype=bool)
    m[0, 0:6] = False
    m[0, 12:15] = False
    if tip_kind == 1:
        m[-1, 6:12] = False
    else:
        m[-1, 0:6] = False
    return m


def column_map(mask: np.ndarray) -> tuple[np.ndarray, int, int, int]:
    """Reduced column index of each nodal unknown (-1: boundary value), size, and the band
    (kl, ku) of the segment-block Jacobian (segment s rows 15 s .. 15 s + 14 touch nodes s, s+1)."""
    flat = mask.ravel()
    cm = -np.ones(flat.size, dtype=np.int64)
    cm[flat] = np.arange(int(flat.sum()))
    N = mask.shape[0]
    kl = ku = 0
    for s in range(N - 1):
        cols = cm[s * 15:(s + 2) * 15]
        cols = cols[cols >= 0]
        r0, r1 = 15 * s, 15 * s + 14
        kl = max(kl, r1 - int(cols.min()))
        ku = max(ku, int(cols.max()) - r0)
    return cm, int(flat.sum()), kl, ku
