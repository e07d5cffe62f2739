"""Ctrl-C while a trace is read is an interrupt, never bad input (issue 42, item 5).

pandas' C parser calls ``read()`` on the (here gzip) file object; a SIGINT that lands
there used to come back as ``TraceError ... ParserError: Calling read(nbytes) on source
failed`` (a ValueError, exit 2).  The child below makes the signal land exactly there:
its n-th ``GzipFile.read1`` call sends SIGINT to its own process and sleeps, so the
KeyboardInterrupt is raised inside ``read()`` as a real Ctrl-C would be.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

CHILD = r'''
import gzip, json, os, signal, sys, time
import bufsim
from bufsim.cli import main

calls = [0]
plain = gzip.GzipFile.read1     # what pandas' text wrapper calls
def read1(self, *a):
    calls[0] += 1
    if calls[0] == ARMED:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    return plain(self, *a)
gzip.GzipFile.read1 = read1

path = sys.argv[1]
out = {}
ARMED = int(sys.argv[2])
try:
    bufsim.read_trace(path, chunk_size=1000)
    out["python"] = "returned"
except ValueError as e:   # what a user's `except ValueError` would swallow
    out["python"] = "ValueError: " + str(e)
except KeyboardInterrupt:
    out["python"] = "KeyboardInterrupt"
calls[0] = 0
out["cli"] = main(["replay", path, "--pool", "8M"])
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def gz(tmp_path_factory):
    path = tmp_path_factory.mktemp("intr") / "t.csv.gz"
    n = 200_000
    pd.DataFrame({"space": 1, "page": np.arange(n) % 5000, "time_ns": np.arange(n) * 1000}
                 ).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("armed", [1, 60])   # 1: while the header is read; 60: a data block
def test_ctrl_c_while_reading_csv_is_keyboard_interrupt(run_child, gz, armed):
    out = run_child(CHILD, str(gz), str(armed), timeout=120)
    assert out["python"] == "KeyboardInterrupt", out
    assert out["cli"] == 130, out
