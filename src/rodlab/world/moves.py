"""Preparing a :class:`rodlab.world.State` by hand, and reading the twist out of one.

A scene sometimes starts from a configuration other than the rest shape (a guessed equilibrium,
a perturbed ring, a clamp already turned some number of times). These helpers write such a
configuration into a state the way a DER step would, so that the simulator can continue from it:

- :func:`move_vertices`: move one rod's vertices, carrying its reference frames along by
  time-parallel transport and unwrapping the reference twist (Bergou et al. 2010, "Discrete
  viscous threads"), optionally in several increments so that no edge turns by more than it can;
- :func:`settle_twist`: re-solve the quasistatic material angles of the edges that are not
  clamped, holding the clamped edges' current material frames (Bergou et al. 2008, "Discrete
  elastic rods", Sec. 5);
- :func:`seat_clamps`: a rod's positions with each clamped edge's two vertices where its clamp's
  motion puts them at a given time (relative to the rest pose, where the DER simulator's clamps
  start);
- :func:`fixed_pose`: a clamp motion that holds one displaced pose at every time (static problems);
- :func:`joint_twist` and :func:`joint_voronoi_length`: the integrated twist per joint
  ``m_k = theta_{k+1} - theta_k + mref_k`` [rad] and the Voronoi length ``(l_k + l_{k+1}) / 2``
  [m] it is spread over, so ``joint_twist / joint_voronoi_length`` is the twist per unit length.

The state helpers act in place on the state's flat arrays and leave velocities and time alone.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..aot import kernel
from ..geometry.curves import compute_edges, compute_tangents, reference_twist, time_parallel_update
from ..model import BoundaryConditions, Loads, ModelError, require
from ..state import RodState

# called from Python only here: the ahead-of-time entries where built (rodlab.aot), else the dispatchers
compute_edges, compute_tangents, reference_twist, time_parallel_update = map(kernel, (
    compute_edges, compute_tangents, reference_twist, time_parallel_update))


def _rod_index(world, rod) -> int:
    require(isinstance(rod, (int, np.integer)) and not isinstance(rod, bool) and 0 <= rod < world.n_rods,
            f"rod must be an index in [0, {world.n_rods - 1}] (got {rod!r})")
    return int(rod)


def _check_state(world, state) -> None:
    require(state.vertex_x.shape == (world.n_vertices, 3) and state.edge_theta.shape == (world.n_edges,),
            f"state has {state.vertex_x.shape[0]} vertices and {state.edge_theta.shape[0]} edges; "
            f"the world has {world.n_vertices} and {world.n_edges}")


def _tangents(x: np.ndarray, closed: bool) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=float)
    ne = x.shape[0] if closed else x.shape[0] - 1
    e = np.empty((ne, 3))
    compute_edges(x, closed, e)
    lengths = np.empty(ne)
    t = np.empty((ne, 3))
    compute_tangents(e, lengths, t)
    if not np.all(lengths > 0):
        raise ModelError(f"edge {int(np.argmin(lengths))} has zero length: vertices must be distinct")
    return t


# ---- twist ---------------------------------------------------------------------------------------
def joint_twist(world, state) -> np.ndarray:
    """Integrated twist of every joint of every rod (J,) [rad]: ``theta_{k+1} - theta_k + mref_k``
    (a closed rod's last joint joins its last edge to its first)."""
    _check_state(world, state)
    out = np.empty(world.n_joints)
    for r in range(world.n_rods):
        theta = state.rod_theta(r)
        nj = world.rods[r].n_joints
        nxt = (np.arange(nj) + 1) % theta.shape[0]
        out[world.rod_joints(r)] = theta[nxt] - theta[:nj] + state.rod_ref_twist(r)
    return out


def joint_voronoi_length(world) -> np.ndarray:
    """Rest Voronoi length of every joint (J,) [m]: half the rest lengths of its two edges."""
    out = np.empty(world.n_joints)
    for r in range(world.n_rods):
        l = world.edge_rest_length[world.rod_edges(r)]
        nj = world.rods[r].n_joints
        nxt = (np.arange(nj) + 1) % l.shape[0]
        out[world.rod_joints(r)] = 0.5 * (l[:nj] + l[nxt])
    return out


# ---- moving vertices -----------------------------------------------------------------------------
def move_vertices(world, state, x_new, *, rod: int = 0, steps: int = 1) -> None:
    """Move rod ``rod``'s vertices to ``x_new`` (n_r, 3) [m] in ``steps`` equal increments along
    the straight line from where they are, carrying the reference directors by time-parallel
    transport and unwrapping the reference twist at each increment (what a DER step does to the
    frames). The material angles ``edge_theta`` are kept (re-solve them with
    :func:`settle_twist`); velocities and time are untouched.

    Raises :class:`rodlab.model.ModelError` for a wrong shape, non-finite positions, a zero-length
    edge, or an increment that turns an edge by 180 degrees (then use more ``steps``).
    """
    _check_state(world, state)
    r = _rod_index(world, rod)
    require(isinstance(steps, (int, np.integer)) and not isinstance(steps, bool) and steps >= 1,
            f"steps must be an integer >= 1 (got {steps!r})")
    x_view = state.rod_x(r)
    target = np.asarray(x_new, dtype=float)
    require(target.shape == x_view.shape, f"x_new must have shape {x_view.shape} (rod {r}'s vertices; got {target.shape})")
    require(bool(np.all(np.isfinite(target))), "x_new must be finite")
    closed = bool(world.rods[r].closed)
    start = x_view.copy()
    ref_d1 = np.ascontiguousarray(state.rod_ref_d1(r))
    ref_twist = np.ascontiguousarray(state.rod_ref_twist(r))
    t_old = _tangents(start, closed)
    for lam in np.linspace(0.0, 1.0, int(steps) + 1)[1:]:
        x = np.ascontiguousarray((1 - lam) * start + lam * target)
        t_new = _tangents(x, closed)
        try:
            time_parallel_update(t_old, t_new, ref_d1)
        except ValueError:
            raise ModelError(f"move_vertices: an edge of rod {r} turns by 180 degrees in one increment "
                             f"(steps={steps}); use more steps") from None
        previous = ref_twist.copy()
        reference_twist(t_new, ref_d1, closed, previous, ref_twist)
        x_view[...] = x
        t_old = t_new
    state.rod_ref_d1(r)[...] = ref_d1
    state.rod_ref_twist(r)[...] = ref_twist


def seat_clamps(world, x, *, rod: int = 0, t: float = 0.0) -> np.ndarray:
    """A copy of rod ``rod``'s positions ``x`` (n_r, 3) [m] with each clamped edge's two vertices
    at its clamp's pose at time ``t`` [s]: ``R (x_rest - c) + c + d`` with ``(R, d) = motion(t)``
    and ``c`` the edge's rest midpoint (the DER simulator's clamps start at the rest pose); a clamp
    without motion sits at its rest positions. Move a state there with :func:`move_vertices`."""
    r = _rod_index(world, rod)
    body = world.rods[r]
    out = np.array(x, dtype=float)
    require(out.shape == body.rest_positions.shape, f"x must have shape {body.rest_positions.shape} (rod {r}'s vertices; got {out.shape})")
    for clamp in body.boundary.clamps:
        j = clamp.edge % body.n_edges
        ends = [j, (j + 1) % body.n_vertices]
        rest = body.rest_positions[ends]
        if clamp.motion is None:
            out[ends] = rest
            continue
        R, d = clamp.motion(float(t))
        centre = rest.mean(axis=0)
        out[ends] = (rest - centre) @ np.asarray(R, dtype=float).T + centre + np.asarray(d, dtype=float)
    return out


def fixed_pose(rotation=None, displacement=(0.0, 0.0, 0.0)):
    """A clamp motion (:data:`rodlab.model.RigidMotion`) that holds one pose at every time:
    ``rotation`` (3, 3) (default identity) about the clamped edge's rest midpoint, then
    ``displacement`` (3,) [m]. For static problems whose clamps sit away from the rest pose. A
    :class:`rodlab.motions.FixedPose` (with a vectorised ``sample(times)``)."""
    from ..motions import FixedPose

    return FixedPose(rotation, displacement)


# ---- twist re-equilibration ----------------------------------------------------------------------
def settle_twist(world, state, *, rods=None, twist_solver: str = "auto", twist_tol: float = 1e-10) -> None:
    """Re-solve the quasistatic material angles ``edge_theta`` of every rod (or of ``rods``) at
    the state's positions: the twist energy is minimised over the angles of the edges that are not
    clamped, the clamped edges keeping their current material frames (Bergou et al. 2008, Sec. 5:
    what every DER step does after moving the centerline). ``twist_solver`` and ``twist_tol`` as
    the DER simulator's options (:class:`rodlab.der.stepper.DEROptions`)."""
    from ..der.stepper import DEROptions, DERStepper

    _check_state(world, state)
    which = range(world.n_rods) if rods is None else [_rod_index(world, r) for r in rods]
    options = DEROptions(dt=1.0, twist_solver=twist_solver, twist_tol=float(twist_tol))
    for r in which:
        rod = world.rods[r]
        # clamps held where they are now: the stepper below takes the state as their pose
        held = BoundaryConditions(tuple(replace(c, motion=None, slide_axis=None) for c in rod.boundary.clamps),
                                  rod.boundary.fixed_vertices)
        stepper = DERStepper(replace(rod, boundary=held), Loads(), options)
        view = RodState(state.t, state.rod_x(r), state.rod_v(r), state.rod_theta(r), state.rod_ref_d1(r),
                        state.rod_ref_twist(r))
        stepper.attach(view)
        require(bool(np.all(np.isfinite(view.theta))), f"settle_twist: rod {r}'s material angles became non-finite")


__all__ = ["fixed_pose", "joint_twist", "joint_voronoi_length", "move_vertices", "seat_clamps", "settle_twist"]
