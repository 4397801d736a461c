"""The two discretisations of the viscous damping ``-c m v`` (docs/damping.md).

A free rod translating rigidly feels no elastic force, so each step only damps its velocity:
``1 / (1 + c h)`` per step with the implicit scheme, ``exp(-c h)`` with the exponential one. Both
are closed forms; the tolerances would catch a scheme applied twice, to the wrong step or not at all.
"""
import math

import numpy as np
import pytest

import rodlab
from rodlab import CrossSection, Loads, Material, Rod
from rodlab.compact.active_set import ConstrainedSolver, Floor
from rodlab.compact.sqp import CompactModel, CompactSolver, CompactState, SolverOptions
from rodlab.der.stepper import DEROptions, DERStepper
from rodlab.der_implicit.energies import pack_dofs, unpack_dofs
from rodlab.der_implicit.stepper import DERImplicitStepper, build_rod
from rodlab.model import ModelError
from rodlab.scenes.registry import SceneError

C, H, STEPS = 3.0, 0.05, 20
V0 = np.array([0.3, -0.2, 0.1])


def _polyline(n=8):
    x = np.zeros((n, 3))
    x[:, 0] = np.linspace(0.0, 0.5, n)
    x[:, 1] = 0.05 * np.sin(np.linspace(0.0, 3.0, n))  # not straight: bending and twist are present
    return x


def _factor(scheme, h=H, steps=STEPS):
    per_step = math.exp(-C * h) if scheme == "exponential" else 1.0 / (1.0 + C * h)
    return per_step**steps


@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("scheme", ["implicit", "exponential"])
def test_compact_rigid_translation_decays_by_the_scheme(scheme, constrained):
    md = CompactModel.from_polyline(_polyline(), E=1e6, G=4e5, rho=1000.0, radius=0.01)
    opts = SolverOptions(max_newton=20, tol=1e-12, pcg_rtol=1e-13, pcg_atol=0.0)
    if constrained:  # the active-set driver, with a floor far below (never active)
        solver = ConstrainedSolver(md, opts, obstacles=(Floor(offset=-10.0),), damping=C, damping_scheme=scheme)
    else:
        solver = CompactSolver(md, opts, damping=C, damping_scheme=scheme)
    state = CompactState.at_rest(md)
    state.v[:] = V0
    p0 = state.p.copy()
    for _ in range(STEPS):
        assert solver.step(state, H).success
    np.testing.assert_allclose(state.v, np.tile(V0 * _factor(scheme), (md.n, 1)), rtol=1e-8, atol=1e-12)
    travelled = sum(H * _factor(scheme, steps=k + (scheme == "implicit")) for k in range(STEPS))
    np.testing.assert_allclose(state.p - p0, np.tile(V0 * travelled, (md.n, 1)), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("scheme", ["implicit", "exponential"])
def test_der_implicit_rigid_translation_decays_by_the_scheme(scheme):
    model, state = build_rod(_polyline(), radius=0.01, E=1e6, G=4e5, rho=1000.0, gravity=(0.0, 0.0, 0.0), damping=C,
                             clamp_root=False)
    stepper = DERImplicitStepper(model, h=H, newton_iters=1, damping_scheme=scheme)
    x0 = unpack_dofs(state.q)[0].copy()
    state.v[:] = pack_dofs(np.tile(V0, (len(x0), 1)), np.zeros(len(x0) - 1))  # the angles keep zero rate
    assert stepper.advance(state, STEPS).success
    np.testing.assert_allclose(unpack_dofs(state.v)[0], np.tile(V0 * _factor(scheme), (len(x0), 1)), rtol=1e-8)
    travelled = sum(H * _factor(scheme, steps=k + (scheme == "implicit")) for k in range(STEPS))
    np.testing.assert_allclose(unpack_dofs(state.q)[0] - x0, np.tile(V0 * travelled, (len(x0), 1)), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("scheme", ["implicit", "exponential"])
def test_der_rigid_translation_decays_by_the_scheme(scheme):
    rod = Rod.from_material(_polyline(), Material(1e6, 4e5, 1000.0), CrossSection.circle(0.01))
    h = 1e-3
    stepper = DERStepper(rod, Loads(damping=C), DEROptions(dt=h, damping_scheme=scheme))
    state = stepper.initial_state()
    state.v[:] = V0
    stepper.advance(state, 200)
    np.testing.assert_allclose(state.v, np.tile(V0 * _factor(scheme, h=h, steps=200), (len(state.x), 1)), rtol=1e-9)


def test_bad_scheme_is_refused_with_the_allowed_values():
    md = CompactModel.from_polyline(_polyline(), E=1e6, G=4e5, rho=1000.0, radius=0.01)
    with pytest.raises(ModelError, match="damping_scheme must be one of implicit, exponential"):
        CompactSolver(md, damping_scheme="explicit")
    with pytest.raises(ModelError, match="damping_scheme"):
        DEROptions(dt=1e-3, damping_scheme="")
    with pytest.raises(SceneError, match="galpha"):
        rodlab.run_scene("cantilever", method="galpha", n=10, t_end=0.1, dt=0.05, damping_scheme="exponential")


def test_compact_cantilever_settles_in_two_large_steps_with_exponential_damping():
    """The split damping lets two 1 s steps of the critically damped cantilever reach the static
    elastica (the implicit force keeps the rod from settling: error 2 % of the length)."""
    base = dict(method="compact", n=30, t_end=2.0, dt=1.0, damping=11.06)
    split = rodlab.run_scene("cantilever", damping_scheme="exponential", **base).metrics
    inside = rodlab.run_scene("cantilever", damping_scheme="implicit", **base).metrics
    assert split["tip_error_over_length"] < 1e-3
    assert inside["tip_error_over_length"] > 1e-2
