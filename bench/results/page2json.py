"""One-off: the rows of docs/benchmarks-dynamics.md (as committed) as a --merge JSON file."""
import json, re, sys
text = open(sys.argv[1]).read()
lines = text.splitlines()
def cells(l): return [c.strip() for c in l.strip().strip('|').split('|')]
refs, results = [], []
scene = None; loads = {}
cmd = re.search(r"by (`.*)$", lines[2]).group(1)
for i, l in enumerate(lines):
    m = re.match(r"## (released|shaken)$", l)
    if m: scene = m.group(1); continue
    m = re.match(r"n = (\d+): machine load .*?: ([\d.]+) to ([\d.]+)", l)
    if m and scene: loads[(scene, int(m.group(1)))] = (float(m.group(2)), float(m.group(3))); continue
    if l.startswith("| released |") or l.startswith("| shaken |"):
        c = cells(l)
        refs.append(dict(scene=c[0], n=int(c[1]), dt_galpha=float(c[2]), galpha_self=float(c[3]), dt_der=float(c[4]),
                         der_self=float(c[5]), der_vs_galpha=float(c[6]), der_window=2.0, cpu=float('nan')))
        continue
    if scene and re.match(r"\| \d+ \| ", l):
        c = cells(l)
        r = dict(scene=scene, n=int(c[0]), name=c[1], status=c[2], why=c[7])
        if c[3]: r["dt"] = float(c[3])
        if c[4]: r["rate"] = float(c[4])
        if c[6]: r["err"] = float(c[6])
        results.append(r)
seen = set()
for r in results:
    lo, hi = loads.get((r["scene"], r["n"]), (float('nan'),) * 2)
    r["load"] = hi if (r["scene"], r["n"]) in seen else lo
    seen.add((r["scene"], r["n"]))
json.dump(dict(command="(rows of the page as committed before 2026-12-06; its commands: " + cmd[:1500] + ")",
               machine="", budget=60.0, total_s=0.0, results=results, refs=refs), open(sys.argv[2], "w"), indent=1)
print(len(results), len(refs))
