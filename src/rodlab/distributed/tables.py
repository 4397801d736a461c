"""One table of rows (dicts) written as CSV, and as Parquet when pyarrow is installed."""
from __future__ import annotations

import csv
import math
from pathlib import Path


def columns_of(rows: list[dict]) -> list[str]:
    """Column names in order of first appearance over ``rows``."""
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    return list(cols)


def _csv_value(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    return str(v)


def write_table(rows: list[dict], stem, *, columns: list[str] | None = None) -> list[Path]:
    """Write ``rows`` to ``stem.csv`` (always; floats with full precision, a missing value empty) and
    ``stem.parquet`` (when pyarrow imports; a column mixing numbers and strings is stored as strings).
    Returns the files written."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    cols = columns or columns_of(rows)
    path = stem.with_suffix(".csv")
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow([_csv_value(r.get(c)) for c in cols])
    files = [path]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return files
    arrays = []
    for c in cols:
        values = [r.get(c) for r in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values], type=pa.string()))
    path = stem.with_suffix(".parquet")
    pq.write_table(pa.Table.from_arrays(arrays, names=cols), path)
    files.append(path)
    return files
