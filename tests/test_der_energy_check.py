"""The energy check's sums (rodlab.der.energy_check, written as several running sums) against the
plain formulas: kinetic + elastic - work of gravity and constant forces, and a twist-free rod's
isotropic bending (Bergou et al. 2008, Eq. 6 with B = b I) plus stretching, for open and closed rods
of odd and even sizes (every remainder branch of the pairwise loops)."""
import numpy as np
import pytest
from numba import njit

from rodlab.der.energy_check import _twist_free_elastic_energy, mechanical_energy


@njit(cache=False)
def twist_free_elastic(kb, s, rest_length, voronoi_length, bend_stiffness, stretch_stiffness):
    return _twist_free_elastic_energy(kb, s, rest_length, voronoi_length, bend_stiffness, stretch_stiffness)


@pytest.mark.parametrize("nv", [1, 2, 3, 8, 9])
def test_mechanical_energy_is_the_plain_sum(nv):
    rng = np.random.default_rng(nv)
    x, v, force = rng.normal(size=(nv, 3)), rng.normal(size=(nv, 3)), rng.normal(size=(nv, 3))
    mass, gravity, elastic = rng.uniform(0.5, 2.0, nv), np.array([0.3, -0.2, -9.81]), 1.7
    kinetic = 0.5 * np.sum(mass * np.sum(v * v, axis=1))
    total = kinetic + elastic - np.sum((mass[:, None] * gravity + force) * x)
    got_total, got_kinetic = mechanical_energy(x, v, mass, gravity, force, elastic)
    assert got_kinetic == pytest.approx(kinetic, rel=1e-13)
    assert got_total == pytest.approx(total, rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("ne, closed", [(2, False), (3, False), (8, False), (3, True), (4, True), (9, True)])
def test_twist_free_elastic_energy_is_the_plain_sum(ne, closed):
    rng = np.random.default_rng(10 * ne + closed)
    nj = ne if closed else ne - 1
    kb = rng.normal(size=(nj, 3))
    s = rng.uniform(0.5, 1.5, size=(7, ne))  # s[0]: edge lengths
    rest_length, voronoi_length = rng.uniform(0.5, 1.5, ne), rng.uniform(1.0, 3.0, nj)
    bend_stiffness = rng.uniform(0.1, 1.0, size=(ne, 2))
    stretch_stiffness = np.where(rng.uniform(size=ne) < 0.5, 0.0, rng.uniform(1.0, 5.0, ne))  # some inextensible
    bend = sum((bend_stiffness[k, 0] + bend_stiffness[(k + 1) % ne, 0]) * kb[k] @ kb[k] / (2.0 * voronoi_length[k])
               for k in range(nj))
    stretch = np.sum(0.5 * stretch_stiffness * (s[0] / rest_length - 1.0) ** 2 * rest_length)
    got = twist_free_elastic(kb, s, rest_length, voronoi_length, bend_stiffness, stretch_stiffness)
    assert got == pytest.approx(bend + stretch, rel=1e-13)
