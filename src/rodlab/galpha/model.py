"""Model (immutable) of a generalized-alpha Cosserat rod: nodes, stiffness, inertia, rest
curvature, gravity, integration coefficients (GA paper, Sec. 3-4).

SI units: lengths [m], stiffness K = diag(E I1, E I2, G J) [N m^2], rhoA [kg/m], rotational
inertia per length rho*(I1, I2, I1+I2) [kg m], gravity [m/s^2], damping rate [1/s].
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..model import require


@dataclass(frozen=True)
class Coefficients:
    """Generalized-alpha weights in the paper's convention (GA paper, Eq. 17-20): a quantity
    ``q^{1-eps} = (1 - eps) q^i + eps q^{i-1}``, so ``alpha`` and ``beta`` weight the *old*
    (previous time step / previous node) value; ``gamma`` is the trapezoid weight of Eq. 19/20.

    :meth:`from_rho_inf` gives the Chung-Hulbert one-parameter family the paper quotes (Sec. 4.2,
    with ``lambda_inf = -rho_inf``): ``alpha = (1 - 3 rho)/(2 (1 + rho))``, ``beta = rho/(1 + rho)``,
    ``gamma = 1/(1 + rho)``; second-order accurate (``alpha - beta + gamma = 1/2``).
    """

    alpha: float
    beta: float
    gamma: float

    def __post_init__(self):
        for name in ("alpha", "beta", "gamma"):
            v = getattr(self, name)
            require(math.isfinite(v), f"{name} must be finite (got {v})")
        require(self.alpha < 1.0, f"alpha must be < 1 (got {self.alpha})")
        require(0.0 <= self.beta < 1.0, f"beta must be in [0, 1) (got {self.beta})")
        require(0.0 < self.gamma <= 1.0, f"gamma must be in (0, 1] (got {self.gamma})")

    @classmethod
    def from_rho_inf(cls, rho_inf: float) -> "Coefficients":
        require(0.0 <= rho_inf <= 1.0, f"rho_inf must be in [0, 1] (got {rho_inf})")
        lam = -rho_inf
        return cls((3 * lam + 1) / (2 * lam - 2), lam / (lam - 1), 1.0 / (1 - lam))

    def amplification(self, z: complex) -> complex:
        """Amplification factor of the scheme (Eq. 17 + 19) on the test equation ``x_t = z x / dt``
        (``z = lambda dt``): ``x^i = A x^{i-1}``. The state is (x, x_t), so this is the non-trivial
        eigenvalue of the 2x2 amplification matrix; |A(z)| -> rho_inf as |z| -> inf for the
        Chung-Hulbert family (GA paper, Sec. 4.2)."""
        a, b, g = self.alpha, self.beta, self.gamma
        # unknowns at step i: x, v (= dt x_t); equations:
        #  (1-a) v_i + a v_{i-1} = z ((1-b) x_i + b x_{i-1});  x_i = x_{i-1} + g v_i + (1-g) v_{i-1}
        A = np.array([[-(1 - b) * z, 1 - a], [1.0, -g]], dtype=complex)
        B = np.array([[b * z, -a], [1.0, 1 - g]], dtype=complex)
        ev = np.linalg.eigvals(np.linalg.solve(A, B))
        return complex(ev[np.argmax(np.abs(ev))])

    @property
    def second_order(self) -> bool:
        return abs(self.alpha - self.beta + self.gamma - 0.5) < 1e-12


BACKWARD_EULER = Coefficients(0.0, 0.0, 1.0)
ROOT_R = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # root frame d1 = +y, d2 = +z, d3 = +x: a rod along +x


@dataclass(frozen=True, eq=False)
class GAlphaRod:
    """A rod of ``n_nodes`` equally spaced nodes on ``s in [0, length]`` (GA paper, Sec. 3).

    Node 0 is the clamped root at s = 0 (exactly at the root pose), node N-1 the tip at s = L.
    ``kappa_hat`` (N, 3): rest Darboux vector at the nodes [1/m] in the director basis;
    ``root_R`` (3, 3): initial root frame (columns d1, d2, d3 in world coordinates);
    ``root_r`` (3,): root position [m].
    """

    n_nodes: int
    length: float
    rhoA: float
    inertia: np.ndarray
    stiffness: np.ndarray
    kappa_hat: np.ndarray
    gravity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    damping: float = 0.0
    root_R: np.ndarray = field(default_factory=lambda: np.eye(3))
    root_r: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.01

    def __post_init__(self):
        require(isinstance(self.n_nodes, (int, np.integer)) and 3 <= self.n_nodes <= 100000,
                f"n_nodes must be an integer in [3, 100000] (got {self.n_nodes})")
        require(math.isfinite(self.length) and self.length > 0, f"length must be > 0 m (got {self.length})")
        require(math.isfinite(self.rhoA) and self.rhoA > 0, f"rhoA must be > 0 kg/m (got {self.rhoA})")
        require(math.isfinite(self.damping) and self.damping >= 0, f"damping must be >= 0 1/s (got {self.damping})")
        for name, shape, positive in (("inertia", (3,), True), ("stiffness", (3,), True),
                                      ("kappa_hat", (self.n_nodes, 3), False), ("gravity", (3,), False),
                                      ("root_R", (3, 3), False), ("root_r", (3,), False)):
            a = np.ascontiguousarray(getattr(self, name), dtype=float)
            if name == "kappa_hat" and a.shape == (3,):
                a = np.ascontiguousarray(np.tile(a, (self.n_nodes, 1)))
            require(a.shape == shape, f"{name} must have shape {shape} (got {a.shape})")
            require(bool(np.all(np.isfinite(a))), f"{name} must be finite")
            if positive:
                require(bool(np.all(a > 0)), f"{name} must be > 0 (got {a})")
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        R = self.root_R
        require(bool(np.allclose(R.T @ R, np.eye(3), atol=1e-9)) and np.linalg.det(R) > 0,
                "root_R must be a rotation matrix")

    @property
    def ds(self) -> float:
        return self.length / (self.n_nodes - 1)

    @property
    def n_segments(self) -> int:
        return self.n_nodes - 1

    @classmethod
    def from_material(cls, n_nodes: int, length: float, *, radius: float, E: float, G: float, rho: float,
                      kappa_hat=(0.0, 0.0, 0.0), gravity=(0.0, 0.0, 0.0), damping: float = 0.0,
                      root_R=None, root_r=(0.0, 0.0, 0.0)) -> "GAlphaRod":
        """Circular cross-section of ``radius`` [m]; Young's modulus ``E``, shear modulus ``G`` [Pa],
        density ``rho`` [kg/m^3]. ``K = diag(E I, E I, G 2I)`` with ``I = pi r^4 / 4`` (Eq. 11)."""
        for name, v in (("radius", radius), ("E", E), ("G", G), ("rho", rho)):
            require(math.isfinite(v) and v > 0, f"{name} must be > 0 (got {v})")
        area = math.pi * radius**2
        i = math.pi * radius**4 / 4.0
        kh = np.asarray(kappa_hat, dtype=float)
        if kh.shape == (3,):
            kh = np.tile(kh, (n_nodes, 1))
        return cls(n_nodes=int(n_nodes), length=float(length), rhoA=rho * area,
                   inertia=np.array([rho * i, rho * i, rho * 2 * i]),
                   stiffness=np.array([E * i, E * i, G * 2 * i]), kappa_hat=kh,
                   gravity=np.asarray(gravity, dtype=float), damping=float(damping),
                   root_R=np.eye(3) if root_R is None else np.asarray(root_R, dtype=float),
                   root_r=np.asarray(root_r, dtype=float), radius=float(radius))

    def row_scales(self) -> np.ndarray:
        """Inverse characteristic size of each residual row (a, b, c, d, g), used to scale Newton's
        residual and Jacobian rows: forces from the bending scale ``EI/L^2``, time from the
        first bending period scale ``L^2 sqrt(rhoA/EI)``."""
        L = self.length
        EI = float(max(self.stiffness[0], self.stiffness[1]))
        t0 = L * L * math.sqrt(self.rhoA / EI)
        n0 = EI / L**2
        gmag = float(np.linalg.norm(self.gravity))
        sa = n0 / L
        sb = EI / L**2
        sc = 1.0 / (L * t0)
        sd = 1.0 / t0
        sg = (gmag if gmag > 0 else 1.0) / L
        return np.repeat(1.0 / np.array([sa, sb, sc, sd, sg]), 3)
