"""Interleaved A/B of the der-implicit many-strands step: this tree against another copy of rodlab.

    python bench/ab_der_implicit_strands.py OLD_TREE [--rounds 2] [--strands 1000] [--steps 16]
        [--reps 3] [--line-search] [--threads 1]

``OLD_TREE``: a directory holding another version of this repository (``git archive COMMIT | tar -x
-C DIR``). Each round runs one process per tree (order alternated) with that tree's ``src`` on
``PYTHONPATH``: it builds ``bench_world.strands_world(strands)`` (32-vertex hair strands), steps it
30 times (compilation, bent strands), then times ``advance(state, steps)`` from copies of that state,
``reps`` times, with ``threads`` numba threads: process CPU time and wall time per step. It then steps
50 more and prints a hash of the state (positions, velocities, angles, reference directors); the two
trees' final states are compared (max abs difference, bitwise). Medians of CPU time drift with a
shared machine's load: compare the interleaved pairs, and report the load printed with each.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def child(tree: str, strands: int, steps: int, reps: int, line_search: bool, threads: int, out: str) -> None:
    import numba

    sys.path.insert(0, str(Path(tree) / "bench"))
    from bench_world import strands_world
    from rodlab.solvers import simulator_class

    opts = {"newton_iters": 1} if line_search else {"newton_iters": 1, "line_search": 0}
    sim = simulator_class("der-implicit")(strands_world(strands), **opts)
    s0 = sim.initial_state()
    sim.advance(s0, 30)
    numba.set_num_threads(threads)
    cpu, wall = [], []
    for _ in range(reps):
        st = s0.copy()
        sim.advance(st, 1)
        c, w = time.process_time(), time.perf_counter()
        sim.advance(st, steps)
        cpu.append((time.process_time() - c) / steps * 1e6)
        wall.append((time.perf_counter() - w) / steps * 1e6)
    st = s0.copy()
    sim.advance(st, 50)
    x = np.concatenate([st.vertex_x.ravel(), st.vertex_v.ravel(), st.edge_theta.ravel(), st.edge_ref_d1.ravel()])
    np.save(out, x)
    print("AB " + json.dumps({"cpu": cpu, "wall": wall, "hash": hashlib.sha1(x.tobytes()).hexdigest()[:12]}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old_tree")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--strands", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--line-search", action="store_true", help="the default Armijo search (else full steps)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        tree, out = a.child.split("::")
        child(tree, a.strands, a.steps, a.reps, a.line_search, a.threads, out)
        return
    trees = {"old": str(Path(a.old_tree).resolve()), "new": str(ROOT)}
    print(f"load at start {os.getloadavg()}")
    best = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
            for name, tree in order:
                out = str(Path(tmp) / f"{name}.npy")
                cmd = [sys.executable, __file__, a.old_tree, "--strands", str(a.strands), "--steps", str(a.steps),
                       "--reps", str(a.reps), "--threads", str(a.threads), "--child", f"{tree}::{out}"]
                if a.line_search:
                    cmd.append("--line-search")
                proc = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(Path(tree) / "src")},
                                      capture_output=True, text=True)
                lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("AB ")]
                if not lines:
                    sys.exit(f"{name}: no result (exit {proc.returncode}): {proc.stderr[-2000:]}")
                d = json.loads(lines[0][3:])
                best[name].append(min(d["cpu"]))
                print(f"round {r} {name}: CPU us/step least {min(d['cpu']):.0f}, wall median "
                      f"{sorted(d['wall'])[len(d['wall']) // 2]:.0f}, state {d['hash']}, load {os.getloadavg()[0]:.1f}",
                      flush=True)
        x_old, x_new = np.load(Path(tmp) / "old.npy"), np.load(Path(tmp) / "new.npy")
    print(f"final states: max abs difference {np.abs(x_old - x_new).max():.3e}, "
          f"{'bitwise equal' if np.array_equal(x_old, x_new) else 'not bitwise equal'}")
    for name, values in best.items():
        print(f"{name}: least CPU us/step per round {', '.join(f'{v:.0f}' for v in values)}")
    print(f"load at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
