"""Per-step and per-call CPU of a DER contact world (docs/contact-der-speed.md).

    PYTHONPATH=src RODLAB_JIT_ONLY=1 python bench/bench_der_contact_percall.py [links n t_settle]

Builds ``chain_world(links, n)`` (default 4 x 8, the paper's Fig. 10 size), steps it to
``t_settle`` (default 0.1 s), then from that state measures CPU per step of one long ``advance``
call, of 8-step calls (what ``run_scene("hanging-chain", t_end=0.1)`` makes), of the same world
without contact, and the per-call pieces of the contact branch (moving clamps' inputs, the end
state's exact ``min_gap``, a state copy: the contact branch no longer makes one, it copies the five
arrays its loop writes into buffers of the simulator)."""
import sys
import time

from rodlab.scenes import der_contact_scenes as S
from rodlab.solvers import make_simulator

links, n, t_settle = (int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])) if len(sys.argv) > 3 else (4, 8, 0.1)
dt = 2e-4


def per_step(sim, start, nsteps, per):
    st = start.copy()
    st.solver.clear()
    sim.advance(st, per)  # compile / warm
    st = start.copy()
    st.solver.clear()
    t = time.process_time()
    for _ in range(nsteps // per):
        sim.advance(st, per)
    return 1e6 * (time.process_time() - t) / (nsteps // per * per)


def mean_time(f, reps=2000):
    t = time.process_time()
    for _ in range(reps):
        f()
    return 1e6 * (time.process_time() - t) / reps


sim = make_simulator(S.chain_world(links, n), "der", dt=dt, energy_check=False)
state = sim.initial_state()
sim.advance(state, int(round(t_settle / dt)))
set_contact = S.WorldBuilder.set_contact
S.WorldBuilder.set_contact = lambda self, **kw: None  # the same world without contact
free = make_simulator(S.chain_world(links, n), "der", dt=dt, energy_check=False)
S.WorldBuilder.set_contact = set_contact
print(f"chain_world({links}, {n}) at t = {state.t:.3f} s, {sim.world.n_vertices} vertices")
print(f"  contact, one 992-step call:  {per_step(sim, state, 992, 992):7.1f} us per step")
print(f"  contact, 8-step calls:       {per_step(sim, state, 992, 8):7.1f} us per step")
print(f"  no contact, one 992-step call: {per_step(free, state, 992, 992):5.1f} us per step")
c = sim._contact


def call_loads_8():
    """The moving clamps' inputs of one 8-step call, the state's time advancing as advance does it
    (a tree with der's clock: _clock + _tick, the sampled block refilled every 64 steps; older
    trees: t += 8 dt)."""
    if hasattr(sim, "_tick"):
        clock = sim._clock(state)
        sim._call_loads(state, 8, clock)
        sim._tick(state, clock, 8)
    else:
        sim._call_loads(state, 8)
        state.t += 8 * dt


t_start = state.t
print(f"  per call: _call_loads(8) {mean_time(call_loads_8):.1f} us, "
      f"min_gap {mean_time(lambda: c.min_gap(state.vertex_x)):.1f} us, state.copy {mean_time(state.copy):.1f} us")
state.t = t_start
