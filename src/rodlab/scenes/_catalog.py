"""Every scene module, imported once so each registers itself. One line per module file;
each method's scenes live in their own module so work on one method never touches another's."""
import importlib

SCENE_MODULES = (
    "rodlab.scenes.cantilever",
    "rodlab.scenes.der_scenes",
    "rodlab.scenes.compact_scenes",
    "rodlab.scenes.knot_scenes",
    "rodlab.scenes.zhao_contact_scenes",
    "rodlab.scenes.galpha_scenes",
    "rodlab.scenes.sagfree_scenes",
    "rodlab.scenes.coupling_scenes",
    "rodlab.scenes.world_scenes",
    "rodlab.scenes.tree",
    "rodlab.scenes.friction_scenes",
    "rodlab.scenes.der_contact_scenes",
)

for _name in SCENE_MODULES:
    try:
        importlib.import_module(_name)
    except ModuleNotFoundError as exc:  # a method whose scenes have not landed yet
        if exc.name != _name:
            raise
