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

Readers check every count against the file size *before* allocating anything and raise
:class:`HairFormatError` naming what is wrong; strands with fewer than 2 vertices are rejected
(they cannot be simulated). Writers produce files the readers read back bit for bit (float32).
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

MAX_VERTICES_PER_STRAND = 1 << 20


class HairFormatError(ValueError):
    """A hair file is malformed, truncated or inconsistent (the message says where)."""


def _read_bytes(path) -> bytes:
    p = Path(path)
    if not p.is_file():
        raise HairFormatError(f"{p}: no such file")
    return p.read_bytes()


def read_data(path) -> list[np.ndarray]:
    """Read a USC-HairSalon ``.data`` file into a list of (n_i, 3) float64 arrays."""
    buf = _read_bytes(path)
    size = len(buf)
    if size < 4:
        raise HairFormatError(f"{path}: file too short for the strand count ({size} bytes)")
    (ns,) = struct.unpack_from("<i", buf, 0)
    if ns < 0:
        raise HairFormatError(f"{path}: negative strand count {ns}")
    # every strand needs at least its 4-byte count: bound the count by the file size before allocating
    if 4 + 4 * ns > size:
        raise HairFormatError(f"{path}: strand count {ns} exceeds what a {size}-byte file can hold")
    off = 4
    strands = []
    for k in range(ns):
        if off + 4 > size:
            raise HairFormatError(f"{path}: truncated at strand {k} (vertex count missing)")
        (nv,) = struct.unpack_from("<i", buf, off)
        off += 4
        if nv < 0:
            raise HairFormatError(f"{path}: strand {k} has a negative vertex count {nv}")
        if nv > MAX_VERTICES_PER_STRAND:
            raise HairFormatError(f"{path}: strand {k} has {nv} vertices (more than {MAX_VERTICES_PER_STRAND})")
        need = 12 * nv
        if off + need > size:
            raise HairFormatError(f"{path}: strand {k} declares {nv} vertices but only {size - off} bytes remain")
        pts = np.frombuffer(buf, dtype="<f4", count=3 * nv, offset=off).reshape(nv, 3).astype(np.float64)
        off += need
        if not np.all(np.isfinite(pts)):
            raise HairFormatError(f"{path}: strand {k} has non-finite coordinates")
        strands.append(pts)
    if off != size:
        raise HairFormatError(f"{path}: {size - off} trailing bytes after {ns} strands")
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


def read_hair(path) -> list[np.ndarray]:
    """Read a Cem Yuksel ``.hair`` file into a list of (n_i, 3) float64 arrays (points only)."""
    buf = _read_bytes(path)
    size = len(buf)
    if size < _HAIR_HEADER.size:
        raise HairFormatError(f"{path}: file too short for the 128-byte .hair header ({size} bytes)")
    magic, ns, npts, flags, dseg, _th, _tr, _c0, _c1, _c2, _info = _HAIR_HEADER.unpack_from(buf, 0)
    if magic != b"HAIR":
        raise HairFormatError(f"{path}: bad signature {magic!r} (expected b'HAIR')")
    if not flags & 2:
        raise HairFormatError(f"{path}: the file has no point array (flag bit 1 unset)")
    off = _HAIR_HEADER.size
    need = 0
    if flags & 1:
        need += 2 * ns
    need += 12 * npts
    if flags & 4:
        need += 4 * npts
    if flags & 8:
        need += 4 * npts
    if flags & 16:
        need += 12 * npts
    if off + need > size:
        raise HairFormatError(f"{path}: header declares {ns} strands and {npts} points ({need} bytes) but only {size - off} bytes follow")
    if flags & 1:
        segs = np.frombuffer(buf, dtype="<u2", count=ns, offset=off).astype(np.int64)
        off += 2 * ns
    else:
        segs = np.full(ns, dseg, dtype=np.int64)
    if ns and int((segs + 1).sum()) != npts:
        raise HairFormatError(f"{path}: segment counts add up to {int((segs + 1).sum())} points but the header says {npts}")
    if np.any(segs < 1):
        raise HairFormatError(f"{path}: a strand has fewer than 1 segment")
    pts = np.frombuffer(buf, dtype="<f4", count=3 * npts, offset=off).reshape(npts, 3).astype(np.float64)
    if not np.all(np.isfinite(pts)):
        raise HairFormatError(f"{path}: non-finite point coordinates")
    out = []
    start = 0
    for s in segs:
        out.append(pts[start:start + s + 1].copy())
        start += s + 1
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


def read_hair_file(path) -> list[np.ndarray]:
    """Dispatch on the extension: ``.data`` or ``.hair``."""
    suffix = Path(path).suffix.lower()
    if suffix == ".data":
        return read_data(path)
    if suffix == ".hair":
        return read_hair(path)
    raise HairFormatError(f"{path}: unknown hair file extension {suffix!r} (expected .data or .hair)")
