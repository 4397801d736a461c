"""The one recording loop: advance a simulator in chunks, keep frames, time the stepping.

Every scene, scene file and benchmark that steps a :class:`rodlab.solvers.Simulator` goes through
:func:`record`, so ``us_per_step``, ``newton_iters`` and frames mean the same everywhere
(definitions in :mod:`rodlab.metrics`).
"""
from __future__ import annotations

import contextlib
import math
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from . import metrics


@dataclass
class Recording:
    """Frames ``t`` (F,) [s] and ``x`` (F, N, 3) [m] (the initial state is frame 0), steps taken,
    stepping wall time ``wall_s`` [s] (compilation excluded), nonlinear and linear iterations
    summed, per-frame ``probes`` (name -> array), and the contact bookkeeping of the steps
    (:class:`rodlab.solvers.base.StepReport`).

    ``edge_m1`` (F, E, 3) float32: the material director m1 of every edge per frame
    (:meth:`rodlab.world.State.material_frames`), so pictures, animations and the viewer show the
    twist (``trajectory.npz`` key ``edge_m1``, docs/pictures.md). ``failed_calls``: ``advance``
    calls whose report said ``success`` false (the last one's ``failure_message``);
    ``residual_max``: the largest last-step residual of the calls (method's norm); ``tallies``:
    name -> sum over the calls of ``record``'s ``tallies`` functions."""

    t: np.ndarray
    x: np.ndarray
    steps: int
    wall_s: float
    newton_iters: int
    linear_iters: int
    probes: dict = field(default_factory=dict)
    contact_min_gap: float = math.inf
    contacts_sum: int = 0
    contacts_max: int = 0
    edge_m1: np.ndarray | None = None
    failed_calls: int = 0
    failure_message: str = "ok"
    residual_max: float = 0.0
    tallies: dict = field(default_factory=dict)

    def contact_summary(self) -> dict:
        """``min_gap``, ``mean_contacts``, ``max_contacts`` of the run (rodlab.metrics)."""
        return metrics.contact_summary(self.contact_min_gap, self.contacts_sum, self.contacts_max, self.steps)

    def summary(self, n_vertices: int) -> dict:
        """The shared timing metrics of a run (rodlab.metrics)."""
        return {
            "steps": int(self.steps),
            "us_per_step": metrics.us_per_step(self.wall_s, self.steps),
            "us_per_vertex_step": metrics.us_per_vertex_step(self.wall_s, self.steps, n_vertices),
            "newton_iters": metrics.newton_iters_per_step(self.newton_iters, self.steps),
        }


_M1_OF_X: dict = {}
"""``id(x)`` -> (weak reference to a recording's ``x``, its ``edge_m1``): :func:`recorded_m1`."""


def _remember_m1(x: np.ndarray, m1: np.ndarray) -> None:
    key = id(x)
    _M1_OF_X[key] = (weakref.ref(x, lambda _ref, key=key: _M1_OF_X.pop(key, None)), m1)


def recorded_m1(x) -> np.ndarray | None:
    """The per-frame material directors ``edge_m1`` (F, E, 3) recorded with the frames ``x`` of a
    :class:`Recording` (the very array object: a scene that hands ``run.x`` on unchanged), else
    None. The run folder's writer (:func:`rodlab.io.outputs.write_scene_outputs`) stores them
    beside the positions."""
    entry = _M1_OF_X.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    return entry[1]


def edge_m1_of(state) -> np.ndarray:
    """Material directors m1 (E, 3) of ``state`` as float32 (one recorded frame); (0, 3) for a
    state without edges or material frames (a stand-in state of a test)."""
    theta = getattr(state, "edge_theta", None)
    if theta is None or theta.shape[0] == 0 or not hasattr(state, "material_frames"):
        return np.zeros((0, 3), dtype=np.float32)
    m1, _ = state.material_frames()
    return m1.astype(np.float32)


def warm_up(sim, state) -> None:
    """Compile the simulator's kernels outside any timing: one step on a copy of ``state``
    (simulators keep no history outside the state, so this changes nothing). A step that fails
    here is not reported: the same step fails again in the run, which then reports it with the
    frames up to there."""
    from . import runctl
    from .model import SimulationError

    c0, t0 = runctl.compile_seconds(), time.perf_counter()
    try:
        sim.advance(state.copy(), 1)
    except SimulationError:
        return
    took = time.perf_counter() - t0 - (runctl.compile_seconds() - c0)
    with contextlib.suppress(TypeError):
        _STEP_S[sim] = max(took, 0.0)


_STEP_S: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
"""Wall time of the warm-up step per simulator [s] (compilation excluded): sizes the first call
of :func:`record` (an upper bound: it includes loading kernels from the cache)."""


def _known_step_seconds(sim) -> float | None:
    for s in (sim, getattr(sim, "sim", None)):  # a wrapper (a scene's tap) around a simulator
        with contextlib.suppress(TypeError):
            if s is not None and s in _STEP_S:
                return _STEP_S[s]
    return None


def _probe_seconds_per_step(sim, state) -> float | None:
    """Wall time of one step [s], measured on copies of ``state`` (kernels compiled first), or
    None when a step fails."""
    try:
        sim.advance(state.copy(), 1)
        probe = state.copy()
        t0 = time.perf_counter()
        sim.advance(probe, 2)
        return (time.perf_counter() - t0) / 2
    except Exception:  # noqa: BLE001 - only an estimate for the refusal message
        return None


FIRST_CHUNK_S_PER_VERTEX = 20e-6
"""First guess of a step's cost per vertex [s] where no warm-up step was timed (the first call of
a run is sized by the warm-up step's time, else by this guess; later calls by the measured time
per step)."""


def record(sim, state, nsteps: int, *, frames: int = 100, progress=None, probes: dict | None = None,
           warmup: bool = True, stop=None, checkpoint=None, steps_per_frame: int | None = None,
           tallies: dict | None = None) -> Recording:
    """Advance ``state`` by ``nsteps``, keeping a frame about every ``nsteps / frames`` steps.
    ``probes``: name -> ``fn(state)`` recorded per frame; ``stop(state)``: end early when true
    (a stop test with a memory keeps it in ``state.solver``, so a resumed run has it);
    ``progress.update(done, total)`` is called after every ``advance`` call; ``tallies``: name ->
    ``fn(report)`` (a number from each call's :class:`rodlab.solvers.base.StepReport`, or read
    from the simulator right after the call), summed into ``Recording.tallies``.

    Frames are at fixed step counts (``nsteps // frames`` steps apart, or ``steps_per_frame``
    when given, the last at ``nsteps``);
    each frame's steps are advanced in calls of at most about :data:`rodlab.runctl.CHUNK_S` of wall
    time (sized from the measured time per step), so Ctrl-C inside a :func:`rodlab.runctl.session`
    stops the run within a chunk. Memory is bounded by the frames, not by ``nsteps``; a run over
    the limits of :func:`rodlab.runctl.check_run_size` is refused before stepping (``RunTooLarge``).

    When a step fails (:class:`rodlab.model.SimulationError`, a non-finite state) or the run is
    interrupted, the exception raised carries ``recording``: the frames up to the last good state
    (the state the simulator restored, kept as the last frame). ``wall_s`` leaves out the time
    numba spent compiling during the calls.

    ``checkpoint`` (default: the session's, :func:`rodlab.runctl.session`): a
    :class:`rodlab.checkpoint.Checkpointer`. With one, the chunks end at fixed step counts (frame
    ends, multiples of its chunk size and of its interval), a checkpoint of the state and of the loop
    is written at each multiple of the interval, and a checkpointer built from a saved checkpoint
    first loads it into ``state`` and continues from it: the recording equals, bit for bit, the one
    of the uninterrupted run (docs/checkpoints.md): simulators keep nothing outside the state.
    """
    from . import runctl
    from .model import SimulationError, check_steps

    nsteps = check_steps(nsteps)
    if steps_per_frame is not None:
        from .model import require

        per = check_steps(steps_per_frame)
        require(per >= 1, f"steps_per_frame must be an integer >= 1 (got {steps_per_frame!r})")
    else:
        per = max(1, nsteps // max(int(frames), 1))
    n_frames = -(-nsteps // per) + 1
    n_edges = int(getattr(state, "edge_theta", np.zeros(0)).shape[0])
    frame_bytes = n_frames * (2 * int(state.vertex_x.nbytes) + 12 * n_edges)
    ctl = runctl.active()
    forced = ctl is not None and ctl.force
    if not forced and (nsteps > runctl.MAX_STEPS or frame_bytes > runctl.available_memory_bytes()):
        runctl.check_run_size(nsteps, frame_bytes, seconds_per_step=_probe_seconds_per_step(sim, state))
    ck = checkpoint if checkpoint is not None else (ctl.checkpoint if ctl is not None else None)
    saved = ck.begin(sim, state, nsteps, per) if ck is not None and nsteps > 0 else None
    if ck is not None and nsteps == 0:
        ck = None
    if (warmup and nsteps > 0) or saved is not None:
        warm_up(sim, state)  # resumed: also what the uninterrupted run did after this checkpoint (below)
    probes = probes or {}
    tallies = tallies or {}
    done, wall, newton, linear = 0, 0.0, 0, 0
    gap, csum, cmax = math.inf, 0, 0
    failed, failure, res_max = 0, "ok", 0.0
    sums = {name: 0 for name in tallies}
    frame_end = None
    if saved is None:
        ts, xs, m1s = [state.t], [state.vertex_x.copy()], [edge_m1_of(state)]
        values = {name: [fn(state)] for name, fn in probes.items()}
    else:  # resume: the frames and counters of the checkpoint, the state is already loaded
        from .checkpoint import CheckpointError

        kept = saved["frames"]
        if sorted(kept["probes"]) != sorted(probes):
            raise CheckpointError(f"checkpoint does not match this run: probes {sorted(kept['probes'])} there, "
                                  f"{sorted(probes)} here")
        if sorted(saved.get("tallies", {})) != sorted(tallies):
            raise CheckpointError(f"checkpoint does not match this run: tallies {sorted(saved.get('tallies', {}))} "
                                  f"there, {sorted(tallies)} here")
        ts, xs, m1s = list(kept["t"]), list(kept["x"]), list(kept["edge_m1"])
        values = {name: list(kept["probes"][name]) for name in probes}
        done, wall, newton, linear = int(saved["done"]), float(saved["wall_s"]), int(saved["newton_iters"]), int(saved["linear_iters"])
        gap = math.inf if saved["contact_min_gap"] is None else float(saved["contact_min_gap"])
        csum, cmax, frame_end = int(saved["contacts_sum"]), int(saved["contacts_max"]), int(saved["frame_end"])
        failed, failure = int(saved.get("failed_calls", 0)), str(saved.get("failure_message", "ok"))
        res_max = float(saved.get("residual_max", 0.0))
        sums = dict(saved.get("tallies", {}))
        if progress is not None:
            progress.update(done, nsteps)
    known = _known_step_seconds(sim)
    first = known if known else FIRST_CHUNK_S_PER_VERTEX * max(state.vertex_x.shape[0], 1)
    chunk = max(1, int((0.8 if known else 0.25) * runctl.CHUNK_S / first))

    def recording():
        rec = Recording(np.array(ts), np.array(xs), done, wall, newton, linear,
                        {k: np.array(v) for k, v in values.items()}, gap, csum, cmax,
                        np.array(m1s, dtype=np.float32).reshape(len(m1s), -1, 3), failed, failure, res_max, dict(sums))
        _remember_m1(rec.x, rec.edge_m1)
        return rec

    def keep_frame():
        ts.append(state.t)
        xs.append(state.vertex_x.copy())
        m1s.append(edge_m1_of(state))
        for name, fn in probes.items():
            values[name].append(fn(state))

    def save_checkpoint():
        loop = {"done": done, "nsteps": nsteps, "steps_per_frame": per, "frame_end": frame_end, "wall_s": wall,
                "newton_iters": newton, "linear_iters": linear,
                "contact_min_gap": gap if math.isfinite(gap) else None, "contacts_sum": csum, "contacts_max": cmax,
                "failed_calls": failed, "failure_message": failure, "residual_max": res_max, "tallies": dict(sums),
                "n_frames_kept": len(ts)}
        ck.save(sim, state, loop, {"t": ts, "x": xs, "edge_m1": m1s, "probes": values})

    with runctl.stepping():
        try:
            while done < nsteps:
                if frame_end is None or done >= frame_end:
                    frame_end = min(done + per, nsteps)
                while done < frame_end:
                    if runctl.interrupt_requested():
                        raise runctl.Interrupted("interrupted")
                    k = min(chunk, frame_end - done) if ck is None else ck.next_boundary(done, frame_end) - done
                    c0 = runctl.compile_seconds()
                    t0 = time.perf_counter()
                    rep = sim.advance(state, k)
                    took = time.perf_counter() - t0
                    took = max(took - (runctl.compile_seconds() - c0), 0.0)
                    wall += took
                    done += rep.steps
                    newton += rep.newton_iters
                    linear += rep.linear_iters
                    gap, csum, cmax = min(gap, rep.contact_min_gap), csum + rep.contacts_sum, max(cmax, rep.contacts_max)
                    res_max = max(res_max, float(rep.residual))
                    if not rep.success:
                        failed, failure = failed + 1, str(rep.message)
                    for name, fn in tallies.items():
                        sums[name] += fn(rep)
                    if not np.all(np.isfinite(state.vertex_x)):
                        raise SimulationError(f"the state became non-finite (NaN or inf) by t = {state.t:.6g} s; "
                                              "try a smaller dt")
                    if progress is not None:
                        progress.update(done, nsteps)
                    if rep.steps == 0:  # the simulator made no progress (its report says why): end here
                        frame_end = nsteps = done
                    per_step = took / max(rep.steps, 1)
                    target = int(0.8 * runctl.CHUNK_S / per_step) if per_step > 0 else 8 * chunk
                    chunk = max(1, min(target, 8 * chunk))
                    if ck is not None and ck.due(done) and done < frame_end:
                        save_checkpoint()
                keep_frame()
                if stop is not None and stop(state):
                    break
                if ck is not None and ck.due(done):
                    save_checkpoint()
            if runctl.interrupt_requested():
                raise runctl.Interrupted("interrupted")
        except (Exception, KeyboardInterrupt) as exc:
            if np.all(np.isfinite(state.vertex_x)) and state.t > ts[-1]:
                keep_frame()
            rec = recording()
            exc.recording = rec
            runctl.remember_partial(rec)
            raise
    return recording()
