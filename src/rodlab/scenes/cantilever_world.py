"""The ``cantilever`` scene's worlds: each method's discrete clamp layout as a :class:`rodlab.World`.

A straight rod of free length ``L`` along +x, clamped at x = 0, gravity along -z.

- ``der``, ``der-implicit``, ``compact``: the clamp holds an *edge* (two vertices and the material
  frame). In DER the tangent of an edge lives at its midpoint and the bending of vertex ``i`` spans
  the Voronoi cell between the adjacent edge midpoints (Bergou et al., "Discrete Elastic Rods",
  2008); in the compact rods the first hinge's Voronoi length is one segment (Zhao et al., "Compact
  inextensible Cosserat rods"). So holding edge 0 holds the tangent at its midpoint: edge 0 is
  centred on x = 0, vertices at ``x_i = (i - 1/2) h`` with ``h = L / (n - 3/2)``, and the deformable
  rod is ``[0, L]`` with the tip vertex at ``x = L`` (a clamp at ``x_1`` with free length ``L``
  would clamp at ``-h/2`` and leave an O(h) error in the tip). Each method keeps the exact
  floating-point layout of its first-wave driver (``der``: ``(i - 1/2) h``; ``der-implicit``:
  ``-h/2 + i h`` with the tip set to ``L``; ``compact``: ``-h/2 + i h``) and its rest director
  (``der``: the rod's Bishop frame; ``der-implicit``: +z; ``compact``: +y).
- ``galpha``: ``n`` nodes at ``s_j = j L / (n - 1)``; node 0 is the kinematic root, exactly at
  x = 0 with d3 = +x, d1 = +y (:data:`rodlab.galpha.model.ROOT_R`).

:func:`cantilever_world` builds the world; :func:`der_static_multilevel` is the explicit DER's
coarse-to-fine static continuation. :func:`cantilever_rod` and :func:`cantilever_model` give the
DER rod and the implicit-DER model of the same layout to benchmarks and tests.
"""
from __future__ import annotations

import numpy as np

from ..model import BoundaryConditions, Clamp, CrossSection, Material, ModelError, Rod, require
from ..world import State, World, WorldBuilder, shapes

LAYOUT_METHODS = ("der", "der-implicit", "compact", "galpha")
MULTILEVEL_MIN_VERTICES = 50
"""The der static continuation solves first at ``n / 2^k`` vertices, down to about this many."""


def _check(params: dict) -> None:
    n = params["n"]
    require(isinstance(n, (int, np.integer)) and n >= 4, f"n must be an integer >= 4 vertices (got {n!r})")
    for name in ("length", "radius", "E", "G", "rho"):
        v = float(params[name])
        require(np.isfinite(v) and v > 0, f"{name} must be > 0 (got {params[name]!r})")


def cantilever_points(params: dict, method: str) -> np.ndarray:
    """Rest vertices (n, 3) [m] of ``method``'s layout (module docstring)."""
    _check(params)
    require(method in LAYOUT_METHODS, f"method must be one of {', '.join(LAYOUT_METHODS)} (got {method!r})")
    n, L = int(params["n"]), float(params["length"])
    if method == "galpha":
        return shapes.straight(n, L)
    h = L / (n - 1.5)
    x = np.zeros((n, 3))
    if method == "der":
        x[:, 0] = (np.arange(n) - 0.5) * h
    else:
        x[:, 0] = -0.5 * h + h * np.arange(n)
        if method == "der-implicit":
            x[-1, 0] = L
    return x


def _rest_d1(method: str, n: int):
    direction = {"der": None, "der-implicit": (0.0, 0.0, 1.0), "compact": (0.0, 1.0, 0.0), "galpha": (0.0, 1.0, 0.0)}[method]
    return None if direction is None else np.tile(direction, (n - 1, 1))


def cantilever_world(params: dict, method: str) -> World:
    """The cantilever of ``params`` (``n``, ``length``, ``radius``, ``E``, ``G``, ``rho``, ``g``
    [m/s^2] along -z, ``damping`` [1/s]) in ``method``'s discrete layout, edge 0 clamped."""
    pts = cantilever_points(params, method)
    b = WorldBuilder(gravity=(0.0, 0.0, -float(params["g"])), damping=float(params["damping"]))
    r = b.add_rod(pts, E=float(params["E"]), G=float(params["G"]), rho=float(params["rho"]),
                  radius=float(params["radius"]), rest_d1=_rest_d1(method, pts.shape[0]))
    b.clamp(r, "start")
    return b.build()


def cantilever_rod(params: dict) -> Rod:
    """The explicit-DER cantilever as a single :class:`rodlab.model.Rod` (edge 0 clamped)."""
    return Rod.from_material(cantilever_points(params, "der"), Material(params["E"], params["G"], params["rho"]),
                             CrossSection.circle(params["radius"]), boundary=BoundaryConditions(clamps=(Clamp(0),)))


def cantilever_model(n: int, length: float, radius: float, E: float, G: float, rho: float, g: float, damping: float):
    """The implicit-DER cantilever as ``(DERImplicitModel, DERImplicitState)`` built by
    :func:`rodlab.der_implicit.stepper.build_rod` (root edge and its angle held)."""
    from ..der_implicit.stepper import build_rod

    params = dict(n=n, length=length, radius=radius, E=E, G=G, rho=rho)
    x = cantilever_points(params, "der-implicit")
    return build_rod(x, radius=radius, E=E, G=G, rho=rho, gravity=(0.0, 0.0, -g), damping=damping,
                     u0=np.array([0.0, 0.0, 1.0]))


# ---------------------------------------------------------------------------------------------
# der statics: coarse-to-fine continuation
# ---------------------------------------------------------------------------------------------
def multilevel_sizes(n: int) -> list[int]:
    """Vertex counts of the continuation, coarse to fine: ``n``, halved while above 50 (at least 25)."""
    levels = [int(n)]
    while levels[-1] > MULTILEVEL_MIN_VERTICES:
        levels.append(max(25, levels[-1] // 2))
    return levels[::-1]


def resample(x_coarse: np.ndarray, length: float, n: int) -> np.ndarray:
    """Positions (n, 3) at the fine der layout's arc lengths ``(i - 1/2) h`` by cubic interpolation
    of ``x_coarse`` (the der layout of fewer vertices); the clamped edge is put back exactly."""
    from scipy.interpolate import CubicSpline

    hc = length / (x_coarse.shape[0] - 1.5)
    sc = (np.arange(x_coarse.shape[0]) - 0.5) * hc
    hf = length / (n - 1.5)
    sf = (np.arange(n) - 0.5) * hf
    x = CubicSpline(sc, x_coarse, axis=0)(sf)
    x[0] = (-0.5 * hf, 0.0, 0.0)
    x[1] = (0.5 * hf, 0.0, 0.0)
    return x


def _der_state_at(sim, x: np.ndarray) -> State:
    """A state of the one-rod der simulator ``sim`` at positions ``x``, at rest, with the reference
    frames transported from the rest frame and the twist solved (``DERStepper.initial_state``)."""
    state = sim.initial_state()
    rs = sim.steppers[0].initial_state(x=x)
    state.vertex_x[...] = rs.x
    state.edge_theta[...] = rs.theta
    state.edge_ref_d1[...] = rs.ref_d1
    state.joint_ref_twist[...] = rs.ref_twist
    return state


def der_static_multilevel(params: dict, sim, state: State):
    """Static equilibrium of the der cantilever by coarse-to-fine continuation: the equilibrium at
    ``n / 2^k`` vertices first (load ramped in 4 stages), then each level's equilibrium interpolated
    along the arc length (:func:`resample`) as the next level's start, solved with the whole load at
    once. Newton in vertex positions needs many steps to turn a long rod through large angles from
    straight; from an interpolated coarse equilibrium it needs a handful.

    ``sim``: the der simulator of the finest world; ``state`` is moved to the equilibrium in place.
    Returns ``(success, message, iterations, residual, load_stages)`` of the finest level.
    (:meth:`rodlab.solvers.der.DERSimulator.solve_static` always ramps the load in 4 stages, so the
    levels after the first call :func:`rodlab.der.static.solve_static` on the simulator's rod with
    one stage, as the first-wave driver did.)
    """
    from ..der.static import solve_static
    from ..solvers import make_simulator
    from ..state import RodState

    if sim.world.n_rods != 1:
        raise ModelError(f"the der static continuation takes a one-rod world (got {sim.world.n_rods} rods)")
    levels = multilevel_sizes(params["n"])
    guess = None
    res = None
    for n in levels:
        level = sim if n == params["n"] else make_simulator(cantilever_world(dict(params, n=n), "der"), "der", dt=sim.dt,
                                                            damping_scheme=sim.opts["damping_scheme"],
                                                            projection=sim.opts["projection"])
        s0 = (state if n == params["n"] else level.initial_state()) if guess is None else \
            _der_state_at(level, resample(guess, float(params["length"]), n))
        view = RodState(s0.t, s0.rod_x(0), s0.rod_v(0), s0.rod_theta(0), s0.rod_ref_d1(0), s0.rod_ref_twist(0))
        res = solve_static(level.steppers[0], view, load_stages=1 if guess is not None else 4)
        guess = res.state.x
    state.vertex_x[...] = res.state.x
    state.vertex_v[...] = 0.0
    state.edge_theta[...] = res.state.theta
    state.edge_ref_d1[...] = res.state.ref_d1
    state.joint_ref_twist[...] = res.state.ref_twist
    return res.success, res.message, res.iterations, res.residual, res.load_stages


__all__ = ["LAYOUT_METHODS", "cantilever_model", "cantilever_points", "cantilever_rod", "cantilever_world",
           "der_static_multilevel", "multilevel_sizes", "resample"]
