"""CPU time per step of der-implicit's barrier contact (IPC) on three worlds (issue #11, docs/contact-der-implicit.md).

    PYTHONPATH=src python bench/bench_der_implicit_contact.py [--scenes incline,capstan,pile] [--steps N]
        [--dump FILE.npz]

Worlds (SI units):

* ``incline``: the `incline` scene's world (6 vertices on a plane tilted 30 deg, mu 0.3, dt 5 ms,
  ``friction_eps_v`` 1e-6 m/s), 60 steps;
* ``capstan``: the `capstan` scene's world (wrap pi, mu 0.3, 24 arc segments, 39 vertices, an
  infinite cylinder, dt 2 ms, ``friction_eps_v`` 1e-6, ``contact_dhat`` 0.5 mm), 60 steps of its ramp;
* ``pile``: 8 rods x 16 vertices (0.15 m, r = 3 mm, E = 10 MPa, rho = 1000 kg/m^3) crossing above
  one point at heights 1.2 to 8.2 cm, dropped onto a plane and onto each other, rod-rod and
  rod-plane mu 0.4, damping 1 /s, dt 4 ms, ``friction_eps_v`` 1e-3 m/s (the default), 100 steps.

Each world is stepped once first (compilation excluded), then ``steps`` single steps, each timed
with ``time.process_time`` (CPU of this process: less disturbed than wall time on a shared
machine). Prints the mean and median CPU ms per step, Newton iterations per step, contacts and the
smallest gap; ``--dump`` writes every world's final positions and angles (for A/B runs of two
versions of the code against each other).
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes
from rodlab.world.obstacles import Plane


def pile_world(n_rods: int = 8, n_vertices: int = 16, length: float = 0.15, radius: float = 0.003,
               mu: float = 0.4):
    """``n_rods`` straight rods crossing above the origin, rod ``k`` turned by ``3 pi k / 8`` about z and
    ``1.2 + k`` cm above a plane z = 0 (so they land on each other one after the other); rod-rod and
    rod-plane friction ``mu``; gravity -z, damping 1 /s."""
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    for k in range(n_rods):
        a = 3.0 * math.pi * k / 8.0
        d = np.array([math.cos(a), math.sin(a), 0.0])
        centre = np.array([0.004 * math.cos(2.0 * k), 0.004 * math.sin(2.0 * k), 0.012 + 0.01 * k])
        b.add_rod(shapes.straight(n_vertices, length, start=tuple(centre - 0.5 * length * d), direction=tuple(d)),
                  E=1e7, G=4e6, rho=1000.0, radius=radius)
    b.add_obstacle(Plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)), friction=mu)
    b.set_contact(rods=True, friction=mu)
    return b.build()


def make(name: str):
    """``(simulator, state, steps)`` of a benchmark world."""
    if name == "incline":
        from rodlab.scenes.friction_scenes import incline_world
        world = incline_world(30.0, 0.3)[0]
        sim = make_simulator(world, "der-implicit", dt=0.005, friction_eps_v=1e-6)
        return sim, sim.initial_state(), 60
    if name == "capstan":
        from rodlab.scenes.friction_scenes import capstan_world
        world = capstan_world(math.pi, 0.3, ratio_end=1.3 * math.exp(0.3 * math.pi), t_ramp=0.5)[0]
        sim = make_simulator(world, "der-implicit", dt=0.002, friction_eps_v=1e-6, contact_dhat=0.0005)
        return sim, sim.initial_state(), 60
    if name == "pile":
        sim = make_simulator(pile_world(), "der-implicit", dt=0.004)
        return sim, sim.initial_state(), 100
    raise SystemExit(f"unknown world {name!r} (incline, capstan, pile)")


def run(name: str, steps: int | None):
    sim, state, n = make(name)
    n = steps or n
    sim.advance(state.copy(), 1)  # compile
    cpu, its, gaps, contacts = [], 0, [], []
    for _ in range(n):
        t0 = time.process_time()
        rep = sim.advance(state, 1)
        cpu.append(time.process_time() - t0)
        its += rep.newton_iters
        gaps.append(rep.contact_min_gap)
        contacts.append(rep.contacts_max)
    cpu = 1e3 * np.array(cpu)
    print(f"{name:8s} {state.vertex_x.shape[0]:4d} vertices  CPU {cpu.mean():8.3f} ms/step (median {np.median(cpu):.3f})"
          f"  {its / n:5.2f} Newton its/step  contacts {np.mean(contacts):5.1f}  min gap {min(gaps):.3e} m", flush=True)
    return state


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", default="incline,capstan,pile")
    ap.add_argument("--steps", type=int, default=None, help="steps per world (default: 60, 60, 100)")
    ap.add_argument("--dump", default=None, help="write the final states to this .npz")
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    out = {}
    for name in args.scenes.split(","):
        st = run(name, args.steps)
        out[f"{name}_x"], out[f"{name}_theta"] = st.vertex_x.copy(), st.edge_theta.copy()
    if args.dump:
        np.savez(args.dump, **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
