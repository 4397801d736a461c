"""Energies of the implicit-Euler objective in Cartesian coordinates x = (p, q) (Zhao et al.,
Eq. 8a and Appendix A, after CoRdE, Spillmann & Teschner 2007).

All terms, their gradients and their Hessian blocks in one O(n) compiled pass:

* Bending and twisting (Eq. 29). For the hinge between segments i and i+1, with Voronoi length
  ``lbar_i = (l_i + l_{i+1})/2`` the discrete Darboux vector is

      u_k = (2 / lbar_i) q_i^T C_k q_{i+1} = (2 / lbar_i) vec_k(conj(q_i) (x) q_{i+1}),   k = 1, 2, 3

  which equals Eq. 29's ``2/|q_i|^2 (B_k (q_i + q_{i+1}))^T (q_{i+1} - q_i)/(l_i + l_{i+1})`` for
  unit quaternions (the skew ``B_k`` kills the symmetric part; our ``C_k = -B_k^T`` up to the
  sign convention). ``V_i = lbar_i/2 sum_k K_k (u_k - ubar_k)^2`` with ``K = (E I_1, E I_2, G J)``
  [N m^2]; the paper's ``E pi r^2/4`` reads as a typo of ``E pi r^4/4 = E I`` (units).
* Translational inertia (Eq. 30) ``T_p = sum_j m_j/2 [ |p_j - p_t - dt v_t|^2/dt^2 + c |p_j - p_t|^2/dt ]``
  (c: viscous damping rate [1/s], giving the force ``-c m v_{t+dt}``).
* Rotational inertia (Eq. 31), evaluated per segment (our choice, see docs/compact.md): with the
  body-frame rotation increment ``theta_k = 2 q_t^T C_k q = 2 vec_k(conj(q_t) (x) q)`` [rad],
  ``T_q = sum_i sum_k Jr_ik/2 [ (theta_k - dt omega_t,k)^2/dt^2 + c theta_k^2/dt ]`` with
  ``Jr_i = l_i rho (I_1, I_2, I_1 + I_2)`` [kg m^2].
* Gravity ``G = -sum_j m_j g . p_j``.

Hessian ``H = blockdiag(H_p, H_q)`` (Eq. 15): ``H_p`` is ``Hp[j] I_3`` (lumped), ``H_q`` is
block-tridiagonal with 4x4 blocks ``Hq_d[i]`` (i, i) and ``Hq_o[i]`` (i, i+1). ``hessian_mode``
2 gives the Gauss-Newton part of the bending term (always PSD, what the solver uses), 3 adds the
exact second-order term ``2 K_k (u_k - ubar_k) [[0, C_k], [C_k^T, 0]]`` (indefinite; tests).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT  # noqa: E402  (the one numba options dict)

# a^T C[k] b = vec_k(conj(a) (x) b),  k = x, y, z ; every C[k] is skew-symmetric
C_MATS = np.zeros((3, 4, 4))
C_MATS[0, 0, 1], C_MATS[0, 1, 0], C_MATS[0, 2, 3], C_MATS[0, 3, 2] = 1.0, -1.0, -1.0, 1.0
C_MATS[1, 0, 2], C_MATS[1, 2, 0], C_MATS[1, 3, 1], C_MATS[1, 1, 3] = 1.0, -1.0, -1.0, 1.0
C_MATS[2, 0, 3], C_MATS[2, 3, 0], C_MATS[2, 1, 2], C_MATS[2, 2, 1] = 1.0, -1.0, -1.0, 1.0


@njit(inline="always", **JIT)
def _cmul(k, b, out):
    """out = C[k] b for a 4-vector b (explicit, no matrix)."""
    if k == 0:
        out[0] = b[1]
        out[1] = -b[0]
        out[2] = -b[3]
        out[3] = b[2]
    elif k == 1:
        out[0] = b[2]
        out[1] = b[3]
        out[2] = -b[0]
        out[3] = -b[1]
    else:
        out[0] = b[3]
        out[1] = -b[2]
        out[2] = b[1]
        out[3] = -b[0]


@njit(**JIT)
def darboux(q, lbar, out):
    """Discrete Darboux vectors ``u`` (m-1, 3) [1/m] of quaternions ``q`` (m, 4) (Eq. 29)."""
    g = np.empty(4)
    for h in range(q.shape[0] - 1):
        for k in range(3):
            _cmul(k, q[h + 1], g)
            out[h, k] = 2.0 / lbar[h] * (q[h, 0] * g[0] + q[h, 1] * g[1] + q[h, 2] * g[2] + q[h, 3] * g[3])


@njit(**JIT)
def eval_energy(p, q, p_pred, p_t, q_t, th_pred, masses, Jr, lbar, Kh, ubar, gravity,
                a_in, a_d, grad_p, grad_q, Hp, Hq_d, Hq_o, mode, comps):
    """Objective E(x) of Eq. 8a = V + T_p + T_q + G; returns E and writes ``comps = (V, T_p, T_q, G)``.

    mode 0: value only; 1: + gradient (grad_p (n,3), grad_q (m,4)); 2: + Gauss-Newton Hessian
    (Hp (n,), Hq_d (m,4,4), Hq_o (m-1,4,4)); 3: + exact bending Hessian.
    Inputs: p_pred = p_t + dt v_t; th_pred (m,3) = dt * omega_t (body frame); masses (n,) [kg];
    Jr (m,3) [kg m^2]; lbar (m-1,) [m]; Kh (m-1,3) [N m^2]; ubar (m-1,3) [1/m]; gravity (3,) [m/s^2];
    a_in = 1/dt^2 (0 for statics), a_d = damping/dt.
    """
    n = p.shape[0]
    m = q.shape[0]
    ga = np.empty(4)
    gb = np.empty(4)
    E_v = 0.0
    E_tp = 0.0
    E_tq = 0.0
    E_g = 0.0
    if mode >= 1:
        grad_p[:, :] = 0.0
        grad_q[:, :] = 0.0
    if mode >= 2:
        Hq_d[:, :, :] = 0.0
        Hq_o[:, :, :] = 0.0
    # ---- translational inertia, damping and gravity (Eq. 30) ----
    for j in range(n):
        mj = masses[j]
        e1 = 0.0
        e2 = 0.0
        for c in range(3):
            dpred = p[j, c] - p_pred[j, c]
            dt_ = p[j, c] - p_t[j, c]
            e1 += dpred * dpred
            e2 += dt_ * dt_
            E_g -= mj * gravity[c] * p[j, c]
            if mode >= 1:
                grad_p[j, c] = mj * (a_in * dpred + a_d * dt_ - gravity[c])
        E_tp += 0.5 * mj * (a_in * e1 + a_d * e2)
        if mode >= 2:
            Hp[j] = mj * (a_in + a_d)
    # ---- rotational inertia (Eq. 31, per segment) ----
    if a_in > 0.0 or a_d > 0.0:
        for i in range(m):
            for k in range(3):
                # C_k^T q_t = -C_k q_t
                _cmul(k, q_t[i], ga)
                th = -2.0 * (ga[0] * q[i, 0] + ga[1] * q[i, 1] + ga[2] * q[i, 2] + ga[3] * q[i, 3])
                jk = Jr[i, k]
                r = th - th_pred[i, k]
                E_tq += 0.5 * jk * (a_in * r * r + a_d * th * th)
                if mode >= 1:
                    coef = jk * (a_in * r + a_d * th) * (-2.0)
                    for a in range(4):
                        grad_q[i, a] += coef * ga[a]
                if mode >= 2:
                    hc = 4.0 * jk * (a_in + a_d)
                    for a in range(4):
                        for b in range(4):
                            Hq_d[i, a, b] += hc * ga[a] * ga[b]
    # ---- bending and twisting (Eq. 29) ----
    for h in range(m - 1):
        lb = lbar[h]
        for k in range(3):
            _cmul(k, q[h + 1], ga)  # du/dq_h * lb/2 = C_k q_{h+1}
            _cmul(k, q[h], gb)
            for a in range(4):
                gb[a] = -gb[a]  # du/dq_{h+1} * lb/2 = C_k^T q_h = -C_k q_h
            u = 2.0 / lb * (q[h, 0] * ga[0] + q[h, 1] * ga[1] + q[h, 2] * ga[2] + q[h, 3] * ga[3])
            kk = Kh[h, k]
            r = u - ubar[h, k]
            E_v += 0.5 * lb * kk * r * r
            if mode >= 1:
                coef = 2.0 * kk * r
                for a in range(4):
                    grad_q[h, a] += coef * ga[a]
                    grad_q[h + 1, a] += coef * gb[a]
            if mode >= 2:
                hc = 4.0 * kk / lb
                for a in range(4):
                    for b in range(4):
                        Hq_d[h, a, b] += hc * ga[a] * ga[b]
                        Hq_d[h + 1, a, b] += hc * gb[a] * gb[b]
                        Hq_o[h, a, b] += hc * ga[a] * gb[b]
                if mode >= 3:
                    # d^2 u / dq_h dq_{h+1} = (2/lb) C_k
                    ec = 2.0 * kk * r
                    for a in range(4):
                        for b in range(4):
                            Hq_o[h, a, b] += ec * C_MATS[k, a, b]
    comps[0] = E_v
    comps[1] = E_tp
    comps[2] = E_tq
    comps[3] = E_g
    return E_v + E_tp + E_tq + E_g


def dense_hessian(Hp, Hq_d, Hq_o) -> np.ndarray:
    """Dense ``H`` (Eq. 15) from its blocks, (3n + 4m) square (tests, baselines)."""
    n = Hp.shape[0]
    m = Hq_d.shape[0]
    H = np.zeros((3 * n + 4 * m, 3 * n + 4 * m))
    H[np.arange(3 * n), np.arange(3 * n)] = np.repeat(Hp, 3)
    o = 3 * n
    for i in range(m):
        H[o + 4 * i:o + 4 * i + 4, o + 4 * i:o + 4 * i + 4] = Hq_d[i]
        if i + 1 < m:
            H[o + 4 * i:o + 4 * i + 4, o + 4 * i + 4:o + 4 * i + 8] = Hq_o[i]
            H[o + 4 * i + 4:o + 4 * i + 8, o + 4 * i:o + 4 * i + 4] = Hq_o[i].T
    return H


@njit(inline="always", **JIT)
def _c_vectors(b0, b1, b2, b3, V):
    """Rows k of V = C_k b (k = x, y, z)."""
    V[0, 0] = b1
    V[0, 1] = -b0
    V[0, 2] = -b3
    V[0, 3] = b2
    V[1, 0] = b2
    V[1, 1] = b3
    V[1, 2] = -b0
    V[1, 3] = -b1
    V[2, 0] = b3
    V[2, 1] = -b2
    V[2, 2] = b1
    V[2, 3] = -b0


@njit(**JIT)
def reduced_hessian(q, q_t, Qj, masses, Jr, lbar, Kh, a_in, a_d, Hp, Bd, Bo):
    """Gauss-Newton Hessian already reduced to s-space blocks: ``Hp`` (n,) and the 3x3 blocks of
    ``B_q = J_q^T H_q J_q`` (Eq. 21) -- ``Bd[i+1]``, ``Bo[i+1]`` -- without forming the 4x4 ``H_q``.
    Every 4x4 term of ``H_q`` is a sum of rank-one ``c g g^T`` (Eq. 29/31), so ``Q^T g`` is
    projected first (3-vectors) and the 3x3 blocks are rank-one updates. Same result as
    ``reduce_q_blocks`` applied to :func:`eval_energy`'s mode-2 Hessian; one pass over segments."""
    n = masses.shape[0]
    m = q.shape[0]
    V = np.empty((3, 4))
    P = np.empty((3, 3))
    acc = np.empty((3, 3))
    ain = a_in + a_d
    for j in range(n):
        Hp[j] = masses[j] * ain
    for a in range(3):
        for b in range(3):
            Bd[0, a, b] = 0.0
            Bo[0, a, b] = 0.0
    for i in range(m):
        # block (i+1, i+1): inertia of segment i, hinge i-1 (as its second segment), hinge i (first)
        for a in range(3):
            for b in range(3):
                acc[a, b] = 0.0
        if ain > 0.0:
            _c_vectors(q_t[i, 0], q_t[i, 1], q_t[i, 2], q_t[i, 3], V)
            for k in range(3):
                for c in range(3):
                    P[k, c] = Qj[i, 0, c] * V[k, 0] + Qj[i, 1, c] * V[k, 1] + Qj[i, 2, c] * V[k, 2] + Qj[i, 3, c] * V[k, 3]
            c0 = 4.0 * Jr[i, 0] * ain
            c1 = 4.0 * Jr[i, 1] * ain
            c2 = 4.0 * Jr[i, 2] * ain
            for a in range(3):
                for b in range(a, 3):
                    acc[a, b] += c0 * P[0, a] * P[0, b] + c1 * P[1, a] * P[1, b] + c2 * P[2, a] * P[2, b]
        if i > 0:
            # hinge h = i-1: g_k on q_i is -C_k q_{i-1}
            h = i - 1
            _c_vectors(q[h, 0], q[h, 1], q[h, 2], q[h, 3], V)
            for k in range(3):
                for c in range(3):
                    P[k, c] = -(Qj[i, 0, c] * V[k, 0] + Qj[i, 1, c] * V[k, 1] + Qj[i, 2, c] * V[k, 2] + Qj[i, 3, c] * V[k, 3])
            lb = lbar[h]
            c0 = 4.0 * Kh[h, 0] / lb
            c1 = 4.0 * Kh[h, 1] / lb
            c2 = 4.0 * Kh[h, 2] / lb
            for a in range(3):
                for b in range(a, 3):
                    acc[a, b] += c0 * P[0, a] * P[0, b] + c1 * P[1, a] * P[1, b] + c2 * P[2, a] * P[2, b]
            # off-diagonal block Bo[i] = sum_k c_k PA_k PB_k^T: c_k PA_k was stashed in Bo[i] by the
            # previous segment, PB_k = this P
            for a in range(3):
                s0 = Bo[i, a, 0]
                s1 = Bo[i, a, 1]
                s2 = Bo[i, a, 2]
                for b in range(3):
                    Bo[i, a, b] = s0 * P[0, b] + s1 * P[1, b] + s2 * P[2, b]
        if i < m - 1:
            # hinge h = i: g_k on q_i is C_k q_{i+1}
            h = i
            _c_vectors(q[h + 1, 0], q[h + 1, 1], q[h + 1, 2], q[h + 1, 3], V)
            for k in range(3):
                for c in range(3):
                    P[k, c] = Qj[i, 0, c] * V[k, 0] + Qj[i, 1, c] * V[k, 1] + Qj[i, 2, c] * V[k, 2] + Qj[i, 3, c] * V[k, 3]
            lb = lbar[h]
            c0 = 4.0 * Kh[h, 0] / lb
            c1 = 4.0 * Kh[h, 1] / lb
            c2 = 4.0 * Kh[h, 2] / lb
            for a in range(3):
                for b in range(a, 3):
                    acc[a, b] += c0 * P[0, a] * P[0, b] + c1 * P[1, a] * P[1, b] + c2 * P[2, a] * P[2, b]
                # stash c_k * PA[k, a] for the off-diagonal block, finished at the next segment
                Bo[i + 1, a, 0] = c0 * P[0, a]
                Bo[i + 1, a, 1] = c1 * P[1, a]
                Bo[i + 1, a, 2] = c2 * P[2, a]
        for a in range(3):
            Bd[i + 1, a, a] = acc[a, a]
            for b in range(a + 1, 3):
                Bd[i + 1, a, b] = acc[a, b]
                Bd[i + 1, b, a] = acc[a, b]
