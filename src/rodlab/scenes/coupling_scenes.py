"""Rod / rigid-body scenes of Bergou et al. 2008 (Sec. 9.4): wilberforce (Fig. 11) and
torque-transducer (Fig. 6). Each builds a :class:`rodlab.world.World` (rod, bodies, welds,
clamp) and steps it with the ``der`` simulator's rigid bodies (:mod:`rodlab.der.bodies`) through
:func:`rodlab.experiment.record`. Parameter choices are documented in docs/coupling.md.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import metrics
from ..experiment import record
from ..solvers import make_simulator
from ..world import WorldBuilder
from .registry import Param, SceneResult, register

PROJECTIONS = ("symplectic", "fast")
PROJECTION_HELP = ("constraint step of the der simulator: symplectic (RATTLE, no projection damping; 'shake', the "
                   "old name, is accepted) or fast (the paper's fast projection)")


def one_thread(scene):
    """Run ``scene`` with numba's thread count at 1 (restored after). These worlds have one
    rod, so the ``der`` simulator's parallel phases have one chunk of work: the parallel regions
    only add their start and join per phase (measured on this 2-core machine under load:
    torque-transducer 154 us per step on one thread against 5700 us on two)."""

    @functools.wraps(scene)
    def run(p, progress):
        import numba

        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return scene(p, progress)
        finally:
            numba.set_num_threads(threads)

    return run


def _projection(p) -> str:
    """The simulator's ``projection`` option from the scene parameter ("shake" is the old name
    of the energy-keeping step, now "symplectic")."""
    return "symplectic" if p["projection"] == "shake" else p["projection"]


def disk_inertia(mass: float, radius: float, thickness: float = 0.0, axis: int = 2) -> np.ndarray:
    """Principal moments of inertia (3,) [kg m^2] of a solid cylinder (disk) of ``mass`` [kg],
    ``radius`` and ``thickness`` [m] with its symmetry axis along body ``axis``."""
    d = np.full(3, mass * (3 * radius**2 + thickness**2) / 12.0)
    d[axis] = 0.5 * mass * radius**2
    return d


def body_world_angular_velocity(state, b: int) -> np.ndarray:
    """Body ``b``'s angular velocity in world coordinates [rad/s] (the state keeps it in body
    coordinates)."""
    return metrics.body_rotation(state, b) @ state.body_w[b]


def set_body_velocity(sim, state, b: int, velocity=None, angular_velocity=None) -> None:
    """Give body ``b`` the centre velocity ``velocity`` [m/s] and the world angular velocity
    ``angular_velocity`` [rad/s] (either may be None: unchanged); its welded vertices get the
    rigid velocity ``V + w x (x - r)``."""
    R = metrics.body_rotation(state, b)
    if velocity is not None:
        state.body_v[b] = np.asarray(velocity, dtype=float)
    if angular_velocity is not None:
        state.body_w[b] = R.T @ np.asarray(angular_velocity, dtype=float)
    welded = np.flatnonzero(np.asarray(sim.body_model.vertex_body) == b)
    w = R @ state.body_w[b]
    state.vertex_v[welded] = state.body_v[b] + np.cross(w, state.vertex_x[welded] - state.body_x[b])


def weld_error(sim, state) -> float:
    """The weld constraints of Bergou 2008, Sec. 8 [m, and unitless for the director]: the
    largest of ``|x_k - (r_b + R p_k)|`` over welded vertices and ``|m1 - R m1^0|`` over welded
    edges."""
    err = sim.weld_error(state)
    bm = sim.body_model
    m1 = state.material_frames()[0]
    for r in range(sim.world.n_rods):
        e0 = int(sim.world.rod_edge_start[r])
        for k in range(int(bm.rod_weld_start[r]), int(bm.rod_weld_start[r + 1])):
            R = metrics.body_rotation(state, int(bm.weld_body[k]))
            err = max(err, float(np.linalg.norm(m1[e0 + int(bm.weld_edge[k])] - R @ bm.weld_m1[k])))
    return err


def _window_max(y: np.ndarray, width: int) -> np.ndarray:
    """Running maximum over a centred window of ``width`` samples (the envelope of an
    oscillating kinetic energy = the energy of that mode)."""
    n = len(y)
    out = np.empty(n)
    h = max(width // 2, 1)
    for i in range(n):
        out[i] = y[max(0, i - h): min(n, i + h + 1)].max()
    return out


# ------------------------------------------------------------------------------------------------
# wilberforce (Fig. 11)
# ------------------------------------------------------------------------------------------------
def wilberforce_model(p) -> dict:
    """Helical spring clamped at its top edge, a disk welded to its bottom edge (centre on the
    axis): the helix ``x`` (n, 3) [m], the body's ``centre`` [m], the close-coiled estimates
    ``k`` [N/m] and ``kappa`` [N m/rad], the tuned axial inertia ``Iz`` [kg m^2], the wire's mass
    ``m_rod`` [kg] and length ``wire`` [m]."""
    R, turns, pitch, per_turn = p["coil_radius"], p["turns"], p["pitch"], p["per_turn"]
    n = int(turns * per_turn) + 1
    phi = np.linspace(0.0, 2 * np.pi * turns, n)
    x = np.stack([R * np.cos(phi), R * np.sin(phi), -pitch * phi / (2 * np.pi)], axis=1)
    alpha = p["bending"]
    wire = float(np.sum(np.linalg.norm(np.diff(x, axis=0), axis=1)))
    m_rod = p["linear_density"] * wire
    M = p["mass"]
    # close-coiled spring: k = beta / (R^2 L_w), kappa = alpha / L_w; tuned when kappa/I = k/M,
    # with a third of the wire's mass (and of its R^2-weighted inertia) added to each mode
    beta = alpha / (1.0 + p["poisson"])  # GJ / EI for a circular wire: 2G/E = 1/(1 + nu)
    k = beta / (R * R * wire)
    kappa = alpha / wire
    I_tuned = kappa * (M + m_rod / 3.0) / k - m_rod * R * R / 3.0
    Iz = I_tuned if p["calibrate"] else p["tuning"] * I_tuned  # calibrated: tuning applied after
    centre = np.array([0.0, 0.0, x[-1, 2] - 0.5 * pitch])
    return dict(x=x, centre=centre, bending=alpha, twisting=beta, k=k, kappa=kappa, Iz=Iz, m_rod=m_rod, wire=wire)


def wilberforce_world(p, model: dict, Iz: float, damping: float = 0.0):
    """The spring + body world: gravity ``-g`` along z, viscous ``damping`` [1/s] on rod and
    body, body inertia ``diag(Iz / 2, Iz / 2, Iz)``."""
    b = WorldBuilder(gravity=(0.0, 0.0, -p["g"]), damping=damping)
    r = b.add_rod(model["x"], bending=model["bending"], twisting=model["twisting"], linear_density=p["linear_density"])
    b.clamp(r, "start")
    body = b.add_body(p["mass"], (0.5 * Iz, 0.5 * Iz, Iz), position=model["centre"])
    b.weld(r, "end", body)
    return b.build()


def _kick_period(sim, s0, velocity, angular_velocity, T_guess):
    """Period of the body's vertical (or axial angular) velocity after a kick from ``s0``,
    from the zero crossings over about three periods."""
    s = s0.copy()
    set_body_velocity(sim, s, 0, velocity, angular_velocity)
    spf = max(1, int(T_guess / 80 / sim.dt))
    t, y = [], []
    for _ in range(240):
        sim.advance(s, spf)
        t.append(s.t)
        y.append(s.body_v[0, 2] if velocity is not None else body_world_angular_velocity(s, 0)[2])
    t, y = np.array(t), np.array(y)
    c = np.flatnonzero(np.sign(y[1:]) != np.sign(y[:-1]))
    tc = t[c] - y[c] * (t[c + 1] - t[c]) / (y[c + 1] - y[c])
    return float(2 * np.mean(np.diff(tc)))


@register(
    "wilberforce",
    "helical spring + body: vertical oscillation turns into torsion and back (Bergou 2008, Fig. 11)",
    [
        Param("coil_radius", 0.05, "helix radius [m]", low=0.0, low_open=True),
        Param("turns", 5.0, "number of coils", low=1.0, high=40.0),
        Param("pitch", 0.12, "rise per turn [m]", low=0.0, low_open=True),
        Param("per_turn", 10, "vertices per turn", low=6, high=60),
        Param("bending", 0.2, "bending stiffness EI [N m^2]", low=0.0, low_open=True),
        Param("poisson", 0.3, "Poisson ratio: twisting stiffness GJ = EI / (1 + nu)", low=0.0, high=0.5),
        Param("linear_density", 0.02, "wire mass per length [kg/m]", low=0.0, low_open=True),
        Param("mass", 0.5, "body mass [kg]", low=0.0, low_open=True),
        Param("tuning", 1.0, "body moment of inertia about the axis over the tuned value", low=0.0, low_open=True),
        Param("calibrate", True, "tune by measuring both periods about the hanging equilibrium (else the close-coiled estimate)"),
        Param("v0", 0.2, "initial downward speed of the body [m/s]", low=0.0, low_open=True),
        Param("g", 9.81, "gravity [m/s^2]; the spring first settles under the body's weight (damped), then the body is kicked", low=0.0),
        Param("settle_periods", 8.0, "damped settling time under gravity, in vertical periods", low=0.0),
        Param("periods", 50.0, "simulated time in vertical periods 2 pi sqrt(M/k)", low=1.0, high=1000.0),
        Param("dt", 0.0, "time step [s] (0: suggested_time_step)", low=0.0),
        Param("projection", "symplectic", PROJECTION_HELP, choices=PROJECTIONS + ("shake",)),
    ],
    paper="Bergou et al. 2008, Sec. 9.4, Fig. 11",
)
@one_thread
def wilberforce(p, progress):
    model = wilberforce_model(p)
    options = {"projection": _projection(p)}
    if p["dt"] > 0:
        options["dt"] = p["dt"]
    M, Iz = p["mass"], model["Iz"]
    T_vert = 2 * np.pi * math.sqrt((M + model["m_rod"] / 3) / model["k"])
    world = wilberforce_world(p, model, Iz)
    sim = make_simulator(world, "der", **options)
    dt = sim.dt
    s = sim.initial_state()
    sag = 0.0
    if p["g"] > 0 and p["settle_periods"] > 0:
        # hang the body: damped run (rod and body, rate 2 pi / T) to the static equilibrium under
        # gravity, then the undamped world from there (same geometry: same welds, same state layout)
        z_start = s.body_x[0, 2]
        settle = make_simulator(wilberforce_world(p, model, Iz, damping=2 * np.pi / T_vert), "der", **options)
        settle.advance(s, int(p["settle_periods"] * T_vert / dt))
        sag = float(z_start - s.body_x[0, 2])
        s.t = 0.0
        s.vertex_v[:] = 0.0
        s.body_v[:] = 0.0
        s.body_w[:] = 0.0
    T_tors = T_vert
    T_close = T_vert
    if p["calibrate"]:
        # short runs from the equilibrium, one mode kicked at a time (the coupling is weak, so
        # over a few periods each oscillates at its own frequency); then I_z is set so that the
        # torsional period equals the vertical one (the rod's own rotary inertia m R^2 / 3 kept)
        T_meas = _kick_period(sim, s, [0.0, 0.0, -p["v0"]], None, T_vert)
        T_tors = _kick_period(sim, s, None, [0.0, 0.0, p["v0"] / p["coil_radius"]], T_vert)
        i_rod = model["m_rod"] * p["coil_radius"] ** 2 / 3.0
        Iz_new = p["tuning"] * ((Iz + i_rod) * (T_meas / T_tors) ** 2 - i_rod)
        world = wilberforce_world(p, model, Iz_new)
        sim = make_simulator(world, "der", **options)
        Iz, T_vert = Iz_new, T_meas
    set_body_velocity(sim, s, 0, [0.0, 0.0, -p["v0"]])
    frames_per_period = 40
    spf = max(1, int(round(T_vert / frames_per_period / dt)))
    nframes = int(p["periods"] * frames_per_period)
    z0 = s.body_x[0, 2]

    def probe(s):
        R = metrics.body_rotation(s, 0)
        wz = (R @ s.body_w[0])[2]
        ang = math.atan2(R[1, 0], R[0, 0])
        return np.array([s.body_x[0, 2] - z0, s.body_v[0, 2], ang, wz, sim.energies(s)["total"]])

    e0 = sim.energies(s)["total"]
    rec = record(sim, s, nframes * spf, frames=nframes, progress=progress, probes={"rows": probe})
    t, rows = rec.t, rec.probes["rows"]
    kv = 0.5 * M * rows[:, 1] ** 2
    kt = 0.5 * Iz * rows[:, 3] ** 2
    width = int(1.2 * frames_per_period)
    ev, et = _window_max(kv, width), _window_max(kt, width)
    frac_t = et / np.maximum(ev + et, 1e-300)
    # exchange period: vertical energy starts at its maximum; successive crossings of 1/2
    c = np.flatnonzero(np.sign(frac_t[1:] - 0.5) != np.sign(frac_t[:-1] - 0.5))
    tc = t[c]
    if len(tc) >= 3:
        period = float(2 * np.mean(np.diff(tc)))
    elif len(tc) == 2:
        period = float(2 * (tc[1] - tc[0]))
    else:
        period = float("nan")
    metrics_out = {
        "exchange_period": period if math.isfinite(period) else -1.0,
        "exchange_periods_in_vertical_periods": period / T_vert if math.isfinite(period) else -1.0,
        "vertical_period": T_vert,
        "vertical_period_close_coiled": T_close,
        "max_fraction_vertical": float(np.max(1 - frac_t)),
        "max_fraction_torsional": float(np.max(frac_t)),
        "min_fraction_vertical": float(np.min(1 - frac_t)),
        "energy_drift": float((rows[-1, 4] - e0) / max(abs(e0), 1e-300)),
        "energy_change_over_kick_energy": float((rows[-1, 4] - e0) / (0.5 * M * p["v0"] ** 2)),
        "body_Iz": Iz,
        "torsional_period_before_tuning": T_tors if p["calibrate"] else -1.0,
        "static_sag": sag,
        "spring_k": model["k"],
        "spring_kappa": model["kappa"],
        "inextensibility": metrics.inextensibility(world, s),
        "weld_error": weld_error(sim, s),
        **rec.summary(world.n_vertices),
        "dt": dt,
    }
    traj = {"t": t, "x": rec.x, "z": rows[:, 0], "vz": rows[:, 1], "angle": rows[:, 2], "wz": rows[:, 3],
            "energy": rows[:, 4], "energy_vertical": ev, "energy_torsional": et}
    return SceneResult(metrics_out, traj, world=world, state=s)


# ------------------------------------------------------------------------------------------------
# torque-transducer (Fig. 6)
# ------------------------------------------------------------------------------------------------
def torque_transducer_world(p):
    """A straight rod along x between two disks (axes along x) welded to its end edges, no
    gravity; returns ``(world, inertia_a, inertia_b)`` with the disks' axial inertia [kg m^2]."""
    n, L = p["n"], p["length"]
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0.0, L, n)
    h = L / (n - 1)
    Ia = disk_inertia(p["mass_a"], p["radius_a"], 0.02, axis=0)
    Ib = disk_inertia(p["mass_b"], p["radius_b"], 0.02, axis=0)
    b = WorldBuilder()
    r = b.add_rod(x, bending=p["bending"], twisting=p["twisting"], linear_density=p["linear_density"])
    a = b.add_body(p["mass_a"], Ia, position=(-h / 2 - 0.02, 0.0, 0.0))
    c = b.add_body(p["mass_b"], Ib, position=(L + h / 2 + 0.02, 0.0, 0.0))
    b.weld(r, "start", a)
    b.weld(r, "end", c)
    return b.build(), float(Ia[0]), float(Ib[0])


def body_kinetic_energy(world, state, b: int) -> float:
    """Translational plus rotational kinetic energy of body ``b`` [J]."""
    body = world.bodies[b]
    return 0.5 * body.mass * float(state.body_v[b] @ state.body_v[b]) + 0.5 * float(state.body_w[b] @ body.inertia @ state.body_w[b])


@register(
    "torque-transducer",
    "two rigid bodies coupled by a rod, one spun up: energy moves between the bodies and the rod (Bergou 2008, Fig. 6)",
    [
        Param("n", 30, "rod vertices", low=5, high=400),
        Param("length", 1.0, "rod length [m]", low=0.0, low_open=True),
        Param("bending", 1.0, "bending stiffness EI [N m^2]", low=0.0, low_open=True),
        Param("twisting", 0.5, "twisting stiffness GJ [N m^2]", low=0.0, low_open=True),
        Param("linear_density", 0.05, "rod mass per length [kg/m]", low=0.0, low_open=True),
        Param("mass_a", 2.0, "spun body mass [kg] (a disk of radius radius_a)", low=0.0, low_open=True),
        Param("radius_a", 0.15, "spun body radius [m]", low=0.0, low_open=True),
        Param("mass_b", 0.5, "other body mass [kg]", low=0.0, low_open=True),
        Param("radius_b", 0.1, "other body radius [m]", low=0.0, low_open=True),
        Param("spin", 5.0, "initial spin of body a about the rod axis [rad/s]", low=0.0),
        Param("wobble", 0.0, "initial transverse angular velocity of body a [rad/s] (bends the rod)", low=0.0),
        Param("periods", 4.0, "simulated time in torsional periods", low=0.1, high=1000.0),
        Param("dt", 0.0, "time step [s] (0: suggested_time_step)", low=0.0),
        Param("projection", "symplectic", PROJECTION_HELP, choices=PROJECTIONS + ("shake",)),
    ],
    paper="Bergou et al. 2008, Sec. 9.4, Fig. 6",
)
@one_thread
def torque_transducer(p, progress):
    n, L = p["n"], p["length"]
    world, Ia, Ib = torque_transducer_world(p)
    options = {"projection": _projection(p)}
    if p["dt"] > 0:
        options["dt"] = p["dt"]
    sim = make_simulator(world, "der", **options)
    dt = sim.dt
    s = sim.initial_state()
    set_body_velocity(sim, s, 0, None, [p["spin"], p["wobble"], 0.0])
    h = L / (n - 1)
    L_twist = L - h  # between the midpoints of the two welded edges (Eq. 5)
    I_red = Ia * Ib / (Ia + Ib)
    T = 2 * np.pi * math.sqrt(I_red * L_twist / p["twisting"])
    frames_per_period = 60
    spf = max(1, int(round(T / frames_per_period / dt)))
    nframes = max(1, int(p["periods"] * frames_per_period))

    def probe(s):
        e = sim.energies(s)
        ea, eb = body_kinetic_energy(world, s, 0), body_kinetic_energy(world, s, 1)
        wa = body_world_angular_velocity(s, 0)[0]
        wb = body_world_angular_velocity(s, 1)[0]
        return np.array([ea, eb, e["kinetic_rods"] + e["elastic"], sim.momentum(s)[1][0], wa - wb])

    rec = record(sim, s, nframes * spf, frames=nframes, progress=progress, probes={"rows": probe})
    t, rows = rec.t, rec.probes["rows"]
    total = rows[:, 0] + rows[:, 1] + rows[:, 2]
    e0 = total[0]
    c = np.flatnonzero(np.sign(rows[1:, 4]) != np.sign(rows[:-1, 4]))
    tc = t[c] - rows[c, 4] * (t[c + 1] - t[c]) / (rows[c + 1, 4] - rows[c, 4])
    period = float(2 * np.mean(np.diff(tc))) if len(tc) >= 2 else -1.0
    rod_max_theory = 0.5 * I_red * p["spin"] ** 2
    metrics_out = {
        "torsional_period": period,
        "torsional_period_theory": T,
        "period_error": period / T - 1 if period > 0 else -1.0,
        "energy_a_max": float(rows[:, 0].max()),
        "energy_a_min": float(rows[:, 0].min()),
        "energy_b_max": float(rows[:, 1].max()),
        "energy_rod_max": float(rows[:, 2].max()),
        "energy_rod_max_theory": rod_max_theory,
        "energy_initial": float(e0),
        "energy_drift": float((total[-1] - e0) / e0) if e0 > 0 else 0.0,
        "energy_drift_max": float(np.max(np.abs(total - e0)) / e0) if e0 > 0 else 0.0,
        "angular_momentum_drift": float(np.max(np.abs(rows[:, 3] - rows[0, 3])) / max(abs(rows[0, 3]), 1e-300)),
        "inextensibility": metrics.inextensibility(world, s),
        "weld_error": weld_error(sim, s),
        **rec.summary(world.n_vertices),
        "dt": dt,
    }
    traj = {"t": t, "x": rec.x, "energy_a": rows[:, 0], "energy_b": rows[:, 1], "energy_rod": rows[:, 2],
            "energy_total": total, "relative_spin": rows[:, 4]}
    return SceneResult(metrics_out, traj, world=world, state=s)
