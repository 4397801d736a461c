"""World builders shared by the compact friction and compiled-QP tests."""
from __future__ import annotations

import math

import numpy as np

from rodlab.scenes.friction_scenes import GRAVITY
from rodlab.world import WorldBuilder, shapes


def rails_world(angle_deg, mu, r=0.005, rail_y=(-0.03, 0.03)):
    """Two stiff rails (rods 0, 1: 3 vertices, 1 m, both end edges clamped) along the slope of a
    plane tilted by ``angle_deg`` about y, at y = ``rail_y`` [m], and a rod (2: 6 vertices, 0.1 m)
    lying across them, touching; friction ``mu`` per pair of rail and rod (``pair_friction``).
    Returns the world and the downhill direction."""
    a = math.radians(angle_deg)
    normal = np.array([-math.sin(a), 0.0, math.cos(a)])
    down = np.array([-math.cos(a), 0.0, -math.sin(a)])
    b = WorldBuilder(gravity=(0.0, 0.0, -GRAVITY))
    for k, y in enumerate(rail_y):
        start = np.array([0.0, y, 0.0]) - 0.1 * down
        b.add_rod(shapes.straight(3, 1.0, start=tuple(start), direction=tuple(down)), E=1e11, G=4e10, rho=1000.0,
                  radius=r)
        b.clamp(k, "start")
        b.clamp(k, "end")
    start = 2 * r * normal + np.array([0.0, -0.05, 0.0])
    b.add_rod(shapes.straight(6, 0.1, start=tuple(start), direction=(0.0, 1.0, 0.0)), E=1e7, G=4e6, rho=1000.0,
              radius=r)
    b.set_contact(rods=True, friction=0.0, pair_friction=[(0, 2, mu), (1, 2, mu)])
    return b.build(), down
