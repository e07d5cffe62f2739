"""The discrete-event simulation: against exact MVA, its pure-Python twin, and itself."""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim import SpaceSpec, Tablespaces
from bufsim.analytic.mva import exact_mva
from bufsim.contention import (HoldTimes, instance_demand, simulate, simulate_reference,
                               simulate_waits)


def _hot_instance_network():
    """A seed-003-like workload in 5.5: 20 gets per transaction on the first extent of
    one tablespace (roots and upper B-tree levels), 10 spread over 8 tablespaces; 16
    instances, 8 cores.  The hot instance's mutex is the bottleneck."""
    ts = Tablespaces([SpaceSpec(s, 4096) for s in range(1, 9)])
    f = np.full(ts.n_pages, 10 / ts.n_pages)
    f[ts.dense(3, np.arange(64))] += 20 / 64
    d = instance_demand(np.round(f * 1e6).astype(np.int64), ts, 16, version="5.5",
                        n_transactions=1e6,
                        hold=HoldTimes(get_ns=1000, cpu_ns=100_000, kernel_ns=2000))
    assert d.hottest == 3
    net = d.network(cores=8, drop_idle=True)
    return dict(service=net.service, visits=net.visits, servers=net.servers,
                think_time=net.think_time, names=net.names)


NETWORKS = {
    # name: (network, users)
    "queue+delay": (dict(service=[0.001], think_time=0.005), 8),
    "three-stations": (dict(service=[0.002, 0.003, 0.001], think_time=0.01), 10),
    "cpu4+2mutexes": (dict(service=[0.004, 0.0005, 0.0003], visits=[1, 2, 3],
                           servers=[4, 1, 1], think_time=0.002), 16),
    "cpu4+2mutexes-fixed-route": (dict(service=[0.004, 0.0005, 0.0003], visits=[1, 2, 3],
                                       servers=[4, 1, 1], think_time=0.002,
                                       routing="fixed"), 16),
    "hot-instance-64-users": (_hot_instance_network(), 64),
    "light-load": (dict(service=[0.001, 0.0005], think_time=0.1), 3),
}


def _demands(net):
    v = np.asarray(net.get("visits", np.ones(len(net["service"]))), dtype=float)
    return np.asarray(net["service"], dtype=float) * v


@pytest.mark.parametrize("name", list(NETWORKS))
def test_des_matches_exact_mva(name):
    net, n = NETWORKS[name]
    kw = {k: v for k, v in net.items() if k != "names"}
    mva = exact_mva(_demands(net), net["think_time"], n, servers=net.get("servers"))
    r = simulate(**kw, n_users=n, n_transactions=300_000, seed=11)
    x = mva.throughput[-1]
    err = r.throughput / x - 1
    print(f"{name}: DES {r.throughput:.1f}/s, MVA {x:.1f}/s, {100 * err:+.2f}%, "
          f"CI +-{100 * r.relative_ci:.2f}%")
    assert abs(err) < 0.03
    assert r.relative_ci < 0.015
    # utilisation law and Little's law, on the simulation's own numbers
    m = np.asarray(net.get("servers", np.ones(len(net["service"]))))
    np.testing.assert_allclose(r.utilization, r.throughput * _demands(net) / m, rtol=0.03,
                               atol=1e-3)
    assert r.residence_time.sum() == pytest.approx(r.response_time, rel=0.02)
    np.testing.assert_allclose(r.queue_length, mva.queue_length[-1], rtol=0.1, atol=0.02)


def test_hot_instance_takes_the_waits():
    net, n = NETWORKS["hot-instance-64-users"]
    r = simulate(**net, n_users=n, n_transactions=20_000, seed=1)
    f = r.frame().set_index("station")
    pools = f.loc[[s for s in f.index if s.startswith("pool")]]
    assert pools["os_waits"].idxmax() == "pool[3]"
    assert pools.loc["pool[3]", "os_waits"] > 0.9 * pools["os_waits"].sum()
    assert pools.loc["pool[3]", "utilization"] > 0.99


# ---- determinism and counters -------------------------------------------------------
NET3 = NETWORKS["cpu4+2mutexes"][0]


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = simulate(**NET3, n_users=6, n_transactions=5_000, seed=3)
    b = simulate(**NET3, n_users=6, n_transactions=5_000, seed=3)
    c = simulate(**NET3, n_users=6, n_transactions=5_000, seed=4)
    assert a.throughput == b.throughput and a.frame().equals(b.frame())
    np.testing.assert_array_equal(a.batch_throughput, b.batch_throughput)
    assert a.throughput != c.throughput and not a.frame().equals(c.frame())


@pytest.mark.parametrize("routing", ["markov", "fixed"])
def test_one_user_never_waits(routing):
    r = simulate([0.001, 0.002, 0.0005], 0.0, 1, servers=[2, 1, 1], routing=routing,
                 n_transactions=2_000, seed=5)
    assert r.waits.tolist() == [0, 0, 0] and r.wait_time.tolist() == [0, 0, 0]
    assert r.acquisitions.sum() > 0
    # alone, the response time is the sum of the demands
    assert r.response_time == pytest.approx(0.0035, rel=0.05)


def test_delay_station_never_waits_and_spin_threshold_splits_waits():
    r = simulate([0.001, 0.003], 0.0, 8, servers=[1, 0], n_transactions=5_000, seed=2,
                 spin_ns=200_000, wakeup="handoff")
    assert r.waits[1] == 0 and r.waits[0] > 0
    assert r.spins[0] > 0 and r.os_waits[0] > 0
    assert abs(int(r.spins[0] + r.os_waits[0]) - int(r.waits[0])) <= 8    # warm-up edge
    everything_os = simulate([0.001, 0.003], 0.0, 8, servers=[1, 0], n_transactions=5_000,
                             seed=2, wakeup="handoff")
    assert everything_os.spins.sum() == 0 and everything_os.throughput == r.throughput
    # broadcast: the same events and spins, and at least as many sleeps (re-sleeps after
    # every release a waiter loses)
    b = simulate([0.001, 0.003], 0.0, 8, servers=[1, 0], n_transactions=5_000, seed=2,
                 spin_ns=200_000)
    assert b.throughput == r.throughput and b.spins.tolist() == r.spins.tolist()
    assert b.os_waits[0] > 1.5 * r.os_waits[0]


@pytest.mark.parametrize("n", [2, 3, 6])
def test_broadcast_wakeup_counts_one_sleep_per_waiter_and_release(n):
    """One mutex, think time 0, every wait sleeps at once (spin 0): at each release
    the n - 1 queued threads wake, the head takes the mutex (its sleep ends) and the
    n - 2 others sleep again, so a release adds n - 1 os_waits; with "handoff", one."""
    kw = dict(service=[0.001], think_time=0.0, n_users=n, service_dist="deterministic",
              routing="fixed", n_transactions=2_000, n_batches=4, seed=1)
    b = simulate(**kw)
    h = simulate(**kw, wakeup="handoff")
    rel = int(b.acquisitions[0])
    assert h.os_waits[0] == b.waits[0] == rel and b.spins[0] == 0
    assert b.os_waits[0] == (n - 1) * rel


def test_broadcast_wakeup_spin_window():
    """Spin 2.5 ms, holds of exactly 1 ms, three users (the two waiters queue behind one
    holder).  A waiter that arrives at a release at t is second in line: its turn comes at
    t + 2 ms, inside its spin window, so it never sleeps.  Every wait is a spin."""
    kw = dict(service=[0.001], think_time=0.0, n_users=3, service_dist="deterministic",
              routing="fixed", n_transactions=1_000, n_batches=4, seed=1, spin_ns=2_500_000)
    r = simulate(**kw)
    assert r.os_waits[0] == 0 and r.spins[0] == r.waits[0] > 0
    # a spin of 1.5 ms: the waiter sleeps at t + 1.5 ms, is woken by the release at t + 2 ms
    # and wins it: one os_wait per wait, as with "handoff"
    r = simulate(**{**kw, "spin_ns": 1_500_000})
    assert r.spins[0] == 0 and r.os_waits[0] == r.waits[0]
    # four users: the newcomer is third in line, served 3 ms after it arrives.  With a
    # 1.5 ms spin it sleeps at t + 1.5, is woken by the release at t + 2 (loses) and spins
    # past its turn at t + 3: one sleep.  With 0.5 ms it sleeps at t + 0.5, t + 1.5 and
    # t + 2.5, woken by each release: three
    r = simulate(**{**kw, "n_users": 4, "spin_ns": 1_500_000})
    assert r.os_waits[0] == r.waits[0]
    r = simulate(**{**kw, "n_users": 4, "spin_ns": 500_000})
    assert r.os_waits[0] == 3 * r.waits[0]


def test_fixed_route_without_visits_ends_every_transaction():
    r = simulate([0.001, 0.002], 0.01, 2, visits=[0, 0], routing="fixed", n_transactions=200)
    assert r.acquisitions.tolist() == [0, 0] and r.response_time == 0.0
    _assert_twins(dict(service=[0.001], visits=[0], think_time=0.01, n_users=2,
                       routing="fixed"), 20, 1)


def test_deterministic_service_single_queue_saturates_exactly():
    # 3 users, one 1 ms server, no think: always busy, X = 1000/s exactly
    r = simulate([0.001], 0.0, 3, service_dist="deterministic", routing="fixed",
                 n_transactions=3_000)
    assert r.throughput == pytest.approx(1000.0, rel=1e-9)
    assert r.utilization[0] == pytest.approx(1.0) and r.throughput_ci == pytest.approx(0.0)


def test_hold_core_lowers_throughput():
    free = simulate(**NET3, n_users=16, n_transactions=20_000, seed=1)
    held = simulate(**NET3, n_users=16, n_transactions=20_000, seed=1, hold_core=True)
    assert held.throughput < free.throughput
    assert held.utilization[0] > free.utilization[0]


@pytest.mark.parametrize("kwargs, match", [
    (dict(service=[]), "non-empty"),
    (dict(service=[-1.0]), "service must be finite"),
    (dict(visits=[1, 2]), "visits must hold 1"),
    (dict(servers=[1.5]), "servers must hold 1 integers"),
    (dict(think_time=-1), r"think_time=-1 is out of range"),
    (dict(n_users=0), r"n_users=0 is out of range; allowed: integers >= 1"),
    (dict(n_transactions=5, n_batches=10), r"n_transactions=5 is out of range; allowed: >= "),
    (dict(n_batches=1), r"n_batches=1 is out of range; allowed: integers >= 2"),
    (dict(seed=-1), r"seed=-1 is out of range"),
    (dict(routing="cyclic"), r"routing='cyclic' is not supported"),
    (dict(routing="fixed", visits=[1.5]), "integer visits"),
    (dict(service_dist="gamma"), "service_dist='gamma'"),
    (dict(hold_core=True), "hold_core needs cpu"),
    (dict(service=[0.0], think_time=0.0), "must not all be zero"),
    (dict(confidence=1.0), "confidence=1.0 is out of range"),
])
def test_validation(kwargs, match):
    kw = dict(service=[0.001], think_time=0.01, n_users=2)
    kw.update(kwargs)
    with pytest.raises(ValueError, match=match):
        simulate(**kw)


# ---- the compiled kernel against the pure-Python reference, event by event -----------
def _assert_twins(kw, n_tx, seed):
    ref = simulate_reference(**kw, n_transactions=n_tx, n_batches=4, seed=seed)
    jit = simulate(**kw, n_transactions=n_tx, n_batches=4, seed=seed,
                   log_events=len(ref.log) + 10)
    np.testing.assert_array_equal(jit.log, ref.log)
    assert jit.frame().equals(ref.frame())
    assert jit.throughput == ref.throughput and jit.response_time == ref.response_time
    np.testing.assert_array_equal(jit.batch_throughput, ref.batch_throughput)


@pytest.mark.parametrize("extra", [
    dict(), dict(routing="fixed"), dict(service_dist="deterministic"),
    dict(hold_core=True, spin_ns=100_000), dict(hold_core=True, routing="fixed", think_time=0.0),
])
def test_reference_twin_small_cases(extra):
    kw = dict(service=[0.004, 0.0005, 0.0003], visits=[1, 2, 3], servers=[2, 1, 1],
              think_time=0.002, n_users=5)
    kw.update(extra)
    _assert_twins(kw, 200, 7)


@st.composite
def networks(draw):
    k = draw(st.integers(1, 3))
    service = draw(st.lists(st.sampled_from([0.0, 1e-5, 3e-4, 1e-3, 2.5e-3]), min_size=k,
                            max_size=k))
    servers = draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
    routing = draw(st.sampled_from(["markov", "fixed"]))
    if routing == "fixed":
        visits = draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
    else:
        visits = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]), min_size=k, max_size=k))
    think = draw(st.sampled_from([0.0, 1e-4, 2e-3]))
    kw = dict(service=service, visits=visits, servers=servers, think_time=think,
              n_users=draw(st.integers(1, 5)), routing=routing,
              service_dist=draw(st.sampled_from(["exponential", "deterministic"])),
              spin_ns=draw(st.sampled_from([0, 50_000])),
              wakeup=draw(st.sampled_from(["broadcast", "handoff"])))
    if servers[0] >= 1 and draw(st.booleans()):
        kw.update(hold_core=True, cpu=0)
    return kw


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kw=networks(), n_tx=st.integers(4, 60), seed=st.integers(0, 2**64 - 1))
def test_reference_twin_property(kw, n_tx, seed):
    assume(kw["think_time"] > 0 or np.dot(kw["service"], kw["visits"]) > 0)
    _assert_twins(kw, n_tx, seed)


# ---- one run counted under several wait settings --------------------------------------
WAITS = [(20_000, "broadcast"), (20_000, "handoff"), (0, "broadcast"), (0, "handoff"),
         (300_000, "broadcast")]


def _assert_same_result(a, b):
    assert a.frame().equals(b.frame())
    assert a.throughput == b.throughput and a.throughput_ci == b.throughput_ci
    assert a.response_time == b.response_time and a.sim_time == b.sim_time
    assert a.n_events == b.n_events and a.n_transactions == b.n_transactions
    np.testing.assert_array_equal(a.batch_throughput, b.batch_throughput)


@pytest.mark.parametrize("extra", [dict(), dict(hold_core=True), dict(routing="fixed")])
def test_simulate_waits_equals_one_run_per_setting(extra):
    """Each setting's result is simulate()'s with that spin_ns and wakeup, number for
    number; the settings differ in their counters (else the test could not fail)."""
    net, n = NETWORKS["hot-instance-64-users"]
    kw = dict(net, n_users=n, n_transactions=3_000, seed=5, **extra)
    if extra.get("routing") == "fixed":
        kw = dict(NET3, n_users=16, n_transactions=3_000, seed=5, **extra)
    many = simulate_waits(**kw, waits=WAITS)
    assert len(many) == len(WAITS)
    for (spin, wakeup), got in zip(WAITS, many):
        _assert_same_result(got, simulate(**kw, spin_ns=spin, wakeup=wakeup))
    assert len({tuple(r.os_waits) for r in many}) >= 3
    assert len({tuple(r.spins) for r in many}) >= 2


@pytest.mark.parametrize("waits, match", [
    ([], "waits is empty"),
    ([(10, "wake")], r"waits\[0\] wakeup='wake' is not supported"),
    ([(0, "handoff"), (-1, "handoff")], r"waits\[1\] spin_ns=-1 is out of range"),
    ([5], "waits must be a sequence of"),
])
def test_simulate_waits_validation(waits, match):
    with pytest.raises(ValueError, match=match):
        simulate_waits([0.001], 0.01, 2, waits=waits)
