"""The packed argument groups of DER's drivers (rodlab.der.packing): every field comes back from the
one arena, in Python (the views ``pack_arrays`` returns) and in compiled code (``split_arena`` and
the unpacker built from the layout), for fields of every kind, an empty one among them."""
from typing import NamedTuple

import numpy as np
import pytest
from numba import njit

from rodlab.der.packing import make_unpacker, pack_arrays, split_arena


class Fields(NamedTuple):
    a: np.ndarray
    n: np.ndarray
    flag: np.ndarray
    p: np.ndarray
    empty: np.ndarray
    idx: np.ndarray


KINDS = ((0, 1), (1, 1), (2, 1), (0, 2), (0, 2), (1, 2))
unpack_fields = make_unpacker(Fields, KINDS, 0)


@njit(cache=False)
def read_back(arena):
    f, i, b, L = split_arena(arena)
    g = unpack_fields(f, i, b, L)
    g.p[1, 2] = -7.0  # a write through a view lands in the arena
    return g.a.sum(), g.n.sum(), g.flag.sum(), g.p.sum(), g.p.shape[0], g.empty.shape[0], g.idx[2, 1], f.shape[0]


def test_the_arena_holds_every_field():
    rng = np.random.default_rng(3)
    fields = Fields(rng.normal(size=5), np.arange(4), np.array([True, False, True]), rng.normal(size=(3, 3)),
                    np.zeros((0, 3)), np.arange(9).reshape(3, 3))
    packed, views = pack_arrays(list(fields), KINDS)
    for view, value in zip(views, fields):
        assert np.array_equal(view, value) and np.shares_memory(view, packed.arena) == (view.size > 0)
    for buf in packed[:4]:
        assert np.shares_memory(buf, packed.arena)
    got = read_back(packed.arena)
    assert got[:3] == (fields.a.sum(), fields.n.sum(), 2)
    assert got[3] == pytest.approx(fields.p.sum() - fields.p[1, 2] - 7.0, rel=1e-14) and views[3][1, 2] == -7.0
    assert got[4:] == (3, 0, 7, packed.f.shape[0])
