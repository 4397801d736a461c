"""The merit's infeasibility of compact's compiled line search (rodlab.compact.world_line_search):
leaving out the pairs that provably stay apart, and stopping once a trial is ruled out, give the
decisions and values of the whole sum, bit for bit, on random rods moved by small to large steps
(normals that turn, centre lines that cross)."""
from __future__ import annotations

import numpy as np

from rodlab.contact import from_arrays
from rodlab.contact.detect import segment_contacts
from rodlab.compact.world_line_search import _ruled_out, world_infeasibility


def scratch(K, N):
    return (np.empty((K, 2), dtype=np.int64), np.empty((K, 3)), np.empty((K, 4), dtype=np.int64),
            np.empty((K, 4, 3)), np.empty(K), np.empty((K, 3))), np.empty(N)


def test_pairs_left_out_and_early_exit_change_nothing():
    rng = np.random.default_rng(3)
    xs = [np.cumsum(rng.normal(size=(n, 3)) * 0.05, axis=0) for n in (60, 45)]
    vs = np.array([0, 60, 105])
    g = from_arrays(vs, [False, True], np.array([0.02, 0.03]))
    x_ref = np.concatenate(xs)
    margin = 0.3
    pairs, _, _, _, normal, gap = segment_contacts(x_ref, g.edge_v0, g.edge_v1, g.edge_radius, g.edge_rod,
                                                   g.edge_local, g.rod_edge_count, g.rod_closed, g.rod_skip, margin)
    K, N = pairs.shape[0], x_ref.shape[0]
    assert K > 100
    lin = (np.zeros((0, 4), dtype=np.int64), np.zeros((0, 4, 3)), np.zeros((0, 4, 3)))
    args = (g.edge_v0, g.edge_v1, g.edge_radius, pairs, normal)
    left_out = positive = ruled = 0
    for scale in (1e-4, 1e-3, 1e-2, 0.05, 0.2):
        for _ in range(6):
            P = x_ref + rng.normal(size=x_ref.shape) * scale
            ee, move = scratch(K, N)
            whole = world_infeasibility(P, x_ref, *args, np.zeros(K), *lin, ee, move, 0.0, 1.0, np.inf, 0.0, 0.0)
            fast = world_infeasibility(P, x_ref, *args, gap, *lin, ee, move, 0.0, 1.0, np.inf, 0.0, 0.0)
            assert fast == whole  # bit for bit
            reach = np.linalg.norm(P - x_ref, axis=1)
            left_out += int(np.sum(gap > np.maximum(reach[g.edge_v0[pairs[:, 0]]], reach[g.edge_v1[pairs[:, 0]]])
                                   + np.maximum(reach[g.edge_v0[pairs[:, 1]]], reach[g.edge_v1[pairs[:, 1]]])))
            positive += whole > 0
            for E, armijo in ((1.0, 1.0 + 0.5 * whole), (1.0, 1.0 + 2.0 * whole + 1e-12), (2.0, 1.5), (1.0, 0.9)):
                got = world_infeasibility(P, x_ref, *args, gap, *lin, ee, move, E, 1.0, armijo, 1.0, 1e-14)
                if np.isinf(got):
                    ruled += 1
                    assert _ruled_out(E, 1.0, whole, armijo, 1.0, 1e-14)
                else:
                    assert got == whole
    assert left_out > 100 and positive > 5 and ruled > 10  # each path taken
