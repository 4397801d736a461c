"""The energy check's sums (rodlab.der.energy_check: vectorised sums over per-coordinate fields
precomputed at setup, and the running sums of ``mechanical_energy``) against the plain formulas:
kinetic + elastic - work of gravity and constant forces, and a twist-free rod's isotropic bending
(Bergou et al. 2008, Eq. 6 with B = b I) plus stretching, for open and closed rods of odd and even
sizes (every remainder of the pairwise loops and of the vectorised ones)."""
import numpy as np
import pytest
from numba import njit

from rodlab.der.energy_check import (joint_bend_coefficients, mechanical_energy, rod_mechanical_energy,
                                     twist_free_elastic_energy)


@njit(cache=False)
def twist_free_elastic(kb, lengths, rest_length, stretch_stiffness, bend_coef, extensible):
    return twist_free_elastic_energy(kb, lengths, rest_length, stretch_stiffness, bend_coef, extensible)


@njit(cache=False)
def rod_mechanical(x, v, mass3, weight, elastic):
    return rod_mechanical_energy(x, v, mass3, weight, elastic)


def _vertices(nv):
    rng = np.random.default_rng(nv)
    x, v, force = rng.normal(size=(nv, 3)), rng.normal(size=(nv, 3)), rng.normal(size=(nv, 3))
    mass, gravity = rng.uniform(0.5, 2.0, nv), np.array([0.3, -0.2, -9.81])
    kinetic = 0.5 * np.sum(mass * np.sum(v * v, axis=1))
    work = np.sum((mass[:, None] * gravity + force) * x)
    return x, v, force, mass, gravity, kinetic, work


@pytest.mark.parametrize("nv", [1, 2, 3, 8, 9, 201])
def test_mechanical_energy_is_the_plain_sum(nv):
    x, v, force, mass, gravity, kinetic, work = _vertices(nv)
    got_total, got_kinetic = mechanical_energy(x, v, mass, gravity, force, 1.7)
    assert got_kinetic == pytest.approx(kinetic, rel=1e-13)
    assert got_total == pytest.approx(kinetic + 1.7 - work, rel=1e-13, abs=1e-13)
    # the driver's form, from the batch model's per-coordinate fields (as DERSimulator builds them)
    mass3, weight = np.repeat(mass[:, None], 3, axis=1), mass[:, None] * gravity + force
    got_total, got_kinetic = rod_mechanical(x, v, mass3, weight, 1.7)
    assert got_kinetic == pytest.approx(kinetic, rel=1e-13)
    assert got_total == pytest.approx(kinetic + 1.7 - work, rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("ne, closed", [(1, False), (2, False), (3, False), (8, False), (3, True), (4, True),
                                        (9, True), (200, False)])
def test_twist_free_elastic_energy_is_the_plain_sum(ne, closed):
    rng = np.random.default_rng(10 * ne + closed)
    nj = ne if closed else ne - 1
    kb = rng.normal(size=(nj, 3))
    lengths, rest_length, voronoi_length = rng.uniform(0.5, 1.5, ne), rng.uniform(0.5, 1.5, ne), rng.uniform(1.0, 3.0, nj)
    bend_stiffness = rng.uniform(0.1, 1.0, size=(ne, 2))
    stretch_stiffness = np.where(rng.uniform(size=ne) < 0.5, 0.0, rng.uniform(1.0, 5.0, ne))  # some inextensible
    bend = sum((bend_stiffness[k, 0] + bend_stiffness[(k + 1) % ne, 0]) * kb[k] @ kb[k] / (2.0 * voronoi_length[k])
               for k in range(nj))
    stretch = np.sum(0.5 * stretch_stiffness * (lengths / rest_length - 1.0) ** 2 * rest_length)
    coef = joint_bend_coefficients(bend_stiffness, voronoi_length, closed)
    assert coef.shape == (nj, 3)
    got = twist_free_elastic(kb, lengths, rest_length, stretch_stiffness, coef, True)
    assert got == pytest.approx(bend + stretch, rel=1e-13, abs=1e-300)
    # an inextensible rod has no stretching term
    got = twist_free_elastic(kb, lengths, rest_length, np.zeros(ne), coef, False)
    assert got == pytest.approx(bend, rel=1e-13, abs=1e-300)
