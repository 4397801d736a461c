"""Energy lost by DER fast projection under tension, with and without a welded body (docs/coupling.md).

    python bench/bench_coupling_tension.py     # ~30 s
"""
import numpy as np
from rodlab import BoundaryConditions, Clamp, Rod
from rodlab.model import Loads, PointForce
from rodlab.der.stepper import DERStepper, DEROptions, suggested_time_step
from rodlab.coupling import CoupledDERStepper, RigidBody, Weld
n=21; L=0.5
x=np.zeros((n,3)); x[:,2]=-np.linspace(0,L,n)
rod=Rod.from_stiffness(x,bending=0.01,twisting=0.01,linear_density=0.02,boundary=BoundaryConditions(clamps=(Clamp(0),)))
dt=suggested_time_step(rod)
for F in (0.0, 5.0):
    d=DERStepper(rod, Loads(point_forces=(PointForce(n-1, np.array([0,0,-F])),)), DEROptions(dt=dt))
    v=np.zeros((n,3)); v[:,0]=0.1*np.sin(np.pi*np.linspace(0,1,n))  # lateral kick
    v[:2]=0
    s=d.initial_state(v=v); d.advance(s,1)
    E=lambda s: d.kinetic_energy(s)+d.elastic_energy(s)+F*s.x[-1,2]
    e0=E(s); k0=d.kinetic_energy(s)
    d.advance(s,int(2.0/dt))
    print("DER tension",F,"loss/KE0",(e0-E(s))/k0, "steps", int(2/dt))
# coupled: body mass M=F/g
for M in (0.01, 0.5):
    body=RigidBody.disk(M,0.02,0.01,axis=2)
    st=CoupledDERStepper(rod,[body],[Weld(0,-1)],Loads(gravity=(0,0,-9.81)),DEROptions(dt=dt))
    v=np.zeros((n,3)); v[:,0]=0.1*np.sin(np.pi*np.linspace(0,1,n)); v[:2]=0
    s=st.initial_state(centers=[x[-2:].mean(0)+[0,0,-0.01]], v=v); st.advance(s,1)
    e0=st.total_energy(s); k0=st.rod_energies(s)[0]+st.body_energies(s)[0,:2].sum()
    st.advance(s,int(2.0/dt))
    print("coupled M",M,"loss/KE0",(e0-st.total_energy(s))/k0)
