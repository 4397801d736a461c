"""cosseratbench adapters: one solver per rodlab method (entry-point group ``cosseratbench.solvers``).

Install with the optional extra ``rodlab[bench]`` (it brings ``cosseratbench``). The suite
constructs a solver with no arguments (or with the option ``time_step_scale``), checks its
``capabilities`` against each experiment's requirements, and calls
``run(scenario, n_elements=..., n_frames=...) -> Trajectory``.

Capabilities are honest: ``der`` (run with fast projection), ``compact`` and ``galpha`` are
inextensible (no ``STRETCH``); ``der-implicit`` has a stretching energy (``STRETCH``); none
shears (no ``SHEAR``). Contact (``cb_contact.py``): ``der-implicit`` claims ``ROD_CONTACT``,
``ROD_FRICTION``, ``CYLINDER_CONTACT`` and ``PLANE_CONTACT`` (IPC barrier contact, lagged Coulomb
friction), ``compact`` the same without ``ROD_FRICTION``, ``der`` the same as ``der-implicit``
(impulse contact with Coulomb friction inside the explicit step, docs/contact-der.md; stepped at
its stability bound); a scenario with obstacles or rods within reach of each other (crossing,
capstan, pile) runs on a rodlab World through ``rodlab.solvers.make_simulator``; ``galpha``
claims no contact. A scenario feature outside what a method's adapter drives raises
``NotImplementedError`` (the suite reports the run as unsupported):

* ``der`` (explicit Discrete Elastic Rods, Bergou et al. 2008): any number of independent rods
  with free, pinned or clamped ends, end point loads, gravity, clamped-end motions, clamps that
  slide along an axis (``slides_along``: ``Clamp.slide_axis``, the
  slide is one more unknown of the step and of the fast projection). A clamped end holds its first (last) edge, both vertices and the material
  frame; a pinned end holds the end vertex. ``rest_arc_length``: the rest edge lengths come from
  it and the rod starts at the given (stretched) positions, which the first fast projection
  brings back to the rest lengths (an inextensible rod cannot start stretched). The stress-free
  shape is straight (rest curvature and twist zero) whatever the initial centerline. Quasi-static
  scenarios get viscous damping ``2 * scenario.slowest_frequency()`` (critical for the slowest
  mode, as the suite's own adapters do); dynamic ones get none. Time step: the stepper's
  suggested stable step times ``time_step_scale``, shortened so frames fall on steps. Contact
  scenarios (crossing, capstan, pile) go through ``cb_contact.run_world`` instead: the World's
  ``der`` simulator at the same stable step (``cb_contact.der_stable_step``), the rope keeping
  the (stretched) edge lengths it starts with, as compact's; what the simulator refuses (contact
  with rigid bodies) comes back as ``NotImplementedError`` with its reason.
* ``der-implicit`` (backward-Euler DER, rodlab.der_implicit): the same features as ``der``, and
  clamps that slide along a coordinate axis parallel to the clamped edge (``slides_along``: the
  edge's coordinates along the axis are released, so the end slides under its loads, as in the
  suite's ``twist``); a driven clamp's held unknowns (edge vertices, material angle) are set to
  the motion's pose for the end of each step (``_ClampDrive``). Rest lengths from
  ``rest_arc_length`` (it stretches, so a pre-stretched start is kept), straight stress-free
  shape, default step 1/240 s times ``time_step_scale`` (shortened so frames fall on steps), one
  Newton iteration per step.
* ``compact`` (``cb_compact.py``) and ``galpha`` (``cb_galpha.py``): cantilever, catenary,
  pendulum and twist (pins, clamps, driven and sliding clamps, end loads, gravity); what is
  mapped how, the time steps and the measured scores are in those modules' docstrings.

The common part (solver base class, damping rule, unsupported-feature check) is in
``cb_common.py``. Scores: docs/benchmarks.md (``python bench/bench_cosseratbench.py``).
"""
from __future__ import annotations

import math

import numpy as np

from .cb_common import (Capability, Diverged, End, EndCondition, Trajectory, _check_supported, _damping,  # noqa: F401
                        _RodlabSolver)
from .cb_contact import DER_CONTACT, DER_IMPLICIT_CONTACT, needs_contact, run_world
from .cb_contact import settings as contact_settings

class DERSolver(_RodlabSolver):
    """Explicit DER (rodlab.der.DERStepper): symplectic Euler, fast projection, quasistatic twist."""

    method = "der"
    name = "rodlab-der"
    capabilities = DER_CONTACT  # impulse contact with Coulomb friction on a World (cb_contact.py)

    def settings(self, scenario, *, n_elements: int, n_frames: int) -> dict:
        if needs_contact(scenario):
            return contact_settings(scenario, self.method, self.time_step_scale, n_frames, n_elements)
        return super().settings(scenario, n_elements=n_elements, n_frames=n_frames)

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
                clamps.append(Clamp(edge, None if motion is None else _clamp_motion(motion, nodes, vertex, edge),
                                    slide_axis=None if motion is None or motion.slides_along is None else tuple(motion.axis)))
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

        if needs_contact(scenario):  # obstacles or rods within reach: the World path (cb_contact.py)
            return run_world(self.method, scenario, n_elements=n_elements, n_frames=n_frames,
                             time_step_scale=self.time_step_scale)
        _check_supported(scenario, sliding_ok=True)
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
    """Implicit DER (rodlab.der_implicit): backward Euler on interleaved DOFs, one Newton
    iteration per step by default, with a stretching energy (so ``STRETCH``)."""

    method = "der-implicit"
    name = "rodlab-der-implicit"
    capabilities = frozenset({Capability.STRETCH}) | DER_IMPLICIT_CONTACT  # stretching energy; IPC contact, friction
    default_dt = 1.0 / 240.0

    def settings(self, scenario, *, n_elements: int, n_frames: int) -> dict:
        if needs_contact(scenario):
            return contact_settings(scenario, self.method, self.time_step_scale, n_frames, n_elements)
        return super().settings(scenario, n_elements=n_elements, n_frames=n_frames)

    def _build(self, crod, n_elements: int, scenario):
        from ..der_implicit.stepper import build_rod, with_params

        nodes = crod.nodes(n_elements)
        m = crod.material
        model, state = build_rod(nodes, radius=crod.radius, E=m.youngs_modulus, G=m.shear_modulus, rho=m.density,
                                 gravity=tuple(scenario.gravity), damping=_damping(scenario), clamp_root=False,
                                 rest_is_current=False, u0=np.asarray(crod.normal, dtype=float))
        nv = n_elements + 1
        lbar = np.diff(np.linspace(0.0, crod.length, nv))  # unstretched rest lengths
        area = math.pi * crod.radius**2
        vm = np.zeros(nv)
        vm[:-1] += 0.5 * m.density * area * lbar
        vm[1:] += 0.5 * m.density * area * lbar
        mass = np.array(model.mass)
        fext = np.zeros(4 * nv - 1)
        for c in range(3):
            mass[c::4] = vm
            fext[c::4] = vm * float(scenario.gravity[c])
        mass[3::4] = m.density * area * 0.5 * crod.radius**2 * lbar
        lvor = np.zeros(nv)
        lvor[1:-1] = lbar[:-1] + lbar[1:]
        fixed = np.zeros(4 * nv - 1, dtype=bool)
        drives = []
        for end, first in ((End.START, 0), (End.END, 4 * (nv - 2))):
            cond = crod.condition(end)
            if cond is EndCondition.CLAMPED:
                fixed[first:first + 7] = True
                motion = crod.motion(end)
                if motion is not None:
                    drives.append(_ClampDrive(motion, end, nodes, state, fixed))
            elif cond is EndCondition.PINNED:
                v = 0 if end is End.START else nv - 1
                fixed[4 * v:4 * v + 3] = True
        for load in crod.loads:
            v = 0 if load.at is End.START else nv - 1
            fext[4 * v:4 * v + 3] += np.asarray(load.force, dtype=float)
        model = with_params(model, lbar=lbar, lvor=lvor, mass=mass, fext=fext, fixed=fixed)
        return model, state, drives

    def run(self, scenario, *, n_elements: int, n_frames: int):
        from ..der_implicit.stepper import DERImplicitStepper

        if needs_contact(scenario):  # obstacles or rods within reach: the World path (cb_contact.py)
            return run_world(self.method, scenario, n_elements=n_elements, n_frames=n_frames,
                             time_step_scale=self.time_step_scale)
        _check_supported(scenario, sliding_ok=True)
        if n_elements < 2 or n_frames < 2:
            raise ValueError(f"n_elements and n_frames must be >= 2 (got {n_elements}, {n_frames})")
        frame_dt = scenario.duration / (n_frames - 1)
        per_frame = max(1, math.ceil(frame_dt / (self.default_dt * self.time_step_scale)))
        dt = frame_dt / per_frame
        positions, directors = [], []
        for i, crod in enumerate(scenario.rods):
            model, state, drives = self._build(crod, n_elements, scenario)
            stepper = DERImplicitStepper(model, h=dt)
            xs = np.empty((n_frames, n_elements + 1, 3))
            ds = np.empty((n_frames, n_elements, 3))
            xs[0], ds[0] = _der_implicit_frame(state)
            for f in range(1, n_frames):
                if drives:  # the held unknowns move: set them for the end of each step, then step
                    for _ in range(per_frame):
                        for drive in drives:
                            drive.impose(state, state.t + dt)
                        st = stepper.advance(state, 1)
                        if not st.success:
                            break
                else:
                    st = stepper.advance(state, per_frame)
                if not st.success:
                    raise Diverged(f"rod {i}: {st.message}", time=state.t)
                xs[f], ds[f] = _der_implicit_frame(state)
            positions.append(xs)
            directors.append(ds)
        return Trajectory(np.linspace(0.0, scenario.duration, n_frames), tuple(positions), tuple(directors))


class _ClampDrive:
    """A driven clamp of the implicit DER rod: the clamped edge's two vertices and its material
    angle are held unknowns whose values follow the suite's motion (the end turns about its start
    node). With ``slides_along`` (which must be a coordinate axis along the clamped edge) the two
    vertices' coordinates along the axis are released: the edge keeps its direction and slides
    under the loads, its length kept by the stretching energy; the motion acts across the axis
    and turns the frame about it. The values are imposed for the end of each step (backward Euler
    then meets the constraint at the new time)."""

    def __init__(self, motion, end, nodes: np.ndarray, state, fixed: np.ndarray) -> None:
        nv = len(nodes)
        self.motion = motion
        self.vertices = (0, 1) if end is End.START else (nv - 1, nv - 2)  # end node first
        self.edge = 0 if end is End.START else nv - 2
        self.pivot = nodes[self.vertices[0]].copy()
        self.x0 = nodes[list(self.vertices)].copy()
        x, m1 = _der_implicit_frame(state)
        self.m1_0 = m1[self.edge].copy()
        self.slide = None
        if motion.slides_along is not None:
            axis = motion.axis
            c = int(np.argmax(np.abs(axis)))
            t = np.diff(self.x0[[1, 0]] if end is End.END else self.x0, axis=0)[0]
            t /= np.linalg.norm(t)
            # the released coordinates keep the edge's direction only if it lies along the axis (to the
            # chord's deviation from a slightly bent start: 1e-4 rad for the suite's twist at 12 elements)
            if abs(abs(axis[c]) - 1.0) > 1e-12 or abs(abs(t @ axis) - 1.0) > 1e-6:
                raise NotImplementedError("rodlab-der-implicit: a clamp slides only along a coordinate axis "
                                          "parallel to its clamped edge")
            self.slide = c
            for v in self.vertices:
                fixed[4 * v + c] = False

    def impose(self, state, t: float) -> None:
        from ..geometry.curves import parallel_transport

        d, R = self.motion.pose(float(t))
        q = state.q
        for k, v in enumerate(self.vertices):
            target = self.pivot + d + R @ (self.x0[k] - self.pivot)
            for c in range(3):
                if c != self.slide:
                    q[4 * v + c] = target[c]
        e = self.edge
        tan = q[4 * e + 4:4 * e + 7] - q[4 * e:4 * e + 3]
        tan /= np.linalg.norm(tan)
        a1 = parallel_transport(np.ascontiguousarray(state.tan[e]), tan, np.ascontiguousarray(state.a1[e]))
        a1 -= (a1 @ tan) * tan
        a1 /= np.linalg.norm(a1)
        m1 = R @ self.m1_0
        theta = math.atan2(m1 @ np.cross(tan, a1), m1 @ a1)
        previous = q[4 * e + 3]
        q[4 * e + 3] = theta + 2.0 * math.pi * round((previous - theta) / (2.0 * math.pi))  # no 2 pi jumps


def _der_implicit_frame(state):
    """Positions and material director m1 = cos(theta) a1 + sin(theta) (t x a1) per edge."""
    q = state.q
    x = np.stack([q[0::4], q[1::4], q[2::4]], axis=1)
    theta = q[3::4]
    t = np.diff(x, axis=0)
    t /= np.linalg.norm(t, axis=1)[:, None]
    a1 = state.a1 - np.sum(state.a1 * t, axis=1)[:, None] * t  # a1 belongs to state.tan; re-orthogonalise
    a1 /= np.linalg.norm(a1, axis=1)[:, None]
    a2 = np.cross(t, a1)
    return x, np.cos(theta)[:, None] * a1 + np.sin(theta)[:, None] * a2


# each method's adapter in its own module; they build on the helpers above (hence imported last)
from .cb_compact import CompactSolver  # noqa: E402
from .cb_galpha import GAlphaSolver  # noqa: E402

SOLVERS = {cls.name: cls for cls in (DERSolver, DERImplicitSolver, CompactSolver, GAlphaSolver)}
