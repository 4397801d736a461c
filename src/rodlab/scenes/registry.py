"""The scene registry: one name -> builder table that drives the CLI, tests, benchmarks and docs.

A scene declares its parameters (name, default, type, allowed range) and a ``run`` function
``run(params: dict, progress: Progress) -> SceneResult``. Parameter parsing and range checks
live here, once, so every scene reports bad input the same way.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


class SceneError(ValueError):
    """Unknown scene or parameter, or a value outside its allowed range."""


class UnknownScene(SceneError):
    """No scene of that name is registered."""


class UnknownParameter(SceneError):
    """The scene has no parameter of that name."""


class UnavailableCombination(SceneError):
    """The parameters are each allowed but the scene cannot run them together (e.g. an option
    the chosen method does not have)."""


@dataclass(frozen=True)
class Param:
    """A scene parameter. ``low``/``high`` bound numbers (inclusive unless ``*_open``); ``choices`` bound strings."""

    name: str
    default: Any
    doc: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None

    @property
    def kind(self) -> type:
        return type(self.default)

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(self.choices)
        if self.kind is bool:
            return "true or false"
        lo = "-inf" if self.low is None else repr(self.low)
        hi = "inf" if self.high is None else repr(self.high)
        return f"{self.kind.__name__} in {'(' if self.low_open or self.low is None else '['}{lo}, {hi}{')' if self.high_open or self.high is None else ']'}"

    def parse(self, value: Any) -> Any:
        """Convert (from a CLI string or a Python value) and range-check."""
        kind = self.kind
        try:
            if kind is bool:
                if isinstance(value, str):
                    low = value.strip().lower()
                    if low not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError
                    value = low in ("true", "1", "yes")
                elif not isinstance(value, (bool, np.bool_)):
                    raise ValueError
                value = bool(value)
            elif kind is int:
                if isinstance(value, str):
                    value = int(value.strip())
                elif isinstance(value, float) and value.is_integer():
                    value = int(value)
                elif not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                    raise ValueError
                value = int(value)
            elif kind is float:
                if isinstance(value, bool):
                    raise ValueError
                value = float(value)
            else:
                value = str(value)
        except (TypeError, ValueError):
            raise SceneError(f"parameter {self.name}={value!r}: expected {self.allowed()}") from None
        if self.choices is not None and value not in self.choices:
            raise SceneError(f"parameter {self.name}={value!r} not allowed: expected {self.allowed()}")
        if kind in (int, float):
            bad = not math.isfinite(value)
            if self.low is not None:
                bad |= value <= self.low if self.low_open else value < self.low
            if self.high is not None:
                bad |= value >= self.high if self.high_open else value > self.high
            if bad:
                raise SceneError(f"parameter {self.name}={value!r} out of range: expected {self.allowed()}")
        return value


class Progress:
    """Progress reporting handed to scenes: ``progress.update(done, total)``. Silent by default."""

    def update(self, done: float, total: float) -> None:  # pragma: no cover - trivial
        pass

    def close(self) -> None:
        pass


class TqdmProgress(Progress):
    """A progress bar on stderr, drawn at the first update (so a run's compile, shown by
    :func:`rodlab.runctl.session`, comes before it); its elapsed time and ETA leave out the time
    numba spends compiling during the run (:func:`rodlab.runctl.compile_seconds`)."""

    def __init__(self, desc: str):
        self._desc = desc
        self._bar = None
        self._shown = 0
        self._compile_s = 0.0

    def _make(self):
        from tqdm import tqdm

        from ..runctl import compile_seconds

        self._compile_s = compile_seconds()
        return tqdm(total=1000, desc=self._desc, unit="‰", leave=False, bar_format="{l_bar}{bar}| {elapsed}<{remaining}")

    def update(self, done, total):
        from ..runctl import compile_seconds

        if self._bar is None:
            self._bar = self._make()
        compiled = compile_seconds()
        if compiled > self._compile_s:  # a compile since the last update: not part of the stepping time
            self._bar.start_t += compiled - self._compile_s
            self._compile_s = compiled
        target = int(1000 * min(max(done / total if total else 1.0, 0.0), 1.0))
        if target > self._shown:
            self._bar.update(target - self._shown)
            self._shown = target

    def close(self):
        if self._bar is not None:
            self._bar.close()


@dataclass
class SceneResult:
    """What a scene run produces.

    ``metrics``: flat dict of numbers, bools and strings (written to metrics.json).
    ``trajectory``: arrays, at least ``t`` (F,) and ``x`` (F, n, 3) (written to trajectory.npz).
    ``plot``: optional ``plot(result, out_dir) -> list[Path]`` writing the scene's pictures;
    the default draws the centerline at a few frames. The run folder's writer
    (:func:`rodlab.io.outputs.write_scene_outputs`) puts the tube picture (``scene.png``,
    :func:`rodlab.viz.tubes.plot_tubes`) in front of them.
    ``world`` / ``state``: the scene's :class:`rodlab.world.World` and final
    :class:`rodlab.world.State`, where it has them: pictures and animations then draw the real
    radii, obstacles, bodies and material frames.
    """

    metrics: dict
    trajectory: dict
    plot: Callable | None = None
    extra: dict = field(default_factory=dict)
    world: Any = None
    state: Any = None


@dataclass(frozen=True)
class Scene:
    name: str
    summary: str
    params: tuple[Param, ...]
    run: Callable[[dict, Progress], SceneResult]
    paper: str = ""

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise UnknownParameter(f"scene {self.name!r} has no parameter {name!r}; parameters: {', '.join(p.name for p in self.params)}")

    def resolve(self, overrides: dict) -> dict:
        values = {p.name: p.default for p in self.params}
        for k, v in overrides.items():
            values[k] = self.param(k).parse(v)
        return values


_SCENES: dict[str, Scene] = {}


def register(name: str, summary: str, params: list[Param] | tuple[Param, ...], *, paper: str = ""):
    """Decorator: ``@register("cantilever", "...", [Param(...)])`` on ``run(params, progress)``."""

    def deco(fn):
        if name in _SCENES:
            raise RuntimeError(f"scene {name!r} registered twice")
        _SCENES[name] = Scene(name, summary, tuple(params), fn, paper)
        return fn

    return deco


def _load_all() -> None:
    from . import _catalog  # noqa: F401  (imports every scene module, which registers itself)


def scenes() -> dict[str, Scene]:
    _load_all()
    return dict(sorted(_SCENES.items()))


def get_scene(name: str) -> Scene:
    all_scenes = scenes()
    if name not in all_scenes:
        raise UnknownScene(f"unknown scene {name!r}; available: {', '.join(all_scenes)}")
    return all_scenes[name]


def run_scene(name: str, *, progress: Progress | None = None, **params) -> SceneResult:
    """Run scene ``name`` with parameter overrides; returns its :class:`SceneResult`.

    Checks every metric for NaN/inf: a scene that produced one raises instead of reporting it.
    The default ``wall_s`` (the scene's whole run, for scenes that do not set it) leaves out the
    time numba spent compiling (:func:`rodlab.runctl.compile_seconds`).
    """
    from ..runctl import compile_seconds

    scene = get_scene(name)
    values = scene.resolve(params)
    compiled = compile_seconds()
    start = time.perf_counter()
    result = scene.run(values, progress or Progress())
    result.metrics.setdefault("wall_s", max(time.perf_counter() - start - (compile_seconds() - compiled), 0.0))
    for k, v in result.metrics.items():
        if isinstance(v, (float, np.floating)) and not math.isfinite(v) and not k.endswith("_theory"):
            raise FloatingPointError(f"scene {name!r} produced a non-finite metric {k}={v}")
        if not isinstance(v, (bool, int, float, str, np.number, np.bool_)):
            raise TypeError(f"metric {k} of scene {name!r} is not a number, bool or string: {type(v)}")
    result.metrics = {k: (v.item() if isinstance(v, (np.number, np.bool_)) else v) for k, v in result.metrics.items()}
    x = np.asarray(result.trajectory.get("x"))
    if x.size and not np.all(np.isfinite(x)):
        exc = FloatingPointError(f"scene {name!r} produced non-finite positions")
        t = np.asarray(result.trajectory.get("t", []))
        if x.ndim == 3 and t.shape == x.shape[:1]:  # the frames before the first non-finite one
            good = int(np.argmin(np.all(np.isfinite(x.reshape(x.shape[0], -1)), axis=1)))
            exc.trajectory = {"t": t[:good], "x": x[:good]}
        raise exc
    return result
