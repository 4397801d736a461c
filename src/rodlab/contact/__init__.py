"""Contact detection shared by every method (issue "Contact and friction", item 1): compiled
kernels over the world's flat arrays, independent of any solver. Detection only; each method's
contact response is built on top of it.

* :mod:`.narrowphase` - closest points: segment-segment, and a point or a segment against plane,
  sphere, capsule, capped cylinder and triangle (scalar ``@njit`` functions on 3-tuples);
* :mod:`.broadphase` - overlapping segment boxes by a sorted uniform grid, a BVH over mesh
  triangles;
* :mod:`.geometry` - :class:`ContactGeometry`, the static arrays, built once by
  :func:`from_world` (or :func:`from_arrays`);
* :mod:`.detect` - :func:`detect` -> :class:`ContactSet` (pairs, weights, normals, gaps) and
  :func:`min_gap`;
* :mod:`.ccd` - :func:`impacts` -> :class:`ImpactSet`: times of impact over a step by conservative
  advancement.

Conventions (normal from b toward a, gap = distance minus both radii) in ``docs/contact.md``.
"""
from .ccd import NO_IMPACT, ImpactSet, impacts
from .detect import OBSTACLE, SEGMENT, ContactSet, detect, min_gap, segment_pairs
from .geometry import ContactGeometry, from_arrays, from_world

__all__ = ["NO_IMPACT", "OBSTACLE", "SEGMENT", "ContactGeometry", "ContactSet", "ImpactSet", "detect", "from_arrays",
           "from_world", "impacts", "min_gap", "segment_pairs"]
