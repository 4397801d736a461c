"""Rod / rigid-body scenes of Bergou et al. 2008 (Sec. 9.4): wilberforce (Fig. 11) and
torque-transducer (Fig. 6), run with :class:`rodlab.coupling.CoupledDERStepper`.
Parameter choices are documented in docs/coupling.md.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..coupling import CoupledDERStepper, RigidBody, Weld
from ..der.stepper import DEROptions, suggested_time_step
from ..model import BoundaryConditions, Clamp, Loads, Rod
from .registry import Param, SceneResult, register


def _record(stepper, state, nframes, steps_per_frame, progress, probe):
    t, x, rows = [state.t], [state.rod.x.copy()], [probe(state)]
    elapsed = 0.0
    for f in range(nframes):
        t0 = time.perf_counter()
        stepper.advance(state, steps_per_frame)
        elapsed += time.perf_counter() - t0
        t.append(state.t)
        x.append(state.rod.x.copy())
        rows.append(probe(state))
        progress.update(f + 1, nframes)
    return np.array(t), np.array(x), np.array(rows), elapsed


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
def wilberforce_model(p):
    """Helical spring clamped at its top edge, a disk welded to its bottom edge (centre on the axis)."""
    R, turns, pitch, per_turn = p["coil_radius"], p["turns"], p["pitch"], p["per_turn"]
    n = int(turns * per_turn) + 1
    phi = np.linspace(0.0, 2 * np.pi * turns, n)
    x = np.stack([R * np.cos(phi), R * np.sin(phi), -pitch * phi / (2 * np.pi)], axis=1)
    alpha = p["bending"]
    beta = alpha / (1.0 + p["poisson"])  # GJ / EI for a circular wire: 2G/E = 1/(1 + nu)
    rod = Rod.from_stiffness(x, bending=alpha, twisting=beta, linear_density=p["linear_density"],
                             boundary=BoundaryConditions(clamps=(Clamp(0),)))
    wire = rod.total_length
    m_rod = p["linear_density"] * wire
    M = p["mass"]
    # close-coiled spring: k = beta / (R^2 L_w), kappa = alpha / L_w; tuned when kappa/I = k/M,
    # with a third of the wire's mass (and of its R^2-weighted inertia) added to each mode
    k = beta / (R * R * wire)
    kappa = alpha / wire
    I_tuned = kappa * (M + m_rod / 3.0) / k - m_rod * R * R / 3.0
    Iz = I_tuned if p["calibrate"] else p["tuning"] * I_tuned  # calibrated: tuning applied after
    body = RigidBody(M, np.diag([0.5 * Iz + 0.0, 0.5 * Iz, Iz]))
    centre = np.array([0.0, 0.0, x[-1, 2] - 0.5 * pitch])
    return rod, body, centre, dict(k=k, kappa=kappa, Iz=Iz, m_rod=m_rod, wire=wire)


def _kick_period(st, s0, velocity, angular_velocity, T_guess, dt):
    """Period of the body's vertical (or axial angular) velocity after a kick from ``s0``,
    from the zero crossings over about three periods."""
    s = s0.copy()
    if velocity is not None:
        s.V[0] = velocity
    if angular_velocity is not None:
        s.w[0] = s.rotation(0).T @ np.asarray(angular_velocity)
    R = s.rotation(0)
    for k in st.b_vidx[0]:
        s.rod.v[k] = s.V[0] + np.cross(R @ s.w[0], s.rod.x[k] - s.r[0])
    spf = max(1, int(T_guess / 80 / dt))
    t, y = [], []
    for _ in range(240):
        st.advance(s, spf)
        t.append(s.t)
        y.append(s.V[0, 2] if velocity is not None else (s.rotation(0) @ s.w[0])[2])
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
        Param("projection", "shake", "constraint step: shake (no projection damping) or fast (the paper's fast projection)", choices=("shake", "fast")),
    ],
    paper="Bergou et al. 2008, Sec. 9.4, Fig. 11",
)
def wilberforce(p, progress):
    rod, body, centre, th = wilberforce_model(p)
    dt = p["dt"] or suggested_time_step(rod)
    st = CoupledDERStepper(rod, [body], [Weld(0, -1)], Loads(gravity=(0.0, 0.0, -p["g"])), DEROptions(dt=dt),
                           projection=p["projection"])
    M, Iz = body.mass, th["Iz"]
    T_vert = 2 * np.pi * math.sqrt((M + th["m_rod"] / 3) / th["k"])
    s = st.initial_state(centers=[centre])
    sag = 0.0
    if p["g"] > 0 and p["settle_periods"] > 0:
        # hang the body: damped run to the static equilibrium under gravity, then undamped
        z_start = s.r[0, 2]
        rate = 2 * np.pi / T_vert
        st.set_damping(rate, rate)
        st.advance(s, int(p["settle_periods"] * T_vert / dt))
        st.set_damping(0.0, 0.0)
        sag = float(z_start - s.r[0, 2])
        s.rod.t = 0.0
        s.rod.v[:] = 0.0
        s.V[:] = 0.0
        s.w[:] = 0.0
    T_tors = T_vert
    T_close = T_vert
    if p["calibrate"]:
        # short runs from the equilibrium, one mode kicked at a time (the coupling is weak, so
        # over a few periods each oscillates at its own frequency); then I_z is set so that the
        # torsional period equals the vertical one (the rod's own rotary inertia m R^2 / 3 kept)
        T_meas = _kick_period(st, s, [0.0, 0.0, -p["v0"]], None, T_vert, dt)
        T_tors = _kick_period(st, s, None, [0.0, 0.0, p["v0"] / p["coil_radius"]], T_vert, dt)
        i_rod = th["m_rod"] * p["coil_radius"] ** 2 / 3.0
        Iz_new = p["tuning"] * ((Iz + i_rod) * (T_meas / T_tors) ** 2 - i_rod)
        st.set_body(0, RigidBody(M, np.diag([0.5 * Iz_new, 0.5 * Iz_new, Iz_new])))
        Iz, T_vert = Iz_new, T_meas
    s.V[0, 2] = -p["v0"]
    for k in st.b_vidx[0]:
        s.rod.v[k] = s.V[0]
    frames_per_period = 40
    spf = max(1, int(round(T_vert / frames_per_period / dt)))
    nframes = int(p["periods"] * frames_per_period)
    z0 = s.r[0, 2]

    def probe(s):
        R = s.rotation(0)
        wz = (R @ s.w[0])[2]
        ang = math.atan2(R[1, 0], R[0, 0])
        return [s.r[0, 2] - z0, s.V[0, 2], ang, wz, st.total_energy(s)]

    e0 = st.total_energy(s)
    t, x, rows, elapsed = _record(st, s, nframes, spf, progress, probe)
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
    steps = nframes * spf
    metrics = {
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
        "spring_k": th["k"],
        "spring_kappa": th["kappa"],
        "inextensibility": st.inextensibility(s),
        "weld_error": st.weld_error(s),
        "steps": steps,
        "dt": dt,
        "us_per_step": 1e6 * elapsed / max(steps, 1),
    }
    traj = {"t": t, "x": x, "z": rows[:, 0], "vz": rows[:, 1], "angle": rows[:, 2], "wz": rows[:, 3],
            "energy": rows[:, 4], "energy_vertical": ev, "energy_torsional": et}
    return SceneResult(metrics, traj)


# ------------------------------------------------------------------------------------------------
# torque-transducer (Fig. 6)
# ------------------------------------------------------------------------------------------------
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
        Param("projection", "shake", "constraint step: shake (no projection damping) or fast (the paper's fast projection)", choices=("shake", "fast")),
    ],
    paper="Bergou et al. 2008, Sec. 9.4, Fig. 6",
)
def torque_transducer(p, progress):
    n, L = p["n"], p["length"]
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0.0, L, n)
    rod = Rod.from_stiffness(x, bending=p["bending"], twisting=p["twisting"], linear_density=p["linear_density"])
    A = RigidBody.disk(p["mass_a"], p["radius_a"], 0.02, axis=0)
    B = RigidBody.disk(p["mass_b"], p["radius_b"], 0.02, axis=0)
    dt = p["dt"] or suggested_time_step(rod)
    st = CoupledDERStepper(rod, [A, B], [Weld(0, 0), Weld(1, -1)], Loads(), DEROptions(dt=dt), projection=p["projection"])
    h = L / (n - 1)
    centres = [[-h / 2 - 0.02, 0.0, 0.0], [L + h / 2 + 0.02, 0.0, 0.0]]
    s = st.initial_state(centers=centres, body_angular_velocities=[[p["spin"], p["wobble"], 0.0], [0.0, 0.0, 0.0]])
    Ia, Ib = A.inertia[0, 0], B.inertia[0, 0]
    L_twist = L - h  # between the midpoints of the two welded edges (Eq. 5)
    I_red = Ia * Ib / (Ia + Ib)
    T = 2 * np.pi * math.sqrt(I_red * L_twist / p["twisting"])
    frames_per_period = 60
    spf = max(1, int(round(T / frames_per_period / dt)))
    nframes = max(1, int(p["periods"] * frames_per_period))

    def probe(s):
        be = st.body_energies(s)
        rk, re, _ = st.rod_energies(s)
        Lm = st.angular_momentum(s)
        wa = (s.rotation(0) @ s.w[0])[0]
        wb = (s.rotation(1) @ s.w[1])[0]
        return [be[0, 0] + be[0, 1], be[1, 0] + be[1, 1], rk + re, Lm[0], wa - wb]

    t, xs, rows, elapsed = _record(st, s, nframes, spf, progress, probe)
    total = rows[:, 0] + rows[:, 1] + rows[:, 2]
    e0 = total[0]
    c = np.flatnonzero(np.sign(rows[1:, 4]) != np.sign(rows[:-1, 4]))
    tc = t[c] - rows[c, 4] * (t[c + 1] - t[c]) / (rows[c + 1, 4] - rows[c, 4])
    period = float(2 * np.mean(np.diff(tc))) if len(tc) >= 2 else -1.0
    steps = nframes * spf
    rod_max_theory = 0.5 * I_red * p["spin"] ** 2
    metrics = {
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
        "inextensibility": st.inextensibility(s),
        "weld_error": st.weld_error(s),
        "steps": steps,
        "dt": dt,
        "us_per_step": 1e6 * elapsed / max(steps, 1),
    }
    traj = {"t": t, "x": xs, "energy_a": rows[:, 0], "energy_b": rows[:, 1], "energy_rod": rows[:, 2],
            "energy_total": total, "relative_spin": rows[:, 4]}
    return SceneResult(metrics, traj)
