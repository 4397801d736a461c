"""Strict JSON for every file rodlab writes.

Python's :func:`json.dumps` writes ``NaN``, ``Infinity`` and ``-Infinity`` for non-finite floats by
default; these are not JSON (RFC 8259) and strict parsers (JavaScript's ``JSON.parse``, ``jq``,
Go, Rust's serde_json) refuse the whole file. :func:`dumps` writes ``null`` instead and records
why next to it: a non-finite value under key ``k`` of a mapping becomes ``"k": null`` plus
``"k_reason": "..."`` (the reason given by the caller in ``reasons``, else which non-finite value
it was); a list holding non-finite entries keeps its length, gets ``null`` in those places and its
key gets ``"k_reason"`` naming the entries. The result is then encoded with ``allow_nan=False``,
so a bare ``NaN`` can never reach the file. numpy scalars and arrays are converted to Python
numbers and lists.

    from rodlab.io.jsonsafe import dumps
    dumps({"residual_max": float("nan")}, reasons={"residual_max": "no strand was optimised"})
    # '{"residual_max": null, "residual_max_reason": "no strand was optimised"}'
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

REASON_SUFFIX = "_reason"


def _describe(x: float) -> str:
    if math.isnan(x):
        return "not a number (NaN)"
    return "+infinity" if x > 0 else "-infinity"


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and (nested) lists; anything else unchanged."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _clean(value: Any, reasons: Mapping[str, str], default: Callable[[Any], Any] | None) -> tuple[Any, str | None]:
    """(value with non-finite floats as None, reason or None when nothing was replaced)."""
    value = _plain(value)
    if isinstance(value, float):
        return (value, None) if math.isfinite(value) else (None, _describe(value))
    if isinstance(value, Mapping):
        return sanitize(value, reasons=reasons, default=default), None
    if isinstance(value, (list, tuple)):
        items, bad = [], []
        for i, v in enumerate(value):
            c, why = _clean(v, reasons, default)
            items.append(c)
            if why is not None:
                bad.append(f"[{i}] {why}")
        if not bad:
            return items, None
        shown = "; ".join(bad[:5]) + (f"; ... ({len(bad)} entries in all)" if len(bad) > 5 else "")
        return items, f"non-finite entries written as null: {shown}"
    if value is None or isinstance(value, (bool, int, str)):
        return value, None
    if default is not None:
        return _clean(default(value), reasons, None)
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def sanitize(obj: Mapping, *, reasons: Mapping[str, str] | None = None,
             default: Callable[[Any], Any] | None = None) -> dict:
    """A copy of mapping ``obj`` with every non-finite float replaced by ``None`` and a sibling
    ``<key>_reason`` string saying why (``reasons[key]`` where given); nested mappings and lists
    are cleaned the same way. ``default`` converts objects JSON has no type for (as in
    :func:`json.dumps`); without it they raise ``TypeError``."""
    reasons = reasons or {}
    out: dict = {}
    for key, value in obj.items():
        key = str(key)
        clean, why = _clean(value, reasons, default)
        out[key] = clean
        if why is not None:
            out.setdefault(key + REASON_SUFFIX, reasons.get(key, why))
    return out


def dumps(obj: Any, *, reasons: Mapping[str, str] | None = None, default: Callable[[Any], Any] | None = None,
          indent: int | None = None, sort_keys: bool = False) -> str:
    """Strict JSON text of ``obj`` (module docstring): ``null`` plus a ``<key>_reason`` for each
    non-finite number, never ``NaN`` or ``Infinity``."""
    if isinstance(obj, Mapping):
        clean = sanitize(obj, reasons=reasons, default=default)
    else:
        clean, why = _clean(obj, reasons or {}, default)
        if why is not None:  # a bare top-level value or list: wrap it so the reason has a place
            clean = {"value": clean, "value" + REASON_SUFFIX: why}
    return json.dumps(clean, indent=indent, sort_keys=sort_keys, allow_nan=False)


def loads_strict(text: str) -> Any:
    """Parse JSON text refusing ``NaN``/``Infinity`` (what a strict reader does); ``ValueError`` if present."""

    def refuse(token: str):
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


__all__ = ["REASON_SUFFIX", "dumps", "loads_strict", "sanitize"]
