"""Build of the extension module ``rodlab.aot._kernels`` (``numba.pycc``), for ``setup.py``.

``pip install .`` / ``pip install -e .`` run :class:`BuildExt`: numba compiles every entry of
:data:`rodlab.aot.spec.ENTRIES` to one object file for this machine's CPU (the name and features
numba's JIT uses here, :func:`rodlab.aot.host_target`), the C compiler builds numba's runtime
beside it, and ``_kernels_build.json`` records what the module must match at run time
(:func:`rodlab.aot.build_info`). The build runs with a private, temporary ``NUMBA_CACHE_DIR``
(``setup.py`` sets it before numba is imported): it neither reads nor leaves numba cache files.

A failed build (no C compiler, a kernel numba cannot compile ahead of time) prints why and
installs without the module (every kernel then runs through numba's JIT), unless
``RODLAB_REQUIRE_AOT=1`` (CI) makes it an error.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from setuptools.command.build_ext import build_ext

from . import BUILD_INFO, build_info, host_target, spec

MODULE = "_kernels"
REQUIRE_ENV = "RODLAB_REQUIRE_AOT"


def _trampoline(dispatcher, nargs: int):
    """``def entry(a0, ..., a{nargs-1}): return dispatcher(a0, ...)``: pycc compiles the entry
    itself with its default flags, so the kernel is called, not exported: numba compiles it with
    its own options and links it in (the JIT's code for it)."""
    names = ", ".join(f"a{k}" for k in range(nargs))
    namespace = {"__name__": __name__, "kernel": dispatcher}
    exec(f"def entry({names}):\n    return kernel({names})\n", namespace)
    return namespace["entry"]


def make_cc():
    """The ``numba.pycc.CC`` of every entry of :data:`rodlab.aot.spec.ENTRIES`."""
    import importlib

    from numba.pycc import CC

    cc = CC(MODULE, source_module=__name__)
    cc.target_cpu = host_target()[0]
    for (module, name), signatures in spec.ENTRIES.items():
        dispatcher = getattr(importlib.import_module(module), name)
        for k, sig in enumerate(signatures):
            cc.export(spec.symbol(module, name, k), sig)(_trampoline(dispatcher, len(sig.args)))
    return cc


def extension():
    """The setuptools ``Extension`` of the module (numba's runtime sources; the compiled kernels
    are added by :class:`BuildExt`)."""
    ext = make_cc().distutils_extension(optional=True)
    # numba's runtime C sources are absolute paths into numba's installation, which setuptools'
    # file list refuses (egg_info's SOURCES.txt, read by an editable install's build_py: "setup
    # script specifies an absolute path"); the compiler gets them only while BuildExt builds
    ext._runtime_sources, ext.sources = list(ext.sources), []
    return ext


class BuildExt(build_ext):
    """``build_ext`` that compiles the pycc module's kernels (numba's own hook patches the
    distutils class, which setuptools' ``build_ext`` does not inherit from at run time)."""

    def build_extension(self, ext):
        cc = getattr(ext, "_cc", None)
        if cc is None:
            return super().build_extension(ext)
        t0, cpu0 = time.perf_counter(), time.process_time()
        ext.sources = list(ext._runtime_sources)
        try:
            self._build_kernels(ext, cc)
        except Exception as exc:  # a build failure leaves the JIT path, unless CI requires the module
            if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
                raise
            print(f"rodlab: the ahead-of-time kernels were not built ({type(exc).__name__}: {exc}); "
                  "every kernel will compile on first use (numba's JIT)", file=sys.stderr)
            return
        finally:
            ext.sources = []  # (see extension)
        print(f"rodlab: ahead-of-time kernels built in {time.perf_counter() - t0:.1f} s "
              f"({time.process_time() - cpu0:.1f} s CPU in numba)", file=sys.stderr)

    def _build_kernels(self, ext, cc):
        from numba.core.codegen import AOTCPUCodegen

        # the JIT's CPU features, not only its CPU name: the same instructions (FMA, vector width)
        features = host_target()[1]
        AOTCPUCodegen._customize_tm_features = lambda codegen: features
        os.makedirs(self.build_temp, exist_ok=True)
        ext.extra_objects = cc._compile_object_files(self.build_temp)[0]
        # build_ext relinks only when a source or dependency is newer than the module: the C sources
        # (numba's runtime) never are, so without this a rebuild kept the old kernels under a new
        # build record
        ext.depends = list(ext.depends) + list(ext.extra_objects)
        super().build_extension(ext)
        target = Path(self.get_ext_fullpath(ext.name)).parent / BUILD_INFO
        target.write_text(json.dumps(build_info(), indent=1) + "\n")

    def copy_extensions_to_source(self):
        """``--inplace`` and editable installs: the build record goes beside the module too."""
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            if getattr(ext, "_cc", None) is None:
                continue
            package = ext.name.rpartition(".")[0]
            built = Path(self.build_lib, *package.split("."), BUILD_INFO)
            if built.exists():
                self.copy_file(str(built), os.path.join(build_py.get_package_dir(package), BUILD_INFO))
