"""Clamp motions that can be sampled at many times at once.

A clamp motion is any callable ``motion(t) -> (R, d)`` (:data:`rodlab.model.RigidMotion`): the
rotation ``R`` (3, 3) about the clamped edge's initial midpoint and the translation ``d`` (3,) [m]
at time ``t`` [s]. A motion MAY also carry ``motion.sample(times) -> (R (k, 3, 3), d (k, 3))``,
the same at ``k`` times in one vectorised evaluation. The DER simulator asks a moving clamp for
all the steps of an ``advance`` call at once (:func:`sample_motion`), so a motion with a sampler
costs a few numpy calls per call instead of one Python call per step.

The built-in motions are :class:`SampledMotion` subclasses (small frozen dataclasses: picklable,
comparable by value): :class:`FixedPose`, :class:`AxisRotation`, :class:`Translation` and their
composition :class:`Composed`, driven by scalar profiles of time (:class:`RampedRate`,
:class:`SmoothMoves`). A call at ``t`` and a sample containing ``t`` give bitwise the same numbers
(tested): ``__call__`` evaluates ``sample`` on a one-element array, except
:class:`AxisRotation` by a :class:`RampedRate` (``twist_about_axis``: galpha and der-implicit call
it once per step), which repeats the sample's operations on Python floats; its sample takes
``sin`` and ``cos`` from libm (``math``), as the scalar path does, since numpy's SIMD loops may
differ from libm in the last bit.
"""
from __future__ import annotations

import abc

import math
from dataclasses import dataclass

import numpy as np

from .model import ModelError, require


def _finite(value, what: str) -> float:
    require(isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
            and math.isfinite(value), f"{what} must be a finite number (got {value!r})")
    return float(value)


def _unit(vector, what: str) -> np.ndarray:
    v = np.array(vector, dtype=float).reshape(-1)
    norm = float(np.linalg.norm(v)) if v.shape == (3,) else 0.0
    require(v.shape == (3,) and math.isfinite(norm) and norm > 0, f"{what} must be a finite nonzero 3-vector (got {vector!r})")
    v = v / norm
    v.setflags(write=False)
    return v


def _times(times) -> np.ndarray:
    t = np.asarray(times, dtype=float)
    if t.ndim != 1:
        raise ModelError(f"times must be a 1-D array of seconds (got shape {t.shape})")
    return t


# ---- scalar profiles of time -------------------------------------------------------------------
@dataclass(frozen=True, eq=True)
class RampedRate:
    """A quantity growing at ``rate`` [unit/s] from ``start`` [s], its rate ramped in linearly
    over ``ramp`` [s] (zero rate and value at ``start``): ``0`` before ``start``, then with
    ``s = t - start``: ``rate s^2 / (2 ramp)`` for ``s < ramp``, ``rate (s - ramp / 2)`` after;
    stopped at ``total`` (a bound of the sign of ``rate``; None: never)."""

    rate: float
    ramp: float = 0.0
    start: float = 0.0
    total: float | None = None

    def __post_init__(self):
        _finite(self.rate, "rate")
        require(_finite(self.ramp, "ramp") >= 0, f"ramp must be >= 0 s (got {self.ramp})")
        _finite(self.start, "start")
        if self.total is not None:
            _finite(self.total, "total")

    def __call__(self, times: np.ndarray) -> np.ndarray:
        s = np.maximum(times - self.start, 0.0)
        value = self.rate * (s - 0.5 * self.ramp)
        if self.ramp > 0:
            value = np.where(s < self.ramp, self.rate * s * s / (2.0 * self.ramp), value)
        if self.total is not None:
            value = np.minimum(value, self.total) if self.total >= 0 else np.maximum(value, self.total)
        return value

    def at(self, t: float) -> float:
        """The value at one time ``t`` [s]: the same operations on Python floats (bitwise
        ``self(np.array([t]))[0]``, tested)."""
        s = max(t - self.start, 0.0)
        if self.ramp > 0 and s < self.ramp:
            value = self.rate * s * s / (2.0 * self.ramp)
        else:
            value = self.rate * (s - 0.5 * self.ramp)
        if self.total is not None:
            value = min(value, self.total) if self.total >= 0 else max(value, self.total)
        return value


@dataclass(frozen=True, eq=True)
class SmoothMoves:
    """A sum of smooth moves: move ``i`` changes the value by ``amplitude_i`` between ``start_i``
    and ``start_i + duration_i`` [s] along the smoothstep ``3u^2 - 2u^3`` (zero slope at both
    ends), ``u = (t - start_i) / duration_i`` clipped to [0, 1]. ``moves``: ((amplitude, start,
    duration), ...), durations > 0."""

    moves: tuple

    def __post_init__(self):
        rows = tuple(tuple(float(v) for v in m) for m in self.moves)
        require(len(rows) >= 1 and all(len(m) == 3 and all(math.isfinite(v) for v in m) and m[2] > 0 for m in rows),
                f"moves must be finite (amplitude, start, duration > 0) triples (got {self.moves!r})")
        object.__setattr__(self, "moves", rows)

    def __call__(self, times: np.ndarray) -> np.ndarray:
        value = np.zeros(times.shape)
        for amplitude, start, duration in self.moves:
            u = np.clip((times - start) / duration, 0.0, 1.0)
            value += amplitude * (u * u * (3.0 - 2.0 * u))
        return value


# ---- rigid motions -----------------------------------------------------------------------------
class SampledMotion(abc.ABC):
    """A clamp motion with a vectorised sampler: subclasses define ``sample(times) -> (R (k, 3, 3),
    d (k, 3))``; ``motion(t)`` is the sample at ``[t]`` (bitwise the same numbers)."""

    @abc.abstractmethod
    def sample(self, times) -> tuple[np.ndarray, np.ndarray]:
        """Rotations (k, 3, 3) and displacements (k, 3) [m] at ``times`` (k,) [s]."""

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        R, d = self.sample(np.array([float(t)]))
        return R[0], d[0]


@dataclass(frozen=True, eq=False)
class FixedPose(SampledMotion):
    """One pose at every time: ``rotation`` (3, 3) (default identity) about the clamped edge's
    rest midpoint, then ``displacement`` (3,) [m] (static problems)."""

    rotation: np.ndarray | None = None
    displacement: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        R = np.eye(3) if self.rotation is None else np.array(self.rotation, dtype=float)
        d = np.array(self.displacement, dtype=float).reshape(-1)
        require(R.shape == (3, 3) and bool(np.all(np.isfinite(R))) and bool(np.allclose(R @ R.T, np.eye(3), atol=1e-12))
                and np.linalg.det(R) > 0, f"rotation must be a proper rotation matrix (3, 3) (got {self.rotation!r})")
        require(d.shape == (3,) and bool(np.all(np.isfinite(d))),
                f"displacement must be a finite 3-vector m (got {self.displacement!r})")
        R.setflags(write=False)
        d.setflags(write=False)
        object.__setattr__(self, "rotation", R)
        object.__setattr__(self, "displacement", d)

    def sample(self, times):
        k = _times(times).shape[0]
        return np.broadcast_to(self.rotation, (k, 3, 3)), np.broadcast_to(self.displacement, (k, 3))

    def __call__(self, t: float):
        return self.rotation, self.displacement


@dataclass(frozen=True, eq=False)
class AxisRotation(SampledMotion):
    """Rotation about the fixed unit ``axis`` by the angle ``angle(times)`` [rad] (a profile:
    :class:`RampedRate`, :class:`SmoothMoves` or any vectorised function of a times array),
    Rodrigues' formula ``R = I + sin(a) K + (1 - cos(a)) K^2`` with ``K`` the axis' cross-product
    matrix; no translation."""

    axis: np.ndarray
    angle: object

    def __post_init__(self):
        a = _unit(self.axis, "axis")
        K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
        object.__setattr__(self, "axis", a)
        object.__setattr__(self, "_K", K)
        object.__setattr__(self, "_K2", K @ K)
        object.__setattr__(self, "_K_rows", K.tolist())
        object.__setattr__(self, "_K2_rows", (K @ K).tolist())
        require(callable(self.angle), f"angle must be a profile, a function of a times array (got {self.angle!r})")

    def sample(self, times):
        t = _times(times)
        a = np.asarray(self.angle(t), dtype=float).reshape(t.shape).tolist()
        # libm's sin and cos, as the one-time call uses them (numpy's SIMD loops may differ in the last bit)
        sin = np.fromiter(map(math.sin, a), float, len(a))
        cos = np.fromiter(map(math.cos, a), float, len(a))
        R = sin[:, None, None] * self._K + (1.0 - cos)[:, None, None] * self._K2
        R += np.eye(3)
        return R, np.zeros((len(a), 3))

    def __call__(self, t: float):
        """The pose at one time, with Python floats where the angle profile has a scalar ``at``
        (:class:`RampedRate`): the sample's operations in the same order (bitwise equal, tested)."""
        at = getattr(self.angle, "at", None)
        if at is None:
            return SampledMotion.__call__(self, t)
        a = at(float(t))
        s, c = math.sin(a), 1.0 - math.cos(a)
        K, K2 = self._K_rows, self._K2_rows
        R = np.array([[s * K[i][j] + c * K2[i][j] + (1.0 if i == j else 0.0) for j in range(3)] for i in range(3)])
        return R, np.zeros(3)


@dataclass(frozen=True, eq=False)
class Translation(SampledMotion):
    """Translation along the fixed unit ``direction`` by ``distance(times)`` [m] (a profile); no
    rotation."""

    direction: np.ndarray
    distance: object

    def __post_init__(self):
        object.__setattr__(self, "direction", _unit(self.direction, "direction"))
        require(callable(self.distance), f"distance must be a profile, a function of a times array (got {self.distance!r})")

    def sample(self, times):
        t = _times(times)
        s = np.asarray(self.distance(t), dtype=float).reshape(t.shape)
        return np.broadcast_to(np.eye(3), (t.shape[0], 3, 3)), s[:, None] * self.direction


@dataclass(frozen=True, eq=False)
class Composed(SampledMotion):
    """``first``, then ``second``: ``x -> R2 (R1 x + d1) + d2``, i.e. ``R = R2 R1``, ``d = R2 d1 +
    d2`` (e.g. an :class:`AxisRotation` then a :class:`Translation`: the clamp turns about its
    midpoint while the midpoint moves). Both must have samplers."""

    first: SampledMotion
    second: SampledMotion

    def __post_init__(self):
        for name in ("first", "second"):
            require(callable(getattr(getattr(self, name), "sample", None)),
                    f"{name} must be a motion with a sample(times) method (got {getattr(self, name)!r})")

    def sample(self, times):
        t = _times(times)
        R1, d1 = self.first.sample(t)
        R2, d2 = self.second.sample(t)
        return np.matmul(R2, R1), np.matmul(R2, d1[:, :, None])[:, :, 0] + d2


def sample_motion(motion, times: np.ndarray, what: str = "clamp motion") -> tuple[np.ndarray, np.ndarray]:
    """``(R (k, 3, 3), d (k, 3))`` of clamp motion ``motion`` at each of ``times`` (k,) [s]: one
    call of its ``sample`` where it has one, else ``motion(t)`` once per time (user callables).
    A result of the wrong shape raises :class:`rodlab.model.ModelError` naming ``what``."""
    nt = times.shape[0]
    sampler = getattr(motion, "sample", None)
    if sampler is not None:
        R, d = sampler(times)
        if np.shape(R) != (nt, 3, 3) or np.shape(d) != (nt, 3):
            raise ModelError(f"{what}: sample(times) must return rotations ({nt}, 3, 3) and translations ({nt}, 3) "
                             f"(got shapes {np.shape(R)}, {np.shape(d)})")
        return np.asarray(R, dtype=float), np.asarray(d, dtype=float)
    maps = [motion(float(t)) for t in times]
    for t, (r, dd) in zip(times, maps):
        if np.shape(r) != (3, 3) or np.shape(dd) != (3,):
            raise ModelError(f"{what} must return a rotation (3, 3) and a translation (3,) "
                             f"(got shapes {np.shape(r)}, {np.shape(dd)} at t = {t:g} s)")
    R = np.array([np.asarray(r) for r, _ in maps], dtype=float).reshape(nt, 3, 3)
    d = np.array([np.asarray(dd) for _, dd in maps], dtype=float).reshape(nt, 3)
    return R, d


__all__ = ["AxisRotation", "Composed", "FixedPose", "RampedRate", "SampledMotion", "SmoothMoves", "Translation",
           "sample_motion"]
