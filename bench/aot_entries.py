"""What a cold run still compiles with numba's JIT: the candidates for ``rodlab.aot.spec.ENTRIES``.

    python bench/aot_entries.py run cantilever --set method=compact --set t_end=0.05
    python bench/aot_entries.py --jit-only demo        # everything the run calls, as without the module

Runs the ``rodlab`` command line in a fresh interpreter with an empty ``NUMBA_CACHE_DIR`` and a
``numba:compile`` event listener, and prints each *outermost* compilation (a kernel called from
Python: the only kind an ahead-of-time entry can replace; the compiles nested in it are its
callees, which come with it) with its signature, its inclusive compile CPU seconds and the Python
line that called it. ``--jit-only`` sets ``RODLAB_JIT_ONLY=1``. A kernel listed here is covered by
adding ``(module, name): [signature]`` to the spec, seeding its dispatcher (:func:`rodlab.aot.seed`
where the simulator is made, as ``rodlab.solvers.der`` does for its drivers; or a ``rodlab.aot.kernel``
handle at the Python call site), and reinstalling (``pip install -e .``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, traceback
from numba.core import event
stack, rows = [], []
class Listener(event.Listener):
    def on_start(self, ev):
        caller = ""
        if not stack:
            frames = [f for f in traceback.extract_stack()[:-1] if "/numba/" not in f.filename and f.name != "__enter__"]
            caller = f"{frames[-1].filename.split('src/')[-1]}:{frames[-1].lineno}" if frames else "?"
        stack.append((time.process_time(), ev.data["dispatcher"], ev.data["args"], caller))
    def on_end(self, ev):
        t0, d, args, caller = stack.pop()
        if not stack:
            sig = d.overloads[tuple(args)].signature if tuple(args) in d.overloads else None
            rows.append((d.py_func.__module__, d.py_func.__name__, str(sig if sig is not None else args),
                         time.process_time() - t0, caller))
event.register("numba:compile", Listener())
from rodlab.cli import main
code = main(json.loads(sys.argv[1]))
print("AOT-ENTRIES-JSON " + json.dumps({"code": code, "rows": rows}))
"""


def main() -> None:
    argv = sys.argv[1:]
    jit_only = "--jit-only" in argv
    argv = [a for a in argv if a != "--jit-only"]
    if not argv:
        raise SystemExit(__doc__)
    sys.path.insert(0, str(ROOT / "src"))
    from rodlab.aot import spec

    with tempfile.TemporaryDirectory() as tmp:
        if "--out" not in argv and argv[0] in ("run", "demo"):
            argv += ["--out", str(Path(tmp) / "out")]
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / "cache"), "PYTHONPATH": str(ROOT / "src")}
        if jit_only:
            env["RODLAB_JIT_ONLY"] = "1"
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argv)], env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("AOT-ENTRIES-JSON "):
            rows = json.loads(line[len("AOT-ENTRIES-JSON "):])["rows"]
            break
    else:
        raise SystemExit(f"no result (exit {proc.returncode}): {proc.stderr[-2000:]}")
    print(f"{len(rows)} outermost compilations, {sum(r[3] for r in rows):.1f} s CPU (inclusive)")
    for module, name, sig, cpu, caller in sorted(rows, key=lambda r: -r[3]):
        covered = "in spec" if (module, name) in spec.ENTRIES else "NOT in spec"
        print(f"{cpu:6.2f} s  {module}.{name}  [{covered}]  called at {caller}\n          {sig}")


if __name__ == "__main__":
    main()
