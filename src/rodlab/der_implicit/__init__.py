"""Implicit Discrete Elastic Rods on interleaved vertex / edge-angle unknowns (the DER variant of
the sag-free paper): energies, Newton steps, the batched many-rod kernel, IPC contact.

Internals of ``rodlab.make_simulator(world, "der-implicit")`` (the public front door;
docs/world.md), kept importable for the simulator and kernel-level tests, with no promise of
stability (docs/architecture.md)."""
