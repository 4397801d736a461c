"""Scene files: a world and its run described in TOML, run by ``rodlab run FILE.toml``
(format and examples: docs/scene-files.md).

    spec = rodlab.scenefile.load("examples/cantilever-der.toml")   # checked, defaults filled
    world = spec.build_world()
    run = rodlab.scenefile.run_scene_file("examples/helix.toml", out="out/helix",
                                          overrides={"simulation.t_end": 0.5})
    text = rodlab.scenefile.dumps(spec)                              # loads(text) == spec
"""
from .schema import SceneFileError, SceneSpec, apply_overrides, dumps, load, loads, normalize


def run_scene_file(path, out=None, overrides=None, **kwargs):
    """Load, run and write a scene file (:func:`rodlab.scenefile.runner.run_scene_file`)."""
    from .runner import run_scene_file as _run

    return _run(path, out, overrides, **kwargs)


__all__ = ["SceneFileError", "SceneSpec", "apply_overrides", "dumps", "load", "loads", "normalize", "run_scene_file"]
