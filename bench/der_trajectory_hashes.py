"""Hashes of DER trajectories over several worlds and call patterns, for bitwise A/B checks of
a refactor against an old tree (issue #13 item 3: the per-step physics must stay bitwise the same).

    PYTHONPATH=src python bench/der_trajectory_hashes.py new.json
    PYTHONPATH=/tmp/old/src python bench/der_trajectory_hashes.py old.json
    python bench/der_trajectory_hashes.py --compare old.json new.json

Worlds: cantilevers of 10, 50, 200 vertices (twist-free path), three rods, a pinned ring, a helix
(general path), a moving clamp, constant and time-dependent point forces, a rod clamped at both
ends under a load; default options, and fast projection replaced by RATTLE or no energy check for
three of them. Each: 30 calls of one step, one of 30 steps, calls of mixed lengths, an edit of a
position, a one-bit edit of a velocity, a second state stepped on the same simulator; a SHA-256
of every state array and ``t`` after each call.
"""
import hashlib, sys
import numpy as np
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

MAT = dict(E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)

def cantilever(n):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 0.5), **MAT); b.clamp(0, "start"); return b.build()

def several():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    for k, n in enumerate((7, 12, 20)):
        b.add_rod(shapes.straight(n, 0.3, start=(0.0, 0.1 * k, 0.0)), **MAT); b.clamp(k, "start")
    return b.build()

def ring():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.2)
    b.add_rod(shapes.circle(16, 0.5), **MAT); b.pin(0, 0); return b.build()

def helix():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.3)
    b.add_rod(shapes.helix(16, 0.05, 0.04, 1.0), **MAT); b.clamp(0, "start"); return b.build()

def moving():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    def motion(t):
        c, s = np.cos(3 * t), np.sin(3 * t)
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]]), np.array([0.0, 0.0, 0.02 * np.sin(5 * t)])
    b.add_rod(shapes.straight(14, 0.4), **MAT); b.clamp(0, "start", motion=motion); return b.build()

def forces():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(12, 0.4), **MAT); b.clamp(0, "start")
    b.add_point_force(0, -1, (0.0, 0.001, 0.0))
    b.add_point_force(0, 5, lambda t: np.array([0.0, 0.0, 0.002 * np.cos(20 * t)]))
    return b.build()

def const_force_two_ends():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(12, 0.4), **MAT); b.clamp(0, "start"); b.clamp(0, "end")
    b.add_point_force(0, 6, (0.0, 0.0, -0.01))
    return b.build()

WORLDS = dict(cant10=lambda: cantilever(10), cant50=lambda: cantilever(50), cant200=lambda: cantilever(200),
              several=several, ring=ring, helix=helix, moving=moving, forces=forces, twoends=const_force_two_ends)
FIELDS = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")

def digest(state):
    h = hashlib.sha256()
    for f in FIELDS:
        h.update(np.ascontiguousarray(getattr(state, f)).tobytes())
    h.update(np.float64(state.t).tobytes())
    return h.hexdigest()[:16]

def run(name, opts):
    sim = make_simulator(WORLDS[name](), "der", **opts)
    out = []
    s = sim.initial_state()
    for _ in range(30):
        sim.advance(s, 1)
        out.append(digest(s))
    sim.advance(s, 30); out.append(digest(s))
    for k in (1, 2, 3, 5, 1, 1, 7):
        sim.advance(s, k); out.append(digest(s))
    s.vertex_x[-1, 1] += 1e-6  # a user edit between calls
    for _ in range(5):
        sim.advance(s, 1); out.append(digest(s))
    s.vertex_v[2, 0] = -0.0 if s.vertex_v[2, 0] == 0.0 else s.vertex_v[2, 0] * (1 + 1e-15)
    sim.advance(s, 1); out.append(digest(s))
    s2 = s.copy()
    sim.advance(s2, 3); out.append(digest(s2))  # another state on the same simulator
    sim.advance(s, 3); out.append(digest(s))
    return out

def compare(a_path, b_path) -> int:
    import json
    a, b = json.load(open(a_path)), json.load(open(b_path))
    bad = [(k, i) for k in a for i, (x, y) in enumerate(zip(a[k], b.get(k, []))) if x != y]
    bad += [(k, -1) for k in a if len(a[k]) != len(b.get(k, []))]
    print(f"{len(a)} runs, {sum(len(v) for v in a.values())} digests; {len(bad)} differ {bad[:10]}")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    res = {}
    for name in WORLDS:
        for label, opts in (("default", {}), ("symplectic", {"projection": "symplectic"}),
                            ("nocheck", {"energy_check": False})):
            if label != "default" and name not in ("cant10", "helix", "several"):
                continue
            res[f"{name}/{label}"] = run(name, opts)
    import json
    json.dump(res, open(sys.argv[1], "w"), indent=0)
    print(len(res), "runs")
