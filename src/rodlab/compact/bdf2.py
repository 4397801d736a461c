"""BDF2 history terms of the ``compact`` simulator's ``integrator="bdf2"`` (docs/integrators.md).

A BDF2 step of size ``dt`` is the backward-Euler step of Zhao et al. ("Compact inextensible
Cosserat rods", Eq. 8a) of size ``h = beta dt``, ``beta = 2/3``, taken from a *fictitious* start
state built from the last two states ``n`` and ``n - 1``:

- positions ``p_lin = 4/3 p_n - 1/3 p_{n-1}``, velocities ``v_lin = 4/3 v_n - 1/3 v_{n-1}``, so
  the translational inertia is ``m/2 |p - p_lin - h v_lin|^2 / h^2`` and ``v_{n+1} = (p - p_lin)/h``
  (the incremental-potential form of BDF2: ``min 1/2 |x - x_pred|_M^2 / (beta dt)^2 + V(x)``);
- rotations: in exponential coordinates about ``q_n`` (``q = q_n exp(phi)``, body frame),
  ``phi_n = 0`` and ``phi_{n-1} = log(conj(q_n) q_{n-1})``, so ``q_lin = q_n exp(-phi_{n-1}/3)``;
  body angular velocities ``omega_lin = 4/3 omega_n - 1/3 omega_{n-1}``;
- the rotational inertia predictor ``h omega_lin`` gets a third-order correction
  ``-h^3/2 J^-1 (omega_lin x J alpha)``, ``alpha = (omega_n - omega_{n-1})/dt``: the step measures
  the rotation in the chart about ``q_lin`` while the torques act in the body frame at the end of the
  step; the two differ by the right Jacobian ``J_r(psi)^T = I + psi x / 2`` of the chart, an
  ``O(h^2)`` term in the velocity update that would otherwise make rotations first order.
"""
from __future__ import annotations

from numba import njit

from ..geometry._vec import JIT
from ..geometry.rotations import quat_mul_scalar, quat_to_rotvec_scalar, rotvec_to_quat_scalar

BETA = 2.0 / 3.0
"""BDF2's ``beta``: ``x_{n+1} - 4/3 x_n + 1/3 x_{n-1} = beta dt v_{n+1}``."""


@njit(**JIT)
def bdf2_start(p, v, q, omega, p_prev, v_prev, q_prev, omega_prev, Jr, dt, h, p_t, q_t, p_pred, th_pred):
    """Fill the backward-Euler step's inputs for a BDF2 step (module docstring): ``p_t`` (n, 3) =
    ``p_lin``, ``p_pred`` = ``p_lin + h v_lin``, ``q_t`` (m, 4) = ``q_lin``, ``th_pred`` (m, 3) =
    ``h omega_lin`` + the chart correction. ``p, v, q, omega``: state ``n``; ``*_prev``: state
    ``n - 1``; ``Jr`` (m, 3) [kg m^2] segment inertia; ``dt`` [s] the step, ``h = beta dt``."""
    a, b = 4.0 / 3.0, 1.0 / 3.0
    for j in range(p.shape[0]):
        for c in range(3):
            pl = a * p[j, c] - b * p_prev[j, c]
            p_t[j, c] = pl
            p_pred[j, c] = pl + h * (a * v[j, c] - b * v_prev[j, c])
    k3 = 0.5 * h * h * h
    for i in range(q.shape[0]):
        q0, q1, q2, q3 = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        d0, d1, d2, d3 = quat_mul_scalar(q0, -q1, -q2, -q3, q_prev[i, 0], q_prev[i, 1], q_prev[i, 2], q_prev[i, 3])
        f0, f1, f2 = quat_to_rotvec_scalar(d0, d1, d2, d3)
        e0, e1, e2, e3 = rotvec_to_quat_scalar(-f0 / 3.0, -f1 / 3.0, -f2 / 3.0)
        l0, l1, l2, l3 = quat_mul_scalar(q0, q1, q2, q3, e0, e1, e2, e3)
        q_t[i, 0], q_t[i, 1], q_t[i, 2], q_t[i, 3] = l0, l1, l2, l3
        w0 = a * omega[i, 0] - b * omega_prev[i, 0]
        w1 = a * omega[i, 1] - b * omega_prev[i, 1]
        w2 = a * omega[i, 2] - b * omega_prev[i, 2]
        j0, j1, j2 = Jr[i, 0], Jr[i, 1], Jr[i, 2]
        # J alpha, alpha = (omega_n - omega_{n-1}) / dt
        g0 = j0 * (omega[i, 0] - omega_prev[i, 0]) / dt
        g1 = j1 * (omega[i, 1] - omega_prev[i, 1]) / dt
        g2 = j2 * (omega[i, 2] - omega_prev[i, 2]) / dt
        c0 = w1 * g2 - w2 * g1
        c1 = w2 * g0 - w0 * g2
        c2 = w0 * g1 - w1 * g0
        th_pred[i, 0] = h * w0 - k3 * c0 / j0
        th_pred[i, 1] = h * w1 - k3 * c1 / j1
        th_pred[i, 2] = h * w2 - k3 * c2 / j2


__all__ = ["BETA", "bdf2_start"]
