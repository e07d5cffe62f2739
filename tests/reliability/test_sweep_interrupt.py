"""Ctrl-C on ``bufsim sweep --jobs 2`` (issue 42, item 6): exit 130 promptly, the running
configurations cancelled, no worker process left behind, no output written."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest

import bufsim

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(Path(bufsim.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH"))
    if p)}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """400,000 random gets over 200,000 pages: each worker reads it, then replays."""
    path = tmp_path_factory.mktemp("sweep_intr") / "t.csv"
    rng = np.random.default_rng(5)
    pd.DataFrame({"space": 1, "page": rng.integers(0, 200_000, 400_000)}).to_csv(path,
                                                                               index=False)
    return path


def _busy_workers(proc: psutil.Process, n: int, timeout: float) -> list[psutil.Process]:
    """Wait until the sweep has ``n`` worker processes that have used CPU."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = proc.children(recursive=True)
        busy = [k for k in kids if _cpu(k) > 0.2]
        if len(busy) >= n:
            return kids
        time.sleep(0.05)
    raise AssertionError(f"no {n} busy workers within {timeout} s")


def _cpu(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


@pytest.mark.parametrize("to", ["parent", "group"])
def test_ctrl_c_on_parallel_sweep(trace, tmp_path, to):
    """``parent``: ``kill -INT`` of the sweep; ``group``: Ctrl-C in a terminal, which
    signals the sweep and its workers together."""
    out = tmp_path / "o.csv"
    cmd = [sys.executable, "-m", "bufsim", "sweep", str(trace), "--pool",
           "5M,6M,7M,8M,9M,10M,11M,12M,13M,14M,15M,16M", "--jobs", "2", "--no-progress",
           "-o", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                         start_new_session=True)   # its own group: the test ends it all
    try:
        proc = psutil.Process(p.pid)
        kids = _busy_workers(proc, 2, timeout=900)   # a first run compiles the kernel
        t = time.monotonic()
        if to == "parent":
            p.send_signal(signal.SIGINT)
        else:
            os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=60)
        took = time.monotonic() - t
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    print(f"SIGINT to the {to}: exit {p.returncode} after {took:.2f} s")
    assert p.returncode == 130, err.decode()[-2000:]
    assert "interrupted" in err.decode()
    assert took < 5.0, took      # 1 s on an idle machine; loaded CI gets slack
    gone, alive = psutil.wait_procs(kids, timeout=2)
    assert not alive, [k.pid for k in alive]
    assert sorted(x.name for x in tmp_path.iterdir()) == []   # no output, no temp file
