"""PLY export: one frame's rods as vertices and edges (binary little-endian PLY 1.0).

``element vertex N`` with ``float x, y, z`` [m] and ``float radius`` [m]; ``element edge E`` with
``int vertex1, vertex2`` (0-based indices), one edge per rod segment (a closed rod's last edge
joins its last vertex to its first). Blender, MeshLab and Houdini read vertices + edges as a
wireframe; PLY has no time axis, so one file holds one frame.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .run import RunData


def rod_edges(run: RunData) -> np.ndarray:
    """Vertex index pairs (E, 2) of every rod segment, rod by rod."""
    if not run.rod_closed.any():
        i = np.setdiff1d(np.arange(run.n_vertices - 1), run.rod_offsets[1:-1] - 1)
        return np.stack([i, i + 1], axis=1).astype(np.int64)
    pairs = []
    for r, (a, b) in enumerate(zip(run.rod_offsets[:-1], run.rod_offsets[1:])):
        i = np.arange(a, b - 1)
        pairs.append(np.stack([i, i + 1], axis=1))
        if run.rod_closed[r]:
            pairs.append(np.array([[b - 1, a]]))
    return np.concatenate(pairs).astype(np.int64)


def write_ply(run: RunData, path, k: int) -> Path:
    """Write frame ``k`` of ``run`` to the PLY file ``path``."""
    path = Path(path)
    edges = rod_edges(run)
    if run.n_vertices > np.iinfo(np.int32).max:
        raise ValueError(f"PLY int indices hold at most {np.iinfo(np.int32).max} vertices (got {run.n_vertices})")
    header = ("ply\nformat binary_little_endian 1.0\ncomment rodlab export: rods as vertices + edges, SI units [m]\n"
              f"comment scene {run.scene} frame {k} t {float(run.t[k])!r}\n"
              f"element vertex {run.n_vertices}\nproperty float x\nproperty float y\nproperty float z\n"
              "property float radius\n"
              f"element edge {edges.shape[0]}\nproperty int vertex1\nproperty int vertex2\nend_header\n")
    vert = np.empty(run.n_vertices, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("radius", "<f4")])
    vert["x"], vert["y"], vert["z"] = run.x[k, :, 0], run.x[k, :, 1], run.x[k, :, 2]
    vert["radius"] = run.vertex_radius
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.encode("ascii") + vert.tobytes() + edges.astype("<i4").tobytes())
    return path
