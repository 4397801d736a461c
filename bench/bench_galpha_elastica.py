"""Cantilever elastica check for method=galpha (static BVP solve): tip error / L against the
planar elastica (rodlab.analytic.elastica) for n = 25 ... 400 and E = 1e10 ... 1e6 Pa (radius
1 cm, rho 1000, g 9.81, L = 1 m), observed order, both orientation updates. --write appends the
table to docs/benchmarks-galpha.md.

    python bench/bench_galpha_elastica.py [--write]
"""
from __future__ import annotations

import math
import sys
from pathlib import Path


from rodlab.analytic.elastica import cantilever_elastica_tip
from rodlab.galpha import Boundary, GAlphaOptions, GAlphaRod, GAlphaSolver
from rodlab.galpha.model import ROOT_R


def tip_error(n, E, orientation):
    m = GAlphaRod.from_material(n, 1.0, radius=0.01, E=E, G=E / 3, rho=1000.0, gravity=(0, 0, -9.81), root_R=ROOT_R)
    st, res = GAlphaSolver(m, Boundary(), GAlphaOptions(orientation=orientation)).solve_static()
    ref = cantilever_elastica_tip(1.0, E * math.pi * 1e-8 / 4, 1000 * math.pi * 1e-4 * 9.81)
    return math.hypot(st.r[-1, 0] - ref[0], st.r[-1, 2] - ref[1]), res.iterations, float(ref[1])


def main():
    ns = (25, 50, 100, 200, 400)
    lines = ["## Elastica check (bench/bench_galpha_elastica.py)", "",
             "Static cantilever (L = 1 m, r = 1 cm, rho = 1000, g = 9.81): |tip - elastica tip| / L; "
             "required: < 1e-2 at n = 50, < 3e-3 at n = 200. Last column: observed order between n = 200 and 400.", "",
             "| E [Pa] | elastica tip z [m] | orientation | " + " | ".join(f"n = {n}" for n in ns) + " | order |",
             "| --- | --- | --- |" + " --- |" * (len(ns) + 1)]
    for E in (1e10, 1e8, 1e7, 1e6):
        for ori in ("cayley", "rodrigues"):
            errs = []
            for n in ns:
                e, it, zref = tip_error(n, E, ori)
                errs.append(e)
            order = math.log(errs[-2] / errs[-1]) / math.log(2) if errs[-1] > 0 else float("nan")
            lines.append(f"| {E:.0e} | {zref:.4f} | {ori} | " + " | ".join(f"{e:.2e}" for e in errs) + f" | {order:.2f} |")
            print(lines[-1], flush=True)
    if "--write" in sys.argv:
        out = Path(__file__).resolve().parents[1] / "docs" / "benchmarks-galpha.md"
        text = out.read_text() if out.exists() else "# Generalized-alpha benchmarks\n\nMachine: 2-core x86_64 (shared).\n\n"
        start = text.find("## Elastica check")
        if start >= 0:
            end = text.find("\n## ", start + 5)
            text = text[:start] + (text[end + 1:] if end >= 0 else "")
        out.write_text(text.rstrip() + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
