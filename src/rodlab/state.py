"""Where a rod *is*: plain arrays that change every step, cheap to copy, save and restore."""
from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

STATE_FORMAT_VERSION = 1


@dataclass
class RodState:
    """Centerline + material frame state shared by the DER steppers.

    t [s]; x, v (nv, 3) positions [m] and velocities [m/s]; theta (ne,) material angle of each
    edge [rad] measured from its reference director; ref_d1 (ne, 3) reference director a1 of each
    edge (time-parallel transported); ref_twist (nj,) reference twist per joint [rad], unwrapped.
    """

    t: float
    x: np.ndarray
    v: np.ndarray
    theta: np.ndarray
    ref_d1: np.ndarray
    ref_twist: np.ndarray

    def copy(self) -> "RodState":
        return RodState(self.t, *(np.array(getattr(self, f.name)) for f in fields(self)[1:]))

    def save(self, path, metadata: dict | None = None) -> None:
        save_arrays(path, {f.name: np.asarray(getattr(self, f.name)) for f in fields(self)}, metadata)

    @classmethod
    def load(cls, path) -> "RodState":
        arrays, _ = load_arrays(path)
        return cls(float(arrays["t"]), *(np.ascontiguousarray(arrays[f.name], dtype=float) for f in fields(cls)[1:]))


def save_arrays(path, arrays: dict, metadata: dict | None = None) -> None:
    """Save arrays to ``.npz`` with a JSON metadata entry (format version, parameters...)."""
    meta = {"format_version": STATE_FORMAT_VERSION, **(metadata or {})}
    from .io import jsonsafe  # strict JSON: no bare NaN in the metadata

    np.savez_compressed(Path(path), **arrays, __metadata__=np.array(jsonsafe.dumps(meta)))


def load_arrays(path) -> tuple[dict, dict]:
    with np.load(Path(path), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != "__metadata__"}
        meta = json.loads(str(data["__metadata__"])) if "__metadata__" in data.files else {}
    return arrays, meta
