"""Print the feature table of docs/world.md: which World features each method's simulator
supports, read from each simulator class's ``supports`` set (so the table cannot drift).

    python bench/feature_table.py

A method whose simulator module cannot be imported yet gets a column of "?".
"""
from __future__ import annotations

import importlib

from rodlab.solvers import METHODS

# every name World.features() can return (rodlab/world/world.py), in the order of the table
FEATURES = ("closed rods", "pinned vertices", "prescribed clamp motion", "swivel clamps", "sliding clamps",
            "anisotropic bending", "rest curvature overrides", "rods given by stiffness", "point forces", "wind",
            "rigid bodies", "obstacles")


def supports_by_method() -> dict[str, frozenset | None]:
    out = {}
    for method, target in METHODS.items():
        module, name = target.split(":")
        try:
            out[method] = frozenset(getattr(importlib.import_module(module), name).supports)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            out[method] = None
    return out


def feature_table() -> str:
    """The markdown table: one row per feature, one column per method (yes / no / ?)."""
    sup = supports_by_method()
    lines = ["| feature | " + " | ".join(f"`{m}`" for m in sup) + " |", "| --- |" + " :-: |" * len(sup)]
    unknown = set().union(*(s for s in sup.values() if s is not None)) - set(FEATURES)
    for feature in FEATURES + tuple(sorted(unknown)):
        cells = ["?" if s is None else ("yes" if feature in s else "no") for s in sup.values()]
        lines.append(f"| {feature} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(feature_table())
