"""State.defer: an output left unwritten by a simulator is filled on its first read, never seen stale."""
import pickle

import numpy as np
import pytest

from rodlab.model import ModelError
from rodlab.world import WorldBuilder
from rodlab.world.state import State


def _state():
    b = WorldBuilder()
    b.add_rod(np.c_[np.linspace(0.0, 1.0, 6), np.zeros(6), np.zeros(6)], E=1e7, G=4e6, rho=1000.0, radius=0.01)
    return State.zeros_for(b.build())


class _Fill:
    """Writes theta = value and ref_d1 = value, counting its calls."""

    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self, st):
        self.calls += 1
        st.edge_theta[...] = self.value
        st.edge_ref_d1[...] = self.value


NAMES = ("edge_theta", "edge_ref_d1")


def test_first_read_fills_once_in_place():
    s, owner, fill = _state(), object(), _Fill(3.0)
    theta = s.edge_theta
    s.defer(NAMES, fill, owner)
    assert fill.calls == 0 and "edge_theta" not in s.__dict__
    assert np.all(s.edge_theta == 3.0) and s.edge_theta is theta  # the same array, written in place
    assert np.all(s.edge_ref_d1 == 3.0) and fill.calls == 1  # one fill writes every deferred field
    assert s.deferred_by(owner) is None


def test_owner_takes_its_arrays_back_unfilled():
    s, owner, fill = _state(), object(), _Fill(3.0)
    theta = s.edge_theta
    s.defer(NAMES, fill, owner)
    assert s.deferred_by(object()) is None and s.deferred_by(None) is None  # only the owner
    got = s.deferred_by(owner)
    assert got["edge_theta"] is theta and fill.calls == 0
    s.defer(NAMES, _Fill(5.0), owner)  # the owner defers again: the newer fill wins, nothing filled yet
    assert fill.calls == 0 and np.all(s.edge_theta == 5.0)


def test_another_owner_or_other_names_fill_the_pending_one_first():
    s, a, b = _state(), object(), object()
    fa = _Fill(1.0)
    s.defer(NAMES, fa, a)
    s.defer(("edge_theta",), lambda st: None, b)
    assert fa.calls == 1 and np.all(s.edge_ref_d1 == 1.0)


def test_copy_save_pickle_and_equality_see_filled_values(tmp_path):
    for read in (lambda st: st.copy(), lambda st: pickle.loads(pickle.dumps(st)),
                 lambda st: (st.save(tmp_path / "s.npz"), State.load(tmp_path / "s.npz"))[1]):
        s, fill = _state(), _Fill(2.0)
        s.defer(NAMES, fill, object())
        c = read(s)
        assert fill.calls == 1 and np.all(c.edge_theta == 2.0) and np.all(c.edge_ref_d1 == 2.0)
        assert c._deferred is None
    s, t = _state(), _state()
    s.defer(NAMES, _Fill(0.0), object())
    assert np.array_equal(s.edge_theta, t.edge_theta)


def test_assign_overwrites_without_filling():
    s, other, fill = _state(), _state(), _Fill(9.0)
    other.edge_theta[...] = 4.0
    s.defer(NAMES, fill, object())
    s.assign(other)
    assert fill.calls == 0 and np.all(s.edge_theta == 4.0)


def test_a_rebound_field_keeps_the_users_array():
    s, owner, fill = _state(), object(), _Fill(8.0)
    s.defer(NAMES, fill, owner)
    mine = np.full(s.rod_edge_start[-1], -1.0)
    s.edge_theta = mine
    assert s.deferred_by(owner) is None  # the owner must not step the arrays the user replaced
    assert s.edge_theta is mine and np.all(mine == -1.0)
    assert fill.calls == 1 and np.all(s.edge_ref_d1 == 8.0)  # the other deferred field was filled


def test_bad_name_is_refused():
    s = _state()
    with pytest.raises(ModelError, match="not an array field"):
        s.defer(("theta",), lambda st: None)
    assert s._deferred is None and s.edge_theta is not None
