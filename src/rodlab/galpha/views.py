"""Views of a rod's packed buffers, one definition for Python and compiled code.

``view1(buf, o, n)``, ``view2(buf, o, n, c)``, ``view3(buf, o, n, a, c)``: the C-contiguous
(n,), (n, c) or (n, a, c) array over ``buf[o:]`` (a 1-D C-contiguous buffer). From Python they
are numpy slices and reshapes (checked: a buffer too short raises). In compiled code they are
``numba.carray`` over a pointer into the buffer: no reference count and no call of numba's
reshape check (about 10-15 ns each, 25 views per rod and call in
:func:`rodlab.galpha.stepping.float_views`); such a view must not outlive the call that passed
the buffer, and the layout (:func:`rodlab.galpha.stepping.float_buffer_size`) guarantees the
length, which the Python path checks.
"""
from __future__ import annotations

from numba import carray
from numba.extending import overload
from ..numba_views import element_pointer


def view1(buf, o, n):
    return buf[o:o + n]


def view2(buf, o, n, c):
    return buf[o:o + n * c].reshape((n, c))


def view3(buf, o, n, a, c):
    return buf[o:o + n * a * c].reshape((n, a, c))


@overload(view1)
def _view1(buf, o, n):
    return lambda buf, o, n: carray(element_pointer(buf, o), (n,))


@overload(view2)
def _view2(buf, o, n, c):
    return lambda buf, o, n, c: carray(element_pointer(buf, o), (n, c))


@overload(view3)
def _view3(buf, o, n, a, c):
    return lambda buf, o, n, a, c: carray(element_pointer(buf, o), (n, a, c))
