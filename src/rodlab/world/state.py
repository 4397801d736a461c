"""``State``: where every rod and body of a world is, the same for every method.

Plain arrays, flat over all rods in world order (rod ``r``'s rows are given by the world's
offsets, kept here too so a state knows its own layout):

- ``t`` [s];
- ``vertex_x``, ``vertex_v`` (N, 3): positions [m] and velocities [m/s];
- ``edge_ref_d1`` (E, 3) reference director per edge and ``edge_theta`` (E,) the material angle
  [rad] from it: the material frame is ``m1 = cos(theta) a1 + sin(theta) a2``, ``m2 = t x m1``
  with ``a2 = t x a1`` (:meth:`State.material_frames`). DER steps these directly; compact and
  galpha write their segment frames here as ``a1 = m1``, ``theta = 0``;
- ``joint_ref_twist`` (J,): the reference twist of the reference frame per joint [rad], unwrapped
  (Bergou et al. 2008, Sec. 6);
- ``body_x`` (B, 3) centres of mass [m], ``body_q`` (B, 4) unit quaternions (w, x, y, z) body ->
  world, ``body_v`` (B, 3) [m/s], ``body_w`` (B, 3) angular velocity in body coordinates [rad/s];
- ``solver``: the method's own unknowns (compact's root + axis-angles, galpha's nodal unknowns),
  name -> array, and ``method``: the method that owns them. A simulator starts from its own
  unknowns when ``method`` names it, else from the common fields above.

``copy()`` is deep; ``save``/``load`` write ``.npz`` plus JSON metadata (format version, no
pickle). The common fields are the authoritative output of every ``advance``.

Deferred outputs (:meth:`State.defer`, docs/world.md "Deferred outputs"): a simulator may leave an
array field unwritten at the end of a call and hand the state a ``fill`` that writes it; the first
read of that field (attribute access, ``copy``, ``save``, comparison, the next ``advance`` of
another simulator) runs the fill first, so a reader never sees a stale value. The simulator that
deferred may take the unwritten arrays back without filling (:meth:`State.deferred_by`) when its next
call does not need them, which is how a call of one step avoids an O(n) output nobody read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..aot import kernel
from ..geometry.curves import complete_frames, compute_edges, compute_tangents, material_frames
from ..model import require

# called from Python only here: the ahead-of-time entries where built (rodlab.aot), else the dispatchers
complete_frames, compute_edges, compute_tangents, material_frames = map(kernel, (
    complete_frames, compute_edges, compute_tangents, material_frames))

STATE_FORMAT = "rodlab.State"
STATE_FORMAT_VERSION = 1
_ARRAYS = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist", "body_x", "body_q", "body_v", "body_w",
           "rod_vertex_start", "rod_edge_start", "rod_joint_start", "rod_closed")


@dataclass
class State:
    """A world's state (module docstring)."""

    t: float
    vertex_x: np.ndarray
    vertex_v: np.ndarray
    edge_theta: np.ndarray
    edge_ref_d1: np.ndarray
    joint_ref_twist: np.ndarray
    body_x: np.ndarray
    body_q: np.ndarray
    body_v: np.ndarray
    body_w: np.ndarray
    rod_vertex_start: np.ndarray
    rod_edge_start: np.ndarray
    rod_joint_start: np.ndarray
    rod_closed: np.ndarray
    method: str = ""
    solver: dict = field(default_factory=dict)

    # the pending deferral, or None: (names, {name: array}, fill, owner, size of __dict__); not a field
    _deferred = None

    # ---- deferred outputs ----------------------------------------------------------------------
    def defer(self, names, fill, owner=None) -> None:
        """Leave the array fields ``names`` unwritten until they are read: the first read of any of
        them (or of :meth:`copy`, :meth:`save`, ...) runs ``fill(self)``, which must write every one
        of them in place (their arrays are kept: views and shapes stay valid). ``owner`` (the
        simulator) may later take them back unfilled with :meth:`deferred_by`. A deferral already
        pending from another owner, or over other names, is filled first."""
        names = tuple(names)
        pending = self._deferred
        if pending is not None and (pending[3] is not owner or owner is None or pending[0] != names
                                    or self.deferred_by(owner) is None):
            self.resolve()
            pending = None
        for name in names:
            if name not in _ARRAYS:  # the message built only when needed: defer is on a per-call path
                require(False, f"State.defer: {name!r} is not an array field of State (one of {', '.join(_ARRAYS)})")
        d = self.__dict__
        arrays = pending[1] if pending is not None else {name: d.pop(name) for name in names}
        d["_deferred"] = None
        # the size of the instance dict with the deferred fields out: a re-bound field grows it
        d["_deferred"] = (names, arrays, fill, owner, len(d))

    def deferred_by(self, owner) -> dict | None:
        """The unwritten arrays (name -> array) of the deferral ``owner`` left pending, without
        running its fill; None when there is none (a reader filled it, or another owner deferred).
        The deferral stays pending: the owner either defers again or writes the arrays itself and
        calls :meth:`drop_deferred`."""
        pending = self._deferred
        if pending is None or pending[3] is not owner or owner is None:
            return None
        d = self.__dict__
        if len(d) != pending[4]:  # something was added: a re-bound deferred field, or another attribute
            for name in pending[0]:
                if name in d:  # the user re-bound a deferred field: the owner's arrays are no longer the state's
                    self.resolve()
                    return None
        return pending[1]

    def drop_deferred(self) -> None:
        """Put the deferred arrays back as they are, without their fill (their owner wrote them, or
        they are about to be overwritten). A field the user re-bound meanwhile keeps its new array."""
        pending = self._deferred
        if pending is not None:
            d = self.__dict__
            d["_deferred"] = None
            for name, array in pending[1].items():
                d.setdefault(name, array)

    def resolve(self) -> None:
        """Run the pending fill, if any: afterwards every field holds its value. A field the user
        re-bound meanwhile (``state.edge_theta = a``) keeps the user's array, unfilled."""
        pending = self._deferred
        if pending is not None:
            names, arrays, fill = pending[:3]
            d = self.__dict__
            rebound = {name: d[name] for name in names if name in d}
            d["_deferred"] = None
            d.update(arrays)
            fill(self)
            d.update(rebound)

    def __getattr__(self, name):
        # only reached when normal lookup fails: a deferred field (or a real AttributeError)
        pending = self.__dict__.get("_deferred") if name != "__dict__" else None
        if pending is not None and name in pending[0]:
            self.resolve()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self):  # pickling (Dask, multiprocessing) fills first: a fill is not data
        self.resolve()
        return {k: v for k, v in self.__dict__.items() if k != "_deferred"}

    @classmethod
    def zeros_for(cls, world, t: float = 0.0) -> "State":
        """A state at the world's rest positions, at rest, frames not yet set (zeros)."""
        nb = world.n_bodies
        return cls(
            float(t), np.array(world.vertex_rest_x), np.zeros((world.n_vertices, 3)), np.zeros(world.n_edges),
            np.array(world.edge_rest_d1), np.zeros(world.n_joints),
            np.array([b.position for b in world.bodies]).reshape(nb, 3),
            np.array([b.orientation for b in world.bodies]).reshape(nb, 4), np.zeros((nb, 3)), np.zeros((nb, 3)),
            np.array(world.rod_vertex_start), np.array(world.rod_edge_start), np.array(world.rod_joint_start),
            np.array(world.rod_closed))

    # ---- layout ------------------------------------------------------------------------------
    @property
    def n_rods(self) -> int:
        return int(self.rod_vertex_start.shape[0] - 1)

    def rod_x(self, r: int) -> np.ndarray:
        """Rod ``r``'s positions (n_r, 3): a view, writes go to the state."""
        return self.vertex_x[self.rod_vertex_start[r]:self.rod_vertex_start[r + 1]]

    def rod_v(self, r: int) -> np.ndarray:
        return self.vertex_v[self.rod_vertex_start[r]:self.rod_vertex_start[r + 1]]

    def rod_theta(self, r: int) -> np.ndarray:
        return self.edge_theta[self.rod_edge_start[r]:self.rod_edge_start[r + 1]]

    def rod_ref_d1(self, r: int) -> np.ndarray:
        return self.edge_ref_d1[self.rod_edge_start[r]:self.rod_edge_start[r + 1]]

    def rod_ref_twist(self, r: int) -> np.ndarray:
        return self.joint_ref_twist[self.rod_joint_start[r]:self.rod_joint_start[r + 1]]

    def material_frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Material directors ``(m1, m2)`` (E, 3) of every edge."""
        m1 = np.empty_like(self.edge_ref_d1)
        m2 = np.empty_like(self.edge_ref_d1)
        for r in range(self.n_rods):
            x = np.ascontiguousarray(self.rod_x(r))
            es = slice(self.rod_edge_start[r], self.rod_edge_start[r + 1])
            ne = es.stop - es.start
            e = np.empty((ne, 3))
            compute_edges(x, bool(self.rod_closed[r]), e)
            lengths = np.empty(ne)
            t = np.empty((ne, 3))
            compute_tangents(e, lengths, t)
            a1 = np.ascontiguousarray(self.edge_ref_d1[es])
            a2 = np.empty_like(a1)
            complete_frames(t, a1, a2)
            u, v = np.empty_like(a1), np.empty_like(a1)
            material_frames(a1, a2, np.ascontiguousarray(self.edge_theta[es]), u, v)
            m1[es], m2[es] = u, v
        return m1, m2

    # ---- copies and files --------------------------------------------------------------------
    def copy(self) -> "State":
        arrays = {name: np.array(getattr(self, name)) for name in _ARRAYS}
        return State(self.t, **arrays, method=self.method, solver={k: np.array(v) for k, v in self.solver.items()})

    def assign(self, other: "State") -> None:
        """Copy ``other``'s values into this state's arrays (same layout), e.g. to restore a snapshot."""
        self.drop_deferred()  # every array is overwritten below: no fill needed
        for name in _ARRAYS:
            getattr(self, name)[...] = getattr(other, name)
        self.t = other.t
        self.method = other.method
        for k, v in other.solver.items():
            if k in self.solver and self.solver[k].shape == v.shape:
                self.solver[k][...] = v
            else:
                self.solver[k] = np.array(v)

    def save(self, path, metadata: dict | None = None) -> None:
        """Write ``path`` (``.npz``): the arrays, the solver's unknowns as ``solver/NAME``, and JSON
        metadata (format, version, t, method, plus ``metadata``)."""
        meta = {"format": STATE_FORMAT, "format_version": STATE_FORMAT_VERSION, "t": float(self.t), "method": self.method,
                **(metadata or {})}
        arrays = {name: np.asarray(getattr(self, name)) for name in _ARRAYS}
        arrays.update({f"solver/{k}": np.asarray(v) for k, v in self.solver.items()})
        from ..io import jsonsafe  # strict JSON: no bare NaN in the metadata

        np.savez_compressed(Path(path), **arrays, __metadata__=np.array(jsonsafe.dumps(meta)))

    @classmethod
    def load(cls, path) -> "State":
        """Read a state written by :meth:`save` (pickle disabled); checks format and version."""
        with np.load(Path(path), allow_pickle=False) as data:
            require("__metadata__" in data.files, f"{path}: not a rodlab state file (no metadata)")
            meta = json.loads(str(data["__metadata__"]))
            require(meta.get("format") == STATE_FORMAT, f"{path}: not a rodlab state file (format {meta.get('format')!r})")
            require(meta.get("format_version") == STATE_FORMAT_VERSION,
                    f"{path}: state format version {meta.get('format_version')} is not supported (expected {STATE_FORMAT_VERSION})")
            missing = [name for name in _ARRAYS if name not in data.files]
            require(not missing, f"{path}: state file lacks {', '.join(missing)}")
            arrays = {name: np.array(data[name]) for name in _ARRAYS}
            solver = {k[len("solver/"):]: np.array(data[k]) for k in data.files if k.startswith("solver/")}
        return cls(float(meta["t"]), **arrays, method=str(meta.get("method", "")), solver=solver)

    def metadata_of(path) -> dict:  # noqa: N805 - used as State.metadata_of(path)
        with np.load(Path(path), allow_pickle=False) as data:
            return json.loads(str(data["__metadata__"]))

    metadata_of = staticmethod(metadata_of)

    def is_finite(self) -> bool:
        return bool(np.all(np.isfinite(self.vertex_x)) and np.all(np.isfinite(self.vertex_v))
                    and np.all(np.isfinite(self.edge_theta)) and np.all(np.isfinite(self.body_x)))
