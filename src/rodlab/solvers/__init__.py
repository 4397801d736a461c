"""Every method behind one protocol (:mod:`rodlab.solvers.base`): ``make_simulator(world, method,
**options)``. Methods load lazily, so importing rodlab compiles nothing."""
from __future__ import annotations

import importlib

from ..model import ModelError
from .base import SimulationError, Simulator, StaticReport, StepReport, UnsupportedFeature

METHODS = {
    "der": "rodlab.solvers.der:DERSimulator",
    "der-implicit": "rodlab.solvers.der_implicit:DERImplicitSimulator",
    "compact": "rodlab.solvers.compact:CompactSimulator",
    "galpha": "rodlab.solvers.galpha:GAlphaSimulator",
}


def simulator_class(method: str) -> type[Simulator]:
    if method not in METHODS:
        raise ModelError(f"method must be one of {', '.join(METHODS)} (got {method!r})")
    module, name = METHODS[method].split(":")
    return getattr(importlib.import_module(module), name)


def make_simulator(world, method: str, **options) -> Simulator:
    """Build ``method``'s simulator for ``world`` (options: ``dt`` and the method's own, see
    ``simulator_class(method).options``)."""
    return simulator_class(method)(world, **options)


__all__ = ["METHODS", "SimulationError", "Simulator", "StaticReport", "StepReport", "UnsupportedFeature",
           "make_simulator", "simulator_class"]
