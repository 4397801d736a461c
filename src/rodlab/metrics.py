"""One definition per metric, whatever the method (the names every scene and report uses).

- ``inextensibility``: ``max over every edge of every rod |l / lbar - 1|`` (dimensionless);
- ``newton_iters``: nonlinear iterations per step, averaged over the run (0 for explicit methods);
- ``us_per_step``: wall time inside the simulator's stepping calls per step [us];
- ``us_per_vertex_step``: ``us_per_step`` per vertex of the world [us];
- ``kinetic_energy``: ``1/2 sum m |v|^2`` of the lumped vertex masses plus the bodies' translational
  and rotational energy [J];
- ``gravity_potential``: ``-sum m g . x`` over vertices and bodies [J], zero at the origin;
- ``tip``: the last vertex of a rod [m];
- ``min_gap``, ``mean_contacts``, ``max_contacts``: the contact bookkeeping of a run
  (:func:`contact_summary`).
"""
from __future__ import annotations

import math

import numpy as np

from .geometry.rotations import quat_to_matrix


def edge_lengths(world, state) -> np.ndarray:
    """Current length of every edge of every rod (E,) [m], closed rods' closing edges included."""
    out = np.empty(world.n_edges)
    for r in range(world.n_rods):
        x = state.rod_x(r)
        e = np.diff(x, axis=0)
        if world.rods[r].closed:
            e = np.vstack([e, x[:1] - x[-1:]])
        out[world.rod_edges(r)] = np.linalg.norm(e, axis=1)
    return out


def inextensibility(world, state) -> float:
    """``max |l / lbar - 1|`` over every edge of every rod."""
    return float(np.max(np.abs(edge_lengths(world, state) / world.edge_rest_length - 1.0)))


def newton_iters_per_step(total_newton_iters: int, steps: int) -> float:
    """Nonlinear iterations per step, averaged (0 steps: 0)."""
    return float(total_newton_iters) / steps if steps > 0 else 0.0


def us_per_step(wall_s: float, steps: int) -> float:
    """Stepping wall time per step [us]."""
    return 1e6 * float(wall_s) / steps if steps > 0 else 0.0


def us_per_vertex_step(wall_s: float, steps: int, n_vertices: int) -> float:
    return us_per_step(wall_s, steps) / max(int(n_vertices), 1)


def contact_summary(min_gap: float, contacts_sum: int, contacts_max: int, steps: int) -> dict:
    """The contact metrics every contact scene reports (issue "Contact and friction"): ``min_gap``
    [m] (smallest gap over the run; negative = penetration; ``None`` when nothing came near),
    ``mean_contacts`` (active contacts per step, averaged over steps) and ``max_contacts``."""
    return {"min_gap": float(min_gap) if math.isfinite(min_gap) else None,
            "mean_contacts": float(contacts_sum) / steps if steps > 0 else 0.0,
            "max_contacts": int(contacts_max)}


def kinetic_energy(world, state) -> float:
    """Translational energy of the lumped vertex masses plus the bodies' energy [J]. (Methods with
    rotational inertia per edge add theirs through ``Simulator.energies``.)"""
    e = 0.5 * float(np.sum(world.vertex_mass[:, None] * state.vertex_v**2))
    for b, body in enumerate(world.bodies):
        e += 0.5 * body.mass * float(state.body_v[b] @ state.body_v[b])
        w = state.body_w[b]
        e += 0.5 * float(w @ body.inertia @ w)
    return e


def gravity_potential(world, state) -> float:
    g = np.asarray(world.loads.gravity, dtype=float)
    e = -float(np.sum(world.vertex_mass * (state.vertex_x @ g)))
    for b, body in enumerate(world.bodies):
        e -= body.mass * float(state.body_x[b] @ g)
    return e


def tip(world, state, rod: int = 0) -> np.ndarray:
    """Position of rod ``rod``'s last vertex [m]."""
    return np.array(state.rod_x(rod)[-1])


def body_rotation(state, b: int) -> np.ndarray:
    return quat_to_matrix(np.ascontiguousarray(state.body_q[b]))
