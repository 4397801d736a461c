"""``cantilever``: a straight rod along +x, clamped at the origin, sagging under gravity along -z.

One scene for every method: ``method`` picks the stepper. Each method module provides
``run_cantilever(params, progress) -> SceneResult`` reporting at least ``tip_x, tip_y, tip_z,
inextensibility, steps, us_per_step``; the reference is the planar elastica with its clamp at
x = 0 (``rodlab.analytic.elastica``).
"""
from __future__ import annotations

import importlib

from .registry import Param, register

CANTILEVER_METHODS = {
    "der": "rodlab.der.cantilever",
    "der-implicit": "rodlab.der_implicit.cantilever",
    "compact": "rodlab.compact.cantilever",
    "galpha": "rodlab.galpha.cantilever",
}

PARAMS = [
    Param("n", 50, "number of vertices", low=4, high=20000),
    Param("length", 1.0, "free length from the clamp to the tip [m]", low=0.0, low_open=True),
    Param("radius", 0.01, "cross-section radius [m]", low=0.0, low_open=True),
    Param("E", 1e8, "Young's modulus [Pa]", low=0.0, low_open=True),
    Param("G", 1e8 / 3, "shear modulus [Pa]", low=0.0, low_open=True),
    Param("rho", 1000.0, "density [kg/m^3]", low=0.0, low_open=True),
    Param("g", 9.81, "gravity along -z [m/s^2]", low=0.0),
    Param("dt", 0.0, "time step [s]; 0 picks the method's default", low=0.0),
    Param("t_end", 5.0, "simulated time [s]", low=0.0),
    Param("damping", 2.0, "viscous damping rate [1/s] (force -damping * m * v)", low=0.0),
    Param("damping_scheme", "implicit", "discretisation of the damping (docs/damping.md): implicit (in the step's "
          "solve) or exponential (velocities scaled by exp(-damping dt) after the step); galpha: implicit only",
          choices=("implicit", "exponential")),
    Param("newton_iters", 0, "Newton iterations per step, at most (der-implicit, compact); 0 = the method's default "
          "(der-implicit 1, the sag-free paper's; compact 5, Zhao et al.'s)", low=0, high=1000),
    Param("method", "der", "stepper", choices=tuple(CANTILEVER_METHODS)),
    Param("static", False, "solve for the static equilibrium instead of stepping in time"),
]


@register("cantilever", "clamped rod sagging under gravity; tip vs the planar elastica (all methods)", PARAMS)
def run(params, progress):
    module_name = CANTILEVER_METHODS[params["method"]]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        from .registry import SceneError

        raise SceneError(f"method={params['method']} is not available in this build ({exc.name} missing)") from None
    result = module.run_cantilever(params, progress)
    from ..analytic.elastica import cantilever_elastica_tip

    section_i = 3.141592653589793 * params["radius"] ** 4 / 4.0
    area = 3.141592653589793 * params["radius"] ** 2
    ref = cantilever_elastica_tip(params["length"], params["E"] * section_i, params["rho"] * area * params["g"])
    result.metrics.setdefault("tip_x_reference", float(ref[0]))
    result.metrics.setdefault("tip_z_reference", float(ref[1]))
    err = ((result.metrics["tip_x"] - ref[0]) ** 2 + (result.metrics["tip_z"] - ref[1]) ** 2) ** 0.5
    result.metrics.setdefault("tip_error_over_length", float(err / params["length"]))
    result.metrics.setdefault("method", params["method"])
    return result
