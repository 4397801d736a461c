"""Shared builders for the DER tests: random rods, energies at perturbed centerlines."""
from __future__ import annotations

import numpy as np

from rodlab import BoundaryConditions, Clamp, Rod
from rodlab.der.stepper import DERStepper, DEROptions


def random_polyline(rng, n, closed=False, step=0.1, wiggle=0.6):
    if closed:
        s = np.linspace(0, 2 * np.pi, n, endpoint=False)
        x = np.stack([np.cos(s), np.sin(s), 0.2 * np.sin(2 * s)], axis=1)
        return x + 0.05 * rng.standard_normal((n, 3))
    d = np.array([1.0, 0.0, 0.0])
    pts = [np.zeros(3)]
    for _ in range(n - 1):
        d = d + wiggle * rng.standard_normal(3)
        d /= np.linalg.norm(d)
        pts.append(pts[-1] + step * (1 + 0.3 * rng.random()) * d)
    return np.array(pts)


def random_rod(rng, n=8, closed=False, anisotropic=True, curved=True, stretching=0.0, clamps=()):
    rest = random_polyline(rng, n, closed) if curved else np.stack([np.linspace(0, 1, n), np.zeros(n), np.zeros(n)], 1)
    bend = (1.3, 0.7) if anisotropic else 1.0
    return Rod.from_stiffness(rest, bending=bend, twisting=0.9, stretching=stretching, closed=closed,
                              boundary=BoundaryConditions(clamps=tuple(Clamp(e) for e in clamps)))


def perturbed_state(stepper, rng, scale=0.05):
    rod = stepper.rod
    x = rod.rest_positions + scale * rng.standard_normal(rod.rest_positions.shape)
    theta = 0.7 * rng.standard_normal(rod.n_edges)
    st = stepper.initial_state(x=x)
    st.theta[:] = theta
    return st


def energy_at(stepper, state, x_new):
    """Energy at ``x_new`` with the reference frames time-parallel transported from ``state``
    and the material angles held: the function whose gradient the DER forces are."""
    s = state.copy()
    from rodlab.der.stepper import _tangents
    from rodlab.geometry.curves import reference_twist, time_parallel_update

    t_old = _tangents(s.x, s.closed) if hasattr(s, "closed") else _tangents(s.x, stepper.closed)
    t_new = _tangents(x_new, stepper.closed)
    time_parallel_update(t_old, t_new, s.ref_d1)
    s.x = np.array(x_new)
    reference_twist(t_new, s.ref_d1, stepper.closed, state.ref_twist.copy(), s.ref_twist)
    return stepper.elastic_energy(s)


def fd_gradient(fun, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp = x.copy()
        xm = x.copy()
        xp[idx] += h
        xm[idx] -= h
        g[idx] = (fun(xp) - fun(xm)) / (2 * h)
    return g


def stepper_for(rod, **opts):
    return DERStepper(rod, options=DEROptions(dt=1e-4, **opts))


# the small worlds of the der simulator's call tests (test_der_call_cache.py, test_der_overhead.py)
SMALL_ROD_MATERIAL = dict(E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)


def rods_side_by_side(sizes, length, damping=0.5):
    """Straight rods of ``sizes`` vertices and ``length`` [m] along x, 0.1 m apart in y, each clamped
    at its start, under gravity with viscous ``damping`` [1/s]."""
    from rodlab.world import WorldBuilder, shapes

    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=damping)
    for k, n in enumerate(sizes):
        r = b.add_rod(shapes.straight(n, length, start=(0.0, 0.1 * k, 0.0)), **SMALL_ROD_MATERIAL)
        b.clamp(r, "start")
    return b.build()
