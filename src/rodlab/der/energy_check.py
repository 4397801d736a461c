"""The energy check of DER's compiled driver (:mod:`rodlab.der.batch`): a rod's mechanical energy
(kinetic + elastic + potential of gravity and constant point forces) at a call's start and end.

A call refuses to keep steps in which an undriven rod gained more than half its energy scale
(docs/der.md, "Energy check"). The sums are written as several independent running sums: one sum
over a rod is a chain of dependent additions (~4 cycles each, which LLVM may not reorder without
fast-math), and three such chains were ~0.85 us of a call of one step at 200 vertices (issue #13's
per-call target is 5 us; docs/der.md, "Per-call cost"). The driver's check sums over flat
per-coordinate arrays precomputed at setup (each vertex's mass and ``m g + F`` per coordinate, each
joint's isotropic bending coefficient): vectorised reductions (:data:`JIT_FM_INNER`), 0.69 -> 0.22 us
per energy at 200 vertices (docs/der-speed.md). The energy only accepts or refuses a call: its
rounding never reaches a trajectory."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..geometry._vec import JIT, JIT_FM_INNER, JIT_INNER
from ..geometry.der_joint import edge_stretch_energy
from ..numba_views import borrow_flat
from . import kernels as K

@njit(**JIT)
def mechanical_energy(x, v, mass, gravity, force, elastic):
    """``1/2 sum m |v|^2 + elastic - sum m g.x - sum F.x`` [J] of one rod, and its kinetic part.

    Two vertices per pass into four running sums: a single sum is a chain of dependent additions
    (~4 cycles each) that LLVM may not reorder, which made the energy check ~0.85 us of a call at
    200 vertices (docs/der.md, "Per-call cost")."""
    ka, kb_, pa, pb = 0.0, 0.0, 0.0, 0.0
    nv = x.shape[0]
    i = 0
    while i + 1 < nv:
        ka += _vertex_kinetic2(i, v, mass)
        kb_ += _vertex_kinetic2(i + 1, v, mass)
        pa += _vertex_work(i, x, mass, gravity, force)
        pb += _vertex_work(i + 1, x, mass, gravity, force)
        i += 2
    if i < nv:
        ka += _vertex_kinetic2(i, v, mass)
        pa += _vertex_work(i, x, mass, gravity, force)
    kinetic = 0.5 * (ka + kb_)
    return kinetic + elastic - (pa + pb), kinetic


@njit(inline="always", **JIT_INNER)
def _vertex_kinetic2(i, v, mass):
    """``m_i |v_i|^2`` [J], twice vertex ``i``'s kinetic energy."""
    return mass[i] * (v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2])


@njit(inline="always", **JIT_INNER)
def _vertex_work(i, x, mass, gravity, force):
    """``(m_i g + F_i) . x_i`` [J]: minus vertex ``i``'s potential energy of gravity and its constant force."""
    return ((mass[i] * gravity[0] + force[i, 0]) * x[i, 0] + (mass[i] * gravity[1] + force[i, 1]) * x[i, 1]
            + (mass[i] * gravity[2] + force[i, 2]) * x[i, 2])


@njit(**JIT_FM_INNER)
def _weighted_squares(c, a):
    """``sum_k c_k a_k^2`` of two 1-D arrays of one length: a reduction LLVM vectorises under the
    reassociation of :data:`JIT_FM` (one running sum per vector lane)."""
    total = 0.0
    for k in range(a.shape[0]):
        total += c[k] * (a[k] * a[k])
    return total


@njit(**JIT_FM_INNER)
def _dot(a, b):
    """``sum_k a_k b_k`` of two 1-D arrays of one length (vectorised, :func:`_weighted_squares`)."""
    total = 0.0
    for k in range(a.shape[0]):
        total += a[k] * b[k]
    return total


@njit(**JIT_INNER)
def rod_mechanical_energy(x, v, vertex_mass3, vertex_weight, elastic):
    """:func:`mechanical_energy` from the batch model's per-coordinate fields: ``vertex_mass3``
    (n, 3) each vertex's mass in every column, ``vertex_weight`` (n, 3) ``m_i g + F_i`` (gravity
    and constant point forces); two vectorised passes over the flat arrays (:func:`_dot`)."""
    kinetic = 0.5 * _weighted_squares(borrow_flat(vertex_mass3), borrow_flat(v))
    return kinetic + elastic - _dot(borrow_flat(vertex_weight), borrow_flat(x)), kinetic


@njit(**JIT_INNER)
def twist_free_elastic_energy(kb, lengths, rest_length, stretch_stiffness, joint_bend_coef, extensible):
    """Elastic energy [J] of a twist-free rod: isotropic bending ``sum_k c_k |kb_k|^2`` with
    ``joint_bend_coef`` (J, 3) holding ``c_k = (b_e + b_f) / (2 lbar_k)`` in every column (edges
    ``e = k``, ``f = k + 1`` wrapping on a closed rod), plus stretching where ``extensible``
    (an inextensible rod's stretching stiffness is 0: no term)."""
    bend = _weighted_squares(borrow_flat(joint_bend_coef), borrow_flat(kb))
    if not extensible:
        return bend
    stretch = 0.0
    for j in range(stretch_stiffness.shape[0]):
        if stretch_stiffness[j] > 0.0:
            stretch += edge_stretch_energy(stretch_stiffness[j], lengths[j], rest_length[j])
    return bend + stretch


def joint_bend_coefficients(bend_stiffness, voronoi_length, closed: bool):
    """``(b_e + b_f) / (2 lbar_k)`` [N m] of each joint of one rod (first bend stiffness column,
    the isotropic one), repeated in 3 columns (J, 3): :func:`twist_free_elastic_energy`'s
    ``joint_bend_coef``. Python, at setup."""
    b = np.asarray(bend_stiffness, dtype=float)[:, 0]
    nj = np.asarray(voronoi_length).shape[0]
    f = (np.arange(nj) + 1) % b.shape[0] if closed else np.arange(1, nj + 1)
    c = 0.5 * ((b[:nj] + b[f]) / np.asarray(voronoi_length, dtype=float))
    return np.repeat(c[:, None], 3, axis=1)


@njit(**JIT_INNER)
def _rod_energy(twist_free, extensible, x, v, theta, ref_d1, ref_twist, e3, s, kb, omega, rest_length, voronoi_length,
                rest_curvature, bend_stiffness, rest_twist, twist_stiffness, stretch_stiffness, vertex_mass3,
                vertex_weight, joint_bend_coef):
    """Mechanical energy of one rod (total, kinetic, elastic) [J] for the energy check, on its
    refreshed geometry (edges, lengths, tangents, curvature binormals; a general rod also its
    second reference directors ``e3[3]``). Rod slices of the model's fields: a named group
    passed to a compiled call that is not inlined costs ~0.3 us (every array copied and
    reference-counted).

    A twist-free rod (naturally straight, isotropic, untwisted: its twist vanishes) gets the
    energy whose gradient its step uses (``isotropic_bending_forces``): bending
    ``sum_k (b_e + b_f) |kb_k|^2 / (2 lbar_k)`` (Bergou 2008, Eq. 6 with ``B = b I``,
    ``wbar = 0``) plus stretching, without material frames (the general formula, equal up to
    round-off, costs ~4 us at 200 vertices: a sine and cosine per edge and the frames)."""
    if twist_free:
        el = twist_free_elastic_energy(kb, s[0], rest_length, stretch_stiffness, joint_bend_coef, extensible)
    else:
        el = K.elastic_energy(kb, ref_d1, e3[3], theta, ref_twist, s[0], rest_length, voronoi_length, rest_curvature,
                              bend_stiffness, rest_twist, twist_stiffness, stretch_stiffness, e3[4], e3[5], omega)
    total, kinetic = rod_mechanical_energy(x, v, vertex_mass3, vertex_weight, el)
    return total, kinetic, el
