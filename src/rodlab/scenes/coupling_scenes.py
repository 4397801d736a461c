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
    Iz = p["tuning"] * I_tuned
    body = RigidBody(M, np.diag([0.5 * Iz + 0.0, 0.5 * Iz, Iz]))
    centre = np.array([0.0, 0.0, x[-1, 2] - 0.5 * pitch])
    return rod, body, centre, dict(k=k, kappa=kappa, Iz=Iz, m_rod=m_rod, wire=wire)


@register(
    "wilberforce",
    "helical spring + body: vertical oscillation turns into torsion and back (Bergou 2008, Fig. 11)",
    [
        Param("coil_radius", 0.05, "helix radius [m]", low=0.0, low_open=True),
        Param("turns", 5.0, "number of coils", low=1.0, high=40.0),
        Param("pitch", 0.06, "rise per turn [m]", low=0.0, low_open=True),
        Param("per_turn", 10, "vertices per turn", low=6, high=60),
        Param("bending", 0.01, "bending stiffness EI [N m^2]", low=0.0, low_open=True),
        Param("poisson", 0.3, "Poisson ratio: twisting stiffness GJ = EI / (1 + nu)", low=0.0, high=0.5),
        Param("linear_density", 0.02, "wire mass per length [kg/m]", low=0.0, low_open=True),
        Param("mass", 0.5, "body mass [kg]", low=0.0, low_open=True),
        Param("tuning", 0.95, "body moment of inertia about the axis over the close-coiled estimate (0.95: measured best exchange)", low=0.0, low_open=True),
        Param("v0", 0.05, "initial downward speed of the body [m/s]", low=0.0, low_open=True),
        Param("g", 0.0, "gravity [m/s^2] (0: oscillation about the rest shape; see docs/coupling.md)", low=0.0),
        Param("periods", 30.0, "simulated time in vertical periods 2 pi sqrt(M/k)", low=1.0, high=1000.0),
        Param("dt", 0.0, "time step [s] (0: suggested_time_step)", low=0.0),
    ],
    paper="Bergou et al. 2008, Sec. 9.4, Fig. 11",
)
def wilberforce(p, progress):
    rod, body, centre, th = wilberforce_model(p)
    dt = p["dt"] or suggested_time_step(rod)
    st = CoupledDERStepper(rod, [body], [Weld(0, -1)], Loads(gravity=(0.0, 0.0, -p["g"])), DEROptions(dt=dt))
    s = st.initial_state(centers=[centre], body_velocities=[[0.0, 0.0, -p["v0"]]])
    M, Iz = body.mass, th["Iz"]
    T_vert = 2 * np.pi * math.sqrt((M + th["m_rod"] / 3) / th["k"])
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
        "vertical_period_theory": T_vert,
        "torsional_period_theory": 2 * np.pi * math.sqrt((Iz + th["m_rod"] * rod.rest_positions[0, 0] ** 2 / 3) / th["kappa"]),
        "max_fraction_vertical": float(np.max(1 - frac_t)),
        "max_fraction_torsional": float(np.max(frac_t)),
        "min_fraction_vertical": float(np.min(1 - frac_t)),
        "energy_drift": float((rows[-1, 4] - e0) / max(abs(e0), 1e-300)),
        "body_Iz": Iz,
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
    st = CoupledDERStepper(rod, [A, B], [Weld(0, 0), Weld(1, -1)], Loads(), DEROptions(dt=dt))
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
