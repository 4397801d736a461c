"""Set-up helpers of DER's rigid-body coupling (Bergou et al. 2008, Sec. 8, rods welded to rigid
bodies): the refusal of welded edges the projection cannot move, the layout of the welded rods'
projection blocks, and the Voronoi lengths that distribute drag over vertices. Used by
:class:`rodlab.solvers.der.DERSimulator` when it builds a world with bodies."""
from __future__ import annotations

import numpy as np

from ..model import ModelError


def check_free_vertices(world, coupled, vertex_body, inv_mass) -> None:
    """Refuse a welded rod with an active edge between two vertices that cannot move on their
    own (welded to two bodies, or welded and held): the projection's rod blocks ``T`` need a
    free vertex on every such edge (:mod:`rodlab.der.bodies`)."""
    for r in np.flatnonzero(coupled):
        v0 = int(world.rod_vertex_start[r])
        for j in range(world.rods[r].n_edges):
            a, b = v0 + j, v0 + j + 1
            ba, bb = vertex_body[a], vertex_body[b]
            fixed_a, fixed_b = ba >= 0 or inv_mass[a] == 0.0, bb >= 0 or inv_mass[b] == 0.0
            if fixed_a and fixed_b and (ba >= 0 or bb >= 0) and not (ba >= 0 and ba == bb):
                raise ModelError(f"rod {r}: edge {j} joins a welded vertex to another welded or held vertex; a rod welded "
                                 f"to a body needs a free vertex between its weld and any other weld or clamp (give it "
                                 f"more vertices)")


def projection_layout(world, welds, rod_weld_start, weld_body, weld_edge, coupled) -> dict:
    """Constant data of the exact coupled projection (:mod:`rodlab.der.bodies`): each weld's
    contact row, welded vertex and sign; connected groups; the capacitance unknowns (welds of
    bodies with two or more welds), their elimination order (greedy minimum degree on the graph
    "two welds share a body or a rod") and the fill pattern of the sparse Cholesky factor; rods
    in parallel chunks balanced by vertex count."""
    import numba

    nb, R, nw = world.n_bodies, world.n_rods, len(welds)
    n_edges = np.array([rod.n_edges for rod in world.rods])
    weld_row = np.where(weld_edge == 0, 1, weld_edge - 1).astype(np.int64)
    weld_vertex = np.where(weld_edge == 0, 1, weld_edge).astype(np.int64)
    weld_sign = np.where(weld_edge == 0, -1.0, 1.0)
    rod_of = np.array([x.rod for x in welds], dtype=np.int64)
    weld_z_start = np.concatenate([[0], np.cumsum(n_edges[rod_of])]).astype(np.int64)
    # groups: union-find over bodies joined by a rod
    parent = list(range(nb))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for r in range(R):
        bs = sorted(set(weld_body[rod_weld_start[r]:rod_weld_start[r + 1]].tolist()))
        for a in bs:
            for c in bs:
                parent[root(a)] = root(c)
    roots = sorted({root(a) for a in range(nb)})
    body_comp = np.array([roots.index(root(a)) for a in range(nb)], dtype=np.int64)
    rod_comp = np.full(R, -1, dtype=np.int64)
    for r in np.flatnonzero(coupled):
        rod_comp[r] = body_comp[weld_body[rod_weld_start[r]]]
    # capacitance unknowns: the welds of bodies with two or more welds; their graph joins welds
    # sharing a body or a rod; elimination order (greedy minimum degree) and fill pattern
    n_welds = np.bincount(weld_body, minlength=nb)
    body_multi = (n_welds >= 2).astype(np.int64)
    multi = [k for k in range(nw) if body_multi[weld_body[k]]]
    graph = {k: set() for k in multi}
    for k in multi:
        for l in multi:
            if l != k and (weld_body[k] == weld_body[l] or rod_of[k] == rod_of[l]):
                graph[k].add(l)
    order, pattern = [], []
    while graph:
        k = min(graph, key=lambda a: (len(graph[a]), a))
        nbrs = graph.pop(k)
        order.append(k)
        pattern.append(nbrs)
        for a in nbrs:
            graph[a] |= nbrs - {a}
            graph[a].discard(k)
    weld_cap = np.full(nw, -1, dtype=np.int64)
    weld_cap[order] = np.arange(len(order))
    pattern_pos = [sorted(int(weld_cap[a]) for a in pat) for pat in pattern]
    cap_pattern_start = np.concatenate([[0], np.cumsum([len(p) for p in pattern_pos])]).astype(np.int64)
    cap_pattern = np.array([i for p in pattern_pos for i in p], dtype=np.int64)
    body_sq_start = np.concatenate([[0], np.cumsum(n_welds * n_welds * body_multi)]).astype(np.int64)
    # parallel chunks: largest rods first onto the lightest chunk
    rods = [int(r) for r in np.flatnonzero(coupled)]
    n_chunks = max(1, min(len(rods), int(numba.config.NUMBA_NUM_THREADS)))
    load = [0] * n_chunks
    members = [[] for _ in range(n_chunks)]
    for r in sorted(rods, key=lambda r: -world.rods[r].n_vertices):
        c = int(np.argmin(load))
        load[c] += world.rods[r].n_vertices
        members[c].append(r)
    chunk_start = np.concatenate([[0], np.cumsum([len(c) for c in members])]).astype(np.int64)
    chunk_rod = np.array([r for c in members for r in sorted(c)], dtype=np.int64)
    free_rod = np.flatnonzero(coupled == 0).astype(np.int64)
    i64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
    model = (weld_row, weld_vertex, weld_sign, weld_z_start, rod_comp, body_comp, body_multi, weld_cap, i64(order),
             cap_pattern_start, cap_pattern, body_sq_start, chunk_start, chunk_rod, free_rod)
    return {"model": model, "n_z": int(weld_z_start[-1]), "n_cap": len(order), "n_pattern": int(cap_pattern.size),
            "n_comp": len(roots), "n_sq": int(body_sq_start[-1])}



def voronoi_lengths(rod) -> np.ndarray:
    """Each vertex's Voronoi length: half of each adjacent rest edge [m]."""
    l = rod.rest_lengths
    out = np.zeros(rod.n_vertices)
    out[: rod.n_edges] += 0.5 * l
    np.add.at(out, (np.arange(rod.n_edges) + 1) % rod.n_vertices, 0.5 * l)
    return out


__all__ = ["check_free_vertices", "projection_layout", "voronoi_lengths"]
