"""rodlab.metrics: each definition against a closed form."""
import numpy as np

from rodlab import metrics
from rodlab.world import State, WorldBuilder, shapes


def _world():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_rod(shapes.straight(11, 2.0), E=1e8, G=4e7, rho=800.0, radius=0.02)
    b.add_rod(shapes.circle(8, 1.0, center=(0, 0, 1.0)), E=1e8, G=4e7, rho=800.0, radius=0.02, closed=True)
    b.add_body(3.0, (0.1, 0.2, 0.3), position=(0.0, 0.0, 2.0))
    return b.build()


def test_kinetic_energy_and_gravity_potential_closed_form():
    w = _world()
    s = State.zeros_for(w)
    v = np.array([0.3, -1.2, 0.5])
    s.vertex_v[:] = v
    s.body_v[0] = (1.0, 0.0, 0.0)
    s.body_w[0] = (0.0, 2.0, 0.0)
    rod_mass = 800.0 * np.pi * 0.02**2 * (2.0 + 1.0)
    expected = 0.5 * rod_mass * v @ v + 0.5 * 3.0 * 1.0 + 0.5 * 0.2 * 4.0
    assert abs(metrics.kinetic_energy(w, s) - expected) < 1e-12 * expected
    # rod 0 lies at z = 0, the ring at z = 1, the body at z = 2
    assert abs(metrics.gravity_potential(w, s) - 9.81 * (800.0 * np.pi * 0.02**2 * 1.0 * 1.0 + 3.0 * 2.0)) < 1e-9


def test_inextensibility_is_the_largest_relative_edge_strain():
    w = _world()
    s = State.zeros_for(w)
    assert metrics.inextensibility(w, s) < 1e-14
    s.rod_x(0)[-1, 0] += 0.02  # last edge 0.2 m -> 0.22 m
    assert abs(metrics.inextensibility(w, s) - 0.1) < 1e-12
    ring = s.rod_x(1)
    ring[0] = ring[0] + 0.5 * (ring[0] - ring[-1])  # the ring's closing edge counts too
    assert metrics.inextensibility(w, s) >= 0.5 - 1e-12


def test_timing_metrics():
    assert metrics.us_per_step(0.5, 1000) == 500.0
    assert metrics.us_per_vertex_step(0.5, 1000, 50) == 10.0
    assert metrics.newton_iters_per_step(30, 10) == 3.0 and metrics.newton_iters_per_step(5, 0) == 0.0
