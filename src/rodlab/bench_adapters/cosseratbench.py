"""cosseratbench adapters: one solver per rodlab method (entry-point group ``cosseratbench.solvers``).

Install with the optional extra ``rodlab[bench]`` (it brings ``cosseratbench``). The suite
constructs a solver with no arguments (or with the option ``time_step_scale``), checks its
``capabilities`` against each experiment's requirements, and calls
``run(scenario, n_elements=..., n_frames=...) -> Trajectory``.

Capabilities are honest: ``der`` (run with fast projection), ``compact`` and ``galpha`` are
inextensible (no ``STRETCH``); ``der-implicit`` has a stretching energy (``STRETCH``); none
shears (no ``SHEAR``); rodlab has no rod or obstacle contact yet (no contact capability). A scenario feature outside what a method's adapter drives raises
``NotImplementedError`` (the suite reports the run as unsupported):

* ``der`` (explicit Discrete Elastic Rods, Bergou et al. 2008): any number of independent rods
  with free, pinned or clamped ends, end point loads, gravity, clamped-end motions without
  ``slides_along``. A clamped end holds its first (last) edge, both vertices and the material
  frame; a pinned end holds the end vertex. ``rest_arc_length``: the rest edge lengths come from
  it and the rod starts at the given (stretched) positions, which the first fast projection
  brings back to the rest lengths (an inextensible rod cannot start stretched). The stress-free
  shape is straight (rest curvature and twist zero) whatever the initial centerline. Quasi-static
  scenarios get viscous damping ``2 * scenario.slowest_frequency()`` (critical for the slowest
  mode, as the suite's own adapters do); dynamic ones get none. Time step: the stepper's
  suggested stable step times ``time_step_scale``, shortened so frames fall on steps.
* ``der-implicit``, ``compact``, ``galpha``: their steppers are driven only through rodlab's
  own scenes so far; their adapters declare their capabilities and raise ``NotImplementedError``
  for every scenario (reported by the suite as unsupported). See docs/benchmarks.md.
"""
from __future__ import annotations

import logging
import math
from importlib.metadata import PackageNotFoundError, version

import numpy as np

try:
    from cosseratbench import Capability, Diverged, Trajectory
    from cosseratbench.scenario import End, EndCondition
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("rodlab.bench_adapters.cosseratbench needs the optional extra: pip install 'rodlab[bench]'") from exc

log = logging.getLogger(__name__)

try:
    _RODLAB_VERSION = version("rodlab")
except PackageNotFoundError:  # pragma: no cover
    _RODLAB_VERSION = "unknown"


class _RodlabSolver:
    """Common part: name, capabilities, options, settings."""

    method = ""
    name = ""
    capabilities: frozenset = frozenset()
    backend_version = _RODLAB_VERSION

    def __init__(self, time_step_scale: float = 1.0) -> None:
        if not (time_step_scale > 0 and math.isfinite(time_step_scale)):
            raise ValueError(f"time_step_scale must be > 0 (got {time_step_scale})")
        self.time_step_scale = float(time_step_scale)

    def settings(self, scenario, *, n_elements: int, n_frames: int) -> dict:
        return {"method": self.method, "time_step_scale": self.time_step_scale,
                "damping_rate": _damping(scenario), "inextensible": True}

    def run(self, scenario, *, n_elements: int, n_frames: int):
        raise NotImplementedError(f"rodlab method {self.method!r} is not driven by the cosseratbench adapter yet "
                                  f"(only 'rodlab-der' is); it runs in rodlab's own scenes")


def _damping(scenario) -> float:
    return 2.0 * scenario.slowest_frequency() if scenario.quasi_static else 0.0


def _check_supported(scenario) -> None:
    if scenario.obstacles:
        raise NotImplementedError("rodlab has no obstacle contact")
    for i, rod in enumerate(scenario.rods):
        for end in End:
            motion = rod.motion(end)
            if motion is not None and motion.slides_along is not None:
                raise NotImplementedError(f"rod {i}: a clamped end that slides along an axis (slides_along) is not modelled")
        if rod.friction:
            pass  # friction only acts through contact, which is not claimed


class DERSolver(_RodlabSolver):
    """Explicit DER (rodlab.der.DERStepper): symplectic Euler, fast projection, quasistatic twist."""

    method = "der"
    name = "rodlab-der"
    capabilities = frozenset()

    def _build(self, crod, n_elements: int, scenario):
        from ..model import BoundaryConditions, Clamp, CrossSection, Material, PointForce, Rod

        nodes = crod.nodes(n_elements)
        arc = np.linspace(0.0, crod.length, n_elements + 1)
        # rest polyline: the initial edge directions with the rest (unstretched) lengths
        edges = np.diff(nodes, axis=0)
        edges *= (np.diff(arc) / np.linalg.norm(edges, axis=1))[:, None]
        rest = np.vstack([nodes[:1], nodes[:1] + np.cumsum(edges, axis=0)])
        d1 = crod.directors(n_elements)
        nv = n_elements + 1
        clamps, pins = [], []
        for end, edge, vertex in ((End.START, 0, 0), (End.END, -1, nv - 1)):
            cond = crod.condition(end)
            if cond is EndCondition.CLAMPED:
                motion = crod.motion(end)
                clamps.append(Clamp(edge, None if motion is None else _clamp_motion(motion, nodes, vertex, edge)))
            elif cond is EndCondition.PINNED:
                pins.append(vertex)
        m = crod.material
        rod = Rod.from_material(rest, Material(m.youngs_modulus, m.shear_modulus, m.density), CrossSection.circle(crod.radius),
                                rest_d1=d1, boundary=BoundaryConditions(clamps=tuple(clamps), fixed_vertices=tuple(pins)),
                                rest_curvature=np.zeros((n_elements - 1, 4)), rest_twist=np.zeros(n_elements - 1))
        forces = tuple(PointForce(0 if load.at is End.START else nv - 1, np.asarray(load.force, dtype=float)) for load in crod.loads)
        return rod, forces, nodes

    def run(self, scenario, *, n_elements: int, n_frames: int):
        from ..der.stepper import DEROptions, DERStepper, SimulationError, suggested_time_step
        from ..model import Loads

        _check_supported(scenario)
        if n_elements < 2:
            raise ValueError(f"n_elements must be >= 2 (got {n_elements})")
        if n_frames < 2:
            raise ValueError(f"n_frames must be >= 2 (got {n_frames})")
        frame_dt = scenario.duration / (n_frames - 1)
        positions, directors = [], []
        for i, crod in enumerate(scenario.rods):
            rod, forces, nodes = self._build(crod, n_elements, scenario)
            dt_max = suggested_time_step(rod) * self.time_step_scale
            per_frame = max(1, math.ceil(frame_dt / dt_max))
            dt = frame_dt / per_frame
            stepper = DERStepper(rod, Loads(gravity=tuple(scenario.gravity), damping=_damping(scenario), point_forces=forces),
                                 DEROptions(dt=dt))
            state = stepper.initial_state(x=nodes)
            xs = np.empty((n_frames, n_elements + 1, 3))
            ds = np.empty((n_frames, n_elements, 3))
            xs[0], ds[0] = state.x, stepper.material_frames(state)[0]
            for f in range(1, n_frames):
                try:
                    stepper.advance(state, per_frame)
                except SimulationError as exc:
                    raise Diverged(f"rod {i}: {exc}", time=state.t) from None
                xs[f], ds[f] = state.x, stepper.material_frames(state)[0]
            positions.append(xs)
            directors.append(ds)
        return Trajectory(np.linspace(0.0, scenario.duration, n_frames), tuple(positions), tuple(directors))


def _clamp_motion(motion, nodes: np.ndarray, vertex: int, edge: int):
    """cosseratbench turns a driven end about the end node; rodlab's clamp motion turns the
    clamped edge about its centre: shift the displacement so the end node follows the suite."""
    a = edge % (len(nodes) - 1)
    centre = 0.5 * (nodes[a] + nodes[a + 1])
    arm = nodes[vertex] - centre

    def rigid(t: float):
        d, R = motion.pose(float(t))
        return R, d + arm - R @ arm

    return rigid


class DERImplicitSolver(_RodlabSolver):
    method = "der-implicit"
    name = "rodlab-der-implicit"
    capabilities = frozenset({Capability.STRETCH})  # its edges carry a stretching energy


class CompactSolver(_RodlabSolver):
    method = "compact"
    name = "rodlab-compact"
    capabilities = frozenset()


class GAlphaSolver(_RodlabSolver):
    method = "galpha"
    name = "rodlab-galpha"
    capabilities = frozenset()


SOLVERS = {cls.name: cls for cls in (DERSolver, DERImplicitSolver, CompactSolver, GAlphaSolver)}
