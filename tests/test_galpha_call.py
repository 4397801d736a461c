"""galpha's compiled call (issue #13 item 3, docs/galpha.md "Per-call cost"): whole steps in one
compiled call (rodlab.galpha.stepping.advance_steps) with the boundary rows made in Python. K
calls of one step equal one call of K steps bit for bit (time-dependent boundaries, pinned root,
substeps, two rods), the compiled run equals the per-step Python loop, edits of the state between
calls are honoured, and a failure reports the same step and leaves the state as it was. The
common fields are left to their first read (State.defer): never read stale, bitwise as written."""
import math

import numpy as np
import pytest

from rodlab.galpha.boundary import Boundary, RootMotion, TipLoad
from rodlab.galpha.solver import _time_independent
from rodlab.model import SimulationError
from rodlab.solvers import make_simulator
from rodlab.world import WorldBuilder, shapes

MAT = dict(E=1e7, G=1e7 / 3, rho=1000.0, radius=0.01)
COMMON = ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist")


def world(kind="clamped", n=10, copies=1):
    b = WorldBuilder(gravity=(0.0, 0.0, -9.81), damping=1.0)
    for k in range(copies):
        r = b.add_rod(shapes.straight(n + 2 * k, 1.0, start=(0.0, 0.2 * k, 0.0)), **MAT,
                      rest_d1=np.tile([0.0, 1.0, 0.0], (n + 2 * k - 1, 1)))
        if kind == "pinned":
            b.pin(r, 0)
        elif kind == "moving":
            def motion(t):  # turning about z and sliding along y
                c, s = math.cos(0.5 * t), math.sin(0.5 * t)
                return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), np.array([0.0, 0.1 * t, 0.0])
            b.clamp(r, "start", motion=motion)
            b.add_point_force(r, n + 2 * k - 1, lambda t: np.array([0.0, 0.0, 0.01 * math.sin(3.0 * t)]))
        else:
            b.clamp(r, "start")
    return b.build()


def _equal(a, b, factors=True):
    assert a.t == b.t
    for name in COMMON:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.solver.keys() == b.solver.keys()
    for key in a.solver:
        if factors or not key.startswith("lu_"):
            assert np.array_equal(a.solver[key], b.solver[key]), key


@pytest.mark.parametrize("kind, copies, options", [("clamped", 1, {}), ("pinned", 1, {}), ("moving", 1, {}),
                                                   ("clamped", 2, {}), ("clamped", 1, {"init": "paper"}),
                                                   ("clamped", 1, {"max_iter": 6, "dt": 0.05})],
                         ids=["clamped", "pinned-root", "moving-clamp-timed-force", "two-rods", "paper-init", "substeps"])
def test_k_single_calls_equal_one_k_step_call_bitwise(kind, copies, options):
    sim = make_simulator(world(kind, copies=copies), "galpha", **{"dt": 0.02, **options})
    start = sim.initial_state()
    a, b = start.copy(), start.copy()
    for _ in range(12):
        sim.advance(a, 1)
    sim.advance(b, 12)
    assert np.abs(a.vertex_x - start.vertex_x).max() > 1e-3  # it moved
    _equal(a, b)
    if "max_iter" in options:
        assert a.solver["substeps"][0] > 0  # the Python substep retries ran inside both
    assert sim.solvers[0]._boundary_row is None if kind == "moving" else sim.solvers[0]._boundary_row.shape == (1, 22)


def test_the_compiled_run_is_the_per_step_loop():
    """GAlphaSolver.advance (compiled steps, Python substeps) against step_robust step by step:
    bitwise the same state, iterations, factorizations and substeps."""
    sims = [make_simulator(world(), "galpha", dt=0.05, max_iter=6) for _ in range(2)]
    states = [s._views(s.initial_state(), 0) for s in sims]
    fast, slow = sims[0].solvers[0], sims[1].solvers[0]
    done, res = fast.advance(states[0], 0.05, 10)
    for _ in range(10):
        last = slow.step_robust(states[1], 0.05)
    assert done == 10 and res == last and fast.substeps == slow.substeps > 0
    for name in ("x", "xdot", "R", "r", "r_vel"):
        assert np.array_equal(getattr(states[0], name), getattr(states[1], name)), name
    assert states[0].t == states[1].t and states[0].step == states[1].step
    for name in ("total_iterations", "factorizations", "total_steps"):
        assert getattr(fast, name) == getattr(slow, name), name


@pytest.mark.parametrize("edit", ["in-place", "new-array", "time"])
def test_an_edited_state_between_calls_is_honoured(edit):
    """The simulator keeps views of the last state's arrays (``_bound_views``) and a moving
    clamp's boundary rows are made from ``state.t``: an edit between calls -- in place, a new
    array in ``state.solver`` or a new time -- steps exactly as a fresh simulator steps the
    edited state. Fails if the views were reused without checking they are the state's arrays."""
    kind = "moving" if edit == "time" else "clamped"
    sim = make_simulator(world(kind), "galpha", dt=0.02)
    state = sim.initial_state()
    sim.advance(state, 5)
    if edit == "in-place":
        state.solver["x"][4, 6:9] += (0.5, -0.3, 0.2)  # a kink in the curvature
    elif edit == "new-array":
        x = state.solver["x"].copy()
        x[4, 6:9] += (0.5, -0.3, 0.2)
        state.solver["x"] = x
    else:
        state.t += 0.37
    edited = state.copy()
    sim.advance(state, 3)
    fresh = make_simulator(world(kind), "galpha", dt=0.02)
    fresh.advance(edited, 3)
    _equal(state, edited)
    untouched = make_simulator(world(kind), "galpha", dt=0.02)
    plain = untouched.initial_state()
    untouched.advance(plain, 8)
    assert np.abs(plain.vertex_x - state.vertex_x).max() > 1e-6  # the edit mattered


def test_a_failure_reports_the_same_step_and_keeps_the_state():
    """Newton failing at the 18th step (max_iter 8, no substeps): one call of 24 steps reports
    step 18 and leaves the state as it was (the chord Newton's LU factors excepted: valid for what
    ``lu_meta`` says); calls of one step fail at the same step, the state at the 17th."""
    sim = make_simulator(world(n=12), "galpha", dt=0.08, max_iter=8, substeps=0)
    start = sim.initial_state()
    long_call = start.copy()
    with pytest.raises(SimulationError, match=r"rod 0, step 18 of this call: Newton did not converge") as err:
        sim.advance(long_call, 24)
    assert not err.value.report.success
    _equal(long_call, start, factors=False)
    split = start.copy()
    with pytest.raises(SimulationError, match=r"rod 0, step 1 of this call: .*\(t = 1\.36 s"):
        for _ in range(24):
            sim.advance(split, 1)
    assert split.solver["step"][0] == 17 and split.t == pytest.approx(17 * 0.08, rel=1e-14)


def test_boundaries_are_static_only_without_functions_of_time():
    assert _time_independent(Boundary())
    assert _time_independent(Boundary(RootMotion((0.0, 0.1, 0.0)), TipLoad(force=(0.0, 0.0, -1.0))))
    assert not _time_independent(Boundary(RootMotion(lambda t: (0.0, t, 0.0))))
    assert not _time_independent(Boundary(tip=TipLoad(torque=lambda t: (0.0, 0.0, t))))
    assert not _time_independent(Boundary(tip=lambda t: TipLoad()))


def test_public_kernels_are_python_callable():
    """galpha's inner kernels are compiled without the CPython wrapper (JIT_INNER; a Python call of
    one crashes the interpreter), so none may sit under a public name: every public numba dispatcher
    of the galpha modules has its wrapper, and each inner kernel with a Python entry shares its code."""
    import importlib

    from numba.core.registry import CPUDispatcher

    from rodlab.linalg.banded_lu import block_lu
    inner_seen = 0
    for name in ("rodlab.galpha.residual", "rodlab.galpha.newton", "rodlab.galpha.state", "rodlab.galpha.stepping", "rodlab.galpha.batch",
                 "rodlab.solvers.galpha", "rodlab.linalg.banded_lu"):
        mod = importlib.import_module(name)
        for attr, value in vars(mod).items():
            if not isinstance(value, CPUDispatcher):
                continue
            inner = bool(value.targetoptions.get("no_cpython_wrapper"))
            assert not (inner and not attr.startswith("_")), f"{name}.{attr} is an inner kernel under a public name"
            entry = getattr(mod, attr.lstrip("_"), None) if inner else None
            if isinstance(entry, CPUDispatcher) and entry is not value:
                assert entry.py_func.__code__ is value.py_func.__code__, f"{name}.{attr.lstrip('_')}"
                inner_seen += 1
    assert inner_seen >= 10  # e.g. residual_blocks, newton_kernel, integrate_frames, edge_d1_from_nodes
    for kernel in block_lu(15, 9, 6):
        assert not kernel.targetoptions.get("no_cpython_wrapper")


def test_the_world_call_is_the_per_rod_loop_bitwise():
    """rodlab.galpha.batch.advance_rods steps every rod in one compiled call: the state, the
    diagnostics and the solvers' counters equal a loop of GAlphaSolver.advance over the rods (the
    per-rod path of the simulator before it), with a middle rod retried in substeps (its later
    rods then stepped by a second compiled call)."""
    options = {"dt": 0.06, "max_iter": 7, "substeps": 2}
    fast = make_simulator(world(copies=3), "galpha", **options)
    slow = make_simulator(world(copies=3), "galpha", **options)
    a, b = fast.initial_state(), slow.initial_state()
    report = fast.advance(a, 30)
    newton, residual = 0, 0.0
    views = [slow._views(b, r) for r in range(3)]
    for r, (sol, gs) in enumerate(zip(slow.solvers, views)):
        it0, sub0 = sol.total_iterations, sol.substeps
        done, res = sol.advance(gs, 0.06, 30, 2)
        assert done == 30 and res.success
        newton, residual = newton + sol.total_iterations - it0, max(residual, res.residual)
        b.solver["step"][r], b.solver["last_residual"][r] = gs.step, res.residual
        b.solver["last_newton_iters"][r] = res.iterations
        b.solver["substeps"][r] += sol.substeps - sub0
    b.t = views[-1].t
    slow._write_common(b, *slow._packed_state(b))
    assert a.solver["substeps"].sum() > 0  # the retry path ran
    _equal(a, b)
    assert report.newton_iters == newton and report.residual == residual
    for name in ("total_iterations", "factorizations", "total_steps", "substeps"):
        assert [getattr(s, name) for s in fast.solvers] == [getattr(s, name) for s in slow.solvers], name


def test_packed_state_fields_stay_honest(tmp_path):
    """A galpha state's ``solver`` dict holds views of two buffers (rodlab.galpha.batch.SolverFields)
    and is checked in a few attribute reads: an entry replaced or updated through the dict marks it
    changed (the next call packs the state anew), copies and pickles are plain dicts, and every
    such state steps exactly as the original."""
    import pickle

    from rodlab.galpha.batch import SolverFields
    from rodlab.world import State

    sim = make_simulator(world(copies=2), "galpha", dt=0.02)
    state = sim.initial_state()
    sim.advance(state, 4)
    assert type(state.solver) is SolverFields and state.solver.intact
    assert state.solver["x"].base is state.solver.sfb and state.solver["step"].base is state.solver.sib
    reference = state.copy()
    assert type(reference.solver) is dict and type(pickle.loads(pickle.dumps(state.solver))) is dict
    sim.advance(reference, 3)
    state.save(tmp_path / "s.npz")
    for edit in ("copy", "replace", "update", "pickle", "file"):
        s = pickle.loads(pickle.dumps(state)) if edit == "pickle" else State.load(tmp_path / "s.npz") \
            if edit == "file" else state.copy()
        if edit in ("replace", "update"):
            sim._packed_state(s)
            assert type(s.solver) is SolverFields and s.solver.intact
            if edit == "replace":
                s.solver["xdot"] = s.solver["xdot"].copy()
            else:
                s.solver.update(R=s.solver["R"].copy())
            assert not s.solver.intact
        sim.advance(s, 3)
        assert type(s.solver) is SolverFields and s.solver.intact, edit
        _equal(s, reference)


CALLS = (1, 1, 3, 1, 7, 1, 1, 20)


@pytest.mark.parametrize("kind, copies, options", [("clamped", 2, {}), ("moving", 1, {}),
                                                   ("clamped", 3, {"max_iter": 8, "dt": 0.08, "substeps": 0}),
                                                   ("clamped", 2, {"max_iter": 7, "dt": 0.06, "substeps": 2})],
                         ids=["two-rods", "moving-clamp", "failing-calls", "substeps"])
def test_deferred_common_fields_read_as_if_written_by_every_call(kind, copies, options):
    """A call leaves the common fields to their first read (State.defer; docs/galpha.md): a state
    never read between calls ends bitwise where a state read after every call ends, failed calls
    (the rods put back) and substep retries included."""
    from rodlab.model import ModelError

    sim = make_simulator(world(kind, n=12, copies=copies), "galpha", **{"dt": 0.02, **options})
    start = sim.initial_state()
    lazy, read = start.copy(), start.copy()
    outcomes, deferred = [], 0
    for calls in CALLS:
        got = []
        for s in (lazy, read):
            try:
                sim.advance(s, calls)
                got.append("ok")
            except (SimulationError, ModelError) as exc:
                got.append(str(exc))
        deferred += lazy.deferred_by(sim) is not None
        read.copy()  # a read: fills
        assert read.deferred_by(sim) is None
        assert got[0] == got[1]
        outcomes.append(got[0])
    assert deferred >= 4
    if "substeps" in options and options["substeps"] == 0:
        assert outcomes.count("ok") not in (0, len(CALLS))  # failures and successes both ran
    _equal(lazy, read)


def test_an_edit_after_a_read_is_honoured():
    """The documented way to edit a state by hand (docs/world.md "The state"): read, edit in place,
    ``state.method = ""``. Reading any common field fills them all as the call would have written
    them, so the frames are not recomputed from the edited positions; galpha then refuses the
    state (it starts only from its own unknowns) and another method starts from exactly the
    edited arrays, as from a state that was never deferred."""
    from rodlab.model import ModelError
    from rodlab.world import State

    w = world(n=12)
    sim = make_simulator(w, "galpha", dt=0.02)
    state = sim.initial_state()
    sim.advance(state, 5)
    eager = state.copy()  # filled: what the call wrote
    sim.advance(state, 1)
    sim.advance(eager, 1)
    assert state.deferred_by(sim) is not None
    x = state.vertex_x  # the read fills every common field
    assert state.deferred_by(sim) is None
    x[-1] += (0.0, 0.01, -0.02)
    x[5] += (0.003, 0.0, 0.0)
    for name in COMMON[1:]:
        assert np.array_equal(getattr(state, name), getattr(eager, name)), name  # not from the edited positions
    state.method, state.solver = "", {}
    with pytest.raises(ModelError, match="starts only from a galpha state"):
        sim.advance(state, 1)
    plain = State(state.t, *(np.array(state.__dict__[name]) for name in
                             ("vertex_x", "vertex_v", "edge_theta", "edge_ref_d1", "joint_ref_twist", "body_x", "body_q",
                              "body_v", "body_w", "rod_vertex_start", "rod_edge_start", "rod_joint_start", "rod_closed")))
    der = make_simulator(w, "der")
    der.advance(state, 3)
    make_simulator(w, "der").advance(plain, 3)
    for name in COMMON:
        assert np.array_equal(getattr(state, name), getattr(plain, name)), name


def test_a_repacked_state_fills_from_the_call_that_deferred():
    """A state whose ``solver`` entry was replaced after an unread call is packed anew at the next
    call; the pending fill (which reads the old buffers) runs first, so the fields equal those of
    a state read after every call."""
    sim = make_simulator(world(copies=2), "galpha", dt=0.02)
    lazy = sim.initial_state()
    read = lazy.copy()
    for s in (lazy, read):
        sim.advance(s, 3)
    read.copy()
    for s in (lazy, read):
        s.solver["x"] = s.solver["x"].copy()
        sim.advance(s, 2)
    _equal(lazy, read)
