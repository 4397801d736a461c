"""Cold start: the first `rodlab run cantilever --set method=M` on an empty numba cache, per method,
plus the welded rigid body example (`examples/weld-body.toml`, method der: the largest compiled call
tree) and `rodlab demo` (the README's first command), and where their compile time goes. Writes
docs/benchmarks-cold-start.md.

    python bench/bench_cold_start.py [--methods der der-implicit compact galpha] [--no-weld] [--no-demo] [--t-end 0.05]

Each method runs in a fresh interpreter with a fresh ``NUMBA_CACHE_DIR`` (so nothing is cached),
then once more with that now-warm cache. Reported per run: wall seconds of the whole command, CPU
seconds of the process, and CPU seconds inside numba's outermost ``numba:compile`` events (the compile
time; a CPU time, so a shared machine inflates it less than wall time). The compile profile lists
each compiled function's *exclusive* CPU time (its own compile minus the compiles nested in it) and
*inclusive* time, largest first: the places where compiling less pays. Issue #16's target: a cold
run within 10 s per method, a cold `rodlab demo` within 15 s, on the 2-core development machine.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks-cold-start.md"

CHILD = r"""
import collections, json, sys, time
from numba.core import event
stack, excl, incl, count = [], collections.Counter(), collections.Counter(), collections.Counter()
class Listener(event.Listener):
    def on_start(self, ev):
        d = ev.data["dispatcher"]
        stack.append([time.process_time(), 0.0, d.py_func.__module__ + "." + d.py_func.__qualname__])
    def on_end(self, ev):
        t0, nested, name = stack.pop()
        total = time.process_time() - t0
        excl[name] += total - nested; incl[name] += total; count[name] += 1
        if stack:
            stack[-1][1] += total
        else:
            excl["<outermost>"] += total
event.register("numba:compile", Listener())
wall0, cpu0 = time.perf_counter(), time.process_time()
from rodlab.cli import main
code = main(json.loads(sys.argv[1]))
out = {"code": code, "wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0,
       "compile_cpu_s": excl.pop("<outermost>", 0.0), "functions": len(excl), "compiles": sum(count.values()),
       "top": [(n, excl[n], incl[n], count[n]) for n in sorted(excl, key=lambda k: -excl[k])[:12]]}
print("COLD-START-JSON " + json.dumps(out))
"""


WHY = [
    "## Why a cold run is not within 10 s yet",
    "",
    "Measured 2026-11-25 on the der cantilever (`advance` of one clamped rod, empty cache; CPU seconds):",
    "",
    "- **Most of the compile time is LLVM, not numba's typing**: of 58 s compile CPU, 44 s were spent "
    "in LLVM (module optimisation and machine-code generation, `CPUCodeLibrary._optimize_final_module` and "
    "`_finalize_specific`).",
    "- **Each level of the call tree optimises and compiles its whole subtree again.** numba links the "
    "finished module of every callee into its caller's module and runs the full O3 pipeline and the code "
    "generator over the result: the serial driver's module held 35 000 lines of LLVM IR (44 functions), "
    "`_advance_rod`'s 25 000, `_chunk`'s 19 000, for one set of physics kernels. The cost grows with depth x "
    "size; the DER step is 7-8 levels deep (driver, per-rod step, chunk, `run_steps`, twist update, "
    "quasistatic twist, tridiagonal solve, Thomas). Functions LLVM inlines are compiled once per call site.",
    "- **What was cut** (bitwise the same trajectories): the CPython and C wrappers of functions only called "
    "from compiled code (`no_cpython_wrapper`: a wrapper of a function taking the packed named tuples unboxes "
    "~50 arrays); slice assignments between arrays (`a[i:j] = b`), each pair of array types compiling "
    "numba's broadcasting error path (string formatting, ~1.5 s per pair, 5.6 s in all), replaced by "
    "loops; the second call site of the per-rod chunk; the `advance_rod` level in the parallel driver "
    "(one more full re-optimisation of the tree). der: 58 -> 49 s compile CPU.",
    "- **What would reach 10 s**: fewer levels that each re-link the physics (call the kernels through "
    "function pointers, which numba does not link, or merge the driver levels), or ship compiled kernels "
    "(ahead-of-time compilation, or a `rodlab warmup` run once after installing, issue #16 item 1). "
    "Not a lever: `NUMBA_OPT=0` (~12 % less, measured before); `error_model=\"numpy\"` and no bounds checks are "
    "already the default (`rodlab.geometry._vec.JIT`).",
    "- **compact, 2026-12-07** (docs/compact.md, \"Cold start\"): the SQP's 7 levels inlined into the serial driver "
    "(`inline=\"always\"`, arguments in named groups: inlining refuses calls of more than 30 arguments), moving clamps, "
    "BDF2 and the dense preconditioners passed as None and pruned by numba, no array-to-array slice assignment: "
    "104 -> 43 compilations, 47 -> 36 s CPU (two paired runs at load ~11-20); the rest is numba's lowering, inliner and "
    "typing (~17 s) and LLVM over one copy of the tree (~12 s).",
    "- **Function pointers, measured 2026-12-07** (a stand-alone experiment, numba 0.68.1): a leaf of 150 loops "
    "(5.6 s to compile) under 1 and 8 levels of trivial callers. Called directly, every level costs 1.4 s (it "
    "re-optimises and re-generates the linked leaf): 1.5 s for 1 level, 11.3 s for 8. Passing the leaf *dispatcher* "
    "as an argument changes nothing (numba types it as that dispatcher and links it: 1.4 / 11.7 s). Passing it "
    "as a `cfunc` (raw pointers plus sizes, called through its address: a first-class function type) costs "
    "0.07 s per level (0.08 / 0.60 s) whatever the leaf's size. So the re-linking cost can be removed, but only "
    "by kernels with C signatures (pointers to the arena, no arrays or named tuples in the signature); the "
    "leaves' own typing, lowering and code generation remain, which for one method's physics is more than 10 s "
    "on this machine (compact above: ~17 s of numba's own passes after its levels were merged).",
    "",
    "### Ahead-of-time kernels",
    "",
    "Measured 2026-12-07 on this 2-core machine (numba 0.68.1, llvmlite 0.50; CPU seconds of the whole process, "
    "`/usr/bin/time`; load averages as given: other work shared the machine). `pip install` builds the extension module "
    "`rodlab.aot._kernels` with `numba.pycc` (`setup.py`, `rodlab/aot/build.py`): the 16 kernels a der cantilever run "
    "calls from Python (found with a `numba:compile` listener, `python bench/aot_entries.py run cantilever --set "
    "method=der`): the serial driver `der.batch.advance_undriven_serial`, the setup's frame and twist kernels "
    "(`geometry.curves.*`, `der.kernels.refresh_geometry`, `clamp_material_angles`, `update_twist`) and the picture's "
    "rasterizer, each with the signature its Python caller passes (`rodlab/aot/spec.py`), for this machine's CPU name "
    "and feature string (those numba's JIT uses). A run uses them when the module was built by the installed numba and "
    "llvmlite, for this CPU, from the installed sources (SHA-256 of every `.py`), and the arguments have the entry's "
    "signature; otherwise, or with `RODLAB_JIT_ONLY=1`, numba's JIT as before (`rodlab/aot/__init__.py`).",
    "",
    "| `rodlab run cantilever --set method=der --set t_end=0.05`, empty `NUMBA_CACHE_DIR` | cold wall [s] | cold CPU [s] "
    "| compilations | warm wall [s] | warm CPU [s] |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    "| AOT kernels, load 2.1 | 2.6 | 2.6 | 0 | | |",
    "| `RODLAB_JIT_ONLY=1`, load 2.1 | 40.7 | 40.1 | 82 | | |",
    "| AOT kernels, load 4.7, 2 rounds | 5.2-6.6 | 2.9-3.2 | 0 | 6.0-7.8 | 3.0-3.1 |",
    "| `RODLAB_JIT_ONLY=1`, load 4.7, 2 rounds | 110-129 | 50-54 | 82 | 6.1-9.6 | 3.2-3.6 |",
    "",
    "- **The cold der cantilever is within 10 s**: nothing compiles; a cold run costs what a warm one does (~3 s CPU: "
    "the interpreter, imports, the run and its pictures). Outputs are bitwise the JIT's (positions, frames, energies, "
    "`frames.png`; `bench/der_trajectory_hashes.py`: 690 digests equal to main's through both paths); per-call overhead "
    "unchanged (`bench/bench_overhead.py --paired --methods der --sizes 10 50 200 --repeats 7`, 3 interleaved rounds at "
    "load ~5: 4.3 / 4.5 / 5.2 us on main, through the AOT entry, and through the JIT).",
    "- **Every method, the demo and the welded body** (2026-12-07, afternoon): the kernels that a cold `rodlab run "
    "cantilever` of der-implicit (its one-rod serial driver and the rest model's frames), compact (its serial driver, the "
    "frame fill, `darboux`, `matrix_to_quat`, the alignment metric), galpha (`advance_rods`, the initial fields, the "
    "energies, the rotations) and `rodlab demo` (der's serial driver of driven worlds, the curve kernels of "
    "`world/moves.py`) call, and der's coupled driver `bodies.advance_world` for worlds whose welded rods form one "
    "chunk (`bodies._phase` takes a `serial` argument: the AOT entry has a plain loop where the JIT has `prange`, which "
    "pycc cannot export), are in the module too: 32 kernels, 33 signatures. A cold run of each then compiles nothing "
    "(`python bench/aot_entries.py run ...` lists no compilation); the table above is that run. Every simulator seeds "
    "its drivers' entries into their numba dispatchers (`rodlab.aot.seed`: the entry becomes the dispatcher's "
    "compiled overload of its signature, and numba's own type dispatch runs it for a call of exactly those argument "
    "types; no argument check in Python) and calls the dispatchers (2026-12-07 evening; der, galpha and compact "
    "checked array identity and writeability in Python before): per-call overhead at or below the JIT path's. "
    "Each has a test file "
    "comparing a run through the module and through `RODLAB_JIT_ONLY=1` bit for bit (tests/test_aot*.py). Measured "
    "by the helpers at load 2-6 with `RODLAB_JIT_ONLY=1` against the module: der-implicit 36.0 -> 2.4-2.6 s wall, "
    "compact 51.8-78.3 -> 3.8-5.2 s, galpha 60-100 -> 3.2-8.0 s, demo 43.4 -> 4.8-5.5 s, weld-body 91 -> 2.0-2.4 s. "
    "Still on the JIT: parallel drivers (several rods), RATTLE (`projection=\"symplectic\"`), moving clamps, BDF2 "
    "history and direct storage of compact, galpha's moving clamps and `orientation=rodrigues`, contact: each would "
    "be one more signature and 20-90 s more of install CPU.",
    "- **The price is install time**: `pip install -e \".[test]\"` into a fresh virtual environment that already has "
    "the dependencies: 19 s wall / 7.5 s CPU before, 198 s / 82 s after (load 4.7, der's kernels only); with every "
    "method's, numba's compile of the module is ~150 s CPU (`.ci/run`'s install on this machine: 155 s); of the der-only "
    "build numba's compile was 55 s CPU, the rest is pip's isolated build environment (numpy, scipy, numba) and gcc of numba's runtime. A failed "
    "build installs without the module (the JIT path) unless `RODLAB_REQUIRE_AOT=1` (`.ci/run`).",
    "- **How the JIT's code is reused**: pycc compiles an exported function itself with its default flags "
    "(`error_model=\"python\"`, no fastmath), not the dispatcher's options. Each export is therefore a one-line "
    "function calling the kernel's dispatcher: numba compiles the kernel as the JIT does and links it in, so every "
    "construct of the tree compiled unchanged (the try/except in the per-rod step, the `rodlab.numba_views` "
    "intrinsics, `inline=\"always\"`, None-typed arguments pruned). Not possible as is: a `parallel=True` kernel "
    "(a stand-alone `prange` test) builds, but the module fails to import (`undefined symbol: numba_parallel_for`): "
    "numba hands its threading layer's functions to the JIT by address, so an AOT module would need a C shim "
    "defining `numba_parallel_for` and the scheduling functions over numba's threading-layer library, started as "
    "numba's `_launch_threads` does; der's parallel drivers stay on the JIT. `numba.pycc` is pending deprecation in numba; its successor would take this build.",
    "- **pycc's argument checks are thin**: its wrapper unboxes an array checking only the item size, so a float64 "
    "array of another dimension or order would be misread. `rodlab.aot` never calls an entry itself: seeded into its "
    "kernel's dispatcher, an entry is reached only through numba's type dispatch, which checks dtype, dimensions, "
    "layout, writeability and alignment in C as for every JIT overload (a call of any other types is compiled as "
    "before; tests/test_aot.py).",
    "- **Other methods follow** by adding their Python-called kernels to `rodlab/aot/spec.py` (`bench/aot_entries.py` "
    "prints each with its signature and call site) and seeding their dispatchers (`rodlab.aot.seed` where the simulator "
    "is made, or a `rodlab.aot.kernel` handle, which seeds at its first call); each tree adds "
    "its compile time to the install (der's: ~45 s CPU).",
    "",
]


def cli_args(case: str, t_end: float, out: Path) -> list[str]:
    """The ``rodlab`` command line of a case: a cantilever method, ``weld-body`` (the example) or ``demo``."""
    if case == "demo":
        return ["demo", "--out", str(out)]
    if case == "weld-body":
        return ["run", str(ROOT / "examples" / "weld-body.toml"), "--set", f"simulation.t_end={t_end}", "--out", str(out)]
    return ["run", "cantilever", "--set", "method=" + case, "--set", f"t_end={t_end}", "--out", str(out)]


def run_once(case: str, t_end: float, cache: Path, out: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cli_args(case, t_end, out))], env=env,
                          capture_output=True, text=True, timeout=3600)
    for line in proc.stdout.splitlines():
        if line.startswith("COLD-START-JSON "):
            res = json.loads(line[len("COLD-START-JSON "):])
            if res["code"]:
                raise RuntimeError(f"{case}: rodlab exited {res['code']}: {proc.stderr[-2000:]}")
            return res
    raise RuntimeError(f"{case}: no result (exit {proc.returncode}): {proc.stderr[-2000:]}")


def load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "n/a"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=["der", "der-implicit", "compact", "galpha"])
    ap.add_argument("--no-weld", action="store_true", help="skip the welded rigid body example")
    ap.add_argument("--no-demo", action="store_true", help="skip `rodlab demo`")
    ap.add_argument("--t-end", type=float, default=0.05, help="simulated seconds of each run [s]")
    a = ap.parse_args()
    cases = list(a.methods) + ([] if a.no_weld else ["weld-body"]) + ([] if a.no_demo else ["demo"])
    rows, profiles = [], []
    loads = [load_average()]
    with tempfile.TemporaryDirectory() as tmp:
        for m in cases:
            cache = Path(tmp) / f"cache-{m}"
            cold = run_once(m, a.t_end, cache, Path(tmp) / f"cold-{m}")
            warm = run_once(m, a.t_end, cache, Path(tmp) / f"warm-{m}")
            loads.append(load_average())
            rows.append((m, cold, warm))
            profiles.append((m, cold))
            print(f"{m}: cold {cold['wall_s']:.1f} s wall ({cold['compile_cpu_s']:.1f} s CPU compiling), "
                  f"warm {warm['wall_s']:.1f} s", flush=True)
    from rodlab import aot
    reason = aot.unavailable_reason() if aot.module() is None else ""
    aot_state = "in use" if not reason else f"not in use ({reason})"
    lines = [
        "# Cold start",
        "",
        f"Written by `python bench/bench_cold_start.py` on {datetime.date.today()} "
        f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"1-minute load average {', '.join(loads)} at the start and after each method: "
        "a shared machine inflates wall times, CPU times much less).",
        "",
        f"`rodlab run cantilever --set method=M --set t_end={a.t_end}` in a fresh interpreter with an empty "
        "`NUMBA_CACHE_DIR` (cold), then again with that cache (warm). Compile CPU = CPU seconds inside "
        "numba's outermost compile events. Issue #16's target: cold within 10 s per method. Row `weld-body`: "
        f"`rodlab run examples/weld-body.toml --set simulation.t_end={a.t_end}` (method der, a rod welded to a rigid body). "
        "Row `demo`: `rodlab demo` (the README's quickstart; issue #16's target: cold within 15 s).",
        "",
        f"Ahead-of-time kernels (`rodlab.aot`, built by `pip install`): {aot_state}. With them a cold run compiles "
        "only what is not in the module; `RODLAB_JIT_ONLY=1 python bench/bench_cold_start.py` measures numba's JIT "
        "alone (the morning's table of 2026-12-07, JIT only: der 35.0, der-implicit 31.9, compact 27.0, galpha 28.0, "
        "weld-body 84.5, demo 63.5 s cold wall).",
        "",
        "| method / case | cold wall [s] | cold CPU [s] | compile CPU [s] | functions compiled | compilations | warm wall [s] |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m, cold, warm in rows:
        lines.append(f"| {m} | {cold['wall_s']:.1f} | {cold['cpu_s']:.1f} | {cold['compile_cpu_s']:.1f} | "
                     f"{cold['functions']} | {cold['compiles']} | {warm['wall_s']:.1f} |")
    lines += ["", "## Where the compile time goes", "",
              "Exclusive = a function's own compile CPU time (typing, lowering, LLVM for its module, linking "
              "the modules of its callees) minus the compiles nested in it; inclusive counts them in.", ""]
    for m, cold in profiles:
        lines += [f"### {m}", "", "| function | exclusive [s] | inclusive [s] | compilations |",
                  "| --- | ---: | ---: | ---: |"]
        lines += [f"| `{n}` | {e:.2f} | {i:.2f} | {c} |" for n, e, i, c in cold["top"]]
        lines.append("")
    lines += WHY
    DOC.write_text("\n".join(lines))
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
