"""The one simulator protocol every method follows: take the model once, step with one signature,
say what you support (after SciPy's ``OdeSolver`` and Newton's ``SolverBase``; docs/architecture.md).

    sim = make_simulator(world, "der-implicit", dt=1e-3, newton_iters=2)
    state = sim.initial_state()
    report = sim.advance(state, 100)       # 100 steps in place, one call
    static = sim.solve_static(state)       # equilibrium in place

A simulator is built once from a :class:`rodlab.world.World`, its method and keyword options. At
construction it refuses what the method cannot do (:class:`UnsupportedFeature` names the feature
and the method) and options it does not know (nothing is silently dropped). ``advance`` and
``solve_static`` change the state in place and return a report; when a step fails they raise
:class:`SimulationError` with the report, after putting the state back to the last good step.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from ..model import ModelError, SimulationError, check_steps, require
from ..world import State, World


class UnsupportedFeature(ModelError):
    """The world asks for something this method does not model; the message names both."""


@dataclass(frozen=True)
class StepReport:
    """What one ``advance`` call did. ``newton_iters``: nonlinear iterations summed over the call's
    steps (0 for explicit methods; ``metrics.newton_iters_per_step`` divides); ``linear_iters``:
    inner linear-solver iterations summed; ``residual``: the last step's nonlinear residual in the
    method's own norm (0 where none); ``wall_s``: time inside the compiled stepping [s].

    Contact (worlds with obstacles or rod contact; :func:`rodlab.metrics.contact_summary`):
    ``contact_min_gap`` [m], the smallest gap (signed distance between segment surfaces, or a
    segment surface and an obstacle; negative = penetration) at the end of any of the call's steps
    (``inf`` without contact); ``contacts_sum``: active contacts (pairs the method pushes apart:
    active constraints, barrier pairs, impulses) summed over the call's steps; ``contacts_max``:
    the most in one step."""

    steps: int
    success: bool = True
    message: str = "ok"
    newton_iters: int = 0
    linear_iters: int = 0
    residual: float = 0.0
    wall_s: float = 0.0
    contact_min_gap: float = math.inf
    contacts_sum: int = 0
    contacts_max: int = 0


_new = object.__new__


def ok_report(steps: int, wall_s: float) -> StepReport:
    """``StepReport(steps, wall_s=wall_s)`` (a successful call, every other field its default) in
    ~0.23 us instead of ~2 us: a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``; the defaults are read from the class; item assignments into the
    instance dict cost ~0.06 us less than ``dict.update`` with keywords (issue #13: a call's fixed
    cost). Equal to the dataclass-built one."""
    report = _new(StepReport)
    fields = report.__dict__
    fields["steps"] = steps
    fields["wall_s"] = wall_s
    return report


def step_report(steps, success, message, newton_iters, linear_iters, residual, wall_s) -> StepReport:
    """``StepReport(steps, success, message, newton_iters, linear_iters, residual, wall_s)`` (the
    contact fields their defaults) the way :func:`ok_report` makes it: 0.33 us instead of 2.3."""
    report = _new(StepReport)
    fields = report.__dict__
    fields["steps"] = steps
    fields["success"] = success
    fields["message"] = message
    fields["newton_iters"] = newton_iters
    fields["linear_iters"] = linear_iters
    fields["residual"] = residual
    fields["wall_s"] = wall_s
    return report


@dataclass(frozen=True)
class StaticReport:
    """Result of ``solve_static``: ``success``, ``message``, nonlinear ``iterations``, final
    ``residual`` (method's norm), ``wall_s``."""

    success: bool
    message: str
    iterations: int
    residual: float
    wall_s: float = 0.0


class Simulator(ABC):
    """Base of every method's simulator (module docstring).

    Subclasses set ``method`` (its name), ``supports`` (the :meth:`World.features` it handles),
    ``options`` (name -> default of the keyword options it takes besides ``dt``) and implement
    ``_setup``, ``initial_state``, ``advance`` and ``solve_static``.
    """

    method: ClassVar[str] = ""
    supports: ClassVar[frozenset[str]] = frozenset()
    options: ClassVar[dict] = {}

    def __init__(self, world: World, *, dt: float | None = None, **options):
        require(isinstance(world, World), f"a simulator is built from a rodlab World (got {type(world).__name__})")
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            allowed = ", ".join(["dt", *sorted(self.options)])
            raise ModelError(f"method {self.method} has no option {', '.join(unknown)} (its options: {allowed})")
        missing = sorted(world.features() - self.supports)
        if missing:
            raise UnsupportedFeature(f"method {self.method} does not support {', '.join(missing)} "
                                     f"(see the feature table in docs/world.md)")
        if dt is not None:
            require(isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0, f"dt must be > 0 s (got {dt!r})")
        self.world = world
        self.opts = {**self.options, **options}
        self._setup(dt)

    @abstractmethod
    def _setup(self, dt: float | None) -> None:
        """Derive everything the method needs from ``self.world`` and ``self.opts``; set ``self._dt``."""

    @property
    def dt(self) -> float:
        """The time step [s] of :meth:`advance`."""
        return self._dt

    @abstractmethod
    def initial_state(self) -> State:
        """The world at rest in its rest shape (t = 0), frames set, quasistatic unknowns solved."""

    @abstractmethod
    def advance(self, state: State, nsteps: int = 1) -> StepReport:
        """Advance ``state`` in place by ``nsteps`` steps of ``dt``."""

    @abstractmethod
    def solve_static(self, state: State) -> StaticReport:
        """Move ``state`` in place to a static equilibrium under the world's loads (velocities zero)."""

    # ---- shared guards -------------------------------------------------------------------------
    def _check_steps(self, state: State, nsteps: int) -> int:
        """``nsteps`` as an ``int`` (a Python or numpy integer >= 0; ``2.5`` or ``True`` is a
        :class:`ModelError`) after checking ``state`` is a :class:`State`."""
        require(isinstance(state, State), f"state must be a rodlab State (got {type(state).__name__})")
        return check_steps(nsteps)

    def _check_layout(self, state: State) -> None:
        w = self.world
        if state.vertex_x.shape != (w.n_vertices, 3) or state.edge_theta.shape != (w.n_edges,):
            raise ModelError(f"state has {state.vertex_x.shape[0]} vertices and {state.edge_theta.shape[0]} edges; "
                             f"this world has {w.n_vertices} and {w.n_edges}")

    def _fail(self, state: State, snapshot: State | None, report, why: str):
        """Restore ``snapshot`` (if given) and raise :class:`SimulationError` naming the method, time and dt."""
        if snapshot is not None:
            state.assign(snapshot)
        raise SimulationError(f"{self.method}: {why} (t = {state.t:.6g} s, dt = {self.dt:g} s); "
                              f"the state holds the last good step", report)
