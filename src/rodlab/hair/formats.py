"""Hair file formats.

* USC-HairSalon ``.data`` (Hu et al. 2015): little-endian ``int32`` strand count; per strand an
  ``int32`` vertex count followed by ``float32`` x, y, z per vertex.
* Cem Yuksel's ``.hair``: a 128-byte header (``b"HAIR"``, ``uint32`` strand count, ``uint32`` point
  count, ``uint32`` flags bit array, ``uint32`` default segment count, ``float32`` default thickness,
  transparency, colour (3), then 88 bytes of file information), followed, in order and only when
  their flag bit is set, by: segment counts (``uint16`` per strand, bit 0), points (``float32`` x3,
  bit 1), thickness (``float32`` per point, bit 2), transparency (bit 3), colours (``float32`` x3 per
  point, bit 4). A strand with ``s`` segments has ``s + 1`` points; without bit 0 every strand has
  the default segment count. Points are required (bit 1).

Readers check every count against the file size *before* allocating or reading anything, whatever
the flags say, and read the file in bounded pieces (never the whole file at once): a hostile header
costs a few kilobytes, not the memory its counts would ask for. They raise :class:`HairFormatError`
naming the field, the strand and the limit; strands with fewer than 2 vertices are refused (they
cannot be simulated), as are files with more than ``max_strands`` strands (default
:data:`MAX_STRANDS`) or a strand with more than :data:`MAX_VERTICES_PER_STRAND` vertices. Writers
produce files the readers read back bit for bit (float32).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from ..model import ModelError

MAX_VERTICES_PER_STRAND = 1 << 20
"""most vertices one strand may have (a real strand has tens to a few thousand)"""
MAX_STRANDS = 1 << 20
"""default cap on the strand count (1,048,576; real grooms hold 10^4 to 10^6 strands; pass
``max_strands`` for more): each strand becomes a numpy array of ~100 bytes of overhead, so a file of
tiny strands would otherwise cost several times its size in memory"""
CHUNK_STRANDS = 1 << 18
"""segment counts read (and checked) per piece (512 KiB of uint16)"""
CHUNK_POINTS = 1 << 18
"""points read per piece of a ``.hair`` file (3 MiB of float32)"""
MIN_STRAND_VERTICES = 2


class HairFormatError(ModelError):
    """A hair file is malformed, truncated, inconsistent or over a limit (the message names the
    file, the field and the limit). A :class:`rodlab.model.ModelError`, hence a ``ValueError``."""


class _Reader:
    """A binary file read in checked pieces: ``take(n, what)`` never reads past the end."""

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.is_file():
            raise HairFormatError(f"{self.path}: no such file")
        try:
            self.f = open(self.path, "rb")
        except OSError as exc:
            raise HairFormatError(f"{self.path}: cannot open ({exc.strerror or exc})") from None
        self.size = os.fstat(self.f.fileno()).st_size
        self.off = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    @property
    def left(self) -> int:
        return self.size - self.off

    def take(self, nbytes: int, what: str) -> bytes:
        if nbytes > self.left:
            raise HairFormatError(f"{self.path}: truncated: {what} needs {nbytes} bytes but only {self.left} remain")
        data = self.f.read(nbytes)
        if len(data) != nbytes:  # the file shrank under us
            raise HairFormatError(f"{self.path}: truncated: {what} needs {nbytes} bytes, read {len(data)}")
        self.off += nbytes
        return data

    def floats(self, count: int, what: str) -> np.ndarray:
        return np.frombuffer(self.take(4 * count, what), dtype="<f4")


def _check_max_strands(max_strands) -> int:
    if not (isinstance(max_strands, (int, np.integer)) and not isinstance(max_strands, bool) and max_strands >= 0):
        raise ModelError(f"max_strands must be an integer >= 0 (got {max_strands!r})")
    return int(max_strands)


def _points(raw: np.ndarray, nv: int, path, k: int) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # a signalling NaN warns on the cast; it is refused just below
        pts = raw.reshape(nv, 3).astype(np.float64)
    if not np.all(np.isfinite(pts)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(pts), axis=1))[0])
        raise HairFormatError(f"{path}: strand {k} has non-finite coordinates (vertex {bad})")
    return pts


def read_data(path, *, max_strands: int = MAX_STRANDS) -> list[np.ndarray]:
    """Read a USC-HairSalon ``.data`` file into a list of (n_i, 3) float64 arrays [file units].

    Raises :class:`HairFormatError` for a count the file cannot hold, a strand with fewer than 2 or
    more than :data:`MAX_VERTICES_PER_STRAND` vertices, more than ``max_strands`` strands,
    non-finite coordinates or trailing bytes.
    """
    max_strands = _check_max_strands(max_strands)
    with _Reader(path) as r:
        if r.size < 4:
            raise HairFormatError(f"{path}: file too short for the strand count ({r.size} bytes)")
        (ns,) = struct.unpack("<i", r.take(4, "strand count"))
        if ns < 0:
            raise HairFormatError(f"{path}: negative strand count {ns}")
        # every strand needs at least its 4-byte count: bound the count by the file size before the loop
        # (each strand's points are then checked against the bytes left before they are read)
        if 4 * ns > r.left:
            raise HairFormatError(f"{path}: strand count {ns} exceeds what a {r.size}-byte file can hold "
                                  f"(at most {r.left // 4} strand counts fit)")
        if ns > max_strands:
            raise HairFormatError(f"{path}: strand count {ns} is over the limit max_strands = {max_strands}")
        strands = []
        for k in range(ns):
            if r.left < 4:
                raise HairFormatError(f"{path}: truncated at strand {k} (vertex count missing)")
            (nv,) = struct.unpack("<i", r.take(4, f"strand {k} vertex count"))
            if nv < 0:
                raise HairFormatError(f"{path}: strand {k} has a negative vertex count {nv}")
            if nv < MIN_STRAND_VERTICES:
                raise HairFormatError(f"{path}: strand {k} has {nv} vertices (a strand needs at least {MIN_STRAND_VERTICES})")
            if nv > MAX_VERTICES_PER_STRAND:
                raise HairFormatError(f"{path}: strand {k} has {nv} vertices (more than {MAX_VERTICES_PER_STRAND})")
            if 12 * nv > r.left:
                raise HairFormatError(f"{path}: strand {k} declares {nv} vertices but only {r.left} bytes remain")
            strands.append(_points(r.floats(3 * nv, f"strand {k}"), nv, path, k))
        if r.left:
            raise HairFormatError(f"{path}: {r.left} trailing bytes after {ns} strands")
    return strands


def write_data(path, strands) -> None:
    """Write strands (each (n_i, 3)) as a USC-HairSalon ``.data`` file (float32 coordinates)."""
    parts = [struct.pack("<i", len(strands))]
    for s in strands:
        s = np.asarray(s, dtype="<f4")
        if s.ndim != 2 or s.shape[1] != 3:
            raise ValueError(f"each strand must have shape (n, 3) (got {s.shape})")
        parts.append(struct.pack("<i", s.shape[0]))
        parts.append(s.tobytes())
    Path(path).write_bytes(b"".join(parts))


_HAIR_HEADER = struct.Struct("<4sIIII f f 3f 88s")


def read_hair(path, *, max_strands: int = MAX_STRANDS) -> list[np.ndarray]:
    """Read a Cem Yuksel ``.hair`` file into a list of (n_i, 3) float64 arrays (points only).

    Every count in the header is bounded by the file size before anything is allocated, with or
    without the segment array (flag bit 0); segment counts and points are read in pieces and
    checked as they come. Raises :class:`HairFormatError` naming the field and the limit.
    """
    max_strands = _check_max_strands(max_strands)
    with _Reader(path) as r:
        if r.size < _HAIR_HEADER.size:
            raise HairFormatError(f"{path}: file too short for the 128-byte .hair header ({r.size} bytes)")
        magic, ns, npts, flags, dseg, _th, _tr, _c0, _c1, _c2, _info = _HAIR_HEADER.unpack(r.take(_HAIR_HEADER.size, "header"))
        if magic != b"HAIR":
            raise HairFormatError(f"{path}: bad signature {magic!r} (expected b'HAIR')")
        if not flags & 2:
            raise HairFormatError(f"{path}: the file has no point array (flag bit 1 unset)")
        # bytes per point of the arrays present (points, thickness, transparency, colours), per strand (segments)
        per_point = 12 + (4 if flags & 4 else 0) + (4 if flags & 8 else 0) + (12 if flags & 16 else 0)
        need = (2 * ns if flags & 1 else 0) + per_point * npts
        if need > r.left:
            raise HairFormatError(f"{path}: header declares {ns} strands and {npts} points ({need} bytes) "
                                  f"but only {r.left} bytes follow")
        # each strand has >= 2 points: the point count (bounded by the file size above) bounds the strand count
        if MIN_STRAND_VERTICES * ns > npts:
            raise HairFormatError(f"{path}: header declares {ns} strands but only {npts} points "
                                  f"(a strand needs at least {MIN_STRAND_VERTICES} points)")
        if ns > max_strands:
            raise HairFormatError(f"{path}: strand count {ns} is over the limit max_strands = {max_strands}")
        if flags & 1:
            pieces, total = [], 0
            for first in range(0, ns, CHUNK_STRANDS):
                count = min(CHUNK_STRANDS, ns - first)
                seg = np.frombuffer(r.take(2 * count, f"segment counts of strands {first}.."), dtype="<u2")
                if np.any(seg < 1):
                    k = first + int(np.flatnonzero(seg < 1)[0])
                    raise HairFormatError(f"{path}: strand {k} has 0 segments (a strand needs at least 1 segment, 2 points)")
                total += int(seg.sum(dtype=np.int64)) + count
                if total > npts:
                    raise HairFormatError(f"{path}: segment counts of strands 0..{first + count - 1} add up to {total} "
                                          f"points, more than the header's {npts}")
                pieces.append(seg)
            segs = np.concatenate(pieces) if pieces else np.zeros(0, dtype="<u2")
            if total != npts:
                raise HairFormatError(f"{path}: segment counts add up to {total} points but the header says {npts}")
        else:
            if ns and dseg < 1:
                raise HairFormatError(f"{path}: default segment count {dseg} (no segment array, flag bit 0 unset): "
                                      f"a strand needs at least 1 segment")
            if ns and dseg + 1 > MAX_VERTICES_PER_STRAND:
                raise HairFormatError(f"{path}: default segment count {dseg} gives strands of more than "
                                      f"{MAX_VERTICES_PER_STRAND} vertices")
            if ns * (dseg + 1) != npts:
                raise HairFormatError(f"{path}: {ns} strands of the default {dseg} segments make {ns * (dseg + 1)} "
                                      f"points but the header says {npts}")
            segs = None
        counts = (segs.astype(np.int64) if segs is not None else np.full(ns, dseg, dtype=np.int64)) + 1
        return _split_points(r, counts, path)


def _split_points(r: _Reader, counts: np.ndarray, path) -> list[np.ndarray]:
    """Read the points of strands with ``counts`` vertices each, about :data:`CHUNK_POINTS` points per
    piece; each strand is a view of its piece's float64 array."""
    out: list[np.ndarray] = []
    ends = np.cumsum(counts)
    first = 0
    while first < len(counts):
        base = ends[first - 1] if first else 0
        last = max(first + 1, int(np.searchsorted(ends, base + CHUNK_POINTS, side="right")))
        npts = int(ends[last - 1] - base)
        raw = r.floats(3 * npts, f"points of strands {first}..{last - 1}")
        with np.errstate(invalid="ignore"):  # a signalling NaN warns on the cast; it is refused below
            pts = raw.reshape(npts, 3).astype(np.float64)
        finite = np.all(np.isfinite(pts), axis=1)
        if not finite.all():
            v = int(np.flatnonzero(~finite)[0]) + int(base)
            k = int(np.searchsorted(ends, v, side="right"))
            raise HairFormatError(f"{path}: strand {k} has non-finite coordinates (vertex {v - (int(ends[k - 1]) if k else 0)})")
        out.extend(np.split(pts, (ends[first:last - 1] - base).astype(np.intp)))
        first = last
    return out


def write_hair(path, strands, info: str = "rodlab") -> None:
    """Write strands as a ``.hair`` file with segment counts and points (flags = 3)."""
    strands = [np.asarray(s, dtype="<f4") for s in strands]
    for s in strands:
        if s.ndim != 2 or s.shape[1] != 3 or s.shape[0] < 2 or s.shape[0] - 1 > 65535:
            raise ValueError(f"each strand must have shape (n, 3) with 2 <= n <= 65536 (got {s.shape})")
    npts = sum(s.shape[0] for s in strands)
    header = _HAIR_HEADER.pack(b"HAIR", len(strands), npts, 3, 0, 1.0, 0.0, 1.0, 1.0, 1.0,
                               info.encode("ascii", "replace")[:88].ljust(88, b"\0"))
    segs = np.array([s.shape[0] - 1 for s in strands], dtype="<u2")
    body = b"".join(s.tobytes() for s in strands)
    Path(path).write_bytes(header + segs.tobytes() + body)


def read_hair_file(path, *, max_strands: int = MAX_STRANDS) -> list[np.ndarray]:
    """Dispatch on the extension: ``.data`` (:func:`read_data`) or ``.hair`` (:func:`read_hair`)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".data":
        return read_data(path, max_strands=max_strands)
    if suffix == ".hair":
        return read_hair(path, max_strands=max_strands)
    raise HairFormatError(f"{path}: unknown hair file extension {suffix!r} (expected .data or .hair)")
