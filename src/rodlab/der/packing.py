"""Packing of named groups of flat arrays into a few buffers, and their borrowed views inside
compiled code (the DER drivers' argument groups, :mod:`rodlab.der.batch` and
:mod:`rodlab.der.bodies`): a call passes 4 buffers instead of ~50 arrays (unboxing costs ~80 ns
per array), and compiled code rebuilds the named tuples of views without reference counting.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from ..geometry._vec import JIT_INNER
from ..numba_views import borrow, borrow_flat  # noqa: F401  (re-exported: der.batch imports them from here)


class Packed(NamedTuple):
    """The two groups in three flat buffers; ``layout[k] = (offset, length, width)`` of field
    ``k`` (model fields first, then work fields) in its kind's buffer. All four are views of one
    float64 ``arena`` (:func:`split_arena`): one array to pass where numba's dispatch unboxes
    each array argument (~80 ns each)."""

    f: np.ndarray
    i: np.ndarray
    b: np.ndarray
    layout: np.ndarray
    arena: np.ndarray


ARENA_HEADER = 8  # int64 words: f offset, length; i offset, length; layout offset, rows; b offset, length


def pack_arrays(arrays, kinds) -> tuple[Packed, list]:
    """Pack ``arrays`` (kinds ``(buffer, ndim)``: buffer 0 float64, 1 int64, 2 bool) into three
    flat buffers plus a layout table, all views of one arena (:class:`Packed`); returns the
    buffers and the arrays as views into them."""
    dtypes = (np.float64, np.int64, np.bool_)
    sizes = [0, 0, 0]
    layout = np.zeros((len(arrays), 3), dtype=np.int64)
    for k, (a, (buf, ndim)) in enumerate(zip(arrays, kinds)):
        a = np.asarray(a)
        if a.ndim != ndim:
            raise ValueError(f"field {k} has {a.ndim} dimensions, expected {ndim}")
        layout[k] = (sizes[buf], a.size, a.shape[1] if ndim == 2 else 1)
        sizes[buf] += a.size
    nf, ni, nb = (max(s, 1) for s in sizes)
    # arena words: header, f, i, layout, b (bytes, rounded up to whole words)
    f0 = ARENA_HEADER
    i0 = f0 + nf
    l0 = i0 + ni
    b0 = l0 + layout.size
    arena = np.zeros(b0 + (nb + 7) // 8)
    arena[:ARENA_HEADER].view(np.int64)[:] = (f0, nf, i0, ni, l0, layout.shape[0], b0, nb)
    bufs = [arena[f0:i0], arena[i0:l0].view(np.int64), arena[b0:].view(np.bool_)[:nb]]
    table = arena[l0:b0].view(np.int64).reshape(layout.shape)
    table[...] = layout
    views = []
    for k, (a, (buf, ndim)) in enumerate(zip(arrays, kinds)):
        o, n, w = layout[k]
        view = bufs[buf][o:o + n]
        if ndim == 2:
            view = view.reshape(n // w if w else 0, w)
        view[...] = np.asarray(a, dtype=dtypes[buf]).reshape(view.shape)
        views.append(view)
    return Packed(bufs[0], bufs[1], bufs[2], table, arena), views


@intrinsic
def split_arena(typingctx, arena):
    """The packed buffers ``(f, i, b, layout)`` of a :class:`Packed` arena, as borrowed views
    (:func:`borrow`) built from its header (:func:`pack_arrays`). Compiled code only; the views
    must not outlive the call that passed the arena."""
    if not (isinstance(arena, types.Array) and arena.ndim == 1 and arena.layout == "C"
            and arena.dtype == types.float64):
        return None
    kinds = ((types.float64, 1), (types.int64, 1), (types.boolean, 1), (types.int64, 2))
    array_types = [types.Array(dt, ndim, "C") for dt, ndim in kinds]

    def codegen(context, builder, signature, args):
        data = make_array(signature.args[0])(context, builder, value=args[0]).data
        intp = context.get_value_type(types.intp)
        head = builder.bitcast(data, intp.as_pointer())
        words = [builder.load(builder.gep(head, [intp(k)])) for k in range(ARENA_HEADER)]
        values = []
        for (dt, ndim), aty, (start, length) in zip(kinds, array_types, ((0, 1), (2, 3), (6, 7), (4, 5))):
            itemsize = context.get_abi_sizeof(context.get_data_type(dt))
            ptr = builder.bitcast(builder.gep(data, [words[start]]), context.get_data_type(dt).as_pointer())
            shape = [words[length]] if ndim == 1 else [words[length], intp(3)]
            strides = [intp(itemsize)] if ndim == 1 else [intp(3 * itemsize), intp(itemsize)]
            out = make_array(aty)(context, builder)
            populate_array(out, data=ptr, shape=shape, strides=strides, itemsize=intp(itemsize), meminfo=None)
            values.append(out._getvalue())
        return context.make_tuple(builder, signature.return_type, values)

    return types.Tuple(array_types)(arena), codegen


def make_unpacker(cls, kinds, first: int):
    """An intrinsic ``unpack(f, i, b, L)`` returning the named tuple ``cls`` whose field ``k`` is
    the borrowed view (:func:`borrow`: no reference count) of packed field ``first + k`` of kind
    ``kinds[k]`` (:func:`pack_arrays`): 1-D ``buf[o:o + n]`` or 2-D C-contiguous ``(n // w, w)``
    (no rows when ``w == 0``), with ``(o, n, w) = L[first + k]``.

    The views are built in place: numba's ``reshape`` calls a C function
    (``numba_attempt_nocopy_reshape``, ~3.5% of a 10-vertex ``advance(state, 1)``) to check what
    here holds by construction. One intrinsic instead of one small compiled function per field:
    with those (``inline="always"``, 56 fields) numba spent ~3 s inlining, typing and lowering the
    driver's ``unpack`` on a cold start; the LLVM code is the same loads, address computations and
    struct stores. Compiled code only; the views must not outlive the call that passed the
    buffers. The intrinsic's ``group_type`` and ``build`` (:func:`group_builder`) let another
    intrinsic build the same tuple."""
    tuple_type, build = group_builder(cls, kinds, first)

    @intrinsic
    def unpack_fields(typingctx, f, i, b, layout):
        if not are_packed_buffers((f, i, b, layout)):
            return None

        def codegen(context, builder, signature, args):
            return build(context, builder, signature.args, args)

        return tuple_type(f, i, b, layout), codegen

    unpack_fields.group_type, unpack_fields.build = tuple_type, build
    return unpack_fields


_BUFFER_DTYPES = (types.float64, types.int64, types.boolean, types.int64)


def are_packed_buffers(buffer_types) -> bool:
    """Whether ``buffer_types`` are the numba types of :class:`Packed`'s ``(f, i, b, layout)``:
    C-contiguous float64, int64 and bool 1-D buffers and a 2-D int64 layout table."""
    return len(buffer_types) == 4 and all(
        isinstance(a, types.Array) and a.layout == "C" and a.dtype == dt and a.ndim == (2 if k == 3 else 1)
        for k, (a, dt) in enumerate(zip(buffer_types, _BUFFER_DTYPES)))


def group_builder(cls, kinds, first: int):
    """``(tuple_type, build)``: the numba type of the named tuple ``cls`` of borrowed views that
    :func:`make_unpacker` returns, and ``build(context, builder, buffer_types, buffer_values)``,
    the LLVM code that makes it from the packed buffers ``(f, i, b, L)`` (for intrinsics)."""
    dtypes = (types.float64, types.int64, types.boolean)
    field_types = [types.Array(dtypes[buf], ndim, "C") for buf, ndim in kinds]
    tuple_type = types.BaseTuple.from_types(field_types, cls)

    def build(context, builder, buffer_types, buffer_values):
        bufs = [make_array(t)(context, builder, value=a) for t, a in zip(buffer_types, buffer_values)]
        lay = bufs.pop()
        intp = context.get_value_type(types.intp)
        zero, one = intp(0), intp(1)
        values = []
        for k, ((buf, ndim), aty) in enumerate(zip(kinds, field_types)):
            o, n, w = (builder.load(cgutils.get_item_pointer(context, builder, buffer_types[3], lay,
                                                             [intp(first + k), intp(col)])) for col in range(3))
            itemsize = intp(context.get_abi_sizeof(context.get_data_type(aty.dtype)))
            out = make_array(aty)(context, builder)
            if ndim == 1:
                shape, strides = [n], [itemsize]
            else:
                wide = builder.icmp_signed(">", w, zero)
                shape = [builder.select(wide, builder.sdiv(n, builder.select(wide, w, one)), zero), w]
                strides = [builder.mul(w, itemsize), itemsize]
            populate_array(out, data=builder.gep(bufs[buf].data, [o]), shape=shape, strides=strides,
                           itemsize=itemsize, meminfo=None)
            values.append(out._getvalue())
        return context.make_tuple(builder, tuple_type, values)

    return tuple_type, build


@njit(**JIT_INNER)
def _copy1(dst, src):
    """``dst[:] = src`` for 1-D arrays of one shape, as a loop: a slice assignment would compile
    numba's broadcasting error path (~1.5 s per pair of array types)."""
    for k in range(src.shape[0]):
        dst[k] = src[k]


@njit(**JIT_INNER)
def _copy2(dst, src):
    """``dst[:] = src`` for C-contiguous 2-D arrays of one shape (:func:`_copy1`), as one flat
    loop (:func:`borrow_flat`: vectorised)."""
    _copy1(borrow_flat(dst), borrow_flat(src))


@njit(**JIT_INNER)
def _same_bits(a, b):
    """Whether the 1-D float arrays ``a`` and ``b`` (one length) hold the same bits (so ``0.0``
    and ``-0.0`` differ, and a NaN never matches: both would give a different call)."""
    ai = a.view(np.int64)
    bi = b.view(np.int64)
    diff = 0
    for k in range(ai.shape[0]):  # no early exit: the loop vectorises
        diff |= ai[k] ^ bi[k]
    return diff == 0


@njit(**JIT_INNER)
def _same_bits3(a, b):
    """:func:`_same_bits` for C-contiguous 2-D arrays of one shape, as one flat loop
    (:func:`borrow_flat`: no reshape, which calls a C function)."""
    return _same_bits(borrow_flat(a), borrow_flat(b))

__all__ = ["ARENA_HEADER", "Packed", "are_packed_buffers", "borrow", "borrow_flat", "group_builder", "make_unpacker",
           "pack_arrays", "split_arena"]
