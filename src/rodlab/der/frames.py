"""Frames of a twist-free DER rod after steps that skipped them (Bergou et al. 2008, "Discrete
Elastic Rods"; the time-parallel reference frame of Bergou et al. 2010, "Discrete Viscous
Threads"): the compiled rebuild that :mod:`rodlab.der.batch` runs once per call.

A twist-free rod (open, naturally straight, isotropic, at most one prescribed material frame)
never twists, so its step skips the frames; after the steps its reference directors are carried
in time from the call's first tangents to its last, the material frame is the Bishop frame grown
from the clamp's director (or from edge 0's), and the material angles and the reference twist
are unwrapped against their previous values (``DERStepper``'s rule). docs/der.md, "Per-call
cost", has what this costs per call and why it is written as one fused pass.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_INNER
from ..geometry.curves import (
    bishop_frames,
    complete_frames,
    compute_edges,
    compute_tangents,
    material_frames,
    orthonormalize3,
    reference_twist,
    reference_twist3,
    time_parallel_update,
    transport3,
)
from . import kernels as K


@njit(**JIT)
def rebuild_twist_free_frames(x, closed, theta, ref_d1, ref_twist, t_start, clamp_edges, clamp_m1,
                              edges, lengths, t_now, d2, m1_old, u, v, previous):
    """Frames of a twist-free rod after steps that skipped them (``DERStepper``'s rule): the
    reference frames are carried in time from the tangents ``t_start`` to the current ones; the
    material frame is the Bishop frame grown from the prescribed director ``clamp_m1[0]`` of the
    first clamped edge (or from edge 0's material director, carried in time); the angles and the
    reference twist are unwrapped against their previous values. The tangents and lengths of
    ``x`` are computed here into ``t_now`` and ``lengths`` (:func:`rebuild_frames_on_tangents`
    where the caller has them)."""
    compute_edges(x, closed, edges)
    compute_tangents(edges, lengths, t_now)
    rebuild_frames_on_tangents(closed, theta, ref_d1, ref_twist, t_start, t_now, clamp_edges, clamp_m1, d2, m1_old, u,
                               v, previous)


@njit(**JIT_INNER)
def rebuild_frames_on_tangents(closed, theta, ref_d1, ref_twist, t_start, t_now, clamp_edges, clamp_m1, d2, m1_old,
                               u, v, previous):
    """:func:`rebuild_twist_free_frames` given the current unit tangents ``t_now`` (the step
    leaves them, bitwise those of its final positions, in its scratch). Scratch: ``d2``,
    ``m1_old``, ``u``, ``v`` (E, 3), ``previous`` (>= J). No allocation unless the seed edge is
    not edge 0."""
    if clamp_edges.shape[0] == 0:  # only edge 0's old material director is used (the seed)
        complete_frames(t_start[:1], ref_d1[:1], d2[:1])
        material_frames(ref_d1[:1], d2[:1], theta[:1], m1_old[:1], v[:1])
    if clamp_edges.shape[0] > 0:
        seed_edge = clamp_edges[0]
        seed = clamp_m1[0]  # read only (bishop_frames writes u, v)
    else:
        seed_edge = 0
        time_parallel_update(t_start[:1], t_now[:1], m1_old[:1])
        seed = m1_old[0]
    if seed_edge == 0:
        _frames_from_edge0(closed, theta, ref_d1, ref_twist, t_start, t_now, seed, u)
        return
    time_parallel_update(t_start, t_now, ref_d1)
    bishop_frames(t_now[seed_edge:], seed, np.bool_(False), u[seed_edge:], v[seed_edge:])
    if seed_edge > 0:
        back = np.empty((seed_edge + 1, 3))
        for j in range(seed_edge + 1):
            for d in range(3):
                back[j, d] = t_now[seed_edge - j, d]
        ub = np.empty_like(back)
        vb = np.empty_like(back)
        bishop_frames(back, seed, np.bool_(False), ub, vb)
        for j in range(seed_edge):
            for d in range(3):  # a loop: a row assignment compiles numba's broadcasting error path
                u[j, d] = ub[seed_edge - j, d]
    nj = ref_twist.shape[0]
    for k in range(nj):
        previous[k] = ref_twist[k]
    reference_twist(t_now, ref_d1, closed, previous[:nj], ref_twist)
    K.set_material_angles(ref_d1, t_now, u, theta)


@njit(**JIT_INNER)
def _frames_from_edge0(closed, theta, ref_d1, ref_twist, t_start, t_now, seed, u):
    """:func:`rebuild_frames_on_tangents` with the Bishop frame grown from edge 0, in one pass
    over the edges: per edge the time-parallel update of ``ref_d1``, the Bishop director ``u``
    (a chain along the rod: each one waits on the last one's transport, square root and
    divisions), the reference twist of the joint before it and the material angle. The
    independent work of each edge overlaps the chain's latency; each quantity is computed with
    the same operations as the separate passes (:func:`time_parallel_update`,
    :func:`rodlab.geometry.curves.bishop_frames`, :func:`reference_twist`,
    ``set_material_angles``), so the results are bitwise theirs."""
    ne = theta.shape[0]
    nj = ref_twist.shape[0]
    two_pi = 2.0 * math.pi
    for j in range(ne):
        tx, ty, tz = t_now[j, 0], t_now[j, 1], t_now[j, 2]
        o0, o1, o2 = transport3(t_start[j, 0], t_start[j, 1], t_start[j, 2], tx, ty, tz, ref_d1[j, 0], ref_d1[j, 1],
                                ref_d1[j, 2])
        a0, a1, a2 = orthonormalize3(tx, ty, tz, o0, o1, o2)
        ref_d1[j, 0], ref_d1[j, 1], ref_d1[j, 2] = a0, a1, a2
        if j == 0:
            u0, u1, u2 = orthonormalize3(tx, ty, tz, seed[0], seed[1], seed[2])
        else:
            p0, p1, p2 = transport3(t_now[j - 1, 0], t_now[j - 1, 1], t_now[j - 1, 2], tx, ty, tz, u[j - 1, 0],
                                    u[j - 1, 1], u[j - 1, 2])
            u0, u1, u2 = orthonormalize3(tx, ty, tz, p0, p1, p2)
            k = j - 1
            if k < nj:
                ref_twist[k] = reference_twist3(t_now[k, 0], t_now[k, 1], t_now[k, 2], tx, ty, tz, ref_d1[k, 0],
                                                ref_d1[k, 1], ref_d1[k, 2], a0, a1, a2, ref_twist[k])
        u[j, 0], u[j, 1], u[j, 2] = u0, u1, u2
        c0 = a1 * u2 - a2 * u1
        c1 = a2 * u0 - a0 * u2
        c2 = a0 * u1 - a1 * u0
        ang = math.atan2(c0 * tx + c1 * ty + c2 * tz, a0 * u0 + a1 * u1 + a2 * u2)
        theta[j] = ang + two_pi * math.floor((theta[j] - ang) / two_pi + 0.5)
    if closed and nj == ne:  # the closing joint (a twist-free rod is open: kept for completeness)
        k = ne - 1
        ref_twist[k] = reference_twist3(t_now[k, 0], t_now[k, 1], t_now[k, 2], t_now[0, 0], t_now[0, 1], t_now[0, 2],
                                        ref_d1[k, 0], ref_d1[k, 1], ref_d1[k, 2], ref_d1[0, 0], ref_d1[0, 1],
                                        ref_d1[0, 2], ref_twist[k])


__all__ = ["rebuild_frames_on_tangents", "rebuild_twist_free_frames"]
