"""Energy lost by the constraint step under tension (docs/coupling.md): a rod hanging from a
clamp, pulled by a tip force (DER alone) or a welded body (coupling), kicked sideways.

    python bench/bench_coupling_tension.py     # ~40 s
"""
import numpy as np

from rodlab import BoundaryConditions, Clamp, Rod
from rodlab.coupling import CoupledDERStepper, RigidBody, Weld
from rodlab.der.stepper import DEROptions, DERStepper, suggested_time_step
from rodlab.model import Loads, PointForce

n, L = 21, 0.5
x = np.zeros((n, 3))
x[:, 2] = -np.linspace(0, L, n)
rod = Rod.from_stiffness(x, bending=0.01, twisting=0.01, linear_density=0.02, boundary=BoundaryConditions(clamps=(Clamp(0),)))
dt = suggested_time_step(rod)
v = np.zeros((n, 3))
v[2:, 0] = 0.1 * np.sin(np.pi * np.linspace(0, 1, n))[2:]
print(f"dt = {dt:.3g} s, 2 s simulated; loss = energy lost / kinetic energy after the first step")
for F in (0.0, 5.0):
    d = DERStepper(rod, Loads(point_forces=(PointForce(n - 1, np.array([0, 0, -F])),)), DEROptions(dt=dt))
    s = d.initial_state(v=v)
    d.advance(s, 1)

    def energy(s):
        return d.kinetic_energy(s) + d.elastic_energy(s) + F * s.x[-1, 2]

    e0, k0 = energy(s), d.kinetic_energy(s)
    d.advance(s, int(2.0 / dt))
    print(f"DERStepper, tip force {F:g} N: loss {(e0 - energy(s)) / k0:.3g}")
for projection in ("fast", "shake"):
    for M in (0.01, 0.5):
        st = CoupledDERStepper(rod, [RigidBody.disk(M, 0.02, 0.01, axis=2)], [Weld(0, -1)], Loads(gravity=(0, 0, -9.81)),
                               DEROptions(dt=dt), projection=projection)
        s = st.initial_state(centers=[x[-2:].mean(0) + [0, 0, -0.01]], v=v)
        st.advance(s, 1)
        e0 = st.total_energy(s)
        k0 = st.rod_energies(s)[0] + st.body_energies(s)[0, :2].sum()
        st.advance(s, int(2.0 / dt))
        print(f"coupled, projection={projection}, body {M:g} kg: loss {(e0 - st.total_energy(s)) / k0:.3g}")
