"""Energy lost by the constraint step under tension (docs/coupling.md): a rod hanging from a
clamp, pulled by a tip force (rod alone) or a welded body, kicked sideways; the ``der``
simulator with ``projection="fast"`` (the paper's fast projection) and ``"symplectic"`` (RATTLE).

    python bench/bench_coupling_tension.py     # ~1 min (compilation included)
"""
import numpy as np

from rodlab.scenes.coupling_scenes import disk_inertia, set_body_velocity
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder

n, L = 21, 0.5
x = np.zeros((n, 3))
x[:, 2] = -np.linspace(0, L, n)
kick = np.zeros((n, 3))
kick[2:, 0] = 0.1 * np.sin(np.pi * np.linspace(0, 1, n))[2:]


def hanging(force=0.0, body_mass=None):
    b = WorldBuilder(gravity=(0, 0, -9.81) if body_mass is not None else (0, 0, 0))
    r = b.add_rod(x, bending=0.01, twisting=0.01, linear_density=0.02)
    b.clamp(r, "start")
    if force:
        b.add_point_force(r, n - 1, (0.0, 0.0, -force))
    if body_mass is not None:
        body = b.add_body(body_mass, disk_inertia(body_mass, 0.02, 0.01, axis=2), position=x[-2:].mean(0) + [0, 0, -0.01])
        b.weld(r, "end", body)
    return b.build()


def loss(world, projection, force=0.0, seconds=2.0):
    """Energy lost over ``seconds`` divided by the kinetic energy after the first step."""
    sim = make_simulator(world, "der", projection=projection)
    s = sim.initial_state()
    s.vertex_v[...] = kick
    if world.bodies:
        set_body_velocity(sim, s, 0, [0.0, 0.0, 0.0])

    def energy(s):  # the tip force's potential F z_tip added (energies() leaves point forces out)
        return sim.energies(s)["total"] + force * s.vertex_x[-1, 2]

    sim.advance(s, 1)
    e0, k0 = energy(s), sim.energies(s)["kinetic"]
    sim.advance(s, int(seconds / sim.dt))
    return (e0 - energy(s)) / k0, sim.dt


if __name__ == "__main__":
    print("2 s simulated; loss = energy lost / kinetic energy after the first step")
    for projection in ("fast", "symplectic"):
        for F in (0.0, 5.0):
            value, dt = loss(hanging(force=F), projection, F)
            print(f"projection={projection:10s} rod alone, tip force {F:g} N: loss {value:.3g} (dt {dt:.3g} s)")
        for M in (0.01, 0.5):
            value, dt = loss(hanging(body_mass=M), projection)
            print(f"projection={projection:10s} welded body {M:g} kg: loss {value:.3g} (dt {dt:.3g} s)")
