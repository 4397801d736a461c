"""Hair file readers/writers (round trips, malformed and hostile input) and the synthetic generator."""
import struct

import numpy as np
import pytest

from rodlab.hair.formats import HairFormatError, read_data, read_hair, read_hair_file, write_data, write_hair
from rodlab.hair.generator import strand_polyline, synthetic_hairstyle


@pytest.fixture
def strands():
    return synthetic_hairstyle(5, 12, style="curly", seed=1)


def test_data_roundtrip(tmp_path, strands):
    p = tmp_path / "h.data"
    write_data(p, strands)
    back = read_data(p)
    assert len(back) == 5
    for a, b in zip(strands, back):
        np.testing.assert_array_equal(b, a.astype(np.float32).astype(np.float64))
    assert read_hair_file(p)[0].shape == (12, 3)


def test_hair_roundtrip(tmp_path, strands):
    p = tmp_path / "h.hair"
    write_hair(p, strands)
    back = read_hair(p)
    assert [s.shape for s in back] == [s.shape for s in strands]
    np.testing.assert_array_equal(back[3], strands[3].astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("payload,match", [
    (b"", "too short"),
    (struct.pack("<i", -1), "negative strand count"),
    (struct.pack("<i", 2_000_000_000), "exceeds"),
    (struct.pack("<ii", 1, 1_000_000_000), "vertices"),
    (struct.pack("<ii", 1, 5) + b"\0" * 12, "declares 5 vertices"),
    (struct.pack("<ii", 1, -3), "negative vertex count"),
    (struct.pack("<ii", 1, 2) + struct.pack("<6f", 0, 0, 0, 1, 0, 0) + b"xx", "trailing"),
    (struct.pack("<ii", 1, 2) + struct.pack("<6f", 0, float("nan"), 0, 1, 0, 0), "non-finite"),
])
def test_data_rejects_malformed(tmp_path, payload, match):
    p = tmp_path / "bad.data"
    p.write_bytes(payload)
    with pytest.raises(HairFormatError, match=match):
        read_data(p)


def _hair_header(ns, npts, flags, dseg=0):
    return struct.pack("<4sIIII f f 3f 88s", b"HAIR", ns, npts, flags, dseg, 1.0, 0.0, 1.0, 1.0, 1.0, b"\0" * 88)


@pytest.mark.parametrize("payload,match", [
    (b"HAIR", "too short"),
    (struct.pack("<4sIIII f f 3f 88s", b"HAIX", 1, 2, 3, 0, 1, 0, 1, 1, 1, b"\0" * 88), "signature"),
    (_hair_header(1, 2, 1), "no point array"),
    (_hair_header(4_000_000_000, 4_000_000_000, 3), "header declares"),
    (_hair_header(1, 3, 3) + struct.pack("<H", 1) + b"\0" * 36, "add up"),
    (_hair_header(1, 2, 3) + struct.pack("<H", 1) + b"\0" * 10, "header declares"),
])
def test_hair_rejects_malformed(tmp_path, payload, match):
    p = tmp_path / "bad.hair"
    p.write_bytes(payload)
    with pytest.raises(HairFormatError, match=match):
        read_hair(p)


def test_hair_default_segments(tmp_path):
    pts = np.arange(18, dtype="<f4").reshape(6, 3)
    p = tmp_path / "d.hair"
    p.write_bytes(_hair_header(2, 6, 2, dseg=2) + pts.tobytes())
    back = read_hair(p)
    assert len(back) == 2 and back[1].shape == (3, 3)
    np.testing.assert_array_equal(back[1], pts[3:])


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(HairFormatError, match="extension"):
        read_hair_file(tmp_path / "x.obj")
    with pytest.raises(HairFormatError, match="no such file"):
        read_data(tmp_path / "missing.data")


@pytest.mark.parametrize("style", ["straight", "wavy", "curly"])
def test_generator_strands_have_equal_edges_and_length(style):
    s = strand_polyline(100, 0.3, style=style, amplitude=0.01, wavelength=0.05)
    e = np.linalg.norm(np.diff(s, axis=0), axis=1)
    assert np.allclose(e, e.mean(), rtol=0.1)  # equal arc length; chords differ by the local curvature
    assert e.sum() == pytest.approx(0.3, rel=0.02)
    assert e.sum() <= 0.3 + 1e-12


def test_hairstyle_roots_on_scalp():
    hs = synthetic_hairstyle(20, 10, scalp_radius=0.1, seed=3)
    for s in hs:
        assert np.linalg.norm(s[0]) == pytest.approx(0.1, rel=1e-9)
        # root edge along the scalp normal
        n = s[0] / np.linalg.norm(s[0])
        t = (s[1] - s[0]) / np.linalg.norm(s[1] - s[0])
        assert t @ n == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(ValueError, match="n_strands"):
        synthetic_hairstyle(0)
