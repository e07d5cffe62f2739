"""Issue 42, item 3: ``mrc`` and ``advise`` memory follows the pages a trace touches, not
its largest page number (a 4-row CSV naming page 1e9 was OOM-killed; page 2e9 failed
with an error about an internal ``n_pages``)."""
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from bufsim.advise import footprint, miss_ratio_curve
from bufsim.analytic import mrc
from bufsim.pages import SpaceSpec, Tablespaces
from bufsim.paths import repo_root
from bufsim.trace import Trace

PAGES = [5, 10**9, 5, 10**9, 7, 5]
CAP = 2 * 2**30  # address space these tests may add: arrays by page number need ~16 GB


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))


@pytest.fixture(autouse=True)
def address_space_cap():
    """Fail with MemoryError, not the OOM killer, where memory follows the page number."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_size() + CAP
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_counters_renumber_pages():
    big = np.array(PAGES, dtype=np.int64)
    small = np.array([0, 1, 0, 1, 2, 0], dtype=np.int64)  # the same trace, pages renamed
    c = mrc.StackDistanceCounter()
    assert c.update(big, return_distances=True).tolist() == [-1, -1, 2, 2, -1, 3]
    assert c.n_pages < 10**6 and c.histogram.nbytes < 10**6
    d = mrc.StackDistanceCounter(3)  # pages 0..2 indexed directly
    d.update(small)
    h = c.histogram
    assert h[:4].tolist() == d.histogram.tolist() == [3, 0, 2, 1] and not h[4:].any()
    s = mrc.ShardsCounter(rate=1.0)
    s.update(big)
    want = mrc.shards_mrc((small, None), [1, 2, 3], rate=1.0)
    assert s.mrc([1, 2, 3]).equals(want)
    assert mrc.distinct_pages((big, None)) == 3


@pytest.mark.parametrize("page", [10**9, 2 * 10**9])
def test_exact_mrc_and_advise_over_a_huge_page_map(page):
    ts = Tablespaces([SpaceSpec(1, page + 1, "t")])
    tr = Trace.from_arrays([5, page, 5, page, 7], tablespaces=ts)
    df = mrc.exact_mrc(tr, [1, 2, 3])
    assert df["hits"].tolist() == [0, 2, 2]
    assert footprint(tr) == 3
    assert miss_ratio_curve(tr)["hits"].tolist() == [2]  # one size: 320 pages hold all 3


def test_cli_mrc_of_page_1e9_stays_below_1GB(tmp_path):
    csv = tmp_path / "big.csv"
    csv.write_text("space,page\n1,5\n1,1000000000\n1,5\n1,1000000000\n")
    root = repo_root()
    # a fresh interpreter runs the command and reports its children's peak RSS
    code = ("import resource, subprocess, sys; "
            f"r = subprocess.run([sys.executable, '-m', 'bufsim', 'mrc', {str(csv)!r}], "
            "capture_output=True, text=True); "
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
            "print(r.stdout, r.stderr)")
    p = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                       env=dict(os.environ, BUFSIM_ROOT=str(root)), timeout=600,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30,) * 2))
    rc, rss_kib = map(int, p.stdout.split("\n")[0].split())
    assert rc == 0, p.stdout
    assert "4 gets" in p.stdout and "0.5" in p.stdout
    print(f"peak RSS {rss_kib / 1024:.0f} MiB")
    assert rss_kib < 1024 * 1024  # < 1 GiB (a page map by page number: ~16 GB)


def test_instance_demand_counts_only_the_pages_a_trace_touches():
    from bufsim.contention.demand import instance_demand
    rng = np.random.default_rng(3)
    ts = Tablespaces([SpaceSpec(1, 5000, "a"), SpaceSpec(7, 3000, "b")])
    tr = Trace.from_arrays(rng.integers(0, 8000, 4000), count=rng.integers(1, 4, 4000),
                           flags=rng.choice([0, 2], 4000).astype(np.uint8), tablespaces=ts)
    for version, n in (("5.5", 4), ("5.7", 8)):
        got = instance_demand(tr, n_instances=n, version=version, n_transactions=10)
        # the per-page path over every page number (an explicit instance map takes it)
        want = instance_demand(tr, n_instances=n, version=version, n_transactions=10,
                               instance_map=ts.instance_of(n))
        for f in ("gets", "ahi_lookups", "acquisitions", "latch_acquisitions"):
            np.testing.assert_array_equal(getattr(got, f), getattr(want, f), err_msg=f)
    big = Tablespaces([SpaceSpec(1, 10**9 + 1, "t")])
    d = instance_demand(Trace.from_arrays([5, 10**9, 5, 70], tablespaces=big), n_instances=2,
                        version="5.5", n_transactions=1)
    # fold(1, p >> 6) mod 2 = (1 + (p >> 6)) mod 2: pages 5 and 10**9 in 1, page 70 in 0
    assert d.gets.tolist() == [1, 3]
