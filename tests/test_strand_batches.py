"""Packing a Dask task's strands and results (rodlab.inverse.strand_batches): bitwise round trips, and
few serialized frames whatever the number of strands (docs/dask.md, "Speed")."""
import numpy as np
import pytest

from rodlab.hair.generator import synthetic_hairstyle
from rodlab.inverse.cli import work_batch, work_packed
from rodlab.inverse.strand_batches import BatchResults, StrandBatch

OPTS = dict(radius=5e-4, E=5e8, rho=1000.0, scheme="alm", delta=0.4, max_iters=200, t_end=0.0, precond="asc-schur")


def _jobs(n, vertices, seed=5):
    return [(k, np.ascontiguousarray(x)) for k, x in enumerate(synthetic_hairstyle(n, vertices, style="wavy", seed=seed))]


def test_strand_batch_round_trip_is_bitwise_and_gives_writable_contiguous_views():
    jobs = [(7, np.arange(12.0).reshape(4, 3)), (2, np.random.default_rng(0).normal(size=(9, 3))), (40, np.ones((5, 3)))]
    b = StrandBatch.pack(jobs)
    assert len(b) == 3 and b.vertex_counts().tolist() == [4, 9, 5]
    for (k, x), (k2, y) in zip(jobs, b.jobs()):
        assert k2 == k and y.shape == x.shape and np.array_equal(y, x)
        assert y.flags.c_contiguous and y.flags.writeable and np.shares_memory(y, b.vertices)
    with pytest.raises(ValueError, match="strand 3: vertices must be an \\(n, 3\\) array"):
        StrandBatch.pack([(3, np.zeros((4, 2)))])


def test_packed_task_gives_the_unpacked_rows_bitwise():
    jobs = _jobs(6, 12)
    jobs.insert(3, (99, np.zeros((4, 3))))  # zero-length edges: a skipped strand, a row without arrays
    rows = work_batch(jobs, OPTS)
    back = work_packed(StrandBatch.pack(jobs), OPTS).unpack()
    assert [r["index"] for r in back] == [k for k, _ in jobs]
    assert "arrays" not in back[3] and back[3]["message"].startswith("skipped")
    timing = {"wall_s", "time_s", "cpu_s"}
    for a, b in zip(rows, back):
        assert {k: v for k, v in a.items() if k not in timing | {"arrays"}} == \
               {k: v for k, v in b.items() if k not in timing | {"arrays"}}
        assert set(a.get("arrays", {})) == set(b.get("arrays", {}))
        for name, v in a.get("arrays", {}).items():
            assert b["arrays"][name].shape == v.shape and np.array_equal(b["arrays"][name], v), name
    assert back[0]["arrays"]["wbar"].ndim == 2


def test_batch_results_reject_rows_that_disagree():
    a = {"index": 0, "arrays": {"p": np.ones(3)}}
    with pytest.raises(ValueError, match="array names"):
        BatchResults.pack([a, {"index": 1, "arrays": {"q": np.ones(3)}}])
    with pytest.raises(ValueError, match="different numbers of dimensions"):
        BatchResults.pack([a, {"index": 1, "arrays": {"p": np.ones((3, 1))}}])
    assert BatchResults.pack([{"index": 0, "message": "skipped"}]).unpack() == [{"index": 0, "message": "skipped"}]


def test_packed_batches_serialize_to_a_few_frames():
    # Dask serializes a list of (index, array) element by element, one frame per array; the packed
    # objects cross as a few frames whatever the number of strands
    protocol = pytest.importorskip("distributed.protocol")
    from distributed.protocol.serialize import Serialize

    jobs = _jobs(40, 8)
    rows = work_batch(jobs, OPTS)
    for obj in (jobs, rows):
        assert len(protocol.dumps({"x": Serialize(obj)})) > 40  # the unpacked form: at least one per strand
    for obj in (StrandBatch.pack(jobs), BatchResults.pack(rows)):
        frames = protocol.dumps({"x": Serialize(obj)})
        assert len(frames) < 30, len(frames)
        assert isinstance(protocol.loads(frames)["x"], type(obj))
