"""CPU per step of closed DER rods (rings) against open ones of the same size (docs/der-speed.md,
"H-rings"), for interleaved A/B runs against an old tree.

    RODLAB_JIT_ONLY=1 PYTHONPATH=src python bench/bench_der_rings.py                      # this tree
    python bench/bench_der_rings.py --ab /tmp/old/src --rounds 5                          # interleaved A/B

Worlds (E 1e7 Pa, G = E / 3, rho 1000 kg/m^3, rod radius 2 mm, gravity, damping 0.5 1/s, dt 2e-4 s,
energy check off): ``ring`` closed circles of radius 2 cm (naturally curved), ``arc`` open 3/4
arcs of that circle (naturally curved, so not twist-free), ``open`` straight rods 12 cm long
(twist-free); ``-clamp``: one edge of the first and of the last rod clamped. Specs ``KIND:LINKSxN``.
Each: 100 steps, then the least of 5 calls of 2000 steps, CPU (``time.process_time``) per step, on
one thread (``NUMBA_NUM_THREADS=1``: the parallel driver's threads would count their waiting).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

DEFAULT = ["ring:1x8", "ring-clamp:1x8", "ring-clamp:1x16", "arc-clamp:1x8", "open:1x8", "ring-clamp:4x8"]


def _shape(kind: str, n: int, k: int) -> tuple[np.ndarray, bool]:
    if kind.startswith("open"):
        return np.stack([np.linspace(0.0, 0.12, n), np.full(n, k * 0.05), np.zeros(n)], axis=1), False
    closed = kind.startswith("ring")
    phi = (2.0 * math.pi * np.arange(n) / n) if closed else (1.5 * math.pi * np.arange(n) / (n - 1))
    return np.array([k * 0.05, 0.0, 0.0]) + 0.02 * np.stack([np.cos(phi), np.zeros(n), np.sin(phi)], axis=1), closed


def world(kind: str, links: int, n: int):
    from rodlab.world import WorldBuilder

    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    for k in range(links):
        x, closed = _shape(kind, n, k)
        b.add_rod(x, E=1e7, G=1e7 / 3, rho=1000.0, radius=0.002, closed=closed)
    if kind.endswith("-clamp"):
        b.clamp(0, n // 2 - 1)
        b.clamp(links - 1, n - 1 if kind.startswith("ring") else n - 2)
    return b.build()


def measure(specs: list[str]) -> dict:
    from rodlab.solvers import make_simulator

    out = {}
    for spec in specs:
        kind, size = spec.split(":")
        links, n = map(int, size.split("x"))
        sim = make_simulator(world(kind, links, n), "der", dt=2e-4, energy_check=False)
        st = sim.initial_state()
        sim.advance(st, 100)
        best = math.inf
        for _ in range(5):
            t = time.process_time()
            sim.advance(st, 2000)
            best = min(best, (time.process_time() - t) / 2000 * 1e6)
        out[spec] = best
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", nargs="+", default=DEFAULT)
    ap.add_argument("--ab", default=None, help="old tree's src folder: interleaved A/B")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.json or a.ab is None:
        res = measure(a.specs)
        print(json.dumps(res) if a.json else "\n".join(f"{k:18s} {v:6.2f} us/step" for k, v in res.items()))
        return
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    trees = {"old": a.ab, "new": here}
    runs = {"old": [], "new": []}
    for r in range(a.rounds):
        for name in (("old", "new") if r % 2 == 0 else ("new", "old")):
            env = dict(os.environ, PYTHONPATH=trees[name], RODLAB_JIT_ONLY="1", NUMBA_NUM_THREADS="1")
            o = subprocess.run([sys.executable, __file__, "--json", "--specs", *a.specs], env=env, capture_output=True,
                               text=True, check=True)
            runs[name].append(json.loads(o.stdout.strip().splitlines()[-1]))
    print(f"load {os.getloadavg()[0]:.1f}; least over {a.rounds} rounds, us per step")
    for spec in a.specs:
        old, new = min(d[spec] for d in runs["old"]), min(d[spec] for d in runs["new"])
        print(f"{spec:18s} old {old:6.2f}  new {new:6.2f}  new/old {new / old:.3f}")


if __name__ == "__main__":
    main()
