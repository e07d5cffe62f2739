"""The device (bufsim.policies.device): the jitted scheduler against its pure-Python twin
request by request, the schedulers' rules, distance-priced skips, and whole replays
under each scheduler against the reference pool."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples

from bufsim.config import DeviceModel, PoolConfig
from bufsim._pool_state import PoolState, _config_array
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.policies._state import G_DEVBUSY, G_DEVFREE, G_DEVLAST, N_G, N_T
from bufsim.policies.device import CFQ_SEEK_PAGES, RefDevice, device_read, device_write

RND, SEQ, WR = 10_000_000, 100_000, 5_000_000
MS = 1_000_000
# two tablespaces of 1,000 pages: dense pages 0..999 and 1000..1999
N_PAGES = 2000


class Kernel:
    """The jitted device over its own arrays (pages are dense ids; two tablespaces)."""

    def __init__(self, dev, n_streams=3):
        self.cfg = _config_array(PoolConfig(device=dev))
        # the page facts as the engine gives them (dense keys: computed from the spaces)
        state = PoolState(PoolConfig(device=dev), Tablespaces([SpaceSpec(1, 1000, "a"),
                                                               SpaceSpec(2, 1000, "b")]))
        self.stat, self.pm = state.stat, state._pm
        self.sst = np.zeros((n_streams, N_T), dtype=np.int64)
        self.glob = np.zeros(N_G, dtype=np.int64)
        self.glob[G_DEVLAST] = -1

    def read(self, p, k, t):
        return int(device_read(self.stat, self.pm, self.sst, self.glob, self.cfg, p, k, t))

    def write(self, t):
        return int(device_write(self.glob, self.cfg, t))


def ref(dev):
    return RefDevice(dev, lambda p: (p // 1000, p))


def dev(scheduler="fifo", skip="adjacent", **kw):
    return DeviceModel("test", RND, SEQ, WR, scheduler=scheduler, skip_pricing=skip, **kw)


# ---- twin: kernel and reference, request by request ---------------------------------------
@st.composite
def request_lists(draw):
    d = dev(draw(st.sampled_from(["fifo", "deadline", "cfq"])),
            draw(st.sampled_from(["adjacent", "distance"])),
            slice_sync_ns=draw(st.sampled_from([20 * MS, 100 * MS])),
            slice_idle_ns=draw(st.sampled_from([0, 8 * MS])),
            read_expire_ns=draw(st.sampled_from([MS, 30 * MS, 500 * MS])))
    reqs, t = [], 0
    pos = [draw(st.integers(0, N_PAGES - 1)) for _ in range(3)]
    for _ in range(draw(st.integers(1, 150))):
        t += draw(st.sampled_from([0, 0, 50_000, 2 * MS, 9 * MS, 60 * MS, 700 * MS]))
        k = draw(st.integers(0, 2))
        kind = draw(st.sampled_from(["next", "next", "skip", "jump", "write"]))
        if kind == "write":
            reqs.append(("w", -1, t))
            continue
        if kind == "next":
            pos[k] = (pos[k] + 1) % N_PAGES
        elif kind == "skip":
            pos[k] = (pos[k] + draw(st.integers(2, 40))) % N_PAGES
        else:
            pos[k] = draw(st.integers(0, N_PAGES - 1))
        reqs.append((k, pos[k], t))
    return d, reqs


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=request_lists())
def test_kernel_matches_reference(case):
    d, reqs = case
    kern, twin = Kernel(d), ref(d)
    for n, (k, p, t) in enumerate(reqs):
        if k == "w":
            assert kern.write(t) == twin.write(t), f"write {n}"
        else:
            assert kern.read(p, k, t) == twin.read(p, k, t), f"request {n} {(k, p, t)}"
        assert kern.glob[G_DEVBUSY] == twin.busy and kern.glob[G_DEVFREE] == twin.free


# ---- service times --------------------------------------------------------------------------
@pytest.mark.parametrize("skip,last,p,expected", [
    ("adjacent", 10, 11, SEQ), ("adjacent", 10, 15, RND), ("adjacent", 10, 9, RND),
    ("distance", 10, 11, SEQ), ("distance", 10, 15, 5 * SEQ), ("distance", 10, 110, 100 * SEQ),
    ("distance", 10, 10 + RND // SEQ, RND), ("distance", 10, 500, RND),   # min(random, d * seq)
    ("distance", 10, 9, RND), ("distance", 10, 10, RND),                  # backwards: a seek
    ("distance", 999, 1004, RND),                                         # another tablespace
])
def test_skip_pricing(skip, last, p, expected):
    for impl in (Kernel(dev(skip=skip)), ref(dev(skip=skip))):
        impl.read(last, 0, 0)                            # puts the head on page `last`
        done = impl.read(p, 0, 10**9)
        assert done - 10**9 == expected


def test_fifo_queues_in_issue_order():
    k = Kernel(dev("fifo"))
    a = k.read(0, 0, 0)                  # random
    b = k.read(1, 0, 0)                  # sequential, queued behind a
    c = k.read(500, 1, 1)                # another stream waits for both
    assert (a, b, c) == (RND, RND + SEQ, RND + SEQ + RND)


# ---- cfq ------------------------------------------------------------------------------------
def sequential_reader(impl, k, first, t, n, think=0):
    """Stream k reads pages first.. one at a time, each issued ``think`` after the
    previous one completed; returns the completion times."""
    out = []
    for j in range(n):
        done = impl.read(first + j, k, t)
        out.append(done)
        t = done + think
    return out


@pytest.mark.parametrize("impl", [Kernel, ref])
def test_cfq_sequential_reader_starves_a_seeky_one_within_its_slice(impl):
    d = dev("cfq")
    x = impl(d)
    done0 = sequential_reader(x, 0, 0, 0, 3)            # slice [0, 100 ms) for stream 0
    t = done0[-1] + 1000                                 # stream 1 asks 1 us after a read
    r = x.read(1500, 1, t)
    assert r == 100 * MS + RND                           # waits for the slice's end
    # meanwhile stream 0 keeps the disk: its next reads are sequential and finish first
    more = sequential_reader(x, 0, 3, done0[-1] + 1000, 50)
    assert more[0] == done0[-1] + 1000 + SEQ and more[-1] < 100 * MS
    # under fifo the same read waits only for what is booked
    y = impl(dev("fifo"))
    done0 = sequential_reader(y, 0, 0, 0, 3)
    assert y.read(1500, 1, done0[-1] + 1000) == done0[-1] + 1000 + RND


@pytest.mark.parametrize("impl", [Kernel, ref])
def test_cfq_no_idling_after_slice_idle_or_for_a_seeky_stream(impl):
    x = impl(dev("cfq"))
    done0 = sequential_reader(x, 0, 0, 0, 3)
    t = done0[-1] + 8 * MS + 1                           # idle longer than slice_idle
    assert x.read(1500, 1, t) == t + RND
    # a seeky stream (more than 4 seeks among its last 32 reads) gets no idling
    z = impl(dev("cfq"))
    t = 0
    for j in range(6):
        t = z.read(j * 3 * CFQ_SEEK_PAGES, 0, t)         # 6 reads, each a seek
    assert z.read(1500, 1, t + 1000) == t + 1000 + RND
    w = impl(dev("cfq"))                                 # 4 seeks: not yet seeky
    t = 0
    for j in range(5):
        t = w.read(j * 3 * CFQ_SEEK_PAGES, 0, t)
    assert w.read(1500, 1, t + 1000) == 100 * MS + RND


@pytest.mark.parametrize("impl", [Kernel, ref])
def test_cfq_holder_after_the_window_starts_a_new_slice(impl):
    x = impl(dev("cfq", slice_sync_ns=20 * MS))
    t = 0
    for j in range(6):                                   # stream 1 becomes seeky
        t = x.read(1000 + 100 * j, 1, t)
    t0 = t + 9 * MS
    done0 = sequential_reader(x, 0, 0, t0, 2)            # slice [t0, t0 + 20 ms)
    r = x.read(1700, 1, done0[-1])                       # reserved at the slice's end
    assert r == t0 + 20 * MS + RND
    fills, page, t = [], 2, done0[-1]                    # fills up to the window, then waits
    while not fills or fills[-1] <= t0 + 20 * MS:
        fills.append(x.read(page, 0, t))
        t, page = fills[-1], page + 1
    after = fills[-1]
    assert len(fills) > 50 and fills[-2] <= t0 + 20 * MS
    assert after == r + RND                              # after the reserved read: a seek back
    # the new slice (20 ms from that read's start): stream 1's next read waits for it
    assert x.read(1800, 1, after + 1000) == r + 20 * MS + RND


# ---- deadline -------------------------------------------------------------------------------
def streaming_reader(impl, k, first, n):
    """Stream k issues pages first.. one at a time, each half a sequential read before
    the previous one lands (its queue never runs empty); returns (next page, last
    completion, last issue time)."""
    done = impl.read(first, k, 0)
    t = 0
    for j in range(1, n):
        t = done - SEQ // 2
        done = impl.read(first + j, k, t)
    return first + n, done, t


@pytest.mark.parametrize("impl", [Kernel, ref])
def test_deadline_expired_read_goes_first(impl):
    x = impl(dev("deadline", read_expire_ns=50 * MS))
    page, last, t = streaming_reader(x, 0, 0, 500)       # its queue full for > 50 ms
    r = x.read(1500, 1, t)                               # behind the sweep: waits to expire
    assert r == t + 50 * MS + RND
    # stream 0 keeps its queue full and fills the time before the expiry ...
    fills = 0
    while True:
        last = x.read(page, 0, last - SEQ // 2)
        page += 1
        if last > t + 50 * MS:
            break
        fills += 1
    assert fills > 400
    # ... and its first read that does not fit goes after the expired one
    assert last == r + RND


@pytest.mark.parametrize("impl", [Kernel, ref])
def test_deadline_holder_must_have_streamed_for_read_expire(impl):
    x = impl(dev("deadline", read_expire_ns=50 * MS))
    page, last, t = streaming_reader(x, 0, 0, 300)       # queue full for 10 + 29.9 ms
    assert x.read(1500, 1, t) == last + RND              # fifo: after the booked read


@pytest.mark.parametrize("impl", [Kernel, ref])
def test_deadline_stream_that_lets_its_queue_empty_does_not_hold(impl):
    x = impl(dev("deadline"))
    done0 = sequential_reader(x, 0, 0, 0, 20, think=1000)  # one page at a time
    t = done0[-1] - SEQ // 2                               # its last read in flight
    assert x.read(1500, 1, t) == done0[-1] + RND           # fifo: after the booked read


@pytest.mark.parametrize("impl", [Kernel, ref])
def test_writes_go_after_everything(impl):
    x = impl(dev("cfq"))
    sequential_reader(x, 0, 0, 0, 2)
    r = x.read(1500, 1, 2 * SEQ + RND)                     # reserved at 100 ms
    assert x.write(r - RND - 1) == r + WR


# ---- configuration ------------------------------------------------------------------------
@pytest.mark.parametrize("field,value", [("scheduler", "noop"), ("skip_pricing", "near"),
                                         ("slice_sync_ns", 0), ("read_expire_ns", -1),
                                         ("slice_idle_ns", 1.5)])
def test_bad_device_fields(field, value):
    with pytest.raises(ValueError, match=field):
        DeviceModel(**{field: value})


def test_defaults_are_fifo_adjacent():
    d = DeviceModel.hdd7200()
    assert (d.scheduler, d.skip_pricing) == ("fifo", "adjacent")
    assert (d.slice_sync_ns, d.slice_idle_ns, d.read_expire_ns) == (100 * MS, 8 * MS, 500 * MS)


# ---- whole replays under each scheduler: engine against the reference pool -----------------
from tests.test_engine_twin import SMALL, SPACES, innodb_cases, policy_cases, run_both  # noqa: E402


@st.composite
def scheduled(draw, cases):
    cfg, streams = draw(cases)
    d = cfg.device.replace(scheduler=draw(st.sampled_from(["deadline", "cfq"])),
                           skip_pricing=draw(st.sampled_from(["adjacent", "distance"])),
                           slice_sync_ns=draw(st.sampled_from([5 * MS, 100 * MS])),
                           slice_idle_ns=draw(st.sampled_from([0, 8 * MS])),
                           read_expire_ns=draw(st.sampled_from([2 * MS, 500 * MS])))
    return cfg.replace(device=d), streams


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(case=scheduled(innodb_cases()))
def test_innodb_replay_under_a_scheduler_matches_reference(case):
    cfg, streams = case
    run_both(cfg, SPACES, streams)


@pytest.mark.parametrize("policy", ["lru", "clock"])
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_policy_replay_under_a_scheduler_matches_reference(policy, data):
    # lru: the fast path hands a non-FIFO device to the generic kernel
    cfg, streams = data.draw(scheduled(policy_cases(policy)))
    run_both(cfg, SMALL, streams)

