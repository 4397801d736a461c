"""Hostile hair files are refused early and cheaply; JSON outputs are strict (issue #16, item 4).

The memory checks run the reader in a fresh interpreter and compare its peak resident set size
(``resource.getrusage``) before and after the read, so earlier tests cannot hide an allocation.
"""
import json
import math
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rodlab.hair.formats import (HairFormatError, MAX_STRANDS, read_data, read_hair, read_hair_file, write_data,
                                 write_hair)
from rodlab.io.jsonsafe import dumps, loads_strict, sanitize
from rodlab.model import ModelError

RSS_LIMIT_MB = 200.0


def hair_header(ns, npts, flags, dseg=0):
    return struct.pack("<4sIIII f f 3f 88s", b"HAIR", ns, npts, flags, dseg, 1.0, 0.0, 1.0, 1.0, 1.0, b"\0" * 88)


def read_in_fresh_process(path) -> dict:
    """Read ``path`` in a new interpreter; returns the error type/message, seconds and RSS growth [MB]."""
    code = textwrap.dedent(f"""
        import json, resource, sys, time
        from rodlab.hair.formats import read_hair_file
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        try:
            read_hair_file({str(path)!r})
            err = None, None
        except BaseException as exc:
            err = type(exc).__name__, str(exc)
        dt = time.perf_counter() - t0
        grow = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024.0
        print(json.dumps({{"error": err[0], "message": err[1], "seconds": dt, "rss_growth_mb": grow}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the hostile headers of the issue -------------------------------------------------------------
@pytest.mark.parametrize("ns", [2**32 - 1, 30_000_000])
def test_hair_header_without_segment_array_is_refused_cheaply(tmp_path, ns):
    # 128 bytes, flags = 2 (points only, no segment array): the old reader allocated ns int64 before checking
    p = tmp_path / "hostile.hair"
    p.write_bytes(hair_header(ns, 0, 2, dseg=1))
    res = read_in_fresh_process(p)
    assert res["error"] == "HairFormatError", res
    assert f"header declares {ns} strands but only 0 points" in res["message"]
    assert res["rss_growth_mb"] < RSS_LIMIT_MB and res["seconds"] < 1.0, res


def test_sparse_3gb_hair_file_is_not_read_whole(tmp_path):
    # a header that fits a 3 GB (sparse, all-zero) body: 10^6 strands (under the strand cap), 10^8 points
    p = tmp_path / "sparse.hair"
    with open(p, "wb") as f:
        f.write(hair_header(1_000_000, 100_000_000, 3))
        f.truncate(3 * 2**30)
    res = read_in_fresh_process(p)
    assert res["error"] == "HairFormatError", res
    assert "strand 0 has 0 segments" in res["message"]
    assert res["rss_growth_mb"] < RSS_LIMIT_MB and res["seconds"] < 1.0, res


def test_sparse_3gb_data_file_is_not_read_whole(tmp_path):
    p = tmp_path / "sparse.data"
    with open(p, "wb") as f:
        f.write(struct.pack("<ii", 1, 2) + struct.pack("<6f", 0, 0, 0, 1, 0, 0))
        f.truncate(3 * 2**30)
    res = read_in_fresh_process(p)
    assert res["error"] == "HairFormatError" and "trailing bytes after 1 strands" in res["message"], res
    assert res["rss_growth_mb"] < RSS_LIMIT_MB and res["seconds"] < 1.0, res


# (payload, size the file is extended to with zeros (sparse), expected message)
INCONSISTENT_HAIR = {
    "more strands than points": (hair_header(3, 0, 2, dseg=1), 0, r"header declares 3 strands but only 0 points"),
    "default 0 segments": (hair_header(2, 4, 2, dseg=0) + b"\0" * 48, 0, r"default segment count 0 .*at least 1 segment"),
    "default segments vs points": (hair_header(2, 6, 2, dseg=1) + b"\0" * 72, 0,
                                   r"2 strands of the default 1 segments make 4 points but the header says 6"),
    "huge default strand": (hair_header(1, 2_000_000, 2, dseg=1_999_999), 128 + 24_000_000, r"more than 1048576 vertices"),
    "zero segments": (hair_header(2, 4, 3) + struct.pack("<HH", 1, 0) + b"\0" * 48, 0, r"strand 1 has 0 segments"),
    "segments over points": (hair_header(2, 4, 3) + struct.pack("<HH", 1, 2) + b"\0" * 48, 0,
                             r"add up to 5 points, more than the header's 4"),
    "colour array missing": (hair_header(1, 2, 3 | 16) + struct.pack("<H", 1) + b"\0" * 24, 0,
                             r"header declares 1 strands and 2 points \(50 bytes\)"),
    "infinite point": (hair_header(1, 2, 3) + struct.pack("<H", 1) + struct.pack("<6f", 0, 0, 0, np.inf, 0, 0), 0,
                       r"strand 0 has non-finite coordinates \(vertex 1\)"),
}


@pytest.mark.parametrize("case", list(INCONSISTENT_HAIR))
def test_hair_inconsistent_headers_name_the_field(tmp_path, case):
    payload, size, match = INCONSISTENT_HAIR[case]
    p = tmp_path / "bad.hair"
    with open(p, "wb") as f:
        f.write(payload)
        if size:
            f.truncate(size)
    with pytest.raises(HairFormatError, match=match):
        read_hair(p)


@pytest.mark.parametrize("nv", [0, 1])
def test_data_zero_and_one_vertex_strands_refused_with_index(tmp_path, nv):
    good = struct.pack("<i", 2) + struct.pack("<6f", 0, 0, 0, 1, 0, 0)
    p = tmp_path / "short.data"
    p.write_bytes(struct.pack("<i", 2) + good + struct.pack("<i", nv) + b"\0" * (12 * nv))
    with pytest.raises(HairFormatError, match=rf"strand 1 has {nv} vertices \(a strand needs at least 2\)"):
        read_data(p)


def test_strand_cap_is_an_option(tmp_path):
    strands = [np.array([[0.0, 0, 0], [0, 0, 1]]) + i for i in range(3)]
    for name, write in (("h.data", write_data), ("h.hair", write_hair)):
        write(tmp_path / name, strands)
        with pytest.raises(HairFormatError, match=r"strand count 3 is over the limit max_strands = 2"):
            read_hair_file(tmp_path / name, max_strands=2)
        assert len(read_hair_file(tmp_path / name, max_strands=3)) == 3
    with pytest.raises(ModelError, match="max_strands must be an integer >= 0"):
        read_data(tmp_path / "h.data", max_strands=-1)
    assert MAX_STRANDS >= 1_000_000


def test_hair_format_error_is_a_model_error():
    assert issubclass(HairFormatError, ModelError) and issubclass(HairFormatError, ValueError)


# ---- fuzz: mutated valid files give a clean error or finite strands -------------------------------
def _valid_files(tmp_path):
    rng = np.random.default_rng(7)
    strands = [np.cumsum(rng.normal(size=(int(n), 3)), axis=0) for n in rng.integers(2, 9, size=5)]
    write_data(tmp_path / "seed.data", strands)
    write_hair(tmp_path / "seed.hair", strands)
    return {".data": (tmp_path / "seed.data").read_bytes(), ".hair": (tmp_path / "seed.hair").read_bytes()}


INT_EXTREMES = [0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 65535, 65536, 1 << 20, (1 << 20) + 1]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 255)),
    st.tuples(st.just("int32"), st.integers(0, 10**6), st.sampled_from(INT_EXTREMES)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6), st.just(0)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.integers(0, 255)),
)


def _mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for kind, pos, val in ops:
        if not b:
            break
        i = pos % len(b)
        if kind == "flip":
            b[i] ^= val or 1
        elif kind == "int32":
            j = min(i - i % 4, max(len(b) - 4, 0))  # aligned: counts and flags sit on 4-byte boundaries
            b[j:j + 4] = struct.pack("<I", val)[: len(b) - j]
        elif kind == "truncate":
            del b[i:]
        else:
            b.insert(i, val)
    return bytes(b)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ext=st.sampled_from([".data", ".hair"]), ops=st.lists(mutation, min_size=1, max_size=4))
def test_fuzz_readers_raise_only_clean_errors(tmp_path, ext, ops):
    seeds = _valid_files(tmp_path)
    p = tmp_path / f"fuzz{ext}"
    p.write_bytes(_mutate(seeds[ext], ops))
    try:
        strands = read_hair_file(p)
    except HairFormatError as exc:
        assert str(p) in str(exc)  # names the file
        return
    for s in strands:  # accepted: simulable, finite strands
        assert s.dtype == np.float64 and s.ndim == 2 and s.shape[1] == 3 and s.shape[0] >= 2
        assert np.all(np.isfinite(s))


def test_fuzz_memory_stays_bounded(tmp_path):
    """A seeded mutation loop of header counts only, in a fresh process: peak RSS growth < 200 MB."""
    seeds = _valid_files(tmp_path)
    rng = np.random.default_rng(16)
    paths = []
    for k in range(60):
        ext = (".data", ".hair")[k % 2]
        ops = [("int32", int(rng.integers(0, 24)), int(rng.choice(INT_EXTREMES))) for _ in range(int(rng.integers(1, 3)))]
        p = tmp_path / f"m{k}{ext}"
        p.write_bytes(_mutate(seeds[ext], ops))
        paths.append(str(p))
    code = textwrap.dedent(f"""
        import resource
        from rodlab.hair.formats import HairFormatError, read_hair_file
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for p in {paths!r}:
            try:
                read_hair_file(p)
            except HairFormatError:
                pass
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024.0)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.split()[-1]) < RSS_LIMIT_MB


# ---- strict JSON ----------------------------------------------------------------------------------
def test_jsonsafe_writes_null_and_a_reason():
    text = dumps({"a": float("nan"), "b": [1.0, np.float32("inf")], "c": {"d": -math.inf}, "e": np.int64(3),
                  "f": np.array([1.5, 2.5])}, reasons={"a": "nothing was computed"})
    data = loads_strict(text)
    assert data["a"] is None and data["a_reason"] == "nothing was computed"
    assert data["b"] == [1.0, None] and "[1] +infinity" in data["b_reason"]
    assert data["c"] == {"d": None, "d_reason": "-infinity"}
    assert data["e"] == 3 and data["f"] == [1.5, 2.5]
    assert "NaN" not in text and "Infinity" not in text
    with pytest.raises(ValueError, match="NaN"):
        loads_strict('{"x": NaN}')
    with pytest.raises(TypeError, match="cannot write a object"):
        dumps({"x": object()})
    assert loads_strict(dumps(float("nan"))) == {"value": None, "value_reason": "not a number (NaN)"}
    assert sanitize({"ok": 1.0}) == {"ok": 1.0}


def test_scene_outputs_metrics_json_is_strict(tmp_path):
    from types import SimpleNamespace

    from rodlab.io import write_scene_outputs

    result = SimpleNamespace(metrics={"tip_error": float("nan"), "steps": 3}, trajectory={"t": np.zeros(2)}, plot=None)
    write_scene_outputs("demo", {"n": 3}, result, tmp_path, plot=False)
    data = loads_strict((tmp_path / "metrics.json").read_text())
    assert data["tip_error"] is None and data["tip_error_reason"] == "not a number (NaN)" and data["steps"] == 3


def test_state_metadata_is_strict(tmp_path):
    from rodlab.world import State, WorldBuilder, shapes

    b = WorldBuilder()
    b.add_rod(shapes.straight(3, 1.0), E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
    state = State.zeros_for(b.build())
    state.save(tmp_path / "s.npz", metadata={"residual": float("nan")})
    with np.load(tmp_path / "s.npz", allow_pickle=False) as d:
        meta = loads_strict(str(d["__metadata__"]))
    assert meta["residual"] is None and meta["residual_reason"] == "not a number (NaN)"
    assert State.load(tmp_path / "s.npz").t == state.t


def test_sagfree_with_a_failing_strand_exits_nonzero_with_strict_json(tmp_path, capsys):
    from rodlab.cli import main

    # a 3-vertex strand: the reader accepts it (>= 2 vertices) but sag-free needs >= 4, so it is skipped
    write_data(tmp_path / "short.data", [np.array([[0.0, 0, 0], [0, 0, -0.01], [0, 0, -0.02]])])
    out = tmp_path / "o"
    rc = main(["sagfree", str(tmp_path / "short.data"), "--out", str(out), "--workers", "1", "--no-plot"])
    captured = capsys.readouterr()
    assert rc == 3
    assert "1 of 1 strands failed" in captured.err
    assert "strand 0: not optimized: skipped: strand has 3 vertices (need >= 4)" in captured.err
    assert "max residual n/a" in captured.out and "nan" not in captured.out
    report = loads_strict((out / "report.json").read_text())
    assert report["summary"]["converged"] == 0
    assert report["summary"]["residual_max"] is None
    assert report["summary"]["residual_max_reason"] == "no strand was optimised (every strand was skipped)"


def test_sagfree_refuses_one_vertex_strand_as_bad_input(tmp_path, capsys):
    from rodlab.cli import main

    p = tmp_path / "one.data"
    p.write_bytes(struct.pack("<ii", 1, 1) + struct.pack("<3f", 0, 0, 0))
    assert main(["sagfree", str(p), "--out", str(tmp_path / "o"), "--workers", "1"]) == 2
    assert "strand 0 has 1 vertices (a strand needs at least 2)" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
