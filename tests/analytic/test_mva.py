"""Exact and approximate MVA, bounds and USL fits.

The exact MVA is checked (a) against the worked example of Jain (1991),
Example 34.2 / Table 34.1, (b) to 1e-9 against Buzen's convolution algorithm
and against the numerically solved CTMC of the same networks, both implemented
here, and (c) against the closed form of the finite-source M/M/m//N queue.
"""
import itertools
import math

import numpy as np
import pytest

from bufsim.analytic import mva


# --------------------------------------------------------------------------
# independent exact solutions
# --------------------------------------------------------------------------
def _station_factor(d, kind, n, alpha=None):
    """f(j) = D^j / prod_{i<=j} rate(i), j = 0..n, of a product-form station."""
    f = np.ones(n + 1)
    for j in range(1, n + 1):
        if kind == "delay":
            rate = j
        elif kind == "ld":
            rate = alpha[j - 1]
        else:                                     # kind = number of servers
            rate = min(j, kind)
        f[j] = f[j - 1] * d / rate
    return f


def _conv(fs, n):
    g = np.zeros(n + 1)
    g[0] = 1.0
    for f in fs:
        g = np.array([sum(f[j] * g[m - j] for j in range(m + 1)) for m in range(n + 1)])
    return g


def convolution(demands, kinds, z, n, alphas=None):
    """Buzen's algorithm: X(n) = G(n-1)/G(n), Q_k(n) = sum_j j f_k(j) G_-k(n-j) / G(n)."""
    alphas = alphas or {}
    fs = [_station_factor(d, k, n, alphas.get(i)) for i, (d, k) in enumerate(zip(demands, kinds))]
    think = _station_factor(z, "delay", n)
    g = _conv(fs + [think], n)
    x = g[:-1] / g[1:]
    q = np.zeros((n, len(demands)))
    for k in range(len(demands)):
        g_k = _conv([f for i, f in enumerate(fs) if i != k] + [think], n)
        for m in range(1, n + 1):
            q[m - 1, k] = sum(j * fs[k][j] * g_k[m - j] for j in range(m + 1)) / g[m]
    return x, q


def ctmc(demands, kinds, z, n):
    """Exponential servers in a cycle think -> 1 -> ... -> K -> think; solve pi Q = 0."""
    k_st = len(demands) + 1
    states = [s for s in itertools.product(range(n + 1), repeat=k_st) if sum(s) == n]
    index = {s: i for i, s in enumerate(states)}
    rates = [("delay", z)] + list(zip(kinds, demands))
    q = np.zeros((len(states), len(states)))
    for s in states:
        for k, (kind, d) in enumerate(rates):
            j = s[k]
            if j == 0 or d == 0:
                continue
            mu = (j if kind == "delay" else min(j, kind)) / d
            t = list(s)
            t[k] -= 1
            t[(k + 1) % k_st] += 1
            q[index[s], index[tuple(t)]] += mu
    q -= np.diag(q.sum(axis=1))
    a = np.vstack([q.T, np.ones(len(states))])
    b = np.zeros(len(states) + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(a, b, rcond=None)[0]
    occ = np.array(states, dtype=float)
    x = sum(pi[i] * s[0] / z for i, s in enumerate(states))
    return x, pi @ occ[:, 1:]


def machine_repairman_x(n, m, d, z):
    """Throughput of the finite-source M/M/m//N queue (N sources of think time Z)."""
    w = np.array([math.comb(n, j) * math.factorial(j) * (d / z) ** j
                  / (math.factorial(j) if j <= m else math.factorial(m) * m ** (j - m))
                  for j in range(n + 1)])
    w /= w.sum()
    return float(sum(w[j] * min(j, m) for j in range(n + 1)) / d)


# --------------------------------------------------------------------------
# a worked textbook example
# --------------------------------------------------------------------------
# R. Jain, "The Art of Computer Systems Performance Analysis", Wiley, 1991,
# Example 34.2 (timesharing system: CPU 0.125 s x 16 visits, disk A 0.3 s x 10,
# disk B 0.2 s x 5, think time 4 s) and Table 34.1 (printed to 3 decimals).
JAIN_VISITS = np.array([16.0, 10.0, 5.0])
JAIN_DEMANDS = np.array([0.125, 0.3, 0.2]) * JAIN_VISITS
JAIN_TABLE = {  # n: (R_cpu, R_A, R_B per visit, R, X, Q_cpu, Q_A, Q_B)
    1: (0.125, 0.300, 0.200, 6.000, 0.100, 0.200, 0.300, 0.100),
    2: (0.150, 0.390, 0.220, 7.400, 0.175, 0.421, 0.684, 0.193),
    3: (0.178, 0.505, 0.239, 9.088, 0.229, 0.651, 1.158, 0.273),
    4: (0.206, 0.647, 0.255, 11.051, 0.266, 0.878, 1.721, 0.338),
    5: (0.235, 0.816, 0.268, 13.256, 0.290, 1.088, 2.365, 0.388),
    17: (0.370, 3.962, 0.300, 47.045, 0.333, 1.974, 13.195, 0.499),
    18: (0.372, 4.259, 0.300, 50.032, 0.333, 1.981, 14.187, 0.499),
    19: (0.373, 4.556, 0.300, 53.022, 0.333, 1.987, 15.181, 0.500),
    20: (0.373, 4.854, 0.300, 56.016, 0.333, 1.991, 16.177, 0.500),
}


def test_jain_example_34_2():
    res = mva.exact_mva(JAIN_DEMANDS, 4.0, 20)
    for n, row in JAIN_TABLE.items():
        got = np.concatenate([res.residence_time[n - 1] / JAIN_VISITS,
                              [res.response_time[n - 1], res.throughput[n - 1]],
                              res.queue_length[n - 1]])
        np.testing.assert_allclose(got, row, rtol=0, atol=0.0005 + 1e-12, err_msg=f"n={n}")
    # the values the text derives exactly, to 1e-9
    assert res.response_time[0] == pytest.approx(6.0, abs=1e-9)
    assert res.throughput[0] == pytest.approx(0.1, abs=1e-9)
    np.testing.assert_allclose(res.queue_length[0], [0.2, 0.3, 0.1], atol=1e-9)
    np.testing.assert_allclose(res.residence_time[1], [0.15 * 16, 0.39 * 10, 0.22 * 5], atol=1e-9)
    assert res.response_time[1] == pytest.approx(7.4, abs=1e-9)
    assert res.throughput[1] == pytest.approx(2 / 11.4, abs=1e-9)


# --------------------------------------------------------------------------
# exact MVA against convolution and the CTMC
# --------------------------------------------------------------------------
NETWORKS = [  # demands, servers (0 = delay), think time, N
    ([2.0, 3.0, 1.0], [1, 1, 1], 4.0, 25),
    ([0.8, 0.5, 0.3, 1.2], [4, 1, 1, 0], 2.0, 30),
    ([0.04, 0.03], [8, 1], 0.5, 60),
    ([1.0, 0.2, 0.2], [2, 3, 1], 0.0, 12),
]


@pytest.mark.parametrize("demands, servers, z, n", NETWORKS)
def test_exact_mva_equals_convolution(demands, servers, z, n):
    res = mva.exact_mva(demands, z, n, servers=servers)
    kinds = ["delay" if s == 0 else s for s in servers]
    x, q = convolution(demands, kinds, z, n)
    np.testing.assert_allclose(res.throughput, x, rtol=1e-9)
    np.testing.assert_allclose(res.queue_length, q, rtol=1e-9, atol=1e-12)
    # Little's law over the whole cycle
    np.testing.assert_allclose(res.queue_length.sum(axis=1) + res.throughput * z, res.n,
                               rtol=1e-12)


@pytest.mark.parametrize("demands, servers, z", [
    ([2.0, 3.0, 1.0], [1, 1, 1], 4.0),
    ([0.8, 0.5, 1.2], [3, 1, 0], 2.0),
    ([1.0, 0.2], [2, 1], 0.7),
])
def test_exact_mva_equals_ctmc(demands, servers, z):
    n = 5
    res = mva.exact_mva(demands, z, n, servers=servers)
    kinds = ["delay" if s == 0 else s for s in servers]
    for m in (1, 3, 5):
        x, q = ctmc(demands, kinds, z, m)
        assert res.throughput[m - 1] == pytest.approx(x, rel=1e-9)
        np.testing.assert_allclose(res.queue_length[m - 1], q, rtol=1e-9, atol=1e-12)


def test_general_load_dependent_equals_convolution():
    n = 15
    alpha = 1.0 + 0.5 * np.log(np.arange(1, n + 1))      # a sub-linear speed-up
    res = mva.exact_mva([0.5, 1.0, 0.3], 3.0, n, load_dependent={0: alpha})
    x, q = convolution([0.5, 1.0, 0.3], ["ld", 1, 1], 3.0, n, alphas={0: alpha})
    np.testing.assert_allclose(res.throughput, x, rtol=1e-9)
    np.testing.assert_allclose(res.queue_length, q, rtol=1e-9)
    assert np.all(res.servers == [-1, 1, 1])


@pytest.mark.parametrize("m", [1, 2, 4, 8])
def test_multiserver_equals_machine_repairman(m):
    n, d, z = 40, 1.0, 5.0
    want = np.array([machine_repairman_x(k, m, d, z) for k in range(1, n + 1)])
    res = mva.exact_mva([d], z, n, servers=[m])
    np.testing.assert_allclose(res.throughput, want, rtol=1e-9)
    ld = mva.exact_mva([d], z, n, load_dependent={0: np.minimum(np.arange(1, n + 1), m)})
    np.testing.assert_allclose(ld.throughput, want, rtol=1e-9)
    np.testing.assert_allclose(res.utilization[:, 0], want * d / m, rtol=1e-12)


def test_delay_station_and_frame():
    res = mva.exact_mva([1.0, 2.0], 3.0, 4, servers=[1, 0])
    np.testing.assert_allclose(res.residence_time[:, 1], 2.0)
    df = res.to_frame()
    assert list(df.columns) == ["n", "throughput", "response_time", "queue_0", "util_0",
                                "queue_1", "util_1"]
    assert df["n"].tolist() == [1, 2, 3, 4]


# --------------------------------------------------------------------------
# approximate MVA and bounds
# --------------------------------------------------------------------------
@pytest.mark.parametrize("demands, servers, z, n, tol", [
    (JAIN_DEMANDS, None, 4.0, 60, 0.07),          # worst near the knee N*
    ([0.3, 0.3, 0.3, 0.1], None, 1.0, 50, 0.07),
    ([0.05, 0.02, 0.01], [1, 1, 0], 0.2, 80, 0.07),
    ([2.0, 3.0, 1.0], [4, 1, 1], 4.0, 40, 0.10),   # Seidmann's multi-server approximation
    ([0.04, 0.03], [8, 1], 0.5, 60, 0.10),
])
def test_schweitzer_close_to_exact(demands, servers, z, n, tol):
    approx = mva.schweitzer_mva(demands, z, n, servers=servers)
    exact = mva.exact_mva(demands, z, n, servers=servers)
    err = np.abs(approx.throughput / exact.throughput - 1)
    assert err.max() < tol, err.max()
    assert err[-1] < 0.02                                  # good again at saturation
    if servers is None or max(servers) <= 1:
        assert approx.throughput[0] == pytest.approx(exact.throughput[0], rel=1e-12)
    np.testing.assert_allclose(approx.queue_length.sum(axis=1) + approx.throughput * z,
                               approx.n, rtol=1e-9)


@pytest.mark.parametrize("demands, servers, z", [
    (JAIN_DEMANDS, None, 4.0), ([0.8, 0.5, 0.3, 1.2], [4, 1, 1, 0], 2.0),
    ([0.04, 0.03], [8, 1], 0.5), ([1.0, 1.0], None, 0.0),
])
def test_asymptotic_bounds_hold(demands, servers, z):
    n = 60
    res = mva.exact_mva(demands, z, n, servers=servers)
    b = mva.asymptotic_bounds(demands, z, np.arange(1, n + 1), servers=servers)
    eps = 1e-12
    assert np.all(res.throughput <= b["x_upper"] * (1 + eps))
    assert np.all(res.throughput >= b["x_lower"] * (1 - eps))
    assert np.all(res.response_time >= b["r_lower"] * (1 - eps))
    assert np.all(res.response_time <= b["r_upper"] * (1 + eps))


def test_asymptotic_bounds_values():
    b = mva.asymptotic_bounds([2.0, 3.0, 1.0], 4.0, [1, 10])
    assert b["x_upper"].tolist() == pytest.approx([0.1, 1 / 3])
    assert b["r_lower"].tolist() == pytest.approx([6.0, 26.0])
    assert b.attrs["n_star"] == pytest.approx(10 / 3)


# --------------------------------------------------------------------------
# Universal Scalability Law
# --------------------------------------------------------------------------
@pytest.mark.parametrize("sigma, kappa", [(0.05, 0.002), (0.2, 0.0), (0.0, 0.01), (0.0, 0.0)])
def test_usl_recovers_parameters(sigma, kappa):
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    truth = mva.USLFit(250.0, sigma, kappa)
    fit = mva.usl_fit(n, truth.predict(n))
    assert fit.lambda_ == pytest.approx(250.0, rel=1e-6)
    assert fit.sigma == pytest.approx(sigma, abs=1e-7)
    assert fit.kappa == pytest.approx(kappa, abs=1e-9)
    assert fit.rmse < 1e-6 * truth.predict(n).max()


def test_usl_with_noise_and_peak():
    rng = np.random.default_rng(4)
    n = np.repeat([1, 2, 4, 8, 16, 24, 32, 48, 64], 3)
    truth = mva.USLFit(1000.0, 0.03, 0.0005)
    fit = mva.usl_fit(n, truth.predict(n) * (1 + 0.01 * rng.standard_normal(n.size)))
    assert fit.sigma == pytest.approx(0.03, abs=0.01)
    assert fit.kappa == pytest.approx(0.0005, rel=0.2)
    assert fit.n_peak == pytest.approx(truth.n_peak, rel=0.1)
    assert truth.n_peak == pytest.approx(np.sqrt(0.97 / 0.0005))


@pytest.mark.parametrize("call, match", [
    (lambda: mva.exact_mva([1.0, -1.0], 1.0, 3), "demands must be finite and >= 0"),
    (lambda: mva.exact_mva([1.0], -1.0, 3), "think_time"),
    (lambda: mva.exact_mva([1.0], 1.0, 0), "n_users=0 is out of range; allowed: >= 1"),
    (lambda: mva.exact_mva([1.0], 1.0, 3, servers=[1, 1]), "one entry per station"),
    (lambda: mva.exact_mva([1.0], 1.0, 3, servers=[1.5]), "servers must be integers"),
    (lambda: mva.exact_mva([0.0], 0.0, 3), "must not all be zero"),
    (lambda: mva.exact_mva([1.0], 1.0, 3, load_dependent={0: [1, 2]}), "3 values"),
    (lambda: mva.exact_mva([1.0], 1.0, 3, load_dependent={1: [1, 2, 3]}), "station indices"),
    (lambda: mva.schweitzer_mva([1.0], 1.0, 3, tol=0), "tol"),
    (lambda: mva.asymptotic_bounds([1.0], 1.0, [0, 1]), "n must be integers >= 1"),
    (lambda: mva.usl_fit([1, 2], [1.0, 2.0]), "at least 3"),
    (lambda: mva.usl_fit([1, 2, 3], [1.0, 0.0, 2.0]), "throughput must be finite and > 0"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_multiserver_stays_exact_in_saturation():
    """8 cores at 20 us per transaction and six small mutex demands: throughput climbs to the
    8 / 20us = 400k/s bound and stays there (the P(0) = 1 - rest recursion gave 145k/s at
    N = 64); where that recursion is still accurate (N <= 32) both agree."""
    from bufsim.analytic.mva import _check_network, _exact_mva_kernel
    d = [2e-5, 7e-7, 1.85e-6, 5e-8, 2e-7, 1.5e-7, 1e-6]
    servers = [8, 1, 1, 1, 1, 1, 1]
    res = mva.exact_mva(d, 0.0, 256, servers=servers)
    x = res.throughput
    assert np.all(np.diff(x) >= -1e-9 * x[1:])
    assert x[63] == pytest.approx(400_000, rel=1e-6) and x[-1] <= 400_000 * (1 + 1e-9)
    dd, z, n, m, kind, alpha = _check_network(d, 0.0, 32, servers, None)
    old = _exact_mva_kernel(dd, z, n, kind, m, alpha)[0]
    np.testing.assert_allclose(x[:32], old, rtol=1e-8)
    # Little's law at every population
    np.testing.assert_allclose(res.queue_length.sum(axis=1), x * res.response_time, rtol=1e-9)


@pytest.mark.parametrize("demands, servers, z, n", NETWORKS + [
    ([2e-5, 7e-7, 1.85e-6, 5e-8, 2e-7, 1.5e-7, 1e-6], [8, 1, 1, 1, 1, 1, 1], 0.0, 256)])
def test_exact_mva_throughput_is_exact_mvas_throughput(demands, servers, z, n):
    """The throughput alone: the same numbers, bit for bit, on the recursion (one-server
    and delay stations) and on the convolution (a multi-server station)."""
    want = mva.exact_mva(demands, z, n, servers=servers).throughput
    got = mva.exact_mva_throughput(demands, z, n, servers=servers)
    assert got.shape == (n,) and np.array_equal(got, want)
    alpha = 1.0 + 0.5 * np.log(np.arange(1, n + 1))
    ld = dict(load_dependent={0: alpha})
    assert np.array_equal(mva.exact_mva_throughput(demands, z, n, **ld),
                          mva.exact_mva(demands, z, n, **ld).throughput)
    with pytest.raises(ValueError, match="demands must be finite and >= 0"):
        mva.exact_mva_throughput([1.0, -1.0], z, n)
