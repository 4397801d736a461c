"""Common part of rodlab's cosseratbench adapters (``cosseratbench.py``, ``cb_compact.py``,
``cb_galpha.py``): the suite's types, the solver base class, the damping rule and the
unsupported-feature check. Each method's adapter imports it, so none imports another."""
from __future__ import annotations

import math
from importlib.metadata import PackageNotFoundError, version


try:
    from cosseratbench import Capability, Diverged, Trajectory  # noqa: F401 (re-exported to the adapters)
    from cosseratbench.scenario import End, EndCondition  # noqa: F401 (re-exported to the adapters)
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("rodlab.bench_adapters.cosseratbench needs the optional extra: pip install 'rodlab[bench]'") from exc

try:
    _RODLAB_VERSION = version("rodlab")
except PackageNotFoundError:  # pragma: no cover
    _RODLAB_VERSION = "unknown"


class _RodlabSolver:
    """Common part: name, capabilities, options, settings."""

    method = ""
    name = ""
    capabilities: frozenset = frozenset()
    backend_version = _RODLAB_VERSION

    def __init__(self, time_step_scale: float = 1.0) -> None:
        if not (time_step_scale > 0 and math.isfinite(time_step_scale)):
            raise ValueError(f"time_step_scale must be > 0 (got {time_step_scale})")
        self.time_step_scale = float(time_step_scale)

    def settings(self, scenario, *, n_elements: int, n_frames: int) -> dict:
        return {"method": self.method, "time_step_scale": self.time_step_scale,
                "damping_rate": _damping(scenario), "inextensible": True}

    def run(self, scenario, *, n_elements: int, n_frames: int):  # pragma: no cover - every adapter overrides it
        raise NotImplementedError(f"rodlab method {self.method!r} has no cosseratbench driver")


def _damping(scenario) -> float:
    """Mass-proportional damping rate [1/s]: critical for the slowest mode of quasi-static scenarios."""
    return 2.0 * scenario.slowest_frequency() if scenario.quasi_static else 0.0


def _check_supported(scenario, sliding_ok: bool = False) -> None:
    if scenario.obstacles:
        raise NotImplementedError("this method's adapter has no obstacle contact (der, der-implicit and compact have it: "
                                  "cb_contact.py)")
    for i, rod in enumerate(scenario.rods):
        for end in End:
            motion = rod.motion(end)
            if motion is not None and motion.slides_along is not None and not sliding_ok:
                raise NotImplementedError(f"rod {i}: a clamped end that slides along an axis (slides_along) is not modelled")
        if rod.friction:
            pass  # friction only acts through contact, which is not claimed
