"""State of a generalized-alpha rod (plain arrays) and the kinematic kernels: orientations by
Rodrigues' formula (GA paper, Eq. 23), positions, energies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_INNER, python_entry


@dataclass
class GAlphaState:
    """t [s]; x (N, 15) nodal unknowns (u, omega, kappa, n, g) in local coordinates;
    xdot (N, 15) their local time derivatives (Eq. 19); R (N, 3, 3) director frames (columns d1,
    d2, d3, world coordinates); r (N, 3) positions from the orientations [m]; r_vel (N, 3)
    positions integrated in time from the nodal velocities R u (trapezoid) [m]; step (int)."""

    t: float
    x: np.ndarray
    xdot: np.ndarray
    R: np.ndarray
    r: np.ndarray
    r_vel: np.ndarray
    step: int = 0

    def copy(self) -> "GAlphaState":
        return GAlphaState(self.t, *(np.array(getattr(self, f.name)) for f in fields(self)[1:-1]), self.step)

    def assign(self, other: "GAlphaState") -> None:
        self.t = other.t
        self.step = other.step
        for f in fields(self)[1:-1]:
            getattr(self, f.name)[...] = getattr(other, f.name)

    @property
    def u(self):
        return self.x[:, 0:3]

    @property
    def omega(self):
        return self.x[:, 3:6]

    @property
    def kappa(self):
        return self.x[:, 6:9]

    @property
    def n(self):
        return self.x[:, 9:12]

    @property
    def g(self):
        return self.x[:, 12:15]


@njit(**JIT)
def _expm(w0, w1, w2, out):
    """Rodrigues: out = exp([w]x)."""
    th2 = w0 * w0 + w1 * w1 + w2 * w2
    if th2 < 1e-8:
        a = 1.0 - th2 / 6.0 + th2 * th2 / 120.0
        b = 0.5 - th2 / 24.0 + th2 * th2 / 720.0
    else:
        th = math.sqrt(th2)
        a = math.sin(th) / th
        b = (1.0 - math.cos(th)) / th2
    out[0, 0] = 1.0 - b * (w1 * w1 + w2 * w2)
    out[1, 1] = 1.0 - b * (w0 * w0 + w2 * w2)
    out[2, 2] = 1.0 - b * (w0 * w0 + w1 * w1)
    out[0, 1] = -a * w2 + b * w0 * w1
    out[1, 0] = a * w2 + b * w0 * w1
    out[0, 2] = a * w1 + b * w0 * w2
    out[2, 0] = -a * w1 + b * w0 * w2
    out[1, 2] = -a * w0 + b * w1 * w2
    out[2, 1] = a * w0 + b * w1 * w2


@njit(**JIT)
def _cayley(w0, w1, w2, out):
    """Cayley map (I - W/2)^-1 (I + W/2), W = [w]x."""
    h0, h1, h2 = 0.5 * w0, 0.5 * w1, 0.5 * w2
    den = 1.0 + h0 * h0 + h1 * h1 + h2 * h2
    # (I + 2/den ([h] + [h]^2))
    c = 2.0 / den
    out[0, 0] = 1.0 - c * (h1 * h1 + h2 * h2)
    out[1, 1] = 1.0 - c * (h0 * h0 + h2 * h2)
    out[2, 2] = 1.0 - c * (h0 * h0 + h1 * h1)
    out[0, 1] = c * (-h2 + h0 * h1)
    out[1, 0] = c * (h2 + h0 * h1)
    out[0, 2] = c * (h1 + h0 * h2)
    out[2, 0] = c * (-h1 + h0 * h2)
    out[1, 2] = c * (-h0 + h1 * h2)
    out[2, 1] = c * (h0 + h1 * h2)


@njit(**JIT_INNER)
def _integrate_frames(x, R0, ds, cayley, R):
    """Orientations along s (GA paper, Eq. 23): ``R[j] = R[j-1] exp([kappa_mid] ds)``, with
    the segment-midpoint Darboux vector ``(kappa[j-1] + kappa[j]) / 2`` (second order; the
    paper's Eq. 23 uses the nodal one). ``cayley``: use the Cayley map instead of Rodrigues
    (then ``R^T g_world`` equals the g field exactly)."""
    N = x.shape[0]
    E = np.empty((3, 3))
    for a in range(3):  # element loops: an array slice assignment compiles numba's shape-mismatch error path
        for b in range(3):
            R[0, a, b] = R0[a, b]
    for j in range(1, N):
        w0 = 0.5 * (x[j - 1, 6] + x[j, 6]) * ds
        w1 = 0.5 * (x[j - 1, 7] + x[j, 7]) * ds
        w2 = 0.5 * (x[j - 1, 8] + x[j, 8]) * ds
        if cayley:
            _cayley(w0, w1, w2, E)
        else:
            _expm(w0, w1, w2, E)
        for a in range(3):
            for b in range(3):
                R[j, a, b] = R[j - 1, a, 0] * E[0, b] + R[j - 1, a, 1] * E[1, b] + R[j - 1, a, 2] * E[2, b]


@njit(**JIT_INNER)
def _integrate_positions(x, R, r0, ds, r):
    """Centerline from the frames: each segment is the circular arc of constant Darboux vector
    ``kappa_mid``, ``r[j] = r[j-1] + ds R[j-1] V(kappa_mid ds) e3`` with ``V(w) = int_0^1
    exp(t [w]) dt = I + (1 - cos th)/th^2 [w] + (th - sin th)/th^3 [w]^2`` (exact for constant
    curvature; the arc has length ds, its chord is shorter by O(kappa^2 ds^3))."""
    N = x.shape[0]
    for q in range(3):
        r[0, q] = r0[q]
    for j in range(1, N):
        w0 = 0.5 * (x[j - 1, 6] + x[j, 6]) * ds
        w1 = 0.5 * (x[j - 1, 7] + x[j, 7]) * ds
        w2 = 0.5 * (x[j - 1, 8] + x[j, 8]) * ds
        th2 = w0 * w0 + w1 * w1 + w2 * w2
        if th2 < 1e-8:
            a = 0.5 - th2 / 24.0
            b = 1.0 / 6.0 - th2 / 120.0
        else:
            th = math.sqrt(th2)
            a = (1.0 - math.cos(th)) / th2
            b = (th - math.sin(th)) / (th2 * th)
        # V e3 = e3 + a (w x e3) + b w x (w x e3);  w x e3 = (w1, -w0, 0); w x (w x e3) = (w0 w2, w1 w2, -(w0^2 + w1^2))
        v0 = a * w1 + b * w0 * w2
        v1 = -a * w0 + b * w1 * w2
        v2 = 1.0 - b * (w0 * w0 + w1 * w1)
        for q in range(3):
            r[j, q] = r[j - 1, q] + ds * (R[j - 1, q, 0] * v0 + R[j - 1, q, 1] * v1 + R[j - 1, q, 2] * v2)


@njit(**JIT_INNER)
def _advance_velocity_positions(r_vel, R_old, x_old, R_new, x_new, dt):
    """Positions from velocities (GA paper, Sec. 4.4): trapezoid in time of the world
    velocities ``R u``."""
    N = x_new.shape[0]
    for j in range(N):
        for a in range(3):
            vo = R_old[j, a, 0] * x_old[j, 0] + R_old[j, a, 1] * x_old[j, 1] + R_old[j, a, 2] * x_old[j, 2]
            vn = R_new[j, a, 0] * x_new[j, 0] + R_new[j, a, 1] * x_new[j, 1] + R_new[j, a, 2] * x_new[j, 2]
            r_vel[j, a] += 0.5 * dt * (vo + vn)


@njit(**JIT)
def energies(x, r, khat, K, J, rhoA, gw, ds):
    """(kinetic, elastic, gravitational) energy [J], trapezoid rule in s."""
    N = x.shape[0]
    ek = 0.0
    ee = 0.0
    eg = 0.0
    for j in range(N):
        w = 0.5 * ds if (j == 0 or j == N - 1) else ds
        ek += w * 0.5 * (rhoA * (x[j, 0] ** 2 + x[j, 1] ** 2 + x[j, 2] ** 2)
                         + J[0] * x[j, 3] ** 2 + J[1] * x[j, 4] ** 2 + J[2] * x[j, 5] ** 2)
        for q in range(3):
            dk = x[j, 6 + q] - khat[j, q]
            ee += w * 0.5 * K[q] * dk * dk
        eg -= w * rhoA * (gw[0] * r[j, 0] + gw[1] * r[j, 1] + gw[2] * r[j, 2])
    return ek, ee, eg


# Python entries of the inner kernels (the solvers' setup and static solve, tests)
integrate_frames = python_entry(_integrate_frames, "integrate_frames")
integrate_positions = python_entry(_integrate_positions, "integrate_positions")
