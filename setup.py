"""Builds the ahead-of-time compiled kernels (``rodlab.aot._kernels``, numba.pycc) at install time;
everything else about the package is in pyproject.toml. See rodlab/aot/build.py."""
import atexit
import os
import shutil
import sys
import tempfile

# numba reads NUMBA_CACHE_DIR when imported: the build neither loads stale cache files nor leaves any
_cache = tempfile.mkdtemp(prefix="rodlab-aot-build-cache-")
os.environ["NUMBA_CACHE_DIR"] = _cache
atexit.register(shutil.rmtree, _cache, True)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

from setuptools import setup  # noqa: E402

from rodlab.aot.build import BuildExt, extension  # noqa: E402

setup(ext_modules=[extension()], cmdclass={"build_ext": BuildExt})
