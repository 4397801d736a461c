"""A Dask task's strands and its results packed into a few contiguous arrays (issue #14, docs/dask.md "Speed").

Dask serializes a list or dict that holds NumPy arrays element by element: one header and one frame per
array. A task of 256 strands as ``[(index, x), ...]`` then cost ~23 ms to serialize in the client, and its
results (8 parameter arrays per strand) ~24 ms in the worker and ~8 ms to read back in the client, about
0.2 ms per strand on a 2-core machine where the client, the scheduler and both workers share the cores.
:class:`StrandBatch` and :class:`BatchResults` are plain objects holding one array per quantity, which
Dask pickles in one go (arrays as out-of-band buffers). Packing copies values, never changes them: the
strands a task sees and the parameter arrays the client gets back are bitwise those of the unpacked run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StrandBatch:
    """Strands ``[(index, x (n_k, 3) [m]), ...]`` as three arrays: ``indices`` (k,) int64, ``offsets``
    (k + 1,) int64 (strand j is ``vertices[offsets[j]:offsets[j + 1]]``) and ``vertices`` (sum n_k, 3)
    float64."""

    indices: np.ndarray
    offsets: np.ndarray
    vertices: np.ndarray

    @classmethod
    def pack(cls, jobs) -> "StrandBatch":
        """Pack ``jobs`` (``[(index, x), ...]``, each ``x`` an (n, 3) array). Raises ValueError naming the
        strand when an ``x`` is not (n, 3)."""
        for k, x in jobs:
            if np.ndim(x) != 2 or np.shape(x)[1] != 3:
                raise ValueError(f"strand {k}: vertices must be an (n, 3) array, got shape {np.shape(x)}")
        sizes = np.array([np.shape(x)[0] for _, x in jobs], dtype=np.int64)
        offsets = np.zeros(len(jobs) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        vertices = (np.concatenate([np.asarray(x, dtype=float) for _, x in jobs]) if jobs
                    else np.empty((0, 3)))
        return cls(np.array([k for k, _ in jobs], dtype=np.int64), offsets, np.ascontiguousarray(vertices))

    def __len__(self) -> int:
        return len(self.indices)

    def jobs(self) -> list[tuple[int, np.ndarray]]:
        """``[(index, x), ...]`` with each ``x`` a C-contiguous, writable view into ``vertices``."""
        o = self.offsets
        return [(int(k), self.vertices[o[j]:o[j + 1]]) for j, k in enumerate(self.indices)]

    def vertex_counts(self) -> np.ndarray:
        """Vertices per strand (k,)."""
        return np.diff(self.offsets)


@dataclass(frozen=True)
class BatchResults:
    """A task's per-strand result rows (dicts) with their ``"arrays"`` entries taken out and packed: for
    each array name, every row's array raveled into one float64 array ``values[name]`` and the arrays'
    shapes in ``shapes[name]`` (rows with arrays x ndim, int64); ``with_arrays`` lists the rows (positions)
    that had arrays (a skipped strand has none)."""

    rows: list
    with_arrays: np.ndarray
    values: dict
    shapes: dict

    @classmethod
    def pack(cls, rows: list[dict]) -> "BatchResults":
        """Pack ``rows`` (left unchanged). Raises ValueError when rows with arrays disagree on the array
        names or on an array's number of dimensions."""
        plain = [{key: v for key, v in r.items() if key != "arrays"} for r in rows]
        have = [j for j, r in enumerate(rows) if r.get("arrays") is not None]
        names = tuple(rows[have[0]]["arrays"]) if have else ()
        values, shapes = {}, {}
        for j in have:
            if tuple(rows[j]["arrays"]) != names:
                raise ValueError(f"row {j}: array names {tuple(rows[j]['arrays'])} differ from the first row's {names}")
        for n in names:
            arrays = [np.asarray(rows[j]["arrays"][n], dtype=float) for j in have]
            ndims = {a.ndim for a in arrays}
            if len(ndims) != 1:
                raise ValueError(f"array {n!r} has different numbers of dimensions over the rows: {sorted(ndims)}")
            values[n] = np.concatenate([a.ravel() for a in arrays])
            shapes[n] = np.array([a.shape for a in arrays], dtype=np.int64)
        return cls(plain, np.array(have, dtype=np.int64), values, shapes)

    def unpack(self) -> list[dict]:
        """The rows, each that had arrays with ``"arrays"`` restored (views into ``values``)."""
        rows = [dict(r) for r in self.rows]
        if not len(self.with_arrays):
            return rows
        per_name = {}
        for n, dims in self.shapes.items():
            parts = np.split(self.values[n], np.cumsum(np.prod(dims, axis=1))[:-1])
            per_name[n] = parts if dims.shape[1] == 1 else [a.reshape(tuple(d)) for a, d in zip(parts, dims.tolist())]
        for i, j in enumerate(self.with_arrays.tolist()):
            rows[j]["arrays"] = {n: parts[i] for n, parts in per_name.items()}
        return rows
