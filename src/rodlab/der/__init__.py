"""Discrete Elastic Rods (Bergou et al. 2008): explicit quasistatic-twist stepper and statics."""
from .static import StaticResult, solve_static
from .stepper import DERStepper, DEROptions, SimulationError, StepInfo, suggested_time_step

__all__ = ["DERStepper", "DEROptions", "SimulationError", "StaticResult", "StepInfo", "solve_static", "suggested_time_step"]
