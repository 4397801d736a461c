"""Array views for compiled code without reference counting, shared by the methods' drivers.

numba increments and decrements an array's meminfo count (an atomic instruction) for every view
it makes and for every array passed to a function it does not inline; on the per-call path of
``advance(state, 1)`` those dominated (der, galpha, compact: docs/der.md, docs/galpha.md,
docs/compact.md, "per call"). The intrinsics below build the same views with no meminfo. Compiled
code only, and a view must not outlive the array it was made from (the caller keeps the arrays
alive for the whole call).
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

__all__ = ["borrow", "borrow_flat", "element_pointer", "float64_at"]


@intrinsic
def borrow(typingctx, arr):
    """``arr`` as a *borrowed* array inside compiled code: the same data, shape and strides with
    no reference count (null meminfo and parent). Every view numba makes of an array increments
    and later decrements its meminfo's count with a locked (atomic) instruction; on the per-call
    path those were ~60% of the CPU time of ``advance(state, 1)`` at 10 vertices (``perf``: all
    of it in ``NRT_incref``/``NRT_decref``). A view of a borrowed array skips them (a null
    check). Only for arrays the caller keeps alive for the whole call (the arguments of a
    compiled call) and for views that do not outlive it."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        src = make_array(signature.args[0])(context, builder, value=args[0])
        out = make_array(signature.return_type)(context, builder)
        populate_array(out, data=src.data, shape=src.shape, strides=src.strides, itemsize=src.itemsize, meminfo=None)
        return out._getvalue()

    return arr(arr), codegen


@intrinsic
def borrow_flat(typingctx, arr):
    """A C-contiguous array as a borrowed (:func:`borrow`) 1-D view of all its elements, built in
    place (numba's ``ravel``/``reshape`` call a C function). Loops over an ``(n, 3)`` array's
    rows keep its run-time shape in every address; over the flat view LLVM vectorises a copy or
    a compare (the call cache's key of 200 vertices: 0.8 -> ~0.2 us per copy of positions and
    velocities). Compiled code only; the view must not outlive the array."""
    if not isinstance(arr, types.Array) or arr.layout != "C":
        return None
    flat_type = types.Array(arr.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        src = make_array(signature.args[0])(context, builder, value=args[0])
        out = make_array(signature.return_type)(context, builder)
        n = context.get_constant(types.intp, 1)
        for extent in cgutils.unpack_tuple(builder, src.shape, arr.ndim):
            n = builder.mul(n, extent)
        populate_array(out, data=src.data, shape=[n], strides=[src.itemsize], itemsize=src.itemsize, meminfo=None)
        return out._getvalue()

    return flat_type(arr), codegen


@intrinsic
def element_pointer(typingctx, buf, offset):
    """Pointer to element ``offset`` of the C-contiguous 1-D array ``buf``."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C" and isinstance(offset, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        data = make_array(signature.args[0])(context, builder, value=args[0]).data
        return builder.gep(data, [args[1]])

    return types.CPointer(buf.dtype)(buf, offset), codegen


@intrinsic
def float64_at(typingctx, address):
    """The float64 pointer at the integer ``address`` [bytes] (an ``ndarray.ctypes.data``)."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return types.CPointer(types.float64)(address), codegen
