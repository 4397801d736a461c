"""The energy check of DER's compiled driver (:mod:`rodlab.der.batch`): a rod's mechanical energy
(kinetic + elastic + potential of gravity and constant point forces) at a call's start and end.

A call refuses to keep steps in which an undriven rod gained more than half its energy scale
(docs/der.md, "Energy check"). The sums are written as several independent running sums: one sum
over a rod is a chain of dependent additions (~4 cycles each, which LLVM may not reorder without
fast-math), and three such chains were ~0.85 us of a call of one step at 200 vertices (issue #13's
per-call target is 5 us; docs/der.md, "Per-call cost")."""
from __future__ import annotations

from numba import njit

from ..geometry._vec import JIT, JIT_INNER
from ..geometry.der_joint import edge_stretch_energy
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


@njit(inline="always", **JIT_INNER)
def _joint_isotropic_bend_energy(k, kb, bend_stiffness, voronoi_length, ne):
    """``(b_e + b_f) |kb_k|^2 / (2 lbar_k)`` [J] of joint ``k`` (edges ``e = k``, ``f = k + 1``,
    wrapping to 0 on a closed rod)."""
    f = k + 1
    if f == ne:
        f = 0
    c = (bend_stiffness[k, 0] + bend_stiffness[f, 0]) / voronoi_length[k]
    return 0.5 * c * (kb[k, 0] * kb[k, 0] + kb[k, 1] * kb[k, 1] + kb[k, 2] * kb[k, 2])


@njit(inline="always", **JIT_INNER)
def _edge_stretch_term(j, stretch_stiffness, lengths, rest_length):
    """Edge ``j``'s stretching energy [J] (0 for an inextensible edge)."""
    if stretch_stiffness[j] > 0.0:
        return edge_stretch_energy(stretch_stiffness[j], lengths[j], rest_length[j])
    return 0.0


@njit(inline="always", **JIT_INNER)
def _twist_free_elastic_energy(kb, s, rest_length, voronoi_length, bend_stiffness, stretch_stiffness):
    """Elastic energy [J] of a twist-free rod: isotropic bending plus stretching, two joints and
    two edges per pass into four running sums (see :func:`mechanical_energy`)."""
    ne, nj = bend_stiffness.shape[0], kb.shape[0]
    lengths = s[0]
    ba, bb, sa, sb = 0.0, 0.0, 0.0, 0.0
    k = 0
    while k + 1 < nj:
        ba += _joint_isotropic_bend_energy(k, kb, bend_stiffness, voronoi_length, ne)
        bb += _joint_isotropic_bend_energy(k + 1, kb, bend_stiffness, voronoi_length, ne)
        sa += _edge_stretch_term(k, stretch_stiffness, lengths, rest_length)
        sb += _edge_stretch_term(k + 1, stretch_stiffness, lengths, rest_length)
        k += 2
    if k < nj:
        ba += _joint_isotropic_bend_energy(k, kb, bend_stiffness, voronoi_length, ne)
    for j in range(k, ne):  # the edges past the last pair (an open rod has one edge more than joints)
        sa += _edge_stretch_term(j, stretch_stiffness, lengths, rest_length)
    return (ba + bb) + (sa + sb)


@njit(**JIT_INNER)
def _rod_energy(twist_free, x, v, theta, ref_d1, ref_twist, e3, s, kb, omega, rest_length, voronoi_length,
                rest_curvature, bend_stiffness, rest_twist, twist_stiffness, stretch_stiffness, mass, gravity, force):
    """Mechanical energy of one rod (total, kinetic, elastic) [J] for the energy check, on its
    refreshed geometry (edges, lengths, tangents, curvature binormals; a general rod also its
    second reference directors ``e3[3]``). Rod slices of the model's fields: a named group
    passed to a compiled call that is not inlined costs ~0.3 us (every array copied and
    reference-counted).

    A twist-free rod (naturally straight, isotropic, untwisted: its twist vanishes) gets the
    energy whose gradient its step uses (``isotropic_bending_forces``): bending
    ``sum_k (b_e + b_f) |kb_k|^2 / (2 lbar_k)`` (Bergou 2008, Eq. 6 with ``B = b I``,
    ``wbar = 0``) plus stretching, one pass without material frames (the general formula, equal
    up to round-off, costs ~4 us at 200 vertices: a sine and cosine per edge and the frames)."""
    if twist_free:
        el = _twist_free_elastic_energy(kb, s, rest_length, voronoi_length, bend_stiffness, stretch_stiffness)
    else:
        el = K.elastic_energy(kb, ref_d1, e3[3], theta, ref_twist, s[0], rest_length, voronoi_length, rest_curvature,
                              bend_stiffness, rest_twist, twist_stiffness, stretch_stiffness, e3[4], e3[5], omega)
    total, kinetic = mechanical_energy(x, v, mass, gravity, force, el)
    return total, kinetic, el
