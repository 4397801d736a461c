"""``rodlab validate``: every method against the independent analytic references.

A *case* is a function ``case(ctx) -> list[Row]`` registered with :func:`case`. It runs scenes
through :func:`rodlab.run_scene` (the public scene contract only) and compares their metrics with
references computed here from :mod:`rodlab.analytic` (never with numbers a scene reports about
itself, except where the reference is only available from the scene and the row says so).

Row status:

- ``pass`` / ``FAIL``: the measured value is / is not within the tolerance of the reference;
- ``not available``: the scene, method or parameter does not exist in this build (a scene still
  being written); reported, never counted as a failure, never counted as a pass;
- ``error``: the scene exists but raised, or broke the contract (missing metric): a failure.

:func:`run_validation` prints the table, writes ``validation.md`` and ``validation.json`` and the
cases' plots (``*.png``) into the output folder and returns True when nothing failed.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .io import jsonsafe

log = logging.getLogger(__name__)

PASS, FAIL, NA, ERROR = "pass", "FAIL", "not available", "error"

CANTILEVER_METHODS = ("der", "der-implicit", "compact", "galpha")
CANTILEVER_LOADS = (1e10, 1e8, 3e6)  # Young's modulus [Pa] with the scene's defaults: w L^3/EI = 0.039, 3.9, 131
CANTILEVER_LOADS_QUICK = (1e8, 3e6)
CANTILEVER_TOL = {50: 1e-2, 200: 3e-3}  # tip error / length (common.md)
CONVERGENCE_N = (12, 25, 50, 100, 200)
CONVERGENCE_N_QUICK = (12, 25, 50)
CONVERGENCE_E = 1e8
CONVERGENCE_MIN_ORDER = 0.8


@dataclass
class Row:
    """One line of the validation table."""

    case: str
    item: str
    reference: Any = None
    measured: Any = None
    error: float | None = None
    tolerance: Any = None
    status: str = NA
    note: str = ""

    @property
    def passed(self) -> bool | None:
        return {PASS: True, FAIL: False, ERROR: False}.get(self.status)


@dataclass
class Context:
    out_dir: Path
    quick: bool
    plots: list[Path] = field(default_factory=list)
    cache: dict = field(default_factory=dict)
    methods: tuple[str, ...] | None = None  # from --only CASE/METHOD: restrict the per-method cases
    echo: Callable[[str], None] = lambda s: None

    def methods_to_run(self) -> tuple[str, ...]:
        return tuple(m for m in CANTILEVER_METHODS if self.methods is None or m in self.methods)


@dataclass(frozen=True)
class Case:
    name: str
    summary: str
    fn: Callable[[Context], list[Row]]


CASES: dict[str, Case] = {}


def case(name: str, summary: str):
    """Decorator registering ``fn(ctx) -> list[Row]`` as validation case ``name``."""

    def deco(fn):
        CASES[name] = Case(name, summary, fn)
        return fn

    return deco


def compare(case_name: str, item: str, reference: float, measured: float, tolerance: float, *, relative: bool = False,
            note: str = "") -> Row:
    """Row for ``|measured - reference| (/ |reference|) <= tolerance``."""
    err = abs(float(measured) - float(reference))
    if relative:
        err /= abs(float(reference))
    ok = math.isfinite(err) and err <= tolerance
    return Row(case_name, item, float(reference), float(measured), err, tolerance, PASS if ok else FAIL, note)


# --------------------------------------------------------------------------------------------
# running scenes


class Unavailable(Exception):
    """The scene, method or parameter does not exist in this build."""


def _resolve(scene: str, params: dict) -> dict:
    from .scenes.registry import UnknownParameter, UnknownScene, get_scene

    try:
        return get_scene(scene).resolve(params)
    except (UnknownScene, UnknownParameter) as exc:
        raise Unavailable(str(exc)) from None


def _run(ctx: Context, scene: str, **params):
    """Run a scene once per parameter set (cached in ctx); raises :class:`Unavailable`."""
    from .scenes.registry import UnavailableCombination, UnknownParameter, UnknownScene, run_scene

    _resolve(scene, params)
    key = (scene, tuple(sorted(params.items())))
    if key in ctx.cache:
        return ctx.cache[key]
    t0 = time.perf_counter()
    try:
        result = run_scene(scene, **params)
    except (UnknownScene, UnknownParameter, UnavailableCombination) as exc:
        raise Unavailable(str(exc)) from None
    ctx.echo(f"  {scene} {' '.join(f'{k}={v}' for k, v in params.items())}: {time.perf_counter() - t0:.1f} s")
    ctx.cache[key] = result
    return result


def _metric(result, name: str):
    if name not in result.metrics:
        raise KeyError(f"scene did not report metric {name!r} (has: {', '.join(sorted(result.metrics))})")
    return result.metrics[name]


def _savefig(ctx: Context, fig, name: str) -> None:
    import matplotlib.pyplot as plt

    path = ctx.out_dir / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    ctx.plots.append(path)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------------------------------------------
# cases


@case("elastica-reference", "the elastica solver itself: small-load limit and an independent shooting solution")
def case_elastica_reference(ctx: Context) -> list[Row]:
    from .analytic.elastica import cantilever_elastica_shape, cantilever_elastica_tip
    from .analytic.elastica_shooting import shooting_cantilever_tip

    name = "elastica-reference"
    rows = []
    L, EI = 1.0, 1.0
    q = 1e-3  # w L^3 / EI: the nonlinear correction is O(q^2) ~ 1e-6 relative
    tip = cantilever_elastica_tip(L, EI, q)
    rows.append(compare(name, "q=1e-3: tip_z vs -w L^4/(8 EI)", -q / 8.0, tip[1], 1e-6, relative=True))
    tip = cantilever_elastica_tip(L, EI, 0.0, (0.0, -q))
    rows.append(compare(name, "p=1e-3: tip_z vs -P L^3/(3 EI)", -q / 3.0, tip[1], 1e-6, relative=True))
    r, rho, g = 0.01, 1000.0, 9.81  # the cantilever scene's defaults
    w = rho * math.pi * r**2 * g
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4))
    for E in CANTILEVER_LOADS:
        EI = E * math.pi * r**4 / 4.0
        tip = cantilever_elastica_tip(L, EI, w)
        ref = shooting_cantilever_tip(L, EI, w)
        err = float(np.hypot(*(tip - ref)))
        rows.append(Row(name, f"E={E:.0e} (wL^3/EI={w / EI:.3g}): tip vs shooting", _pair(ref), _pair(tip), err, 1e-9,
                        PASS if err <= 1e-9 else FAIL, "error / L"))
        sh = cantilever_elastica_shape(L, EI, w)
        ax.plot(sh["x"], sh["z"], label=f"E = {E:.0e} Pa")
        ax.plot(*ref, "k+")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("z [m]")
    ax.set_title("cantilever elastica (+: shooting tip)")
    ax.legend(fontsize=8)
    _savefig(ctx, fig, "elastica-reference.png")
    return rows


def _pair(v) -> str:
    return f"({v[0]:.6f}, {v[1]:.6f})"


def _cantilever_reference(values: dict) -> np.ndarray:
    from .analytic.elastica import cantilever_elastica_tip

    EI = values["E"] * math.pi * values["radius"] ** 4 / 4.0
    w = values["rho"] * math.pi * values["radius"] ** 2 * values["g"]
    return cantilever_elastica_tip(values["length"], EI, w)


def _cantilever_error(ctx: Context, method: str, n: int, E: float) -> tuple[float, np.ndarray, np.ndarray, Any]:
    params = dict(method=method, n=n, E=E, static=True)
    values = _resolve("cantilever", params)
    result = _run(ctx, "cantilever", **params)
    tip = np.array([float(_metric(result, "tip_x")), float(_metric(result, "tip_z"))])
    ref = _cantilever_reference(values)
    return float(np.hypot(*(tip - ref)) / values["length"]), ref, tip, result


@case("cantilever", "static cantilever under gravity vs the planar elastica, every method, n = 50 and 200")
def case_cantilever(ctx: Context) -> list[Row]:
    from .analytic.elastica import cantilever_elastica_shape

    rows = []
    ns = (50,) if ctx.quick else (50, 200)
    loads = CANTILEVER_LOADS_QUICK if ctx.quick else CANTILEVER_LOADS
    shapes = {}
    for method in ctx.methods_to_run():
        name = f"cantilever/{method}"
        for n in ns:
            for E in loads:
                item = f"n={n} E={E:.0e}: tip error / L"
                try:
                    err, ref, tip, result = _cantilever_error(ctx, method, n, E)
                except Unavailable as exc:
                    rows.append(Row(name, f"method {method}", status=NA, note=str(exc)))
                    break
                except Exception as exc:  # noqa: BLE001 - reported as an error row
                    rows.append(Row(name, item, status=ERROR, note=f"{type(exc).__name__}: {exc}"))
                    continue
                tol = CANTILEVER_TOL[n]
                rows.append(Row(name, item, _pair(ref), _pair(tip), err, tol, PASS if err <= tol else FAIL))
                x = np.asarray(result.trajectory.get("x", []))
                if n == ns[-1] and x.ndim == 3:
                    shapes[(method, E)] = x[-1]
            else:
                continue
            break
    if shapes:
        plt = _pyplot()
        fig, axes = plt.subplots(1, len(loads), figsize=(4.2 * len(loads), 4.2), squeeze=False)
        for ax, E in zip(axes[0], loads):
            values = _resolve("cantilever", dict(E=E))
            EI = values["E"] * math.pi * values["radius"] ** 4 / 4.0
            w = values["rho"] * math.pi * values["radius"] ** 2 * values["g"]
            ref = cantilever_elastica_shape(values["length"], EI, w, n=400)
            ax.plot(ref["x"], ref["z"], "k-", lw=4, alpha=0.25, label="elastica")
            for (method, E_m), x in shapes.items():
                if E_m == E:
                    ax.plot(x[:, 0], x[:, 2], ".-", ms=2.5, lw=0.8, label=method)
            ax.set_xlim(-0.05, 1.05)
            ax.set_ylim(-1.05, 0.1)
            ax.set_aspect("equal")
            ax.set_xlabel("x [m]")
            ax.set_title(f"E = {E:.0e} Pa (wL^3/EI = {w / EI:.3g}), n = {ns[-1]}", fontsize=9)
        axes[0][0].set_ylabel("z [m]")
        axes[0][0].legend(fontsize=8, loc="lower left")
        _savefig(ctx, fig, "cantilever-shapes.png")
    return rows


def observed_order(ns, errors) -> float:
    """Least-squares slope ``p`` of ``log error = a - p log n``."""
    ln = np.log(np.asarray(ns, dtype=float))
    le = np.log(np.asarray(errors, dtype=float))
    return float(-np.polyfit(ln, le, 1)[0])


@case("convergence", "cantilever tip error vs n for each method: observed order")
def case_convergence(ctx: Context) -> list[Row]:
    rows = []
    ns = CONVERGENCE_N_QUICK if ctx.quick else CONVERGENCE_N
    curves = {}
    for method in ctx.methods_to_run():
        name = f"convergence/{method}"
        errs = []
        try:
            for n in ns:
                errs.append(_cantilever_error(ctx, method, n, CONVERGENCE_E)[0])
        except Unavailable as exc:
            rows.append(Row(name, f"method {method}", status=NA, note=str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001
            rows.append(Row(name, "tip error vs n", status=ERROR, note=f"{type(exc).__name__}: {exc}"))
            continue
        if min(errs) <= 0:
            rows.append(Row(name, "observed order", status=ERROR, note="zero error: cannot fit an order"))
            continue
        p = observed_order(ns, errs)
        pair = [math.log(errs[i] / errs[i + 1]) / math.log(ns[i + 1] / ns[i]) for i in range(len(ns) - 1)]
        note = "n=" + ",".join(map(str, ns)) + " err/L=" + ",".join(f"{e:.2e}" for e in errs) + " pairwise=" + ",".join(f"{v:.2f}" for v in pair)
        rows.append(Row(name, f"observed order (E={CONVERGENCE_E:.0e})", f">= {CONVERGENCE_MIN_ORDER}", p, None,
                        CONVERGENCE_MIN_ORDER, PASS if p >= CONVERGENCE_MIN_ORDER else FAIL, note))
        curves[method] = errs
    if curves:
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(5, 4))
        for method, errs in curves.items():
            ax.loglog(ns, errs, "o-", label=f"{method} (order {observed_order(ns, errs):.2f})")
        nn = np.array([ns[0], ns[-1]], dtype=float)
        e0 = max(e[0] for e in curves.values())
        ax.loglog(nn, e0 * (nn / nn[0]) ** -1, "k:", lw=0.8, label="order 1")
        ax.loglog(nn, e0 * (nn / nn[0]) ** -2, "k--", lw=0.8, label="order 2")
        ax.set_xlabel("vertices n")
        ax.set_ylabel("tip error / length")
        ax.set_title(f"cantilever convergence, E = {CONVERGENCE_E:.0e} Pa, static")
        ax.legend(fontsize=8)
        _savefig(ctx, fig, "convergence.png")
    return rows


@case("helical-buckling", "localized helical buckling (Bergou et al. 2008 Fig. 7): phi0 and the tanh^2 envelope")
def case_helical(ctx: Context) -> list[Row]:
    from .analytic.helical_buckling import helical_buckling_theory

    name = "helical-buckling"
    try:
        values = _resolve(name, {})
        result = _run(ctx, name)
    except Unavailable as exc:
        return [Row(name, "scene", status=NA, note=str(exc))]
    rows = []
    theory = helical_buckling_theory(values["L"], values["alpha"], values["beta"], values["turns"], values["shortening"])
    try:
        phi0 = float(_metric(result, "phi0"))
        rows.append(compare(name, "phi0 vs theory (computed here)", theory.phi0, phi0, 0.03, relative=True))
        rows.append(compare(name, "scene's phi0_theory vs theory here", theory.phi0, float(_metric(result, "phi0_theory")),
                            1e-6, relative=True))
        env_err = float(_metric(result, "envelope_error"))
        rows.append(compare(name, "envelope_error (scene)", 0.0, env_err, 0.05))
    except KeyError as exc:
        rows.append(Row(name, "metrics", status=ERROR, note=str(exc)))
    x = np.asarray(result.trajectory.get("x", []))
    curves = []  # (n, s/s*, f) for the plot
    if x.ndim == 3:
        err, sc, fc = _helical_envelope_error(x[-1], theory)
        if err is not None:
            rows.append(compare(name, "envelope error from the final centerline (computed here)", 0.0, err, 0.05,
                                note=f"max |f - tanh^2| over |s| <= 3 s*, s* = {theory.s_star:.4g}"))
            curves.append((x.shape[1], sc, fc))
    # full mode: refinement study as in Fig. 7 (phi0 and the envelope at coarser n)
    if not ctx.quick:
        ns = sorted({max(20, values["n"] // 4), max(20, values["n"] // 2), values["n"]})
        errs = []
        try:
            for n in ns:
                res_n = result if n == values["n"] else _run(ctx, name, n=n)
                errs.append(abs(float(_metric(res_n, "phi0")) - theory.phi0) / theory.phi0)
                xn = np.asarray(res_n.trajectory.get("x", []))
                if n != values["n"] and xn.ndim == 3:
                    _, sc, fc = _helical_envelope_error(xn[-1], theory)
                    if sc is not None:
                        curves.append((xn.shape[1], sc, fc))
        except KeyError as exc:
            rows.append(Row(name, "refinement", status=ERROR, note=str(exc)))
        else:
            if min(errs) > 0:
                p = observed_order(ns, errs)
                rows.append(Row(name, "phi0 convergence order", f">= {CONVERGENCE_MIN_ORDER}", p, None, CONVERGENCE_MIN_ORDER,
                                PASS if p >= CONVERGENCE_MIN_ORDER else FAIL,
                                "n=" + ",".join(map(str, ns)) + " rel err=" + ",".join(f"{e:.2e}" for e in errs)))
    if curves:
        from .analytic.helical_buckling import helical_envelope as _env

        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ss = np.linspace(-3, 3, 301)
        ax.plot(ss, _env(ss * theory.s_star, theory), "k-", label="analytical")
        for n, sc, fc in sorted(curves, key=lambda c: c[0]):
            ax.plot(sc, fc, ".", ms=3, label=f"n = {n}")
        ax.set_xlabel("s / s*")
        ax.set_ylabel("f(phi)")
        ax.set_title(f"localized helical buckling, phi0 theory {theory.phi0:.3f}")
        ax.legend(fontsize=8)
        _savefig(ctx, fig, "helical-buckling.png")
    return rows


def _helical_envelope_error(xc: np.ndarray, theory):
    """(max |f - tanh^2| over |s| <= 3 s*, s/s*, f) of a centerline whose clamps lie on its end axis."""
    from .analytic.helical_buckling import envelope_from_centerline, helical_envelope

    env = envelope_from_centerline(xc, xc[-1] - xc[0])
    mask = np.abs(env["s"]) <= 3.0 * theory.s_star
    if not np.any(mask):
        return None, None, None
    err = float(np.max(np.abs(env["f"][mask] - helical_envelope(env["s"][mask], theory))))
    return err, env["s"][mask] / theory.s_star, env["f"][mask]


@case("michell", "Michell's instability of a twisted ring: stable at 0.8x, unstable at 1.25x the critical twist")
def case_michell(ctx: Context) -> list[Row]:
    from .analytic.classic import michell_critical_twist

    name = "michell"
    try:
        values = _resolve(name, {})
        alpha, beta = values["alpha"], values["beta"]
        rows = []
        crit = michell_critical_twist(alpha, beta)
        note = "critical twist 2 pi sqrt(3) alpha/beta computed here"
        for frac, expect in ((0.8, True), (1.25, False)):
            res = _run(ctx, name, twist=frac * crit)
            stable = bool(_metric(res, "stable"))
            rows.append(Row(name, f"twist = {frac} x critical ({frac * crit:.4g} rad): stable", expect, stable, None, "equal",
                            PASS if stable == expect else FAIL, note))
            if frac == 0.8:
                rows.append(compare(name, "scene's critical_twist_theory vs 2 pi sqrt(3) alpha/beta", crit,
                                    float(_metric(res, "critical_twist_theory")), 1e-9, relative=True))
        return rows
    except Unavailable as exc:
        return [Row(name, "scene", status=NA, note=str(exc))]
    except KeyError as exc:
        return [Row(name, "metrics", status=ERROR, note=str(exc))]


@case("uniform-twist", "straight isotropic rod clamped at both ends: uniform twist (DER Eq. 5)")
def case_uniform_twist(ctx: Context) -> list[Row]:
    name = "uniform-twist"
    try:
        res = _run(ctx, name)
        dev = float(_metric(res, "max_twist_deviation"))
    except Unavailable as exc:
        return [Row(name, "scene", status=NA, note=str(exc))]
    except KeyError as exc:
        return [Row(name, "metrics", status=ERROR, note=str(exc))]
    return [compare(name, "max |twist - (theta_n - theta_0)/L| / mean twist", 0.0, dev, 1e-6,
                    note="relative deviation reported by the scene")]


# --------------------------------------------------------------------------------------------
# table


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


COLUMNS = ("case", "item", "reference", "measured", "error", "tolerance", "status")


def format_table(rows: list[Row]) -> str:
    """Aligned plain-text table (notes on continuation lines)."""
    cells = [COLUMNS] + [tuple(_fmt(getattr(r, c)) for c in COLUMNS) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    lines = []
    for k, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
        elif rows[k - 1].note:
            lines.append(" " * (widths[0] + 2) + "  " + rows[k - 1].note)
    return "\n".join(lines)


def format_markdown(rows: list[Row], summary: dict, plots: list[Path]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    out = ["# rodlab validation", "",
           f"{summary['passed']} passed, {summary['failed']} failed, {summary['errors']} errors, "
           f"{summary['not_available']} not available; {summary['wall_s']:.1f} s"
           f"{' (quick)' if summary['quick'] else ''}.", "",
           "| " + " | ".join(COLUMNS + ("note",)) + " |", "|" + "---|" * (len(COLUMNS) + 1)]
    for r in rows:
        out.append("| " + " | ".join(esc(_fmt(getattr(r, c))) for c in COLUMNS + ("note",)) + " |")
    if plots:
        out += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(out) + "\n"


def _json_value(v):
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def run_validation(out_dir: Path, only: list[str] | None = None, quick: bool = False, *,
                   cases: dict[str, Case] | None = None, echo: Callable[[str], None] = print, html: bool = False) -> bool:
    """Run the registered cases (those whose name contains one of ``only``), print the table and
    write ``validation.md``, ``validation.json`` and plots to ``out_dir`` (and, with ``html``,
    ``validation.html``: every row and its case's figures on one self-contained page,
    :mod:`rodlab.validate_html`).

    ``only`` items of the form ``CASE/METHOD`` (e.g. ``cantilever/galpha``) select case ``CASE``
    restricted to that method (for the per-method cases ``cantilever`` and ``convergence``).

    Returns True when no row failed or errored ("not available" rows do not count). ``cases``
    replaces the registry (tests); ``echo`` receives the printed text.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    registry = CASES if cases is None else cases
    methods = None
    if only:
        subs = [o.split("/", 1) for o in only if "/" in o]
        if subs:
            methods = tuple(m for _, m in subs)

    def matches(c):
        return not only or any(o in c.name or o.split("/", 1)[0] == c.name for o in only)

    selected = [c for c in registry.values() if matches(c)]
    if not selected:
        raise SystemExit(f"rodlab validate: no case matches --only {only}; cases: {', '.join(registry)}")
    ctx = Context(out_dir=out_dir, quick=quick, methods=methods, echo=echo)
    rows: list[Row] = []
    t0 = time.perf_counter()
    for c in selected:
        tc = time.perf_counter()
        try:
            new = c.fn(ctx)
        except Unavailable as exc:
            new = [Row(c.name, "case", status=NA, note=str(exc))]
        except Exception as exc:  # noqa: BLE001 - a crashing case is an error row, the others still run
            log.exception("validation case %s crashed", c.name)
            new = [Row(c.name, "case", status=ERROR, note=f"{type(exc).__name__}: {exc}")]
        rows.extend(new)
        echo(f"[{c.name}] {len(new)} rows in {time.perf_counter() - tc:.1f} s")
    summary = {
        "passed": sum(r.status == PASS for r in rows),
        "failed": sum(r.status == FAIL for r in rows),
        "errors": sum(r.status == ERROR for r in rows),
        "not_available": sum(r.status == NA for r in rows),
        "wall_s": time.perf_counter() - t0,
        "quick": bool(quick),
        "cases": [c.name for c in selected],
    }
    summary["ok"] = summary["failed"] == 0 and summary["errors"] == 0
    echo("")
    echo(format_table(rows))
    echo("")
    echo(f"{summary['passed']} passed, {summary['failed']} failed, {summary['errors']} errors, "
         f"{summary['not_available']} not available ({summary['wall_s']:.1f} s); results in {out_dir}")
    (out_dir / "validation.md").write_text(format_markdown(rows, summary, ctx.plots))
    if html:
        from .validate_html import format_html

        (out_dir / "validation.html").write_text(format_html(rows, summary, ctx.plots, columns=COLUMNS, fmt=_fmt))
    payload = {"summary": summary, "rows": [{k: _json_value(v) for k, v in asdict(r).items()} | {"pass": r.passed} for r in rows],
               "plots": [p.name for p in ctx.plots]}
    (out_dir / "validation.json").write_text(jsonsafe.dumps(payload, indent=2, default=str))
    return bool(summary["ok"])
