"""``--executor dask://HOST:PORT`` is checked with a bounded handshake before any work
(issue 42, item 4): a silent listener, a service that speaks first in another protocol and
a closed port each fail fast, naming the address."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import bufsim
from bufsim.cluster import DEFAULT_TIMEOUT_S, check_scheduler

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(Path(bufsim.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH"))
    if p)}


@pytest.fixture
def silent():
    """Accepts connections (the kernel's backlog does) and never says anything."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def chatty():
    """Speaks first, as an SSH or SMTP server does; its first 8 bytes read as a length of
    exabytes."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    conns, stop = [], threading.Event()

    def serve():
        s.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = s.accept()
            except OSError:
                continue
            c.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
            conns.append(c)
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield s.getsockname()[1]
    stop.set()
    t.join(2)
    for c in conns:
        c.close()
    s.close()


@pytest.fixture
def closed():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("dask") / "t.csv"
    pd.DataFrame({"page": range(100)}).to_csv(path, index=False)
    return path


def test_default_timeout_is_ten_seconds():
    from bufsim.cli import _parser
    args = _parser().parse_args(["sweep", "t.csv", "--pool", "8M", "-o", "o.csv",
                                 "--executor", "dask://127.0.0.1:8786"])
    assert args.executor_timeout == DEFAULT_TIMEOUT_S == 10.0


def _refused(spec, timeout):
    t = time.monotonic()
    with pytest.raises(ValueError) as e:
        check_scheduler(spec, timeout)
    return str(e.value), time.monotonic() - t


def test_silent_listener_times_out(silent):
    msg, took = _refused(f"dask://127.0.0.1:{silent}", 1.5)
    assert f"127.0.0.1:{silent}" in msg and "handshake" in msg and "1.5 s" in msg, msg
    assert 1.4 < took < 3.0


def test_service_speaking_another_protocol(chatty):
    msg, took = _refused(f"dask://127.0.0.1:{chatty}", 5)
    assert f"127.0.0.1:{chatty}" in msg and "not a dask scheduler" in msg, msg
    assert took < 2.0


def test_closed_port(closed):
    msg, took = _refused(f"dask://127.0.0.1:{closed}", 5)
    assert f"127.0.0.1:{closed}" in msg and "refused" in msg, msg
    assert took < 1.0


@pytest.mark.parametrize("kind", ["silent", "chatty", "closed"])
def test_sweep_refuses_before_any_work(request, trace, tmp_path, capsys, kind):
    """The command line, in this process (start-up time aside): exit 2 within the timeout,
    one line naming the address, nothing compiled, read or written."""
    from bufsim.cli import main
    port = request.getfixturevalue(kind)
    out = tmp_path / "o.csv"
    t = time.monotonic()
    code = main(["sweep", str(trace), "--pool", "8M,16M", "--executor",
                 f"dask://127.0.0.1:{port}", "--executor-timeout", "2", "-o", str(out)])
    took = time.monotonic() - t
    err = capsys.readouterr().err
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"bufsim sweep: error: --executor: dask://127.0.0.1:{port}: "), line
    assert "compile" not in err and not out.exists()
    assert took < (3.5 if kind == "silent" else 1.5), took


def test_sweep_script_exit_status(trace, tmp_path, closed):
    r = subprocess.run([sys.executable, "-m", "bufsim", "sweep", str(trace), "--pool", "8M,16M",
                        "--executor", f"dask://127.0.0.1:{closed}", "-o", str(tmp_path / "o.csv")],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode == 2 and "refused" in r.stderr, r.stderr


def test_real_dask_handshake_is_accepted():
    """A listener that sends what a scheduler sends on a new connection (distributed's own
    framing of its handshake dict) passes; the same bytes cut short do not."""
    import asyncio

    from distributed.comm.tcp import _add_frames_header
    from distributed.comm.utils import to_frames
    info = {"compression": None, "python": tuple(sys.version_info[:3]), "pickle-protocol": 5}
    frames = asyncio.run(to_frames(info, allow_offload=False))
    frames, _, _ = _add_frames_header(frames)
    wire = b"".join(bytes(f) for f in frames)
    for payload, ok in ((wire, True), (wire[:-3], False)):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)

        def serve():
            c, _ = s.accept()
            c.sendall(payload)
            c.settimeout(2.5)       # open until the check closes its end (the cut-short
            try:                    # payload: after its 2 s), at most 2.5 s
                c.recv(1)
            except OSError:
                pass
            c.close()
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        spec = f"dask://127.0.0.1:{s.getsockname()[1]}"
        if ok:
            assert check_scheduler(spec, 2) == spec.replace("dask://", "tcp://")
        else:
            with pytest.raises(ValueError, match="no dask handshake within 2 s"):
                check_scheduler(spec, 2)
        t.join(5)
        s.close()
