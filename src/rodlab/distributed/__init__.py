"""Runs on Dask's distributed scheduler: ``rodlab sagfree`` grooms in strand batches and ``rodlab sweep``
parameter sweeps (docs/dask.md).

Dask is an optional extra: ``pip install "rodlab[distributed]"``. Everything here imports Dask lazily,
so this package imports without it; :func:`require_dask` raises :class:`DaskMissing` with the install
command when a caller needs it.

    from rodlab.distributed import connect, sweep
    with connect(workers=2) as client:                       # a LocalCluster, or connect("tcp://host:8786")
        result = sweep("cantilever", {"n": ["8", "12"]}, {"t_end": "0.05"}, "out/sweep", client=client)
    result.rows[0]["tip_z"], result.files
"""
_EXPORTS = {
    "INSTALL_HINT": "cluster", "DaskMissing": "cluster", "WarmUpPlugin": "cluster", "connect": "cluster",
    "dask_available": "cluster", "gather_as_completed": "cluster", "require_dask": "cluster",
    "SweepInputError": "paramsweep", "SweepResult": "paramsweep", "parse_grid": "paramsweep", "plan_sweep": "paramsweep", "run_one": "paramsweep",
    "sweep": "paramsweep", "write_table": "tables",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    # lazy, so that ``rodlab --help`` does not pay for importing Dask
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
