"""2D bending with slerped vertex material frames (Gornowicz and Borac, DigiPro 2015 = [41] of Takahashi and
Batty), with the approximated ("frame held constant") gradient and the exact one, and an implicit-Euler
stepper variant for the comparison of Takahashi and Batty Sec. VI-A2 / Fig. 3.

Vertex frame (interior vertex ``i``, edges ``a = i - 1`` and ``b = i``, our choices where [41] is not
available to us, see docs/sagfree-slerp.md):

* common tangent ``tv = (t^a + t^b) / |t^a + t^b|`` (the vertex tangent, half-way between the edges);
* ``m1', m2'`` = parallel transport of edge ``a``'s material frame from ``t^a`` to ``tv``;
* the slerp of the two edge frames (both transported to ``tv``) half-way is the rotation of ``m1', m2'``
  about ``tv`` by half the angle between them. That angle is the DER twist
  ``m_i = theta_i - theta_{i-1} + mref_i`` (Bergou et al. 2008 Eq. 5; it is continuous in time because
  ``mref`` is unwrapped): ``M1 = c m1' + s m2'``, ``M2 = -s m1' + c m2'``, ``(c, s) = (cos, sin)(phi / 2)``,
  ``phi = m_i`` (``branch = 0``, default), or ``phi = m_i`` wrapped into ``(-pi, pi]`` (``branch = 1``, the
  shortest-arc quaternion slerp, discontinuous where adjacent frames are flipped by ``pi``).
  ``M1, M2`` are unit vectors for every twist (the averaged frames ``(m^a + m^b) / 2`` vanish at ``m_i = pi``).

2D curvature and energy (the 2D energy of Takahashi and Batty Eq. 5 with the slerped frame):
``w_i = (kb_i . M2, -kb_i . M1)``, ``E_i = kbend_i / l_i |w_i - wbar_i|^2``.

Because the transport to ``tv`` is a rotation about ``kb`` (``kb`` is parallel to ``t^a x tv``),
``kb . m1' = kb . m1^a``, so ``w_i = Rot(phi / 2) w^a_i`` with the 2x2 rotation ``Rot(u) = [[cos u, sin u],
[-sin u, cos u]]`` applied to the 4D curvature's first half ``w^a_i = (kb.m2^a, -kb.m1^a)``. Hence

* exact Jacobian: ``dw_i = Rot(phi / 2) (dw^a_i + 1/2 J w^a_i dm_i)``, ``J = [[0, 1], [-1, 0]]``
  (``dw^a`` and ``dm`` are the 4D rows of the joint stencil, :func:`rodlab.geometry.der_joint.joint_rows`: ``dm`` carries the
  holonomy gradient and ``dm/dtheta = -1, +1``);
* approximated Jacobian ([41], as we read it: the slerped frame is held constant when differentiating):
  ``dw_i ~ (M2 . dkb, -M1 . dkb)`` from ``d(r.kb)/de`` with ``r`` constant, and no dependence on the
  material angles. The dropped part is ``J w_i dpsi`` (``psi`` = rotation of ``M`` about ``tv``); its
  energy gradient is ``-C_i dpsi wbar_i^T J w_i``: it vanishes identically for ``wbar = 0`` (naturally
  straight rods), so the approximation only errs with rest curvature (bend-twist coupling and the
  holonomy term are dropped).

Stretching and twisting are those of :func:`.energies.der_elastic` (called with zero bending stiffness).
This is a different discretization from the stencil's 4D bending (one frame per vertex, not one per
edge), so it keeps its own curvature; it is built on the stencil's pieces: its rows
(``joint_rows``), the pullback of ``r . kb`` (``joint_kb_pullback``, the approximated rows), the
joint energy with the two rows of weight ``2 kbend`` and the Gauss-Newton block
(``joint_gn_hessian_add``).
Hessian: Gauss-Newton ``C J^T J`` with the Jacobian actually used (approximated or exact), as the
der-implicit stepper (Takahashi and Batty Sec. VI).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from ..geometry.der_joint import (joint_energy, joint_gn_hessian_add, joint_pullback_scales, put_kb_row,
                                  joint_rows_gradient)
from .energies import (BANDWIDTH, _C, _RES, _W, _WS, _transport, _vertex_rows, der_elastic, material_frames_q,
                       update_frames)

# the stepper's Newton loop calls slerp_elastic, so the stepper module imports this one (and holds
# SlerpStepper); the classes of .stepper appear here only in annotations
if TYPE_CHECKING:
    from .stepper import DERImplicitModel, DERImplicitState

from ..geometry._vec import JIT  # noqa: E402  (the one numba options dict)

GRADIENTS = ("approx", "exact")
BRANCHES = ("twist", "shortest")


@njit(**JIT)
def slerp_vertex(q, tan, elen, m1, m2, mref, i, branch, exact, R, S, M):
    """Slerped frame, 2D curvature and its Jacobian at interior vertex ``i`` (module docstring).

    ``R`` (workspace, >= ``_WS``) receives the 4D rows of :func:`.energies._vertex_rows`; ``S`` (>= ``_WS``)
    receives the two compact rows of ``w_i`` at ``S[0:8]``, ``S[8:16]`` (layout of ``_vertex_rows``:
    ``[u (3), t0, v (3), t1]`` for the full row ``[-u, t0, u - v, t1, v]``), ``w_i`` at ``S[_W:_W + 2]``;
    ``M`` (2, 3) receives the vertex directors ``M1, M2``. ``exact`` 1: exact rows; 0: frame held constant.
    Returns the half angle ``phi / 2``."""
    mt = _vertex_rows(q, tan, elen, m1, m2, mref, i, R)
    phi = mt
    if branch == 1:
        two_pi = 2.0 * math.pi
        phi = mt - two_pi * math.floor((mt + math.pi) / two_pi)
        if phi <= -math.pi:
            phi += two_pi
    half = 0.5 * phi
    c = math.cos(half)
    s = math.sin(half)
    w0 = R[_W]
    w1 = R[_W + 1]
    S[_W] = c * w0 + s * w1
    S[_W + 1] = -s * w0 + c * w1
    a = i - 1
    b = i
    tvx = tan[a, 0] + tan[b, 0]
    tvy = tan[a, 1] + tan[b, 1]
    tvz = tan[a, 2] + tan[b, 2]
    nv = math.sqrt(tvx * tvx + tvy * tvy + tvz * tvz)
    tvx /= nv
    tvy /= nv
    tvz /= nv
    p1x, p1y, p1z = _transport(tan[a, 0], tan[a, 1], tan[a, 2], tvx, tvy, tvz, m1[a, 0], m1[a, 1], m1[a, 2])
    p2x, p2y, p2z = _transport(tan[a, 0], tan[a, 1], tan[a, 2], tvx, tvy, tvz, m2[a, 0], m2[a, 1], m2[a, 2])
    M[0, 0] = c * p1x + s * p2x
    M[0, 1] = c * p1y + s * p2y
    M[0, 2] = c * p1z + s * p2z
    M[1, 0] = -s * p1x + c * p2x
    M[1, 1] = -s * p1y + c * p2y
    M[1, 2] = -s * p1z + c * p2z
    if exact:
        u0 = w1
        u1 = -w0
        for k in range(8):
            r0 = R[k] + 0.5 * u0 * R[32 + k]
            r1 = R[8 + k] + 0.5 * u1 * R[32 + k]
            S[k] = c * r0 + s * r1
            S[8 + k] = -s * r0 + c * r1
    else:
        # the joint stencil's pullback of r . kb with r = M2, -M1 held constant
        ce, cf = joint_pullback_scales(tan, elen, a, b)
        for r in range(2):
            if r == 0:
                rx, ry, rz = M[1, 0], M[1, 1], M[1, 2]
            else:
                rx, ry, rz = -M[0, 0], -M[0, 1], -M[0, 2]
            put_kb_row(S, r, tan, a, b, ce, cf, S[_W + r], rx, ry, rz)
    return half


@njit(**JIT)
def slerp_elastic(q, tan, elen, a1, mref, ks, lbar, kbend, wbar2, ktwist, mbar, lvor, branch, exact, want, grad, band):
    """Elastic energy with slerped-frame 2D bending (module docstring) at ``q`` with frames ``a1``/``mref``.

    Same contract as :func:`.energies.der_elastic` (``want`` 0/1/2, ``grad``/``band`` accumulated into),
    with ``wbar2`` (n, 2) the rest 2D curvature and ``exact`` selecting the exact (1) or the approximated
    (0, frame held constant, [41]) gradient and Gauss-Newton Hessian. Stretching and twisting come from
    ``der_elastic`` with zero bending stiffness."""
    ne = tan.shape[0]
    nv = ne + 1
    zb = np.zeros(nv)
    wz = np.zeros((nv, 4))
    E = der_elastic(q, tan, elen, a1, mref, ks, lbar, zb, wz, ktwist, mbar, lvor, np.bool_(False), want, grad, band)
    m1 = np.empty((ne, 3))
    m2 = np.empty((ne, 3))
    material_frames_q(q, tan, a1, m1, m2)
    R = np.empty(_WS)
    S = np.zeros(_WS)
    M = np.empty((2, 3))
    for i in range(1, nv - 1):
        slerp_vertex(q, tan, elen, m1, m2, mref, i, branch, exact, R, S, M)
        kb2 = 2.0 * kbend[i]
        li = lvor[i]
        E += joint_energy(S[_W], S[_W + 1], 0.0, 0.0, wbar2[i, 0], wbar2[i, 1], 0.0, 0.0, kb2, kb2, 0.0, 0.0,
                          0.0, 0.0, li)
        cw = (1.0 / li) * kb2
        for r in range(2):
            S[_RES + r] = S[_W + r] - wbar2[i, r]
            S[_C + r] = cw
        if want >= 1:
            joint_rows_gradient(grad, 4 * (i - 1), S, 2)
        if want >= 2:
            joint_gn_hessian_add(band, 4 * (i - 1), S, 2)
    return E


@njit(**JIT)
def slerp_frames_all(q, tan, elen, a1, mref, branch, w_out, M_out):
    """Slerped 2D curvature (n, 2) and vertex directors ``M_out`` (n, 2, 3) of every interior vertex
    (ends left 0), at frames ``a1``/``mref`` of ``q``."""
    ne = tan.shape[0]
    nv = ne + 1
    m1 = np.empty((ne, 3))
    m2 = np.empty((ne, 3))
    material_frames_q(q, tan, a1, m1, m2)
    R = np.empty(_WS)
    S = np.zeros(_WS)
    M = np.empty((2, 3))
    w_out[:, :] = 0.0
    M_out[:, :, :] = 0.0
    for i in range(1, nv - 1):
        slerp_vertex(q, tan, elen, m1, m2, mref, i, branch, 1, R, S, M)
        w_out[i, 0] = S[_W]
        w_out[i, 1] = S[_W + 1]
        for r in range(2):
            for c in range(3):
                M_out[i, r, c] = M[r, c]


def rest_curvature2(model: DERImplicitModel, state: DERImplicitState, branch: str = "twist") -> np.ndarray:
    """Slerped 2D curvature (n, 2) of ``state`` (use it as the rest curvature of a rod at rest there)."""
    b = _branch(branch)
    nv = model.nv
    w = np.zeros((nv, 2))
    Mo = np.zeros((nv, 2, 3))
    tan, elen, a1, mref = _frames_at(state)
    slerp_frames_all(state.q, tan, elen, a1, mref, b, w, Mo)
    return w


def _frames_at(state: DERImplicitState):
    ne = state.tan.shape[0]
    tan, elen, a1, mref = np.empty((ne, 3)), np.empty(ne), np.empty((ne, 3)), np.empty(ne - 1)
    update_frames(state.q, state.tan, state.a1, state.mref, tan, elen, a1, mref)
    return tan, elen, a1, mref


def _branch(branch: str) -> int:
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {BRANCHES} (got {branch!r})")
    return BRANCHES.index(branch)


def der_elastic_energy(model: DERImplicitModel, state: DERImplicitState) -> float:
    """Elastic energy of the der-implicit model (4D or averaged 2D, ``model.curv2d``) at ``state``."""
    tan, elen, a1, mref = _frames_at(state)
    n = state.q.size
    return float(der_elastic(state.q, tan, elen, a1, mref, model.ks, model.lbar, model.kbend, model.wbar, model.ktwist,
                             model.mbar, model.lvor, bool(model.curv2d), 0, np.zeros(n), np.zeros((n, BANDWIDTH + 1))))


def total_energy(model: DERImplicitModel, state: DERImplicitState, elastic: float) -> float:
    """Kinetic + elastic + gravity potential energy ``1/2 v^T M v + E - f_ext . q`` [J]."""
    return float(0.5 * np.sum(model.mass * state.v ** 2) + elastic - np.dot(model.fext, state.q))
