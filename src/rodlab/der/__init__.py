"""Discrete Elastic Rods (Bergou et al. 2008): explicit quasistatic-twist stepper and statics.

Internals of ``rodlab.make_simulator(world, "der")`` (the public front door; docs/world.md): the
per-rod stepper, its compiled kernels and the static solver, kept importable for the simulator,
the cosseratbench adapters and kernel-level tests, with no promise of stability
(docs/architecture.md)."""
from .static import StaticResult, solve_static
from .stepper import DERStepper, DEROptions, SimulationError, StepInfo, suggested_time_step

__all__ = ["DERStepper", "DEROptions", "SimulationError", "StaticResult", "StepInfo", "solve_static", "suggested_time_step"]
