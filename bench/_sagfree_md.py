"""Write one section of docs/benchmarks-sagfree.md between markers (each bench script owns its section)."""
from __future__ import annotations

import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks-sagfree.md"
FIG = ROOT / "docs" / "figures"
HEADER = """# Benchmarks: implicit DER and sag-free optimization

Tables written by `bench/bench_der_implicit.py`, `bench/bench_sagfree.py`, `bench/bench_sagfree_fig4.py` and
`bench/bench_sagfree_hair.py`
(each owns the section between its markers; rerun a script to refresh its section). Per-call timings
are the best of several repeats of the **CPU time** of the benchmark process (`time.process_time`):
the 2-core x86_64 development machine is shared with other jobs (load average ~5), so wall-clock
times include time spent descheduled. The hairstyle run reports wall time. Compilation excluded.
"""


def machine() -> str:
    try:
        load = open("/proc/loadavg").read().split()[0]
    except OSError:
        load = "?"
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        rev = "?"
    return f"{platform.machine()}, {platform.processor() or 'cpu'}, load average {load} at the start, git {rev}"


def write_section(name: str, body: str) -> None:
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text() if DOC.exists() else HEADER
    start = f"<!-- {name} start -->"
    end = f"<!-- {name} end -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        a = text.index(start)
        b = text.index(end) + len(end)
        text = text[:a] + block + text[b:]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)


def table(header: list[str], rows: list[list]) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(out)
