"""Helpers for the benchmark scripts: machine description and generated Markdown sections.

A benchmark page may hold several generated sections, each between
``<!-- BEGIN name -->`` and ``<!-- END name -->``; :func:`write_section` replaces one section
(or appends it) and leaves the rest of the page as it is.
"""
from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path


def machine() -> str:
    """One line: CPU model, core count, OS, Python and numba versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import numba

        nb = f"numba {numba.__version__}"
    except ImportError:  # pragma: no cover
        nb = "no numba"
    return (f"{cpu}, {os.cpu_count()} cores (shared), {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}, {nb}")


def command_line() -> str:
    argv = [Path(sys.argv[0]).as_posix()] + sys.argv[1:]
    rel = argv[0]
    if "/bench/" in rel:
        rel = "bench/" + rel.rsplit("/bench/", 1)[1]
    return " ".join(["python", rel] + argv[1:])


def write_section(path: str | os.PathLike, name: str, body: str, title: str | None = None) -> None:
    """Replace the generated section ``name`` in the Markdown page ``path`` (created with
    ``title`` as its heading when missing); other sections are kept."""
    path = Path(path)
    begin, end = f"<!-- BEGIN {name} (generated: do not edit by hand) -->", f"<!-- END {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    text = path.read_text() if path.exists() else (f"# {title}\n\n" if title else "")
    pat = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.S)
    if pat.search(text):
        text = pat.sub(lambda _m: block, text)
    else:
        text = text.rstrip() + "\n\n" + block
    path.write_text(text)


def md_table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)
