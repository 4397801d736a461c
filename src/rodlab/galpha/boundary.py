"""Boundary conditions of the generalized-alpha rod, through one interface (GA paper, Sec. 3.4.1).

Six conditions at each end. At s = 0 the root is *kinematic*: its world velocity ``v(t)`` [m/s]
and angular velocity ``w(t)`` [rad/s] are prescribed (``u(0) = R0^T v``, ``omega(0) = R0^T w``,
the paper's ``F_u(t), F_omega(t)``); the root pose is integrated from them. At s = L the tip is
either

* ``TipLoad`` (natural): world force ``F(t)`` [N] and torque ``T(t)`` [N m] at the end,
  ``n(L) = R_L^T F`` and ``kappa(L) = kappa_hat(L) + K^-1 R_L^T T`` (free end: zero loads), or
* ``TipMotion`` (kinematic): world velocity and angular velocity of the end (the buckling case's
  moving end), or :func:`line_constraint` (the tress case, Sec. 5 item 6: the end slides along a
  world line ``a`` at speed ``lam``: ``u(L) = lam R_L^T a``, ``omega(L) = 0``),
* ``TipPin`` (mixed): world velocity of the end point prescribed, end couple given (zero: a pin),
  ``u(L) = R_L^T v``, ``kappa(L) = kappa_hat(L) + K^-1 R_L^T T``; the end turns freely, or
* ``TipSlide`` (mixed): a clamp that slides freely along its own axis d3 under an axial end force
  ``P`` while its turning is prescribed: ``u1(L), u2(L) = (R_L^T v)_1,2`` (across the axis),
  ``omega(L) = R_L^T w``, ``n3(L) = P``.

The root may instead be a pin (:class:`RootPin`): ``u(0) = R0^T v``, ``kappa(0) = kappa_hat(0)``
(no end couple), ``omega(0)`` free; the root frame then turns with it, ``R0^i = R0^{i-1}
cay(dt (omega0^{i-1} + omega0^i)/2)`` (backward Euler ``dt omega0^i`` in the first step), and
``g(0) = R0^T g_world`` is differentiated through it exactly (see ``solver.newton_kernel``).

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
    KIND = 0

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        return _eval(self.velocity, t), _eval(self.angular_velocity, t)


@dataclass(frozen=True)
class RootPin:
    """Pinned root at s = 0: world velocity of the end point (constant or function of t; zero: a
    fixed pin), no end couple, rotation free."""

    velocity: Vec = (0.0, 0.0, 0.0)
    KIND = 1

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        return _eval(self.velocity, t), np.zeros(3)


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


@dataclass(frozen=True)
class TipPin:
    """Mixed tip: world velocity [m/s] of the end point and world couple [N m] at s = L (zero
    velocity and couple: a fixed pin)."""

    velocity: Vec = (0.0, 0.0, 0.0)
    torque: Vec = (0.0, 0.0, 0.0)
    KIND = 2

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        return _eval(self.velocity, t), _eval(self.torque, t)


@dataclass(frozen=True)
class TipSlide:
    """Mixed tip: a clamp free to slide along the end's own axis d3(L) under the axial force
    ``axial_force`` [N] (positive: pulling outward along d3), its velocity across the axis
    (world ``velocity``, only the d1, d2 components are used) and its angular velocity
    (world) prescribed. Meant for a clamp that only turns about the axis, so d3(L) stays on
    the slide line."""

    velocity: Vec = (0.0, 0.0, 0.0)
    angular_velocity: Vec = (0.0, 0.0, 0.0)
    axial_force: Union[float, Callable[[float], float]] = 0.0
    KIND = 3

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        return _eval(self.velocity, t), _eval(self.angular_velocity, t)

    def axial(self, t: float) -> float:
        p = float(self.axial_force(t) if callable(self.axial_force) else self.axial_force)
        if not np.isfinite(p):
            raise ValueError(f"TipSlide.axial_force must be finite (got {p} at t={t})")
        return p


_TIPS = (TipLoad, TipMotion, TipPin, TipSlide)


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
        tip = self.tip(t) if callable(self.tip) and not isinstance(self.tip, _TIPS) else self.tip
        if not isinstance(tip, _TIPS):
            raise TypeError(f"boundary tip must be TipLoad, TipMotion, TipPin or TipSlide (got {type(tip).__name__})")
        return tip

    @property
    def root_kind(self) -> int:
        """0: kinematic root (RootMotion, a clamp), 1: pinned root (RootPin)."""
        if not isinstance(self.root, (RootMotion, RootPin)):
            raise TypeError(f"boundary root must be RootMotion or RootPin (got {type(self.root).__name__})")
        return self.root.KIND

    def values(self, t: float) -> tuple[int, np.ndarray]:
        """(tip kind: 1 natural / 0 kinematic / 2 pin / 3 slide, array (5, 3): root v, root w,
        tip a, tip b, (axial force of a sliding tip, 0, 0))."""
        tip = self.tip_at(t)
        v0, w0 = self.root.at(t)
        a, b = tip.at(t)
        extra = np.array([tip.axial(t) if isinstance(tip, TipSlide) else 0.0, 0.0, 0.0])
        return tip.KIND, np.ascontiguousarray(np.stack([v0, w0, a, b, extra]))


def free_mask(n_nodes: int, tip_kind: int, root_kind: int = 0) -> np.ndarray:
    """Boolean (N, 15): which nodal unknowns Newton iterates on (GA paper, Sec. 4.3: the
    reduced state x~ without the boundary values). Root: u, omega, g fixed (kinematic) or u,
    kappa, g (pin); tip: kappa, n fixed (natural), u, omega (kinematic), u, kappa (pin) or u1,
    u2, omega, n3 (slide)."""
    m = np.ones((n_nodes, 15), dtype=bool)
    m[0, 0:3] = False
    m[0, 12:15] = False
    if root_kind == 1:
        m[0, 6:9] = False
    elif root_kind == 0:
        m[0, 3:6] = False
    else:
        raise ValueError(f"root_kind must be 0 or 1 (got {root_kind})")
    if tip_kind == 1:
        m[-1, 6:12] = False
    elif tip_kind == 0:
        m[-1, 0:6] = False
    elif tip_kind == 2:
        m[-1, 0:3] = False
        m[-1, 6:9] = False
    elif tip_kind == 3:
        m[-1, [0, 1, 3, 4, 5, 11]] = False
    else:
        raise ValueError(f"tip_kind must be 0..3 (got {tip_kind})")
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
