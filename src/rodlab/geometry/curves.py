"""Discrete curve geometry: edges, tangents, curvature binormals, parallel transport, frames.

Conventions: vertices ``x`` of shape ``(nv, 3)``; an open rod has ``ne = nv - 1``
edges ``e[j] = x[j+1] - x[j]``, a closed rod ``ne = nv`` (the last edge joins ``x[nv-1]`` to
``x[0]``). Bending "joints" sit between consecutive edges: joint ``k`` joins edge ``k`` to edge
``(k + 1) % ne`` at vertex ``(k + 1) % nv``; an open rod has ``ne - 1`` joints, a closed one
``ne``. Every per-joint array is indexed by ``k``.

All kernels are numba-compiled; they raise ``ValueError`` instead of returning NaN where the
geometry is undefined (a zero-length edge, an edge folded back onto its neighbour).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._vec import JIT
from .der_joint import PARALLEL_TRANSPORT_EPS, joint_curvature_binormal, joint_material_curvature


def edge_count(nv: int, closed: bool) -> int:
    return nv if closed else nv - 1


def joint_count(nv: int, closed: bool) -> int:
    return nv if closed else nv - 2


@njit(**JIT)
def compute_edges(x, closed, out):
    """Edge vectors ``e[j] = x[j+1] - x[j]`` (closed rods wrap), written into ``out`` (ne, 3)."""
    nv = x.shape[0]
    ne = out.shape[0]
    for j in range(ne):
        jn = j + 1
        if jn == nv:
            jn = 0
        for c in range(3):
            out[j, c] = x[jn, c] - x[j, c]


@njit(**JIT)
def compute_tangents(edges, lengths_out, tangents_out):
    """Edge lengths [m] and unit tangents; a zero-length edge raises ValueError."""
    for j in range(edges.shape[0]):
        length = math.sqrt(edges[j, 0] ** 2 + edges[j, 1] ** 2 + edges[j, 2] ** 2)
        if not length > 1e-300:
            raise ValueError("zero-length (or non-finite) edge: tangent undefined")
        lengths_out[j] = length
        inv = 1.0 / length
        for c in range(3):
            tangents_out[j, c] = edges[j, c] * inv


@njit(**JIT)
def compute_curvature_binormals(tangents, closed, out):
    """Curvature binormal per joint, ``(kb)_k = 2 t_e x t_f / (1 + t_e . t_f)`` (Bergou 2008, Eq. 1).

    Its magnitude is ``2 tan(phi/2)`` with ``phi`` the turning angle. An edge folded back onto
    its neighbour (``t_e . t_f = -1``) has no curvature binormal and raises ValueError.
    """
    ne = tangents.shape[0]
    for k in range(out.shape[0]):
        f = k + 1
        if f == ne:
            f = 0
        out[k, 0], out[k, 1], out[k, 2], _ = joint_curvature_binormal(
            tangents[k, 0], tangents[k, 1], tangents[k, 2], tangents[f, 0], tangents[f, 1], tangents[f, 2])


@njit(**JIT)
def turning_angles(tangents, closed, out):
    """Turning angle ``phi_k`` in [0, pi) between consecutive tangents, computed with atan2."""
    ne = tangents.shape[0]
    for k in range(out.shape[0]):
        f = k + 1
        if f == ne:
            f = 0
        cx = tangents[k, 1] * tangents[f, 2] - tangents[k, 2] * tangents[f, 1]
        cy = tangents[k, 2] * tangents[f, 0] - tangents[k, 0] * tangents[f, 2]
        cz = tangents[k, 0] * tangents[f, 1] - tangents[k, 1] * tangents[f, 0]
        c = tangents[k, 0] * tangents[f, 0] + tangents[k, 1] * tangents[f, 1] + tangents[k, 2] * tangents[f, 2]
        out[k] = math.atan2(math.sqrt(cx * cx + cy * cy + cz * cz), c)


@njit(inline="always", **JIT)
def transport3(t1x, t1y, t1z, t2x, t2y, t2z, ux, uy, uz):
    """:func:`parallel_transport_into` on scalars (no array, no allocation): the transport of
    ``u`` from unit ``t1`` to unit ``t2`` as a 3-tuple. Anti-parallel tangents: ValueError. The one
    copy of this formula for the hot loops of every method."""
    c = t1x * t2x + t1y * t2y + t1z * t2z
    if not 1.0 + c > PARALLEL_TRANSPORT_EPS:
        raise ValueError("parallel transport between anti-parallel tangents is undefined")
    b0 = t1y * t2z - t1z * t2y
    b1 = t1z * t2x - t1x * t2z
    b2 = t1x * t2y - t1y * t2x
    bu = (b0 * ux + b1 * uy + b2 * uz) / (1.0 + c)
    return (c * ux + (b1 * uz - b2 * uy) + b0 * bu,
            c * uy + (b2 * ux - b0 * uz) + b1 * bu,
            c * uz + (b0 * uy - b1 * ux) + b2 * bu)


@njit(inline="always", **JIT)
def reference_twist3(tx, ty, tz, sx, sy, sz, ux, uy, uz, vx, vy, vz, previous):
    """Reference twist of a joint on scalars (Bergou et al. 2008, Sec. 6): the signed angle about
    the next tangent ``s`` from the transport of the previous edge's reference director ``u``
    (tangent ``t``) to the next edge's director ``v``, unwrapped to within pi of ``previous``
    (:func:`reference_twist` for one joint)."""
    o0, o1, o2 = transport3(tx, ty, tz, sx, sy, sz, ux, uy, uz)
    cx = o1 * vz - o2 * vy
    cy = o2 * vx - o0 * vz
    cz = o0 * vy - o1 * vx
    angle = math.atan2(cx * sx + cy * sy + cz * sz, o0 * vx + o1 * vy + o2 * vz)
    two_pi = 2.0 * math.pi
    return angle + two_pi * math.floor((previous - angle) / two_pi + 0.5)


@njit(inline="always", **JIT)
def orthonormalize3(tx, ty, tz, ax, ay, az):
    """:func:`orthonormalize_against` on scalars: ``a`` minus its component along unit ``t``,
    normalised, as a 3-tuple (the same arithmetic). A vector parallel to ``t``: ValueError."""
    d = ax * tx + ay * ty + az * tz
    o0 = ax - d * tx
    o1 = ay - d * ty
    o2 = az - d * tz
    nrm = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
    if not nrm > 1e-300:
        raise ValueError("frame vector is parallel to the tangent")
    return o0 / nrm, o1 / nrm, o2 / nrm


@njit(**JIT)
def parallel_transport_into(t1, t2, u, out):
    """Parallel transport ``u`` from unit tangent ``t1`` to unit tangent ``t2``.

    The rotation about ``b = t1 x t2`` taking ``t1`` to ``t2``, written without normalising
    ``b`` so it stays accurate for nearly parallel tangents:
    ``P(u) = (t1.t2) u + b x u + b (b.u) / (1 + t1.t2)``.
    Anti-parallel tangents have no unique transport: ValueError.
    """
    c = t1[0] * t2[0] + t1[1] * t2[1] + t1[2] * t2[2]
    if not 1.0 + c > PARALLEL_TRANSPORT_EPS:
        raise ValueError("parallel transport between anti-parallel tangents is undefined")
    b0 = t1[1] * t2[2] - t1[2] * t2[1]
    b1 = t1[2] * t2[0] - t1[0] * t2[2]
    b2 = t1[0] * t2[1] - t1[1] * t2[0]
    bu = (b0 * u[0] + b1 * u[1] + b2 * u[2]) / (1.0 + c)
    o0 = c * u[0] + (b1 * u[2] - b2 * u[1]) + b0 * bu
    o1 = c * u[1] + (b2 * u[0] - b0 * u[2]) + b1 * bu
    o2 = c * u[2] + (b0 * u[1] - b1 * u[0]) + b2 * bu
    out[0] = o0
    out[1] = o1
    out[2] = o2


@njit(**JIT)
def parallel_transport(t1, t2, u):
    out = np.empty(3)
    parallel_transport_into(t1, t2, u, out)
    return out


@njit(**JIT)
def signed_angle(u, v, axis):
    """Signed angle from ``u`` to ``v`` about unit ``axis``: ``atan2((u x v).axis, u.v)``.

    atan2 keeps full accuracy for every angle (an ``acos`` of the dot product loses it near
    0 and pi and cannot tell the sign).
    """
    cx = u[1] * v[2] - u[2] * v[1]
    cy = u[2] * v[0] - u[0] * v[2]
    cz = u[0] * v[1] - u[1] * v[0]
    return math.atan2(cx * axis[0] + cy * axis[1] + cz * axis[2], u[0] * v[0] + u[1] * v[1] + u[2] * v[2])


@njit(**JIT)
def orthonormalize_against(t, a, out):
    """``a`` minus its component along unit ``t``, normalised (Gram-Schmidt)."""
    d = a[0] * t[0] + a[1] * t[1] + a[2] * t[2]
    o0 = a[0] - d * t[0]
    o1 = a[1] - d * t[1]
    o2 = a[2] - d * t[2]
    nrm = math.sqrt(o0 * o0 + o1 * o1 + o2 * o2)
    if not nrm > 1e-300:
        raise ValueError("frame vector is parallel to the tangent")
    out[0] = o0 / nrm
    out[1] = o1 / nrm
    out[2] = o2 / nrm


@njit(**JIT)
def bishop_frames(tangents, u0, closed, u_out, v_out):
    """Space-parallel (Bishop) frames: ``u_j = P_j(u_{j-1})``, ``v_j = t_j x u_j`` (Bergou 2008, Sec. 4.2.1).

    ``u0`` must be orthogonal to ``tangents[0]``; it is re-orthonormalised to absorb round-off.
    For a closed rod the frames are transported once around, edge 0 to edge ne - 1; the frame
    that comes back to edge 0 differs from ``u0`` by the loop's holonomy.
    """
    orthonormalize_against(tangents[0], u0, u_out[0])
    for j in range(1, tangents.shape[0]):
        parallel_transport_into(tangents[j - 1], tangents[j], u_out[j - 1], u_out[j])
        orthonormalize_against(tangents[j], u_out[j], u_out[j])
    for j in range(tangents.shape[0]):
        t = tangents[j]
        u = u_out[j]
        v_out[j, 0] = t[1] * u[2] - t[2] * u[1]
        v_out[j, 1] = t[2] * u[0] - t[0] * u[2]
        v_out[j, 2] = t[0] * u[1] - t[1] * u[0]


@njit(**JIT)
def time_parallel_update(old_tangents, new_tangents, a1):
    """Transport each edge's reference director ``a1`` in time, from its old tangent to its new one.

    The time-parallel reference frame of later DER work (Bergou et al. 2010): the smallest
    rotation taking the old tangent to the new one. Updated in place, re-orthonormalised. On
    scalars (:func:`transport3`, :func:`orthonormalize3`): no scratch array, bitwise the array
    forms :func:`parallel_transport_into` + :func:`orthonormalize_against`.
    """
    for j in range(a1.shape[0]):
        o0, o1, o2 = transport3(old_tangents[j, 0], old_tangents[j, 1], old_tangents[j, 2], new_tangents[j, 0],
                                new_tangents[j, 1], new_tangents[j, 2], a1[j, 0], a1[j, 1], a1[j, 2])
        a1[j, 0], a1[j, 1], a1[j, 2] = orthonormalize3(new_tangents[j, 0], new_tangents[j, 1], new_tangents[j, 2],
                                                       o0, o1, o2)


@njit(**JIT)
def complete_frames(tangents, a1, a2_out):
    """Second reference director ``a2 = t x a1``."""
    for j in range(tangents.shape[0]):
        t = tangents[j]
        u = a1[j]
        a2_out[j, 0] = t[1] * u[2] - t[2] * u[1]
        a2_out[j, 1] = t[2] * u[0] - t[0] * u[2]
        a2_out[j, 2] = t[0] * u[1] - t[1] * u[0]


@njit(**JIT)
def reference_twist(tangents, a1, closed, previous, out):
    """Reference twist per joint: signed angle about ``t_f`` from ``P(a1_e)`` to ``a1_f``.

    ``P`` is parallel transport along the rod from edge ``e = k`` to edge ``f = k + 1``. The
    angle is only known modulo 2 pi; it is unwrapped against ``previous`` (last step's value)
    so accumulated twist is never lost. On scalars (:func:`reference_twist3`: no scratch array,
    bitwise :func:`parallel_transport_into` + :func:`signed_angle` + :func:`unwrap_near`);
    ``previous`` may be ``out``.
    """
    ne = tangents.shape[0]
    for k in range(out.shape[0]):
        f = k + 1
        if f == ne:
            f = 0
        out[k] = reference_twist3(tangents[k, 0], tangents[k, 1], tangents[k, 2], tangents[f, 0], tangents[f, 1],
                                  tangents[f, 2], a1[k, 0], a1[k, 1], a1[k, 2], a1[f, 0], a1[f, 1], a1[f, 2],
                                  previous[k])


@njit(**JIT)
def reference_twist_two_pass(tangents, a1, ref_twist, num, den):
    """:func:`reference_twist` with ``previous`` = ``out`` = ``ref_twist``, in two passes: the
    ``atan2`` arguments of every joint into the scratch ``num``, ``den`` (at least ``nj`` long),
    then the ``atan2`` calls and the unwrapping. The same operations on every value as
    :func:`reference_twist3`, bitwise; a loop of only the library calls runs faster (275-vertex
    rod: 6.3 -> 5.2 us). Anti-parallel tangents: ValueError."""
    ne = tangents.shape[0]
    nj = ref_twist.shape[0]
    for k in range(nj):
        f = k + 1
        if f == ne:
            f = 0
        sx, sy, sz = tangents[f, 0], tangents[f, 1], tangents[f, 2]
        vx, vy, vz = a1[f, 0], a1[f, 1], a1[f, 2]
        o0, o1, o2 = transport3(tangents[k, 0], tangents[k, 1], tangents[k, 2], sx, sy, sz, a1[k, 0], a1[k, 1],
                                a1[k, 2])
        cx = o1 * vz - o2 * vy
        cy = o2 * vx - o0 * vz
        cz = o0 * vy - o1 * vx
        num[k] = cx * sx + cy * sy + cz * sz
        den[k] = o0 * vx + o1 * vy + o2 * vz
    two_pi = 2.0 * math.pi
    for k in range(nj):
        angle = math.atan2(num[k], den[k])
        ref_twist[k] = angle + two_pi * math.floor((ref_twist[k] - angle) / two_pi + 0.5)


@njit(inline="always", **JIT)
def unwrap_near(angle, reference):
    """``angle + 2 pi m`` with the integer ``m`` that brings it closest to ``reference``."""
    two_pi = 2.0 * math.pi
    return angle + two_pi * math.floor((reference - angle) / two_pi + 0.5)


@njit(**JIT)
def material_frames(a1, a2, theta, m1_out, m2_out):
    """``m1 = cos(theta) a1 + sin(theta) a2``, ``m2 = -sin(theta) a1 + cos(theta) a2`` (Bergou 2008, Sec. 4.2.2)."""
    for j in range(a1.shape[0]):
        c = math.cos(theta[j])
        s = math.sin(theta[j])
        for d in range(3):
            m1_out[j, d] = c * a1[j, d] + s * a2[j, d]
            m2_out[j, d] = -s * a1[j, d] + c * a2[j, d]


@njit(**JIT)
def material_curvatures(kb, m1, m2, closed, out):
    """Material curvature of joint k seen from each adjacent edge (the "4D curvature").

    ``out[k, 0:2] = (kb_k . m2_e, -kb_k . m1_e)`` with ``e = k``, ``out[k, 2:4]`` the same with
    ``f = k + 1`` (Bergou 2008, Eq. 2, ``omega^j_i`` for ``j = i - 1, i``).
    """
    ne = m1.shape[0]
    for k in range(kb.shape[0]):
        f = k + 1
        if f == ne:
            f = 0
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = joint_material_curvature(kb[k, 0], kb[k, 1], kb[k, 2], m1, m2, k, f)


def any_perpendicular(t: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to ``t`` (used to seed frames)."""
    t = np.asarray(t, dtype=float)
    trial = np.array([0.0, 0.0, 1.0]) if abs(t[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    u = trial - np.dot(trial, t) * t
    return u / np.linalg.norm(u)
