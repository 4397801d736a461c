"""The vendored three.js (npm ``three`` r187, MIT licence; ``static/three/README.md``) as one
classic ``<script>`` that defines ``THREE``.

three.js ships as two ES modules: ``three.core.js`` (math, geometry, materials, scene graph) and
``three.module.js`` (the WebGL renderer), which imports from the first and re-exports its names.
A page opened from ``file://`` cannot import modules from other files, so :func:`three_script`
nests the two unmodified sources in two function scopes:

.. code-block:: javascript

    var THREE = (function () {
      "use strict";
      const __core = (function () { <three.core.js without its export line>; return {<its exports>}; })();
      const {<names three.module.js imports>} = __core;
      <three.module.js without its import and export lines>
      return Object.assign({}, __core, {<names three.module.js exports>});
    })();

Only the three ``import`` / ``export`` statements are touched; every other byte (licence headers
included) is the package's. Anything unexpected in their shape raises :class:`ViewerError`.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from ..model import ModelError

THREE_VERSION = "0.187.0"
"""the vendored three.js version (npm ``three``)"""

_EXPORT = re.compile(r"^export \{([^}]*)\};[ \t]*$", re.M)
_IMPORT = re.compile(r"^import \{([^}]*)\} from '\./three\.core\.js';[ \t]*$", re.M)
_NAME = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


class ViewerError(ModelError):
    """Bad input to the viewer (missing run folder, bad option) or a broken installation."""


def _static(name: str) -> str:
    path = resources.files("rodlab.viewer").joinpath("static", *name.split("/"))
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ViewerError(f"the viewer's file static/{name} is missing from the installed rodlab package "
                          "(reinstall with pip install -e .)") from None


def _names(body: str, what: str) -> list[str]:
    names = [n.strip() for n in body.split(",") if n.strip()]
    bad = [n for n in names if not _NAME.match(n)]
    if bad or not names:
        raise ViewerError(f"vendored three.js: unexpected {what} list (entries {bad[:3]}); see static/three/README.md")
    return names


def _one(pattern: re.Pattern, text: str, what: str) -> re.Match:
    found = list(pattern.finditer(text))
    if len(found) != 1:
        raise ViewerError(f"vendored three.js: expected one {what}, found {len(found)}; see static/three/README.md")
    return found[0]


@lru_cache(maxsize=1)
def three_script() -> str:
    """JavaScript source (str) of a classic script that defines the global ``THREE``."""
    core = _static("three/three.core.js")
    module = _static("three/three.module.js")
    core_export = _one(_EXPORT, core, "export statement in three.core.js")
    core_names = _names(core_export.group(1), "three.core.js export")
    imp = _one(_IMPORT, module, "import from three.core.js in three.module.js")
    imported = _names(imp.group(1), "three.module.js import")
    exports = list(_EXPORT.finditer(module))
    reexport = re.compile(r"^export \{([^}]*)\} from '\./three\.core\.js';[ \t]*$", re.M)
    _one(reexport, module, "re-export from three.core.js in three.module.js")
    if len(exports) != 1:
        raise ViewerError(f"vendored three.js: expected one local export in three.module.js, found {len(exports)}")
    module_names = _names(exports[0].group(1), "three.module.js export")
    missing = sorted(set(imported) - set(core_names))
    if missing:
        raise ViewerError(f"vendored three.js: three.module.js imports names three.core.js does not export: {missing[:5]}")
    core_body = core[:core_export.start()] + core[core_export.end():]
    module_body = _EXPORT.sub("", reexport.sub("", _IMPORT.sub("", module)))
    js = ("var THREE = (function () {\n\"use strict\";\nconst __core = (function () {\n" + core_body
          + "\nreturn {" + ", ".join(core_names) + "};\n})();\nconst {" + ", ".join(imported) + "} = __core;\n"
          + module_body + "\nreturn Object.assign({}, __core, {" + ", ".join(module_names) + "});\n})();\n")
    if re.search(r"</script", js, re.I):
        raise ViewerError("vendored three.js contains '</script' and cannot be inlined in a page")
    return js
