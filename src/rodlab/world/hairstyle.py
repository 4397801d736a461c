"""Many strands on a head: add a synthetic hairstyle to a :class:`WorldBuilder`.

Strands come from :func:`rodlab.hair.generator.synthetic_hairstyle` (roots on a spherical-cap scalp
patch, leaving along the scalp normal, then outward and down, with waves or curls), each a rod
of human hair by default: radius 50 um, E = 3.9 GPa, G = 1.3 GPa, rho = 1300 kg/m^3 (the values
the sag-free paper's strands use). Each root edge is clamped to the head.

The head itself is not added as an obstacle: contact is the subject of the contact issue, and a
solver without contact refuses a world with obstacles.
"""
from __future__ import annotations

from ..hair.generator import STYLES, synthetic_hairstyle
from ..model import require

HAIR_RADIUS = 5e-5
HAIR_E = 3.9e9
HAIR_G = 1.3e9
HAIR_RHO = 1300.0


def add_hairstyle(builder, *, strands: int, vertices: int, length: float = 0.25, style: str = "wavy",
                  scalp_radius: float = 0.1, seed: int = 0, radius: float = HAIR_RADIUS, E: float = HAIR_E,
                  G: float = HAIR_G, rho: float = HAIR_RHO) -> list[int]:
    """Add ``strands`` strands of ``vertices`` vertices each (length ``length`` [m] +-10 %) rooted on a
    scalp sphere of ``scalp_radius`` [m] centred at the origin; returns the new rods' indices.
    ``style``: one of straight, wavy, curly; ``seed`` fixes lengths and phases."""
    require(isinstance(strands, int) and 1 <= strands <= 1_000_000, f"strands must be an integer in [1, 1000000] (got {strands!r})")
    require(isinstance(vertices, int) and 3 <= vertices <= 100_000, f"vertices must be an integer in [3, 100000] (got {vertices!r})")
    require(style in STYLES, f"style must be one of {', '.join(STYLES)} (got {style!r})")
    require(length > 0, f"length must be > 0 m (got {length})")
    require(scalp_radius > 0, f"scalp_radius must be > 0 m (got {scalp_radius})")
    rods = []
    for polyline in synthetic_hairstyle(strands, vertices, length=length, style=style, scalp_radius=scalp_radius, seed=seed):
        r = builder.add_rod(polyline, E=E, G=G, rho=rho, radius=radius)
        builder.clamp(r, "start")
        rods.append(r)
    return rods
