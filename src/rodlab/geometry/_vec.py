"""Shared numba options of the geometry and method kernels.

``error_model="numpy"`` lets LLVM vectorise loops that divide (the default "python" model's
zero-division checks block it); ``cache=True`` keeps compiled kernels across processes.
"""
JIT = dict(cache=True, error_model="numpy", fastmath=False)
