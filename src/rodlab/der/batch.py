"""Compiled multi-rod driver of Discrete Elastic Rods (Bergou et al. 2008, Algorithm 1).

One call of :func:`advance_rods` advances every rod of a world by ``nsteps`` steps, in parallel
over independent rods (``numba.prange``), writing the flat state arrays (``vertex_x``,
``vertex_v``, ``edge_theta``, ``edge_ref_d1``, ``joint_ref_twist``) in place. Per rod it runs the
single-rod step :func:`rodlab.der.kernels.run_steps` on slices of the flat arrays, and around it
what ``DERStepper.advance`` did in Python: the geometry refresh, the snapshot, the energy check
and the frame rebuild of a twist-free rod (:func:`rebuild_twist_free_frames`), all compiled.

Argument groups. The constant per-rod data (:class:`BatchModel`: rest lengths, stiffness,
prescribed vertices, clamps, sliders, flags, ...) and the scratch buffers (:class:`BatchWork`)
are named tuples of flat, entity-first arrays with per-rod offsets. Passing a named tuple of ~30
arrays into numba costs ~6 us per call and 30 positional arrays ~2.5 us (measured: unboxing is
~80 ns per array), so both groups are *packed* at setup into three flat buffers (float64, int64,
bool) plus a layout table (field -> offset, length, width); :func:`unpack` rebuilds the named
tuples of views inside compiled code, once per rod (the parallel loop cannot hand named tuples to
its threads; ~2 us per unpack, mostly the 2-D reshapes at ~26 ns each). A call passes 4 buffers,
the 5 state arrays and 3 per-call input arrays: ~1.2 us of dispatch. Each rod steps on private
copies of its state and scratch (views of one shared buffer make all threads update the same
reference count: no parallel speed-up at all was measured that way).

Compile time. numba compiles a called function once per distinct argument *type*; a constant
argument (``1``, ``False``, a module constant) is typed as a literal (``Literal[int](1)``), and
a ``prange`` index is ``int64`` when the parallel function is typed but ``uint64`` in its loop
body: each gave the whole call tree below it one more full compilation. Constants passed to
compiled functions are therefore wrapped (``np.int64(1)``, ``np.bool_(False)``), and so is every
``prange`` index (measured, empty cache, 2 cores: first step of two clamped rods 95 -> 65 s, of
two rods welded to three bodies 238 -> 151 s; results bitwise the same). Most of what is left is
LLVM re-optimising and re-compiling the whole call tree at each level that links it
(docs/benchmarks-cold-start.md), so: functions called only from compiled code get no CPython or C
wrapper (``JIT_INNER``: a wrapper unboxes the ~50 arrays of the named tuples), arrays are copied
by loops (:func:`_copy1`, :func:`_copy2`: a slice assignment compiles numba's broadcasting error
path once per pair of array types, ~1.5 s each), ``_chunk`` has one call site, and the parallel
driver calls ``_advance_rod`` without the ``advance_rod`` level (one clamped rod, empty cache:
58 -> 49 s compile CPU; results bitwise the same).

Measured (2 shared cores, one clamped straight rod, ``advance(state, 1)`` minus the per-step time
inside ``advance(state, 1000)``): 18-20 us at 10 vertices, 30-37 us at 50, 73-95 us at 200 (the
old ``DERStepper.advance(state, 1)``: 116, 146, 247 us). Above ~50 vertices the fixed cost is the
per-call O(n) frame work of a twist-free rod (refresh with reference twist, the twist-free frame
rebuild, the energy check's two energies), not Python. With :func:`advance_rods_serial` for small
calls (one unpack, no private copies) and the Python fast path of ``DERSimulator.advance``:
18, 32-34, 87 us at 10, 50, 200 vertices (median-based, same loaded machine: 23, 38, 96 before;
docs/benchmarks-world.md (a)). Then (docs/der.md, "Per-call cost"): the serial driver works on
borrowed views (:func:`borrow`: no atomic reference counting, which was ~60% of a 10-vertex
call), the 2-D fields are built in place (:func:`make_unpacker`), and the call cache carries a
call's end geometry and energy to the next call where the state is bitwise that end
(:func:`_advance_rod`). Second pass (docs/der.md, "Second pass"): no named group crosses a
per-call compiled call, the twist-free frame rebuild runs on the step's end tangents in one fused
pass (:func:`rebuild_frames_on_tangents`), the energy check of a twist-free rod is in closed form
and every twist-free rod keeps the cache: 8.3-8.5 / 12.1-12.5 / 28.1-28.2 -> 5.5-5.7 / 7.7-8.1 /
17.1-17.4 us of CPU per call beyond its step at 10 / 50 / 200 vertices (A/B, loaded machine).
Third pass (docs/der.md, "Deferred frames"): the twist-free frames are left to their first read
(:func:`advance_undriven_serial`'s ``frames``), ``unpack`` is inlined, the cache key is copied
and compared as flat vectorised loops: 5.6 / 7.9 / 16.5 -> 4.4 / 4.6 / 5.4 us (A/B, load 1.7).

Per-call inputs (only driven rods use them; else empty arrays): ``call_presc`` (nsteps, P, 3)
prescribed positions and ``call_m1`` (nsteps, C, 3) clamp directors of rods with a moving clamp,
``call_timed`` (nsteps, T, 3) time-dependent point forces, in the flat prescribed / clamp /
timed-force order of :class:`BatchModel`. Wind is sampled by the caller into
``BatchWork.vertex_wind_force`` before the call (held over the call).

Failure: a rod whose step fails (non-finite state, failed projection, degenerate geometry, or
an energy gain above half its energy scale in an undriven call) gets a nonzero
``rod_status``; every rod is then restored to the call's start and the call returns
``STATUS_FAILED`` in its result code.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from ..geometry._vec import JIT, JIT_INNER
from ..geometry.curves import complete_frames, compute_edges, compute_tangents
from . import kernels as K
from .packing import (Packed, _copy1, _copy2, _same_bits, _same_bits3, are_packed_buffers, borrow,  # noqa: F401
                      borrow_flat, make_unpacker, pack_arrays, split_arena)
from .energy_check import _rod_energy, mechanical_energy  # noqa: F401 (public here too)
from .frames import rebuild_frames_on_tangents, rebuild_twist_free_frames  # noqa: F401 (public here too)

# functions called only from compiled code, never from Python: no CPython wrapper (it would unbox
# and box the ~50 arrays of the named tuples; compiled for nothing) and no C-callable wrapper

# per-rod flag columns of BatchModel.rod_flag
FLAG_CLOSED, FLAG_UNIFORM, FLAG_TWIST_FREE, FLAG_PASSIVE, FLAG_MOVING, FLAG_TIMED = range(6)
N_FLAGS = 6
# per-rod status codes (BatchWork.rod_status)
ROD_OK, ROD_NONFINITE, ROD_PROJECTION, ROD_DEGENERATE, ROD_ENERGY = range(5)
# rod_cache[r, 0]: no cache; the serial scratch and snapshot hold the end of the last call; the
# rod's call succeeded, its end is committed once every rod of the call has succeeded
CACHE_NONE, CACHE_VALID, CACHE_PENDING = 0.0, 1.0, 2.0
# advance_rods_serial's ``frames`` modes (the deferred frames of twist-free rods): the state's frames
# are its own; they are the ones this driver left unwritten at the end of its last call on this
# state; write the frames left unwritten and return (no steps)
FRAMES_FRESH, FRAMES_PENDING, FRAMES_FILL = 0, 1, 2
# bits of advance_rods' result code
STATUS_FAILED = 1
STATUS_PROJECTION_WARN = 2


class BatchModel(NamedTuple):
    """Constant data of every rod, flat over rods in world order (rod ``r``'s rows of a field
    are given by the matching ``rod_*_start`` offsets). Local indices (``presc_vertex``,
    ``clamp_edge``, ``slide_*``) count from the rod's first vertex / edge."""

    rod_vertex_start: np.ndarray    # (R + 1,) int64
    rod_edge_start: np.ndarray      # (R + 1,) int64
    rod_joint_start: np.ndarray     # (R + 1,) int64
    rod_presc_start: np.ndarray     # (R + 1,) int64, into presc_vertex
    rod_clamp_start: np.ndarray     # (R + 1,) int64, into clamp_edge / clamp_m1
    rod_slide_start: np.ndarray     # (R + 1,) int64, into slide_*
    rod_timed_start: np.ndarray     # (R + 1,) int64, into timed_vertex
    rod_flag: np.ndarray            # (R, N_FLAGS) int64 (FLAG_* columns)
    rod_twist_tol: np.ndarray       # (R,) absolute tolerance on max |dE/dtheta| [J]
    rod_energy_load: np.ndarray     # (R,) load part of the energy scale [J]
    vertex_inv_mass: np.ndarray     # (N,) [1/kg], 0 where prescribed
    vertex_mass: np.ndarray         # (N,) [kg]
    vertex_damp: np.ndarray         # (N,) velocity factor per step (damping + wind drag)
    vertex_force: np.ndarray        # (N, 3) constant point forces [N]
    edge_rest_length: np.ndarray    # (E,) [m]
    edge_bend_stiffness: np.ndarray  # (E, 2) [N m^2]
    edge_stretch_stiffness: np.ndarray  # (E,) [N], 0 when inextensible
    edge_free_theta: np.ndarray     # (E,) bool: material angle not prescribed
    joint_voronoi_length: np.ndarray  # (J,) lbar = |ebar_e| + |ebar_f| [m]
    joint_rest_curvature: np.ndarray  # (J, 4) [1]
    joint_rest_twist: np.ndarray    # (J,) [rad]
    joint_twist_stiffness: np.ndarray  # (J,) [N m^2]
    presc_vertex: np.ndarray        # (P,) int64 local vertex of each prescribed position
    clamp_edge: np.ndarray          # (C,) int64 local edge whose material angle is prescribed
    clamp_m1: np.ndarray            # (C, 3) the static clamps' material directors
    slide_vertex: np.ndarray        # (S, 2) int64 local
    slide_axis: np.ndarray          # (S, 3)
    slide_w: np.ndarray             # (S,) [1/kg]
    slide_edge: np.ndarray          # (S,) int64 local
    slide_side: np.ndarray          # (S,)
    timed_vertex: np.ndarray        # (T,) int64 local vertex of each time-dependent force
    world_gravity: np.ndarray       # (3,) [m/s^2]
    option_float: np.ndarray        # (2,) projection_tol, projection_fail
    option_int: np.ndarray          # (5,) projection_max_iter, twist_max_iter, inextensible, symplectic (RATTLE), wind
    # the energy check's per-coordinate fields (energy_check.rod_mechanical_energy: flat vectorised sums)
    vertex_mass3: np.ndarray        # (N, 3) [kg] vertex_mass in every column
    vertex_weight: np.ndarray       # (N, 3) [N] m_i g + constant point force
    joint_bend_coef: np.ndarray     # (J, 3) [N m] (b_e + b_f) / (2 lbar_k) in every column (twist-free bending)


class BatchWork(NamedTuple):
    """Scratch of every rod, flat (per-rod blocks at the model's offsets, scaled). Holds nothing
    between calls except the serial driver's call cache (``rod_cache``, ``serial_*`` and the
    snapshot buffers, :func:`_advance_rod`), which is used only where the state is bitwise the
    one it was computed for."""

    vertex_v3: np.ndarray        # (6 N,) run_steps' work_v3 (2, nv, 3) per rod
    vertex_ext_force: np.ndarray  # (N, 3) [N]
    vertex_wind_force: np.ndarray  # (N, 3) [N], written by the caller per call
    vertex_snap_x: np.ndarray    # (N, 3)
    vertex_snap_v: np.ndarray    # (N, 3)
    edge_e3: np.ndarray          # (18 E,) work_e3 (6, ne, 3) per rod
    edge_s: np.ndarray           # (7 E,) work_s (7, ne) per rod
    edge_t_start: np.ndarray     # (E, 3) tangents at a twist-free chunk's start
    edge_snap_theta: np.ndarray  # (E,)
    edge_snap_ref_d1: np.ndarray  # (E, 3)
    joint_kb: np.ndarray         # (J, 3)
    joint_omega: np.ndarray      # (J, 4)
    joint_snap_ref_twist: np.ndarray  # (J,)
    presc_x: np.ndarray          # (P, 3) static prescribed positions of the call
    rod_diag: np.ndarray         # (R, 6) run_steps' diag per rod
    rod_energy: np.ndarray       # (R, 3) energy gain, energy scale, start energy [J]
    rod_status: np.ndarray       # (R,) int64 ROD_* code
    # the serial driver's own scratch, which carries the end geometry of its last call to the next
    # (the call cache, :func:`_advance_rod`); nothing else writes it
    rod_cache: np.ndarray        # (R, 4) CACHE_* flag, end energy total, kinetic, elastic [J]
    serial_e3: np.ndarray        # (18 E,) work_e3 (6, ne, 3) per rod
    serial_s: np.ndarray         # (7 E,) work_s (7, ne) per rod
    serial_kb: np.ndarray        # (J, 3)
    serial_omega: np.ndarray     # (J, 4)
    rod_frames_pending: np.ndarray  # (R,) int64: 1 where a twist-free rod's frames are left unwritten


# kinds of the packed fields: (buffer, ndim, width); buffer 0 float64, 1 int64, 2 bool
_F1, _F2, _I1, _I2, _B1 = (0, 1), (0, 2), (1, 1), (1, 2), (2, 1)
_MODEL_KINDS = (_I1, _I1, _I1, _I1, _I1, _I1, _I1, _I2, _F1, _F1, _F1, _F1, _F1, _F2, _F1, _F2, _F1, _B1, _F1, _F2,
                _F1, _F1, _I1, _I1, _F2, _I2, _F2, _F1, _I1, _F1, _I1, _F1, _F1, _I1, _F2, _F2, _F2)
_WORK_KINDS = (_F1, _F2, _F2, _F2, _F2, _F1, _F1, _F2, _F1, _F2, _F2, _F2, _F1, _F2, _F2, _F2, _I1, _F2, _F1, _F1, _F2,
               _F2, _I1)
assert len(_MODEL_KINDS) == len(BatchModel._fields) and len(_WORK_KINDS) == len(BatchWork._fields)


def pack(model: BatchModel, work: BatchWork) -> tuple[Packed, BatchModel, BatchWork]:
    """Pack both groups; returns the buffers and the groups as views into them."""
    packed, views = pack_arrays(list(model) + list(work), _MODEL_KINDS + _WORK_KINDS)
    nm = len(_MODEL_KINDS)
    return packed, BatchModel(*views[:nm]), BatchWork(*views[nm:])


_unpack_model = make_unpacker(BatchModel, _MODEL_KINDS, 0)
_unpack_work = make_unpacker(BatchWork, _WORK_KINDS, len(_MODEL_KINDS))


@njit(inline="always", **JIT_INNER)
def unpack(f, i, b, L):
    """The named groups as views of the packed buffers (field order of the classes), borrowed
    (:func:`borrow`: no reference counting; :func:`make_unpacker`). Compiled code only
    (``JIT_INNER``: no Python wrapper); the views must not outlive the call that passed the
    buffers. Inlined: a caller builds only the views it reads (a called ``unpack`` returned all
    56 array structs, ~4 KB, stored to the caller's stack on every call)."""
    return _unpack_model(f, i, b, L), _unpack_work(f, i, b, L)


@intrinsic
def groups(typingctx, model, work):
    """The named groups ``(m, w)`` in compiled code: ``(model, work)``, or, where ``work`` is None,
    :func:`unpack` of the packed buffers ``model = (f, i, b, L)``, built in the caller (inlined:
    only the views it reads). (numba prunes ``if work is None`` only for None arguments; an inlined
    ``overload`` returning the groups lost the callee's writes through them, numba 0.68.1.)"""
    if isinstance(work, types.NoneType):
        if not isinstance(model, types.BaseTuple) or not are_packed_buffers(tuple(model)):
            return None
        ret = types.Tuple((_unpack_model.group_type, _unpack_work.group_type))

        def codegen(context, builder, signature, args):
            bufs = cgutils.unpack_tuple(builder, args[0], 4)
            types4 = tuple(signature.args[0])
            values = [_unpack_model.build(context, builder, types4, bufs),
                      _unpack_work.build(context, builder, types4, bufs)]
            return context.make_tuple(builder, signature.return_type, values)

        return ret(model, work), codegen
    if model != _unpack_model.group_type or work != _unpack_work.group_type:
        return None
    ret = types.Tuple((model, work))

    def codegen(context, builder, signature, args):
        value = context.make_tuple(builder, signature.return_type, args)
        return impl_ret_borrowed(context, builder, signature.return_type, value)

    return ret(model, work), codegen


# --------------------------------------------------------------------------------------------
# per-rod pieces
# --------------------------------------------------------------------------------------------
@njit(inline="always", **JIT_INNER)
def _fill_step_inputs(m, w, vs, ve, ps, pe, x, ext_force, presc):
    """A rod's per-call step inputs: its external forces (constant point forces plus wind) into
    ``ext_force`` and its prescribed vertices' current positions into ``presc[0]`` (inlined: the
    model and work groups do not cross a compiled call)."""
    force, wind = m.vertex_force[vs:ve], w.vertex_wind_force[vs:ve]  # (field reads out of the loops)
    for i in range(ve - vs):
        for d in range(3):
            ext_force[i, d] = force[i, d] + wind[i, d]
    _fill_prescribed(m, ps, pe, x, presc)


@njit(inline="always", **JIT_INNER)
def _fill_prescribed(m, ps, pe, x, presc):
    """The prescribed vertices' current positions into ``presc[0]``."""
    presc_vertex = m.presc_vertex[ps:pe]
    for c in range(pe - ps):
        for d in range(3):
            presc[0, c, d] = x[presc_vertex[c], d]


@njit(inline="always", **JIT_INNER)
def _steps(m, r, n, h, presc, m1, x, v, theta, ref_d1, ref_twist, ext_force, v3, e3, s, kb, omega, diag, symplectic):
    """``n`` steps of rod ``r`` (``run_steps``); returns the number done."""
    vs, ve = m.rod_vertex_start[r], m.rod_vertex_start[r + 1]
    es, ee = m.rod_edge_start[r], m.rod_edge_start[r + 1]
    js, je = m.rod_joint_start[r], m.rod_joint_start[r + 1]
    ps, pe = m.rod_presc_start[r], m.rod_presc_start[r + 1]
    cs, ce = m.rod_clamp_start[r], m.rod_clamp_start[r + 1]
    ss, se = m.rod_slide_start[r], m.rod_slide_start[r + 1]
    return K.run_steps(n, h, m.rod_flag[r, FLAG_CLOSED] != 0, m.option_int[2] != 0, m.rod_flag[r, FLAG_UNIFORM] != 0,
                       m.rod_flag[r, FLAG_TWIST_FREE] != 0, x, v, theta, ref_d1, ref_twist, m.vertex_inv_mass[vs:ve],
                       m.world_gravity, ext_force, 0.0, m.presc_vertex[ps:pe], presc, m.clamp_edge[cs:ce], m1,
                       m.slide_vertex[ss:se], m.slide_axis[ss:se], m.slide_w[ss:se], m.slide_edge[ss:se],
                       m.slide_side[ss:se], m.edge_free_theta[es:ee], m.edge_rest_length[es:ee],
                       m.joint_voronoi_length[js:je], m.joint_rest_curvature[js:je], m.edge_bend_stiffness[es:ee],
                       m.joint_rest_twist[js:je], m.joint_twist_stiffness[js:je], m.edge_stretch_stiffness[es:ee],
                       m.option_float[0], m.option_float[1], m.option_int[0], m.rod_twist_tol[r], m.option_int[1],
                       v3, e3, s, kb, omega, diag, m.vertex_damp[vs:ve], symplectic)


@njit(inline="always", **JIT_INNER)
def _keep_start_tangents(e3, t_start):
    """A twist-free rod's tangents at the start of the steps whose frames are rebuilt later."""
    for j in range(t_start.shape[0]):
        for d in range(3):
            t_start[j, d] = e3[1, j, d]


@njit(inline="always", **JIT_INNER)
def _rebuild_after_steps(m, r, done, m1, theta, ref_d1, ref_twist, t_start, e3, s):
    """The twist-free frame rebuild after ``done`` steps: the step left the tangents of its final
    positions in ``e3[1]`` (after a failed step, those of the positions it restored)."""
    cs, ce = m.rod_clamp_start[r], m.rod_clamp_start[r + 1]
    last = min(done, m1.shape[0]) - 1
    rebuild_frames_on_tangents(m.rod_flag[r, FLAG_CLOSED] != 0, theta, ref_d1, ref_twist, t_start, e3[1],
                               m.clamp_edge[cs:ce], m1[last], e3[3], e3[4], e3[5], e3[2], s[1])


@njit(inline="always", **JIT_INNER)
def _chunk(m, r, n, h, presc, m1, x, v, theta, ref_d1, ref_twist, ext_force, v3, e3, s, kb, omega, t_start, diag,
           symplectic):
    """``n`` steps of rod ``r`` (``run_steps``), then the twist-free frame rebuild."""
    twist_free = m.rod_flag[r, FLAG_TWIST_FREE] != 0
    if twist_free:
        _keep_start_tangents(e3, t_start)
    done = _steps(m, r, n, h, presc, m1, x, v, theta, ref_d1, ref_twist, ext_force, v3, e3, s, kb, omega, diag,
                  symplectic)
    if twist_free and done > 0:
        _rebuild_after_steps(m, r, done, m1, theta, ref_d1, ref_twist, t_start, e3, s)
    return done


@njit(**JIT_INNER)
def advance_rod(m, w, r, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed):
    """Advance rod ``r`` by ``nsteps``; sets ``w.rod_status[r]`` and ``w.rod_diag[r]``. The rod's
    state at the call's start is kept in the snapshot buffers (restored by the caller). Compiled
    code only (``JIT_INNER``: no Python wrapper)."""
    _advance_rod(m, w, r, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed, np.bool_(True),
                 m.option_int[3] != 0)


@njit(**JIT_INNER)
def _frames_are_snapshot(snap_theta, snap_ref_d1, snap_ref_twist, theta, ref_d1, ref_twist):
    """Whether a rod's frame rows of the state are bitwise its snapshot rows (with its positions
    and velocities, the call cache's key)."""
    return _same_bits(theta, snap_theta) and _same_bits3(ref_d1, snap_ref_d1) and _same_bits(ref_twist, snap_ref_twist)


@njit(**JIT_INNER)
def _write_pending_frames(closed, cache_valid, snap_x, theta, ref_d1, ref_twist, t_start, e3, s, clamp_edge,
                          clamp_m1):
    """Write the frames a twist-free rod's deferring calls left unwritten: the rebuild the eager
    path runs at the end of a call (:func:`rebuild_frames_on_tangents`), from the tangents
    ``t_start`` where the frames were last written to those of the last call's end state
    ``snap_x`` (the snapshot). With a valid call cache those tangents are in ``e3[1]``, bitwise
    what ``compute_edges`` and ``compute_tangents`` give (the cache's rule); else (a failed call
    overwrote the scratch) they are computed here. Scratch: ``e3[2:6]``, ``s[1]``."""
    if not cache_valid:
        compute_edges(snap_x, closed, e3[0])
        compute_tangents(e3[0], s[0], e3[1])
    rebuild_frames_on_tangents(closed, theta, ref_d1, ref_twist, t_start, e3[1], clamp_edge, clamp_m1, e3[3], e3[4],
                               e3[5], e3[2], s[1])


@njit(**JIT_INNER)
def _write_all_pending_frames(m, w, TH, D1, TW, into_snapshot):
    """:func:`_write_pending_frames` for every rod whose frames are pending (then no longer);
    ``into_snapshot``: copy them into the snapshot too (the call cache stays valid)."""
    for r in range(w.rod_frames_pending.shape[0]):
        if w.rod_frames_pending[r] == 0:
            continue
        vs, ve = m.rod_vertex_start[r], m.rod_vertex_start[r + 1]
        es, ee = m.rod_edge_start[r], m.rod_edge_start[r + 1]
        js, je = m.rod_joint_start[r], m.rod_joint_start[r + 1]
        cs, ce = m.rod_clamp_start[r], m.rod_clamp_start[r + 1]
        ne = ee - es
        theta, ref_d1, ref_twist = TH[es:ee], D1[es:ee], TW[js:je]
        _write_pending_frames(m.rod_flag[r, FLAG_CLOSED] != 0, w.rod_cache[r, 0] == CACHE_VALID,
                              w.vertex_snap_x[vs:ve], theta, ref_d1, ref_twist, w.edge_t_start[es:ee],
                              w.serial_e3[18 * es:18 * ee].reshape((6, ne, 3)), w.serial_s[7 * es:7 * ee].reshape((7, ne)),
                              m.clamp_edge[cs:ce], m.clamp_m1[cs:ce])
        w.rod_frames_pending[r] = 0
        if into_snapshot:
            _copy1(w.edge_snap_theta[es:ee], theta)
            _copy2(w.edge_snap_ref_d1[es:ee], ref_d1)
            _copy1(w.joint_snap_ref_twist[js:je], ref_twist)


@njit(**JIT_INNER)
def _end_geometry(x, closed, twist_free, ref_d1, ref_twist, e3, s, kb):
    """The geometry of the state at a call's end (``refresh_geometry``'s outputs), for the energy
    check and the call cache. After a twist-free rod's steps and frame rebuild, edges, lengths,
    tangents and curvature binormals are already those of the end state (the step computes them
    from its final positions with the same kernels; the projection leaves the edges of its final
    positions) and so is the reference twist (:func:`rebuild_frames_on_tangents`; a fixed point
    of its own recomputation), so only the second reference directors are computed: bitwise the
    full refresh."""
    if twist_free:
        complete_frames(e3[1], ref_d1, e3[3])
    else:
        K.refresh_geometry(x, closed, ref_d1, ref_twist, np.bool_(False), e3[0], s[0], e3[1], kb, e3[3])


@njit(**JIT_INNER)
def _advance_rod(model, work, r, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed, private, symplectic,
                 frames=None):
    """:func:`advance_rod` (``model, work``: the groups ``m, w``, or the packed buffers and None,
    :func:`groups`); ``private`` (not None): step copies of the rod's state in fresh
    scratch (for threads); ``None``: the state's own rows in place (one thread; a failed rod's
    rows are then left part-stepped, and the caller's :func:`_finish` restores every rod from the
    snapshot, as it does anyway) in the serial scratch ``w.serial_*``.

    Paths compiled only where a call can take them: the arguments that are ``None`` remove theirs
    before typing (numba's dead-branch pruning of ``arg is None`` tests), so the serial driver of a
    world without moving clamps or time-dependent forces (``call_*`` None) and with fast projection
    (``symplectic`` None; else a bool, RATTLE where true) compiles neither the private copies, nor
    the per-step inputs, nor RATTLE (one clamped rod, empty cache: see docs/benchmarks-cold-start.md).
    The per-step inputs are then the static prescribed positions and clamp directors.

    Call cache (serial only): the geometry (edges, lengths, tangents, second reference
    directors, curvature binormals, reference twist) and, for a rod under the energy check, the
    mechanical energy of a call's *end* state are what the next call computes first. When a
    rod's call succeeds with the energy check, they are left in the serial scratch and in
    ``w.rod_cache[r, 1:]``, and :func:`advance_rods_serial` copies the end state into the
    snapshot buffers and marks the rod ``CACHE_VALID``. A twist-free rod without the energy check
    (driven, in wind, ``energy_check=False``) is cached too, geometry only: its steps and frame
    rebuild leave exactly the geometry the twist-free step reads (edges, lengths, tangents,
    curvature binormals, reference twist). The next serial call uses them, and skips the refresh,
    the snapshot copy and the start energy, only where the rod's rows of the state are bitwise
    the snapshot (any edit of the state between calls, by the user, a contact response or another
    simulator, misses); anything else recomputes them. Same bits either way: the refresh is a
    pure function of those arrays.

    Per chunk of steps (one chunk, or one per step for a rod with time-dependent forces):
    :func:`_steps` (and the frame rebuild around it, :func:`_chunk` for the contact loop), a
    function of its own for the source (its call of ``run_steps``, 44
    arguments, written inside this ``try`` does not compile: numba cannot type Python 3.11's
    list-built argument tuple across the block split of a ``try``) but inlined by numba
    (``inline="always"``, which compiles: the call is already built in ``_chunk``'s IR), so its
    ~50 arrays do not cross a compiled call on every call.

    Named groups and compiled calls: a compiled function that is not inlined receives each array
    of a named group as a struct of 7-9 words and increments and decrements its reference count
    (a call into the runtime even for a borrowed array): ~0.3 us per call for ``m`` and ``w``
    (measured in a compiled loop: ``_finish(m, w, ...)`` 380 ns, the same code on its 14 arrays
    77 ns). The per-call helpers below therefore take the rod's slices, not the groups, and the
    serial driver passes this function the packed buffers ``model = (f, i, b, L)`` with ``work``
    None instead of the groups (:func:`groups` builds the views read here, in place): the groups
    as arguments were ~450 words pushed and read per call (paired overhead of a 200-vertex
    ``advance(state, 1)`` -0.8 us, docs/der-speed.md). The contact loop and the parallel driver
    pass the groups.

    ``frames``: ``None`` (omitted), or (serial driver only) a ``FRAMES_*`` mode of the deferred
    twist-free frames (:func:`advance_undriven_serial`): a twist-free rod then keeps its start tangents across calls and leaves its frames unwritten
    (``w.rod_frames_pending[r]``, set by the driver when the call commits), and a rod whose
    pending frames meet an edited state writes them first (what the eager call that left them
    would have written)."""
    m, w = groups(model, work)
    vs, ve = m.rod_vertex_start[r], m.rod_vertex_start[r + 1]
    es, ee = m.rod_edge_start[r], m.rod_edge_start[r + 1]
    js, je = m.rod_joint_start[r], m.rod_joint_start[r + 1]
    ps, pe = m.rod_presc_start[r], m.rod_presc_start[r + 1]
    cs, ce = m.rod_clamp_start[r], m.rod_clamp_start[r + 1]
    nv, ne, nj = ve - vs, ee - es, je - js
    closed = m.rod_flag[r, FLAG_CLOSED] != 0
    twist_free = m.rod_flag[r, FLAG_TWIST_FREE] != 0
    x, v, theta, ref_d1, ref_twist = X[vs:ve], V[vs:ve], TH[es:ee], D1[es:ee], TW[js:je]
    v3 = w.vertex_v3[6 * vs:6 * ve].reshape((2, nv, 3))
    e3 = w.serial_e3[18 * es:18 * ee].reshape((6, ne, 3))
    s = w.serial_s[7 * es:7 * ee].reshape((7, ne))
    kb, omega = w.serial_kb[js:je], w.serial_omega[js:je]
    t_start = w.edge_t_start[es:ee]
    ext_force = w.vertex_ext_force[vs:ve]
    presc = w.presc_x[ps:pe].reshape((1, pe - ps, 3))
    hit = False
    pending = False  # the rod's frames are those of an earlier call's start, rebuilt later
    deferring = False  # this call leaves the rod's frames unwritten too
    if private is not None:
        # private copies and scratch: views of shared buffers would make every thread update the
        # same reference count (measured: no parallel speed-up at all with shared views)
        x, v, theta, ref_d1, ref_twist = x.copy(), v.copy(), theta.copy(), ref_d1.copy(), ref_twist.copy()
        v3 = np.empty((2, nv, 3))
        e3 = np.empty((6, ne, 3))
        s = np.empty((7, ne))
        kb, omega = np.empty((nj, 3)), np.empty((nj, 4))
        t_start = np.empty((ne, 3))
        ext_force = np.empty((nv, 3))
        presc = np.empty((1, pe - ps, 3))
    else:
        if frames is not None:
            if frames == FRAMES_FRESH:
                w.rod_frames_pending[r] = 0
            pending = w.rod_frames_pending[r] != 0
            deferring = twist_free
        valid = w.rod_cache[r, 0] == CACHE_VALID
        # a rod's pending frames are the snapshot's (no call wrote either since): not compared
        hit = valid and _same_bits3(x, w.vertex_snap_x[vs:ve]) and _same_bits3(v, w.vertex_snap_v[vs:ve]) and (
            pending or _frames_are_snapshot(w.edge_snap_theta[es:ee], w.edge_snap_ref_d1[es:ee],
                                            w.joint_snap_ref_twist[js:je], theta, ref_d1, ref_twist))
        if pending and not hit:
            # the positions or velocities were edited since: first the frames the last call left
            # unwritten, from its end tangents (then the refresh below starts from them)
            _write_pending_frames(closed, valid, w.vertex_snap_x[vs:ve], theta, ref_d1, ref_twist, t_start, e3, s,
                                  m.clamp_edge[cs:ce], m.clamp_m1[cs:ce])
            w.rod_frames_pending[r] = 0
            pending = False
    w.rod_cache[r, 0] = CACHE_NONE  # the scratch is about to change
    diag = w.rod_diag[r]
    for k in range(diag.shape[0]):
        diag[k] = 0.0
    w.rod_status[r] = ROD_OK
    if not hit:
        # the geometry of the state as it is now
        K.refresh_geometry(x, closed, ref_d1, ref_twist, np.bool_(False), e3[0], s[0], e3[1], kb, e3[3])
        _copy2(w.vertex_snap_x[vs:ve], x)
        _copy2(w.vertex_snap_v[vs:ve], v)
        _copy1(w.edge_snap_theta[es:ee], theta)
        _copy2(w.edge_snap_ref_d1[es:ee], ref_d1)
        _copy1(w.joint_snap_ref_twist[js:je], ref_twist)
    passive = m.rod_flag[r, FLAG_PASSIVE] != 0 and nsteps > 0
    # the energy's model slices (read once: the named group is not passed on)
    rest_length, voronoi_length, rest_curvature = m.edge_rest_length[es:ee], m.joint_voronoi_length[js:je], \
        m.joint_rest_curvature[js:je]
    bend_stiffness, rest_twist, twist_stiffness = m.edge_bend_stiffness[es:ee], m.joint_rest_twist[js:je], \
        m.joint_twist_stiffness[js:je]
    stretch_stiffness, mass3, weight, bend_coef = m.edge_stretch_stiffness[es:ee], m.vertex_mass3[vs:ve], \
        m.vertex_weight[vs:ve], m.joint_bend_coef[js:je]
    extensible = m.option_int[2] == 0
    if passive:
        if hit:
            e0, k0, el0 = w.rod_cache[r, 1], w.rod_cache[r, 2], w.rod_cache[r, 3]
        else:
            e0, k0, el0 = _rod_energy(twist_free, extensible, x, v, theta, ref_d1, ref_twist, e3, s, kb, omega,
                                      rest_length, voronoi_length, rest_curvature, bend_stiffness, rest_twist,
                                      twist_stiffness, stretch_stiffness, mass3, weight, bend_coef)
        w.rod_energy[r, 1] = k0 + abs(el0) + m.rod_energy_load[r] + 1e-300
        w.rod_energy[r, 2] = e0
    if call_timed is None and m.option_int[4] == 0:
        # no wind, no time-dependent force: the external force is the constant one, bitwise (it
        # is never -0.0, and x + 0.0 is x for every other x)
        ext_force = m.vertex_force[vs:ve]
        _fill_prescribed(m, ps, pe, x, presc)
    else:
        _fill_step_inputs(m, w, vs, ve, ps, pe, x, ext_force, presc)
    m1 = m.clamp_m1[cs:ce].reshape((1, ce - cs, 3))
    if call_presc is not None:
        if m.rod_flag[r, FLAG_MOVING] != 0:
            presc = np.ascontiguousarray(call_presc[:, ps:pe])
            m1 = np.ascontiguousarray(call_m1[:, cs:ce])
    # a rod with time-dependent forces steps one step per chunk (its forces set before each), any
    # other rod all its steps in one chunk; one call site of run_steps (each call site of a
    # function that LLVM inlines is one more copy of its code to optimize and compile)
    timed = False
    if call_timed is not None:
        timed = m.rod_flag[r, FLAG_TIMED] != 0
    ts, te = m.rod_timed_start[r], m.rod_timed_start[r + 1]
    n_chunks, chunk_steps = (nsteps, np.int64(1)) if timed else (np.int64(1), nsteps)
    done = 0
    try:
        for st in range(n_chunks):
            if call_timed is not None:
                if timed:
                    for i in range(nv):
                        for d in range(3):
                            ext_force[i, d] = m.vertex_force[vs + i, d] + w.vertex_wind_force[vs + i, d]
                    for k in range(ts, te):
                        for d in range(3):
                            ext_force[m.timed_vertex[k], d] += call_timed[st, k, d]
            pr = min(st, presc.shape[0] - 1)
            mr = min(st, m1.shape[0] - 1)
            p_chunk = presc[pr:pr + 1] if timed else presc
            m_chunk = m1[mr:mr + 1] if timed else m1
            if twist_free and not pending:
                _keep_start_tangents(e3, t_start)
                pending = deferring  # a deferring call keeps this start for all its chunks
            n_done = _steps(m, r, chunk_steps, h, p_chunk, m_chunk, x, v, theta, ref_d1, ref_twist, ext_force, v3,
                            e3, s, kb, omega, diag, symplectic)
            done += n_done
            if twist_free and n_done > 0 and not deferring:
                _rebuild_after_steps(m, r, n_done, m_chunk, theta, ref_d1, ref_twist, t_start, e3, s)
            if done < st * chunk_steps + chunk_steps:
                break
    except Exception:  # the geometry degenerated inside the compiled step (singular twist Hessian)
        w.rod_status[r] = ROD_DEGENERATE
        return
    diag[4] = done
    if done < nsteps:
        w.rod_status[r] = ROD_PROJECTION if diag[5] != 0.0 else ROD_NONFINITE
        return
    if passive:
        # a passive rod is not timed: one chunk, so a twist-free rod's frames were just rebuilt
        # (or are left pending: the closed-form energy of a twist-free rod does not read them)
        if not twist_free:  # a twist-free rod's end geometry is what its energy needs (_end_geometry)
            _end_geometry(x, closed, twist_free, ref_d1, ref_twist, e3, s, kb)
        e1, k1, el1 = _rod_energy(twist_free, extensible, x, v, theta, ref_d1, ref_twist, e3, s, kb, omega,
                                  rest_length, voronoi_length, rest_curvature, bend_stiffness, rest_twist,
                                  twist_stiffness, stretch_stiffness, mass3, weight, bend_coef)
        w.rod_energy[r, 0] = e1 - w.rod_energy[r, 2]
        if w.rod_energy[r, 0] > 0.5 * w.rod_energy[r, 1]:
            w.rod_status[r] = ROD_ENERGY
        elif private is None:
            w.rod_cache[r, 1] = e1
            w.rod_cache[r, 2] = k1
            w.rod_cache[r, 3] = el1
            w.rod_cache[r, 0] = CACHE_PENDING
    elif twist_free and private is None and nsteps > 0 and m.rod_flag[r, FLAG_PASSIVE] == 0:
        # a twist-free rod without the energy check (driven, in wind, energy_check=False): its
        # steps and rebuild left the end geometry in the scratch (no energies cached: none read)
        w.rod_cache[r, 0] = CACHE_PENDING
    if private is not None:
        _copy2(X[vs:ve], x)
        _copy2(V[vs:ve], v)
        _copy1(TH[es:ee], theta)
        _copy2(D1[es:ee], ref_d1)
        _copy1(TW[js:je], ref_twist)


@njit(**JIT_INNER)
def _commit_cache(rod_vertex_start, rod_edge_start, rod_joint_start, rod_cache, snap_x, snap_v, snap_theta,
                  snap_ref_d1, snap_ref_twist, code, X, V, TH, D1, TW, rod_frames_pending=None):
    """After a serial call: every ``CACHE_PENDING`` rod becomes ``CACHE_VALID`` with its end
    state copied into the snapshot buffers (the cache's key), or ``CACHE_NONE`` if the call
    failed (every rod was then restored to the call's start). Arrays, not the named groups (a
    group passed to a compiled call that is not inlined costs ~0.3 us). A rod whose frames are left
    unwritten (``rod_frames_pending``) has not changed them since they were copied: only its
    positions and velocities are."""
    for r in range(rod_cache.shape[0]):
        if rod_cache[r, 0] != CACHE_PENDING:
            continue
        if code & STATUS_FAILED:
            rod_cache[r, 0] = CACHE_NONE
            continue
        vs, ve = rod_vertex_start[r], rod_vertex_start[r + 1]
        es, ee = rod_edge_start[r], rod_edge_start[r + 1]
        js, je = rod_joint_start[r], rod_joint_start[r + 1]
        _copy2(snap_x[vs:ve], X[vs:ve])
        _copy2(snap_v[vs:ve], V[vs:ve])
        if rod_frames_pending is None or rod_frames_pending[r] == 0:
            _copy1(snap_theta[es:ee], TH[es:ee])
            _copy2(snap_ref_d1[es:ee], D1[es:ee])
            _copy1(snap_ref_twist[js:je], TW[js:je])
        rod_cache[r, 0] = CACHE_VALID


@njit(**JIT_INNER)
def _restore_all(m, w, X, V, TH, D1, TW):
    _copy2(X, w.vertex_snap_x)
    _copy2(V, w.vertex_snap_v)
    _copy1(TH, w.edge_snap_theta)
    _copy2(D1, w.edge_snap_ref_d1)
    _copy1(TW, w.joint_snap_ref_twist)


@njit(**JIT_INNER)
def _status_code(option_float, option_int, rod_status, rod_diag):
    """The call's result code (``STATUS_*`` bits) from the rods' status and diagnostics."""
    code = 0
    warn = max(option_float[0], 1e-9)
    for r in range(rod_status.shape[0]):
        if rod_status[r] != ROD_OK:
            code |= STATUS_FAILED
        if option_int[2] != 0 and rod_diag[r, 1] > warn:
            code |= STATUS_PROJECTION_WARN
    return code


@njit(**JIT_INNER)
def _finish(m, w, X, V, TH, D1, TW):
    code = _status_code(m.option_float, m.option_int, w.rod_status, w.rod_diag)
    if code & STATUS_FAILED:
        _restore_all(m, w, X, V, TH, D1, TW)
    return code


@njit(**JIT_INNER)
def _advance_rod_packed(f, i, b, L, r, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed):
    m, w = unpack(f, i, b, L)
    # _advance_rod directly, not through advance_rod: each wrapper level links, optimizes and
    # compiles the whole call tree below it once more (~5 s of LLVM time here)
    _advance_rod(m, w, r, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed, np.bool_(True),
                 m.option_int[3] != 0)


@njit(**JIT_INNER)
def _finish_packed(f, i, b, L, X, V, TH, D1, TW):
    m, w = unpack(f, i, b, L)
    return _finish(m, w, X, V, TH, D1, TW)


def _advance_rods(f, i, b, L, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed):
    # the parallel loop sees only the packed buffers (numba cannot hand named tuples to its threads)
    for r in prange(L[7, 1] // N_FLAGS):
        _advance_rod_packed(f, i, b, L, np.int64(r), nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed)
    return _finish_packed(f, i, b, L, X, V, TH, D1, TW)


@njit(**JIT)
def advance_rods_serial(f, i, b, L, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed, symplectic):
    """:func:`advance_rods` on the calling thread, rod after rod, bitwise the same results: no
    thread-pool wake-up, the packed groups unpacked once per call instead of once per rod plus
    once for the finish (~2 us each), and each rod stepped in the state's own rows instead of
    private copies. For one-rod worlds and calls of little work.

    ``call_presc``, ``call_m1``, ``call_timed``: ``None`` all three for a world without moving
    clamps or time-dependent forces (their code is then not compiled, :func:`_advance_rod`);
    ``symplectic``: ``None`` for fast projection, else ``True`` (``projection="symplectic"``)."""
    return _serial_call(f, i, b, L, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed, symplectic, None)


@njit(**JIT)
def advance_undriven_serial(arena, nsteps, h, X, V, TH, D1, TW, symplectic, frames):
    """:func:`advance_rods_serial` of a world without moving clamps or time-dependent forces
    (``call_*`` None), with deferred frames; the packed buffers as their one ``arena``
    (:class:`Packed`, :func:`split_arena`): six arguments fewer to dispatch.

    ``frames``: ``None`` (every frame written at the end of the call), or a ``FRAMES_*`` mode
    (docs/der.md, "Deferred frames"): the twist-free rods' frame rebuild is left to whoever
    reads them. ``FRAMES_FRESH``: the state's frames are its own; ``FRAMES_PENDING``: the frames
    of the rods marked in ``w.rod_frames_pending`` are the ones this driver left unwritten at the
    end of its last call, which was on this state (the caller's bookkeeping); either way each
    twist-free rod ends the call with its frames pending, rebuilt later from the tangents at the
    start of the first call that left them to the tangents at the end of the last, bitwise one
    call of all those steps. ``FRAMES_FILL`` (``nsteps`` 0): write the pending frames, bitwise
    what the eager path writes at the end of such a call, and return. A failed call restores
    the state and writes the pending frames of its start."""
    f, i, b, L = split_arena(arena)
    return _serial_call(f, i, b, L, nsteps, h, X, V, TH, D1, TW, None, None, None, symplectic, frames)


@njit(inline="always", **JIT_INNER)
def _serial_call(f, i, b, L, nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed, symplectic, frames):
    """The serial drivers' body (:func:`advance_rods_serial`, :func:`advance_undriven_serial`)."""
    m, w = unpack(f, i, b, L)
    X, V, TH, D1, TW = borrow(X), borrow(V), borrow(TH), borrow(D1), borrow(TW)
    if frames is not None:
        if frames == FRAMES_FILL:
            _write_all_pending_frames(m, w, TH, D1, TW, np.bool_(True))
            return 0
    for r in range(w.rod_status.shape[0]):
        _advance_rod((f, i, b, L), None, np.int64(r), nsteps, h, X, V, TH, D1, TW, call_presc, call_m1, call_timed,
                     None, symplectic, frames)
    code = _status_code(m.option_float, m.option_int, w.rod_status, w.rod_diag)
    if code & STATUS_FAILED:
        _restore_all(m, w, X, V, TH, D1, TW)
    if frames is None:
        _commit_cache(m.rod_vertex_start, m.rod_edge_start, m.rod_joint_start, w.rod_cache, w.vertex_snap_x,
                      w.vertex_snap_v, w.edge_snap_theta, w.edge_snap_ref_d1, w.joint_snap_ref_twist, code, X, V, TH,
                      D1, TW)
        return code
    if code & STATUS_FAILED:
        _write_all_pending_frames(m, w, TH, D1, TW, np.bool_(False))
    else:
        for r in range(w.rod_frames_pending.shape[0]):
            if w.rod_cache[r, 0] == CACHE_PENDING and m.rod_flag[r, FLAG_TWIST_FREE] != 0:
                w.rod_frames_pending[r] = 1
    _commit_cache(m.rod_vertex_start, m.rod_edge_start, m.rod_joint_start, w.rod_cache, w.vertex_snap_x,
                  w.vertex_snap_v, w.edge_snap_theta, w.edge_snap_ref_d1, w.joint_snap_ref_twist, code, X, V, TH, D1,
                  TW, w.rod_frames_pending)
    return code


advance_rods = njit(parallel=True, **JIT)(_advance_rods)
advance_rods.__doc__ = """Advance every rod by ``nsteps`` steps of ``h`` [s], in parallel over rods (module
docstring); returns the result code (``STATUS_*`` bits). :func:`advance_rods_serial`: the same
on one thread."""


@njit(**JIT)
def rods_elastic_energy(f, i, b, L, X, TH, D1, TW, out):
    """Elastic energy of each rod [J] into ``out`` (R,), the state untouched (the reference
    twist is recomputed into scratch)."""
    m, w = unpack(f, i, b, L)
    for r in range(out.shape[0]):
        vs, ve = m.rod_vertex_start[r], m.rod_vertex_start[r + 1]
        es, ee = m.rod_edge_start[r], m.rod_edge_start[r + 1]
        js, je = m.rod_joint_start[r], m.rod_joint_start[r + 1]
        ne = ee - es
        e3 = w.edge_e3[18 * es:18 * ee].reshape((6, ne, 3))
        s = w.edge_s[7 * es:7 * ee].reshape((7, ne))
        kb, omega = w.joint_kb[js:je], w.joint_omega[js:je]
        tw = TW[js:je].copy()
        K.refresh_geometry(X[vs:ve], m.rod_flag[r, FLAG_CLOSED] != 0, D1[es:ee], tw, np.bool_(False), e3[0], s[0],
                           e3[1], kb, e3[3])
        out[r] = K.elastic_energy(kb, D1[es:ee], e3[3], TH[es:ee], tw, s[0], m.edge_rest_length[es:ee],
                                  m.joint_voronoi_length[js:je], m.joint_rest_curvature[js:je],
                                  m.edge_bend_stiffness[es:ee], m.joint_rest_twist[js:je],
                                  m.joint_twist_stiffness[js:je], m.edge_stretch_stiffness[es:ee], e3[4], e3[5], omega)


def wind_rates(vertex_mass: np.ndarray, vertex_voronoi_length: np.ndarray, drag: float) -> np.ndarray:
    """Wind drag as a damping rate per vertex ``drag l_i / m_i`` [1/s]: the ``-drag l v`` part of
    the lumped force ``drag l_i (u - v_i)``; ``drag / (rho A)`` wherever the linear density is
    uniform."""
    return drag * vertex_voronoi_length / vertex_mass


def velocity_factors(rate: np.ndarray, h: float, scheme: str) -> np.ndarray:
    """Per-step velocity factor of a damping rate [1/s]: ``1 / (1 + h c)`` (implicit) or
    ``exp(-c h)`` (exponential, written ``1 / (1 + h k)`` with ``k = expm1(c h) / h`` as the
    single-rod stepper does)."""
    rate = np.asarray(rate, dtype=float)
    k = np.expm1(rate * h) / h if scheme == "exponential" else rate
    return 1.0 / (1.0 + h * k)


def kernel_rates(rate: np.ndarray, h: float, scheme: str) -> np.ndarray:
    """The rate ``k`` with ``1 / (1 + h k)`` = :func:`velocity_factors`."""
    rate = np.asarray(rate, dtype=float)
    return np.expm1(rate * h) / h if scheme == "exponential" else rate


__all__ = ["BatchModel", "BatchWork", "Packed", "advance_rod", "advance_rods", "advance_rods_serial", "advance_undriven_serial", "kernel_rates",
           "mechanical_energy", "pack", "rebuild_twist_free_frames", "rods_elastic_energy", "unpack",
           "velocity_factors", "wind_rates", "STATUS_FAILED", "STATUS_PROJECTION_WARN"]
