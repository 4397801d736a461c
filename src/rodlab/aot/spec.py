"""The kernels compiled ahead of time (``rodlab.aot._kernels``), each with the exact signatures
its Python callers pass: one cold ``rodlab run cantilever --set method=der`` calls these from
Python (listed with a ``numba:compile`` event listener, ``bench/bench_cold_start.py``), and
nothing else of that run compiles when they are built.

A signature is written in numba's types. The runtime (:func:`rodlab.aot.seed`) inserts each entry
into its kernel's numba dispatcher under its signature: numba's own type dispatch runs it for a call
of exactly those argument types (dtype, dimensions, C order, writeable) and compiles anything else as
before. Another method follows by adding its Python-called kernels here (``python bench/aot_entries.py
run cantilever --set method=M`` prints what a cold run still compiles, with signatures and call sites)
and seeding their dispatchers (:func:`rodlab.aot.seed` where the simulator is made, or a
:func:`rodlab.aot.kernel` handle made at import).
"""
from __future__ import annotations

from numba import types as T

F1 = T.Array(T.float64, 1, "C")
F2 = T.Array(T.float64, 2, "C")
F2_READONLY = T.Array(T.float64, 2, "C", readonly=True)
I1 = T.Array(T.int64, 1, "C")
I2 = T.Array(T.int64, 2, "C")
B1 = T.Array(T.boolean, 1, "C")
S1 = T.Array(T.float32, 1, "C")
S3 = T.Array(T.float32, 3, "C")
U3 = T.Array(T.uint8, 3, "C")
BOOL, INT, FLOAT, NONE = T.boolean, T.int64, T.float64, T.none

# (module, function name) -> signatures (numba Signature objects: return type and arguments)
ENTRIES = {
    ("rodlab.geometry.curves", "compute_edges"): [NONE(F2, BOOL, F2), NONE(F2_READONLY, BOOL, F2)],
    ("rodlab.geometry.curves", "compute_tangents"): [NONE(F2, F1, F2)],
    ("rodlab.geometry.curves", "compute_curvature_binormals"): [NONE(F2, BOOL, F2)],
    ("rodlab.geometry.curves", "bishop_frames"): [NONE(F2, F1, BOOL, F2, F2)],
    ("rodlab.geometry.curves", "time_parallel_update"): [NONE(F2, F2, F2)],
    ("rodlab.geometry.curves", "complete_frames"): [NONE(F2, F2, F2)],
    ("rodlab.geometry.curves", "reference_twist"): [NONE(F2, F2, BOOL, F1, F1)],
    ("rodlab.geometry.curves", "material_frames"): [NONE(F2, F2, F1, F2, F2)],
    ("rodlab.geometry.curves", "material_curvatures"): [NONE(F2, F2, F2, BOOL, F2)],
    ("rodlab.der.kernels", "refresh_geometry"): [NONE(F2, BOOL, F2, F1, BOOL, F2, F1, F2, F2, F2)],
    ("rodlab.der.kernels", "clamp_material_angles"): [NONE(F2, F2, F2, F1, I1, F2)],
    ("rodlab.der.kernels", "update_twist"): [
        T.Tuple((INT, FLOAT))(F2, F2, F2, F2, F1, F1, F1, F1, F1, F2, F2, F1, F1, F1, B1, BOOL, BOOL, FLOAT, INT,
                              F2, F2, F2, F1, F1, F1, F1)],
    # the der simulator's serial driver of undriven worlds: fast projection (symplectic None),
    # deferred frames (an int FRAMES_* mode), the call of every plain der run
    ("rodlab.der.batch", "advance_undriven_serial"): [INT(F1, INT, FLOAT, F2, F2, F1, F2, F1, NONE, INT)],
    ("rodlab.render.raster", "_clear"): [NONE(S3, F2, S1)],
    ("rodlab.render.raster", "_rasterize"): [NONE(F1, F1, F1, F1, I2, F2, B1, S3, F2)],
    ("rodlab.render.raster", "_downsample"): [NONE(S3, INT, U3)],
    # method compact: a cold `rodlab run cantilever --set method=compact` (one rod: the serial driver
    # without moving clamps, BDF2 history or dense preconditioner storage; the frame fill; the model's
    # rest curvatures, the Bishop quaternions of the rest polyline, the alignment metric)
    ("rodlab.compact.batch", "advance_rods_serial"): [T.Tuple((INT, INT, INT, INT, FLOAT))(INT, BOOL, I1, F1, NONE, NONE,
                                                                                            NONE)],
    ("rodlab.compact.batch", "write_frames"): [NONE(I1, I1, I1, F2, F2, F2, F1, F1)],
    ("rodlab.compact.energies", "darboux"): [NONE(F2, F1, F2)],
    ("rodlab.geometry.rotations", "matrix_to_quat"): [F1(F2)],
    ("rodlab.compact.sqp", "_alignment"): [FLOAT(F2, F2)],
    # method galpha: a cold `rodlab run cantilever --set method=galpha` (rest geometry, initial fields,
    # the compiled stepping of every rod, the scene's energy probe)
    # (matrix_to_quat: in compact's block above)
    ("rodlab.geometry.rotations", "quat_to_matrix"): [F2(F1)],
    ("rodlab.galpha.state", "_cayley"): [NONE(FLOAT, FLOAT, FLOAT, F2)],
    ("rodlab.galpha.state", "energies"): [
        T.UniTuple(FLOAT, 3)(F2, F2, F2, F1, F1, FLOAT, T.Array(T.float64, 1, "C", readonly=True), FLOAT)],
    ("rodlab.galpha.newton", "initial_fields"): [NONE(F2, F2, F1, FLOAT, BOOL, T.Array(T.float64, 3, "C"), F1, F2)],
    ("rodlab.galpha.batch", "advance_rods"): [
        INT(INT, INT, FLOAT, FLOAT, F1, I1, F2, F2, F2, F1, F1, T.Array(T.float64, 3, "C"), F1, I1, INT)],
    # der-implicit: a cold `rodlab run cantilever --set method=der-implicit` (aot-di): the rest state's
    # frames and curvatures (rod_model, through rodlab.aot.kernel), and the serial driver of one-rod
    # worlds with 4d / 2d-average bending (slerp_rest None), backward Euler or BDF2, seeded into its
    # dispatcher (rodlab.aot.seed, by RodBatch): its callers call the dispatcher as before
    ("rodlab.der_implicit.energies", "update_frames"): [NONE(F1, F2, F2, F1, F2, F1, F2, F1)],
    ("rodlab.der_implicit.energies", "material_curvature_all"): [NONE(F1, F2, F1, F2, F1, F2, F1)],
    ("rodlab.der_implicit.batch", "advance_serial"): [INT(I1, F1, F2, F2, F1, F1, F2, F1, F2, F2, INT, NONE)],
    # target `rodlab demo` (its perversion scene: a der rod between a fixed and a moving clamp):
    # the serial driver of driven worlds, per-step inputs as arrays, fast projection (symplectic None)
    ("rodlab.der.batch", "advance_rods_serial"): [
        INT(F1, I1, B1, I2, INT, FLOAT, F2, F2, F1, F2, F1, *(T.Array(T.float64, 3, "C"),) * 3, NONE)],
    # target `rodlab run examples/weld-body.toml`: the driver of worlds with rigid bodies, every rod
    # welded (free_rod None), the coupled phases' loop over chunks serial (serial True: pycc compiles
    # no parallel loop; the simulator takes this entry for worlds of one chunk only)
    ("rodlab.der.bodies", "advance_world"): [
        INT(F1, I1, B1, I2, F1, I1, B1, I2, NONE, INT, FLOAT, F2, F2, F1, F2, F1, F2, F2, F2, F2,
            *(T.Array(T.float64, 3, "C"),) * 3, BOOL)],
    ("rodlab.geometry.rotations", "quat_matrix_into"): [NONE(T.Array(T.float64, 1, "C", readonly=True), F2)],
}


def symbol(module: str, name: str, k: int) -> str:
    """The exported name of signature ``k`` of ``module.name`` in the extension module."""
    return f"{module.replace('.', '_')}__{name}__{k}"
