"""Hashes of compact trajectories over several worlds and call patterns, for bitwise A/B checks of
a change against an old tree (issue #13 item 3: the per-step physics and the outputs must stay
bitwise the same; the frame fields are deferred to their first read since 2026-12-07).

    PYTHONPATH=src python bench/compact_trajectory_hashes.py new.json
    PYTHONPATH=/tmp/old/src python bench/compact_trajectory_hashes.py old.json
    python bench/compact_trajectory_hashes.py --compare old.json new.json

Worlds: cantilevers of 10, 50, 200 vertices (serial driver), three rods (parallel driver), a
helix, a moving root clamp, BDF2, the exponential damping scheme, the dense preconditioner, a rod
falling on a plane (active-set path) and a rod under a point force (joint contact path). Each:
30 calls of one step hashed after every call, 30 calls of one step hashed once at the end (the
frame fields unread in between), one call of 30 steps, calls of mixed lengths, an in-place edit
of positions with ``state.method = ""``, a second state on the same simulator, a static solve
where the path has one. A SHA-256 of every common array, the solver's unknowns and ``t``.
"""
import hashlib
import json
import sys

import numpy as np

from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes
from rodlab.world.obstacles import Plane

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from der_trajectory_hashes import compare  # noqa: E402  (one digest comparison for both scripts)

MAT = dict(E=1e7, G=1e7 / 3, rho=1000.0, radius=0.005)
FIELDS = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")


def cantilever(n):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    b.add_rod(shapes.straight(n, 0.5), **MAT)
    b.clamp(0, "start")
    return b.build()


def several():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    for k, n in enumerate((7, 12, 20)):
        b.add_rod(shapes.straight(n, 0.3, start=(0.0, 0.1 * k, 0.0)), **MAT)
        b.clamp(k, "start")
    return b.build()


def helix():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.3)
    b.add_rod(shapes.helix(16, 0.05, 0.04, 1.0), **MAT)
    b.clamp(0, "start")
    return b.build()


def moving():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)

    def motion(t):
        c, s = np.cos(3 * t), np.sin(3 * t)
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]]), np.array([0.0, 0.0, 0.02 * np.sin(5 * t)])

    b.add_rod(shapes.straight(14, 0.4), **MAT)
    b.clamp(0, "start", motion=motion)
    return b.build()


def on_plane():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(8, 0.3, start=(0.0, 0.0, 0.01)), **MAT)
    b.clamp(0, "start")
    b.add_obstacle(Plane(point=(0.0, 0.0, -0.02), normal=(0.0, 0.0, 1.0)))
    return b.build()


def forced():
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=0.5)
    b.add_rod(shapes.straight(8, 0.3), **MAT)
    b.clamp(0, "start")
    b.add_point_force(0, -1, (0.0, 0.001, 0.0))
    return b.build()


RUNS = {  # name: (world, options, static solve)
    "cant10": (lambda: cantilever(10), {}, True), "cant50": (lambda: cantilever(50), {}, True),
    "cant200": (lambda: cantilever(200), {}, True), "several": (several, {}, True), "helix": (helix, {}, True),
    "moving": (moving, {}, False), "bdf2": (lambda: cantilever(12), {"integrator": "bdf2"}, False),
    "exponential": (lambda: cantilever(12), {"damping_scheme": "exponential"}, False),
    "direct": (lambda: cantilever(12), {"precond": "direct"}, True),
    "plane": (on_plane, {}, False), "forced": (forced, {}, False),
}


def digest(state):
    h = hashlib.sha256()
    for f in FIELDS:
        h.update(np.ascontiguousarray(getattr(state, f)).tobytes())
    for k in sorted(state.solver):
        h.update(k.encode())
        h.update(np.ascontiguousarray(state.solver[k]).tobytes())
    h.update(np.float64(state.t).tobytes())
    return h.hexdigest()[:16]


def run(name):
    world, opts, static = RUNS[name]
    sim = make_simulator(world(), "compact", **opts)
    out = []
    s = sim.initial_state()
    start = s.copy()
    for _ in range(30):
        sim.advance(s, 1)
        out.append(digest(s))
    s2 = start.copy()
    for _ in range(30):
        sim.advance(s2, 1)  # nothing read in between
    out.append(digest(s2))
    s3 = start.copy()
    sim.advance(s3, 30)
    out.append(digest(s3))
    for k in (1, 2, 3, 5, 1, 1, 7):
        sim.advance(s, k)
        out.append(digest(s))
    for _ in range(4):
        sim.advance(s, 1)
    s.vertex_x[:, 2] += 1e-3  # a user edit between calls, taken by the next call
    s.method = ""
    for _ in range(5):
        sim.advance(s, 1)
        out.append(digest(s))
    s4 = s.copy()
    sim.advance(s4, 3)
    out.append(digest(s4))  # another state on the same simulator
    sim.advance(s, 3)
    out.append(digest(s))
    if static:
        sim.solve_static(s)
        out.append(digest(s))
    return out


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    res = {name: run(name) for name in (sys.argv[2:] or RUNS)}
    json.dump(res, open(sys.argv[1], "w"), indent=0)
    print(len(res), "runs,", sum(len(v) for v in res.values()), "digests")
