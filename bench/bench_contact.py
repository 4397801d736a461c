"""Benchmarks of the shared contact detection (rodlab.contact); writes docs/benchmarks-contact.md.

    python bench/bench_contact.py            # 10^3 .. 10^6 segments
    python bench/bench_contact.py --quick    # without the 10^6 row, fewer repeats

(a) Broadphase: random hair-like strands (32 segments of 2 mm, radius 50 um, a smooth random walk
    each) at a fixed density in a cube (one segment per (4 mm)^3, so the number of close pairs per
    segment stays the same as the count grows); for 10^3, 10^4, 10^5 (and 10^6) segments the time
    of the grid broadphase (:func:`rodlab.contact.segment_pairs`, candidate boxes with a margin of
    one radius) and of the whole :func:`rodlab.contact.detect` (broadphase + narrowphase on every
    candidate), with the time per segment and per ``n log2 n``.
(b) Narrowphase per pair: segment-segment closest points in a compiled loop over 10^6 random pairs,
    the parallel pair kernel of ``detect`` per candidate pair, and CCD (conservative advancement)
    per segment pair over a step.

Times are the shortest of several wall-clock runs; compilation excluded (one call first). SI units.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

from rodlab.contact import detect, from_arrays, segment_pairs
from rodlab.contact.ccd import eval_pair_toi
from rodlab.contact.detect import eval_segment_pairs
from rodlab.contact.narrowphase import segment_segment, vrow
from rodlab.geometry._vec import JIT

ROOT = Path(__file__).resolve().parents[1]
SEGMENTS_PER_STRAND = 32
SEGMENT_LENGTH = 2e-3       # [m]
RADIUS = 5e-5               # [m]
CELL = 4e-3                 # [m]: one segment per CELL^3 on average


def hair_strands(n_segments: int, seed: int = 0):
    """``(vertex_x, rod_vertex_start)`` of ``n_segments // 32`` strands in a cube of side
    ``CELL * n_segments^(1/3)``: each a random walk whose direction turns by ~0.3 rad a segment."""
    rng = np.random.default_rng(seed)
    n_strands = max(1, n_segments // SEGMENTS_PER_STRAND)
    side = CELL * n_segments ** (1.0 / 3.0)
    d = rng.normal(size=(n_strands, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    x = np.empty((n_strands, SEGMENTS_PER_STRAND + 1, 3))
    x[:, 0] = rng.uniform(0.0, side, (n_strands, 3))
    for k in range(SEGMENTS_PER_STRAND):
        d = d + 0.3 * rng.normal(size=d.shape)
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        x[:, k + 1] = x[:, k] + SEGMENT_LENGTH * d
    starts = np.arange(n_strands + 1, dtype=np.int64) * (SEGMENTS_PER_STRAND + 1)
    return x.reshape(-1, 3), starts


def best_time(fn, repeats: int, clock=time.perf_counter) -> float:
    """The shortest of ``repeats`` timed calls after one warm-up call [s] (on a shared machine the
    shortest is the least disturbed by other processes)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def with_threads(count: int, fn):
    previous = numba.get_num_threads()
    numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    try:
        return fn()
    finally:
        numba.set_num_threads(previous)


@njit(**JIT)
def _closest_loop(p, q):
    acc = 0.0
    for k in range(p.shape[0]):
        s, t, d, n = segment_segment(vrow(p, k), vrow(p, k + 1), vrow(q, k), vrow(q, k + 1))
        acc += d + s + t + n[0]
    return acc


def broadphase_rows(sizes, repeats):
    rows = []
    for n in sizes:
        x, starts = hair_strands(n)
        g = from_arrays(starts, np.zeros(starts.shape[0] - 1, dtype=bool), RADIUS)
        reps = repeats if n <= 10 ** 5 else max(2, repeats // 3)
        t_bp1 = with_threads(1, lambda: best_time(lambda: segment_pairs(g, x, RADIUS), reps, time.process_time))
        t_bp = best_time(lambda: segment_pairs(g, x, RADIUS), reps)
        t_all = best_time(lambda: detect(g, x, RADIUS, obstacles=False), reps)
        n_candidates = segment_pairs(g, x, RADIUS).shape[0]
        n_close = detect(g, x, RADIUS, obstacles=False).n_contacts
        rows.append(dict(n=g.n_edges, bp1=t_bp1, bp=t_bp, all=t_all, cand=n_candidates, close=n_close))
        print(f"  {g.n_edges:>8d} segments: broadphase {t_bp1 * 1e3:8.2f} ms (1 thread) {t_bp * 1e3:8.2f} ms, "
              f"detect {t_all * 1e3:8.2f} ms, {n_candidates} candidates, {n_close} contacts", flush=True)
    return rows


def narrowphase_rows(repeats):
    rng = np.random.default_rng(1)
    m = 10 ** 6
    p = rng.uniform(-1, 1, (m + 1, 3))
    q = rng.uniform(-1, 1, (m + 1, 3))
    t_loop = best_time(lambda: _closest_loop(p, q), repeats) / m
    x, starts = hair_strands(10 ** 5)
    g = from_arrays(starts, np.zeros(starts.shape[0] - 1, dtype=bool), RADIUS)
    pairs = segment_pairs(g, x, 10 * RADIUS)
    P = pairs.shape[0]
    out = [np.empty(P), np.empty(P), np.empty((P, 3)), np.empty((P, 3)), np.empty(P)]
    t_pairs = best_time(lambda: eval_segment_pairs(x, g.edge_v0, g.edge_v1, g.edge_radius, pairs, *out), repeats) / P
    x1 = x + rng.normal(scale=SEGMENT_LENGTH, size=x.shape)
    toi = np.empty(P)
    t_ccd = best_time(lambda: eval_pair_toi(x, x1, g.edge_v0, g.edge_v1, g.edge_radius, pairs, 1e-6 * RADIUS, toi),
                        repeats) / P
    return dict(loop=t_loop, pairs=t_pairs, n_pairs=P, ccd=t_ccd, n_hits=int((toi <= 1).sum()))


def write_page(path: Path, rows, narrow, command: str, elapsed: float) -> None:
    first = rows[0]
    lines = [
        "# Contact detection benchmarks",
        "",
        f"Written by `{command}` on {datetime.date.today().isoformat()} ({elapsed:.0f} s).",
        f"Machine: {platform.processor() or platform.machine()} ({_cpu_name()}), {os.cpu_count()} cores, "
        f"{numba.get_num_threads()} numba threads, Python {platform.python_version()}, numpy {np.__version__}, "
        f"numba {numba.__version__}; load average {os.getloadavg()[0]:.1f} when written (the machine is shared). "
        "Times are the shortest of several wall-clock runs; compilation excluded.",
        "",
        "## (a) Broadphase, 10^3 to 10^6 segments",
        "",
        f"Hair-like strands of {SEGMENTS_PER_STRAND} segments of {SEGMENT_LENGTH * 1e3:g} mm, radius "
        f"{RADIUS * 1e6:g} um, random walks turning ~0.3 rad a segment, at one segment per "
        f"({CELL * 1e3:g} mm)^3 in a cube (the density is fixed so that the number of close pairs per segment "
        "is too). *Broadphase*: `segment_pairs` (segment boxes inflated by radius + margin/2, margin = one "
        "radius; sorted uniform grid). *detect*: the whole `detect` (broadphase, then exact segment-segment "
        "closest points on every candidate, kept when the gap is <= the margin), all threads. The last "
        "column is the one-thread broadphase time divided by n log2 n, relative to the first row: it "
        "stays near 1 (or falls) when the cost grows like n log n or slower.",
        "",
        "The one-thread columns are CPU time of the process (`time.process_time`), which other "
        "processes on the shared machine disturb less than wall-clock time; the others are wall clock.",
        "",
        "| segments | broadphase, 1 thread, CPU [ms] | per segment [us] | broadphase, all threads [ms] | "
        "detect [ms] | candidates | contacts | (1 thread) / (n log2 n), rel. |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = first["bp1"] / (first["n"] * math.log2(first["n"]))
    for r in rows:
        rel = r["bp1"] / (r["n"] * math.log2(r["n"])) / base
        lines.append(f"| {r['n']} | {r['bp1'] * 1e3:.2f} | {r['bp1'] / r['n'] * 1e6:.3f} | {r['bp'] * 1e3:.2f} | "
                     f"{r['all'] * 1e3:.2f} | {r['cand']} | {r['close']} | {rel:.2f} |")
    if len(rows) < 4:
        lines += ["", "The 10^6 row is skipped with `--quick`."]
    lines += [
        "",
        "## (b) Narrowphase and CCD per pair",
        "",
        "| kernel | time per pair [ns] |",
        "| --- | ---: |",
        f"| `segment_segment` in a compiled loop (10^6 random pairs, one thread) | {narrow['loop'] * 1e9:.1f} |",
        f"| `eval_segment_pairs` (closest points, normal, gap; parallel) on {narrow['n_pairs']} candidate pairs "
        f"of 10^5 segments | {narrow['pairs'] * 1e9:.1f} |",
        f"| `eval_pair_toi` (CCD, conservative advancement; parallel) on the same pairs, vertices moved by "
        f"~{SEGMENT_LENGTH * 1e3:g} mm ({narrow['n_hits']} impacts) | {narrow['ccd'] * 1e9:.1f} |",
        "",
    ]
    path.write_text("\n".join(lines))


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip the 10^6-segment row; fewer repeats")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks-contact.md", help="page to write")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    sizes = [10 ** 3, 10 ** 4, 10 ** 5] + ([] if args.quick else [10 ** 6])
    repeats = 3 if args.quick else 7
    print("(a) broadphase", flush=True)
    rows = broadphase_rows(sizes, repeats)
    print("(b) narrowphase", flush=True)
    narrow = narrowphase_rows(repeats)
    print(f"  segment_segment {narrow['loop'] * 1e9:.1f} ns, pair kernel {narrow['pairs'] * 1e9:.1f} ns, "
          f"ccd {narrow['ccd'] * 1e9:.1f} ns", flush=True)
    command = "python bench/bench_contact.py" + (" --quick" if args.quick else "")
    write_page(args.out, rows, narrow, command, time.perf_counter() - t0)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
