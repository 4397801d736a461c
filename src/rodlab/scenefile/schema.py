"""Scene files: parse, validate, normalize and write back a TOML description of a world and its run.

A scene file holds ``[simulation]`` (method, time step, duration, loads), ``[[rod]]`` tables (one
rod each, or many strands read from a hair file), ``[[hairstyle]]``, ``[[body]]``, ``[[weld]]``,
``[[clamp]]``, ``[[obstacle]]``, ``[[point_force]]``, ``[wind]``, ``[contact]`` and ``[output]`` (format: docs/scene-files.md).
:func:`load` returns a :class:`SceneSpec` whose ``data`` is the normalized file: every key checked
against its allowed values, numbers converted (ints given for floats become floats), defaults
filled in. :func:`dumps` writes ``data`` back as TOML, so ``loads(dumps(spec)) == spec``.

Every problem raises :class:`SceneFileError`, whose message names the file, the key path
(``rod[1].n``), the allowed values or range and, for TOML syntax errors, the line. SI units.
"""
from __future__ import annotations

import copy
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hair.generator import STYLES
from ..model import ModelError
from ..solvers import METHODS
from ..world import hairstyle as _hair

SHAPES = ("straight", "helix", "circle", "points", "file")
ENDS = ("start", "end")
OBSTACLE_KINDS = ("plane", "sphere", "capsule", "cylinder", "mesh")


class SceneFileError(ModelError):
    """A scene file is unreadable or invalid. ``source`` (the file), ``key`` (the key path, e.g.
    ``rod[1].n``) and ``reason`` are kept apart; the message joins them."""

    def __init__(self, reason: str, *, source: str | None = None, key: str | None = None):
        self.source, self.key, self.reason = source, key, reason
        super().__init__(": ".join([*(str(p) for p in (source, key) if p), reason]))


# ---- one field's rule ------------------------------------------------------------------------
_REQUIRED = object()


@dataclass(frozen=True)
class Field:
    """One key's type, default and allowed range. ``default``: a value, ``None`` (optional, absent
    when not given) or required. Kinds: float, int, bool, str, vec3, quat, strs (strings from
    ``choices``), ints, vec3s (list of 3-vectors), triples (list of 3 ints), inertia (3 or 3x3),
    bending (one or two numbers), rest_d1 (a 3-vector or one per edge), table (method options)."""

    kind: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple | None = None
    unit: str = ""
    min_len: int = 0

    def allowed(self) -> str:
        u = f" {self.unit}" if self.unit else ""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices) + (" (a list)" if self.kind == "strs" else "")
        if self.kind == "bool":
            return "true or false"
        what = {"float": "a number", "int": "an integer", "ints": "a list of integers"}.get(self.kind, self.kind)
        if self.low is not None and self.high is not None:
            return f"{what} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]{u}"
        if self.low is not None:
            return f"{what} {'>' if self.low_open else '>='} {self.low:g}{u}"
        return what + u


def _f(low=None, default=None, *, high=None, open_=False, unit=""):
    return Field("float", default, low, high, open_, unit=unit)


def _pos(default=None, unit=""):
    return Field("float", default, 0.0, None, True, unit=unit)


def _int(low, default=None, high=None):
    return Field("int", default, low, high)


_REQ = _REQUIRED
SIMULATION = {
    "method": Field("str", "der", choices=tuple(METHODS)),
    "dt": _pos(None, "s"),
    "t_end": _f(0.0, 1.0, unit="s"),
    "static": Field("bool", False),
    "gravity": Field("vec3", [0.0, 0.0, -9.81], unit="m/s^2"),
    "damping": _f(0.0, 0.0, unit="1/s"),
    "frames": _int(1, None, 100_000),
    "options": Field("table", {}),
}
OUTPUT = {"frames": _int(1, 100, 100_000), "pictures": Field("bool", True), "animate": Field("str", None, choices=("mp4", "gif"))}
ROD_COMMON = {
    "shape": Field("str", "straight", choices=SHAPES),
    "radius": _pos(0.01, "m"),
    "E": _pos(None, "Pa"),
    "G": _pos(None, "Pa"),
    "rho": _pos(None, "kg/m^3"),
    "bending": Field("bending", None, unit="N m^2"),
    "twisting": _pos(None, "N m^2"),
    "linear_density": _pos(None, "kg/m"),
    "stretching": _f(0.0, None, unit="N"),
    "clamp": Field("strs", [], choices=ENDS),
    "pin": Field("ints", []),
    "closed": Field("bool", False),
    "rest_d1": Field("rest_d1", None),
}
ROD_SHAPE = {
    "straight": {"n": _int(2, 50), "length": _pos(1.0, "m"), "start": Field("vec3", [0.0, 0.0, 0.0], unit="m"),
                 "direction": Field("vec3", [1.0, 0.0, 0.0])},
    "helix": {"n": _int(3, 50), "helix_radius": _pos(_REQ, "m"), "pitch": _f(0.0, _REQ, unit="m"),
              "turns": _pos(_REQ), "start": Field("vec3", [0.0, 0.0, 0.0], unit="m"),
              "direction": Field("vec3", [0.0, 0.0, 1.0])},
    "circle": {"n": _int(3, 50), "length": _pos(1.0, "m"), "start": Field("vec3", [0.0, 0.0, 0.0], unit="m"),
               "direction": Field("vec3", [0.0, 0.0, 1.0])},
    "points": {"points": Field("vec3s", _REQ, unit="m", min_len=2), "n": _int(2, None)},
    "file": {"file": Field("str", _REQ), "max_strands": _int(1, None), "strands": Field("ints", None, low=0),
             "scale": _pos(1.0)},
}
HAIRSTYLE = {
    "strands": _int(1, _REQ, 1_000_000), "vertices": _int(3, _REQ, 100_000), "length": _pos(0.25, "m"),
    "style": Field("str", "wavy", choices=STYLES), "scalp_radius": _pos(0.1, "m"), "seed": _int(0, 0),
    "radius": _pos(_hair.HAIR_RADIUS, "m"), "E": _pos(_hair.HAIR_E, "Pa"), "G": _pos(_hair.HAIR_G, "Pa"),
    "rho": _pos(_hair.HAIR_RHO, "kg/m^3"),
}
BODY = {"mass": _pos(_REQ, "kg"), "inertia": Field("inertia", _REQ, unit="kg m^2"),
        "position": Field("vec3", [0.0, 0.0, 0.0], unit="m"), "orientation": Field("quat", [1.0, 0.0, 0.0, 0.0])}
WELD = {"rod": _int(0, _REQ), "end": Field("str", _REQ, choices=ENDS), "body": _int(0, _REQ)}
CLAMP = {"rod": _int(0, _REQ), "end": Field("str", _REQ, choices=ENDS), "slide_axis": Field("vec3", None),
         "free_rotation": Field("bool", False), "twist_rate": _f(None, None, unit="rad/s"),
         "twist_axis": Field("vec3", None), "twist_ramp": _f(0.0, 0.0, unit="s"), "twist_total": _f(None, None, unit="rad")}
"""A clamp with options (``[[clamp]]``): it slides along ``slide_axis``, turns about ``twist_axis``
(default: the clamped rest edge) at ``twist_rate`` (ramped in over ``twist_ramp``, stopped at
``twist_total``), or is a swivel (``free_rotation``). A rod's ``clamp`` list holds the plain ones."""
POINT_FORCE = {"rod": _int(0, _REQ), "vertex": _int(None, _REQ), "force": Field("vec3", _REQ, unit="N")}
WIND = {"velocity": Field("vec3", _REQ, unit="m/s"), "drag": _pos(_REQ, "N s/m^2")}
_V3 = Field("vec3", _REQ, unit="m")
OBSTACLE = {
    "plane": {"point": Field("vec3", [0.0, 0.0, 0.0], unit="m"), "normal": Field("vec3", _REQ)},
    "sphere": {"center": _V3, "radius": _pos(_REQ, "m")},
    "capsule": {"a": _V3, "b": _V3, "radius": _pos(_REQ, "m")},
    "cylinder": {"point": _V3, "axis": Field("vec3", _REQ), "radius": _pos(_REQ, "m")},
    "mesh": {"vertices": Field("vec3s", _REQ, unit="m", min_len=3), "triangles": Field("triples", _REQ)},
}
for _fields in OBSTACLE.values():
    _fields["friction"] = _f(0.0, 0.0)  # Coulomb mu against every rod
CONTACT = {"rods": Field("bool", True), "friction": _f(0.0, 0.0), "pair_friction": Field("pair_friction", []),
           "thickness": _pos(None, "m"), "skip": _int(1, None)}
TABLES = ("simulation", "output", "wind", "contact")
ARRAYS = ("rod", "hairstyle", "body", "weld", "clamp", "obstacle", "point_force")
TOP = ("description", *TABLES, *ARRAYS)


# ---- checking values -------------------------------------------------------------------------
class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, reason: str):
        raise SceneFileError(reason, source=self.source, key=key)

    def _number(self, v, key, f: Field, integer=False):
        ok = isinstance(v, int) if integer else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok:
            self.fail(key, f"expected {f.allowed()} (got {v!r})")
        if not integer:
            v = float(v)
            if not math.isfinite(v):
                self.fail(key, f"expected a finite number (got {v!r})")
        bad = ((f.low is not None and (v <= f.low if f.low_open else v < f.low))
               or (f.high is not None and v > f.high))
        if bad:
            self.fail(key, f"{v!r} is out of range: expected {f.allowed()}")
        return v

    def _vector(self, v, key, size, what="a finite 3-vector"):
        if not isinstance(v, list) or len(v) != size:
            self.fail(key, f"expected {what} [x, y, z]" if size == 3 else f"expected {what}")
        out = []
        for i, c in enumerate(v):
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c):
                self.fail(f"{key}[{i}]", f"expected a finite number (got {c!r})")
            out.append(float(c))
        return out

    def value(self, v, key: str, f: Field):
        k = f.kind
        if k == "float":
            return self._number(v, key, f)
        if k == "int":
            return self._number(v, key, f, integer=True)
        if k == "bool":
            if not isinstance(v, bool):
                self.fail(key, f"expected true or false (got {v!r})")
            return v
        if k == "str":
            if not isinstance(v, str):
                self.fail(key, f"expected {'a string' if f.choices is None else f.allowed()} (got {v!r})")
            if f.choices is not None and v not in f.choices:
                self.fail(key, f"{v!r} is not allowed: expected {f.allowed()}")
            return v
        if k == "vec3":
            return self._vector(v, key, 3, f"a finite 3-vector{' [' + f.unit + ']' if f.unit else ''}")
        if k == "quat":
            q = self._vector(v, key, 4, "a quaternion [w, x, y, z]")
            if not any(q):
                self.fail(key, "expected a nonzero quaternion [w, x, y, z]")
            return q
        if k == "strs":
            if not isinstance(v, list):
                self.fail(key, f"expected a list of {f.allowed()} (got {v!r})")
            for i, s in enumerate(v):
                if s not in f.choices:
                    self.fail(f"{key}[{i}]", f"{s!r} is not allowed: expected one of {', '.join(map(repr, f.choices))}")
            if len(set(v)) != len(v):
                self.fail(key, f"an entry is repeated (got {v!r})")
            return list(v)
        if k == "ints":
            if not isinstance(v, list):
                self.fail(key, f"expected a list of integers (got {v!r})")
            return [self._number(c, f"{key}[{i}]", Field("int", low=f.low), integer=True) for i, c in enumerate(v)]
        if k == "vec3s":
            if not isinstance(v, list) or len(v) < f.min_len:
                self.fail(key, f"expected a list of at least {f.min_len} 3-vectors [[x, y, z], ...]")
            return [self._vector(p, f"{key}[{i}]", 3) for i, p in enumerate(v)]
        if k == "triples":
            if not isinstance(v, list) or not v:
                self.fail(key, "expected a list of vertex-index triples [[i, j, k], ...]")
            out = []
            for i, tri in enumerate(v):
                if not isinstance(tri, list) or len(tri) != 3:
                    self.fail(f"{key}[{i}]", f"expected 3 vertex indices (got {tri!r})")
                out.append([self._number(c, f"{key}[{i}]", Field("int", low=0), integer=True) for c in tri])
            return out
        if k == "pair_friction":
            if not isinstance(v, list):
                self.fail(key, "expected a list of [rod_a, rod_b, mu] triples")
            out = []
            for i, item in enumerate(v):
                if not isinstance(item, list) or len(item) != 3:
                    self.fail(f"{key}[{i}]", f"expected [rod_a, rod_b, mu] (got {item!r})")
                out.append([self._number(item[0], f"{key}[{i}]", Field("int", low=0), integer=True),
                            self._number(item[1], f"{key}[{i}]", Field("int", low=0), integer=True),
                            self._number(item[2], f"{key}[{i}]", _f(0.0))])
            return out
        if k == "inertia":
            if isinstance(v, list) and len(v) == 3 and all(isinstance(r, list) for r in v):
                return [self._vector(r, f"{key}[{i}]", 3) for i, r in enumerate(v)]
            if isinstance(v, list) and len(v) == 3:
                d = self._vector(v, key, 3)
                if min(d) <= 0:
                    self.fail(key, f"principal moments must be > 0 kg m^2 (got {v!r})")
                return d
            self.fail(key, "expected 3 principal moments [Ixx, Iyy, Izz] or a 3x3 matrix [kg m^2]")
        if k == "bending":
            if isinstance(v, list):
                if len(v) != 2:
                    self.fail(key, "expected one bending stiffness or two [B1, B2] > 0 N m^2")
                return [self._number(c, f"{key}[{i}]", _pos(unit="N m^2")) for i, c in enumerate(v)]
            return self._number(v, key, _pos(unit="N m^2"))
        if k == "rest_d1":
            if isinstance(v, list) and v and all(isinstance(p, list) for p in v):
                return [self._vector(p, f"{key}[{i}]", 3) for i, p in enumerate(v)]
            return self._vector(v, key, 3, "a 3-vector or one 3-vector per edge")
        if k == "table":
            if not isinstance(v, dict):
                self.fail(key, f"expected a table of method options (got {v!r})")
            for name, item in v.items():
                if isinstance(item, dict):
                    self.fail(f"{key}.{name}", "a method option must be a number, string, boolean or array")
            return copy.deepcopy(v)
        raise AssertionError(f"unknown field kind {k}")

    def table(self, raw, key: str, fields: dict, what: str) -> dict:
        """Check every key of ``raw`` against ``fields`` (unknown keys refused), fill defaults."""
        if not isinstance(raw, dict):
            self.fail(key, f"expected a table (got {raw!r})")
        unknown = sorted(set(raw) - set(fields))
        if unknown:
            self.fail(f"{key}.{unknown[0]}" if key else unknown[0],
                      f"unknown key (allowed keys {what}: {', '.join(fields)})")
        out = {}
        for name, f in fields.items():
            sub = f"{key}.{name}" if key else name
            if name in raw:
                out[name] = self.value(raw[name], sub, f)
            elif f.default is _REQUIRED:
                self.fail(sub, f"missing (required {what}; expected {f.allowed()})")
            elif f.default is not None:
                out[name] = copy.deepcopy(f.default)
        return out


# ---- sections --------------------------------------------------------------------------------
def _array(ck: _Checker, raw: dict, name: str) -> list:
    items = raw.get(name, [])
    if not isinstance(items, list) or not all(isinstance(t, dict) for t in items):
        ck.fail(name, f"expected an array of tables ([[{name}]])")
    return items


def _rod(ck: _Checker, raw: dict, key: str) -> dict:
    if not isinstance(raw, dict):
        ck.fail(key, "expected a table")
    shape = ck.value(raw.get("shape", "straight"), f"{key}.shape", ROD_COMMON["shape"])
    fields = {"shape": ROD_COMMON["shape"], **ROD_SHAPE[shape], **{k: f for k, f in ROD_COMMON.items() if k != "shape"}}
    rod = ck.table(raw, key, fields, f"for a {shape} rod")
    by_material = [k for k in ("E", "G", "rho") if k in rod]
    by_stiffness = [k for k in ("bending", "twisting", "linear_density", "stretching") if k in rod]
    if by_material and by_stiffness:
        ck.fail(f"{key}.{by_stiffness[0]}", f"give a material (E, G, rho) or stiffness values (bending, twisting, "
                f"linear_density), not both (this rod has {', '.join(by_material + by_stiffness)})")
    if by_stiffness:
        for k in ("bending", "twisting", "linear_density"):
            if k not in rod:
                ck.fail(f"{key}.{k}", "missing: a rod given by stiffness needs bending, twisting and linear_density")
    else:
        rod.setdefault("E", 1.0e8)
        rod.setdefault("G", rod["E"] / 3.0)
        rod.setdefault("rho", 1000.0)
    if shape == "circle":
        if "closed" in raw and not raw["closed"]:
            ck.fail(f"{key}.closed", "a circle is a closed ring: closed must be true (or left out)")
        rod["closed"] = True
    elif rod["closed"] and shape != "points":
        ck.fail(f"{key}.closed", f"only circle and points rods can be closed (this one is {shape})")
    if shape == "points":
        n = len(rod["points"])
        if rod.get("n", n) != n:
            ck.fail(f"{key}.n", f"n = {rod['n']} but points has {n} vertices")
        rod["n"] = n
        if rod["closed"] and n < 3:
            ck.fail(f"{key}.points", f"a closed rod needs at least 3 vertices (got {n})")
    if shape == "file":
        if "rest_d1" in rod:
            ck.fail(f"{key}.rest_d1", "rest_d1 cannot be given for strands read from a file (their Bishop frame is used)")
        if not rod["file"]:
            ck.fail(f"{key}.file", "expected a path to a .hair or .data file (relative to the scene file)")
        return {k: rod[k] for k in fields if k in rod}
    rod = {k: rod[k] for k in fields if k in rod}  # one key order, whatever was filled in
    n = rod["n"]
    n_edges = n if rod["closed"] else n - 1
    for i, p in enumerate(rod["pin"]):
        if not -n <= p < n:
            ck.fail(f"{key}.pin[{i}]", f"{p} is out of range: expected a vertex index in [-{n}, {n - 1}]")
    d1 = rod.get("rest_d1")
    if d1 is not None and isinstance(d1[0], list) and len(d1) != n_edges:
        ck.fail(f"{key}.rest_d1", f"expected one 3-vector or {n_edges} (one per edge), got {len(d1)}")
    return rod


def _obstacle(ck: _Checker, raw: dict, key: str) -> dict:
    if "kind" not in raw:
        ck.fail(f"{key}.kind", f"missing: expected one of {', '.join(map(repr, OBSTACLE_KINDS))}")
    kind = ck.value(raw["kind"], f"{key}.kind", Field("str", choices=OBSTACLE_KINDS))
    return ck.table(raw, key, {"kind": Field("str", choices=OBSTACLE_KINDS), **OBSTACLE[kind]}, f"for a {kind} obstacle")


def normalize(raw: dict, *, source: str = "<string>") -> dict:
    """Check a parsed scene file (nested dicts, as :mod:`tomllib` returns) and return it
    normalized: defaults filled, numbers converted, sections in a fixed order."""
    ck = _Checker(source)
    if not isinstance(raw, dict):
        ck.fail("", "a scene file is a TOML document of tables")
    unknown = sorted(set(raw) - set(TOP))
    if unknown:
        ck.fail(unknown[0], f"unknown section (allowed: {', '.join(TOP)})")
    out: dict = {}
    if "description" in raw:
        out["description"] = ck.value(raw["description"], "description", Field("str"))
    sim = ck.table(raw.get("simulation", {}), "simulation", SIMULATION, "in [simulation]")
    output = ck.table(raw.get("output", {}), "output", OUTPUT, "in [output]")
    if "frames" in sim:
        frames = sim.pop("frames")
        if "frames" in raw.get("output", {}) and output["frames"] != frames:
            ck.fail("simulation.frames", f"{frames} disagrees with output.frames = {output['frames']} (give one)")
        output["frames"] = frames
    out["simulation"] = sim
    rods = [_rod(ck, t, f"rod[{i}]") for i, t in enumerate(_array(ck, raw, "rod"))]
    hair = [ck.table(t, f"hairstyle[{i}]", HAIRSTYLE, "in [[hairstyle]]") for i, t in enumerate(_array(ck, raw, "hairstyle"))]
    if not rods and not hair:
        ck.fail("rod", "a scene needs at least one [[rod]] or [[hairstyle]] table")
    if rods:
        out["rod"] = rods
    if hair:
        out["hairstyle"] = hair
    for name, fields in (("body", BODY), ("weld", WELD), ("clamp", CLAMP), ("point_force", POINT_FORCE)):
        items = [ck.table(t, f"{name}[{i}]", fields, f"in [[{name}]]") for i, t in enumerate(_array(ck, raw, name))]
        if items:
            out[name] = items
    obstacles = [_obstacle(ck, t, f"obstacle[{i}]") for i, t in enumerate(_array(ck, raw, "obstacle"))]
    if obstacles:
        out["obstacle"] = obstacles
    if "wind" in raw:
        out["wind"] = ck.table(raw["wind"], "wind", WIND, "in [wind]")
    if "contact" in raw:
        out["contact"] = ck.table(raw["contact"], "contact", CONTACT, "in [contact]")
    out["output"] = output
    return out


# ---- overrides (--set section.key=value) ------------------------------------------------------
def parse_override_value(text: str):
    """A ``--set`` value: read as a TOML value (``0.1``, ``true``, ``[0, 0, -9.81]``, ``"der"``);
    anything that is not valid TOML is taken as a plain string (``method=compact``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(raw: dict, overrides: dict, *, source: str = "<string>") -> dict:
    """Return a copy of ``raw`` with each ``path -> value`` set. Paths are dotted keys; an array of
    tables is indexed: ``simulation.t_end``, ``rod[1].n``, ``simulation.options.newton_iters``.
    String values are read by :func:`parse_override_value`."""
    out = copy.deepcopy(raw)
    for path, value in (overrides or {}).items():
        where = f"--set {path}"
        parts = str(path).split(".")
        if not path or any(not p for p in parts):
            raise SceneFileError("expected section.key=value (e.g. simulation.t_end=0.5, rod[0].n=20)", source=source, key=where)
        node = out
        for depth, part in enumerate(parts):
            name, index = part, None
            if part.endswith("]") and "[" in part:
                name, idx = part[:-1].split("[", 1)
                if not idx.isdigit():
                    raise SceneFileError(f"bad index [{idx}]: expected a non-negative integer", source=source, key=where)
                index = int(idx)
            last = depth == len(parts) - 1
            if index is not None:
                items = node.get(name)
                if not isinstance(items, list) or index >= len(items):
                    count = len(items) if isinstance(items, list) else 0
                    raise SceneFileError(f"the file has {count} [[{name}]] table{'s' * (count != 1)}, so index {index} "
                                         f"is out of range", source=source, key=where)
                if last:
                    raise SceneFileError(f"set a key of {part}, e.g. {part}.n=20", source=source, key=where)
                node = items[index]
            elif last:
                node[name] = parse_override_value(value) if isinstance(value, str) else value
            else:
                child = node.setdefault(name, {})
                if not isinstance(child, dict):
                    raise SceneFileError(f"{name} is an array of tables: index it, e.g. {name}[0].{parts[depth + 1]}",
                                         source=source, key=where)
                node = child
    return out


# ---- the spec --------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SceneSpec:
    """A checked scene file. ``data``: the normalized file (nested dicts and lists, TOML types,
    defaults filled; treat as read-only); ``name``: the scene's name (file stem); ``source``: where
    it came from (for messages); ``base_dir``: folder that relative paths (hair files) start from.
    Two specs are equal when their ``data`` are."""

    data: dict
    name: str = "scene"
    source: str = "<string>"
    base_dir: Path = field(default_factory=lambda: Path("."))

    def __eq__(self, other) -> bool:
        return isinstance(other, SceneSpec) and self.data == other.data

    __hash__ = None

    @property
    def simulation(self) -> dict:
        return self.data["simulation"]

    @property
    def method(self) -> str:
        return self.simulation["method"]

    @property
    def frames(self) -> int:
        return self.data["output"]["frames"]

    @property
    def pictures(self) -> bool:
        return self.data["output"]["pictures"]

    def build_world(self):
        """The :class:`rodlab.world.World` this file describes (:func:`rodlab.scenefile.runner.build_world`)."""
        from .runner import build_world

        return build_world(self)

    def error(self, key: str | None, reason: str) -> SceneFileError:
        return SceneFileError(reason, source=self.source, key=key)


def loads(text: str, *, name: str = "scene", source: str = "<string>", base_dir=".", overrides: dict | None = None) -> SceneSpec:
    """Parse and check scene-file ``text`` (see :func:`load`)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SceneFileError(f"TOML syntax error: {exc}", source=source) from None
    raw = apply_overrides(raw, overrides or {}, source=source)
    return SceneSpec(normalize(raw, source=source), name, source, Path(base_dir))


def load(path, overrides: dict | None = None) -> SceneSpec:
    """Read, check and normalize the scene file ``path`` (``.toml``); ``overrides``: ``--set``
    style ``{"simulation.t_end": "0.5", "rod[0].n": 20}`` applied before checking."""
    p = Path(path)
    if p.suffix.lower() != ".toml":
        raise SceneFileError("a scene file must end in .toml", source=str(p))
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SceneFileError("no such file", source=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SceneFileError(f"cannot read the file ({exc})", source=str(p)) from None
    return loads(text, name=p.stem, source=str(p), base_dir=p.resolve().parent, overrides=overrides)


def dumps(spec: SceneSpec) -> str:
    """The normalized scene as TOML text (every default written out); ``loads(dumps(s)) == s``.
    A plain dict is normalized first."""
    data = spec.data if isinstance(spec, SceneSpec) else normalize(spec)
    lines: list[str] = []
    _emit_table(lines, data, [])
    return "\n".join(lines).strip() + "\n"


_BARE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _toml_key(key: str) -> str:
    return key if key and set(key) <= _BARE else _toml_value(key)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise SceneFileError(f"cannot write the non-finite number {v!r}")
        return repr(v)
    if isinstance(v, str):
        # JSON string escapes are TOML basic-string escapes; TOML also refuses a raw DEL
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(c) for c in v) + "]"
    raise SceneFileError(f"cannot write a {type(v).__name__} to a scene file")


def _is_table_array(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(c, dict) for c in v)


def _emit_table(lines: list[str], table: dict, path: list[str]) -> None:
    """Scalars and arrays of ``table`` first, then its sub-tables, then its arrays of tables."""
    for k, v in table.items():
        if not isinstance(v, dict) and not _is_table_array(v):
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, v in table.items():
        if isinstance(v, dict):
            lines += ["", "[" + ".".join(_toml_key(p) for p in [*path, k]) + "]"]
            _emit_table(lines, v, [*path, k])
    for k, v in table.items():
        if _is_table_array(v):
            for item in v:
                lines += ["", "[[" + ".".join(_toml_key(p) for p in [*path, k]) + "]]"]
                _emit_table(lines, item, [*path, k])


__all__ = ["Field", "SceneFileError", "SceneSpec", "apply_overrides", "dumps", "load", "loads", "normalize",
           "parse_override_value"]
