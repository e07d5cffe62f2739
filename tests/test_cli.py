"""The bufsim command line, through the real console script (subprocesses).

Each subcommand is run once as ``python -m bufsim`` or as the ``bufsim`` script of the
environment, its numbers compared with the library's, and bad input checked: exit
status 2, one line on stderr naming the problem, nothing written. The other cases call
``bufsim.cli.main`` in this process (``inproc``: the same code without an interpreter's
start, 0.8 s of CPU each).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bufsim
from bufsim.advise import advise
from bufsim.analytic import exact_mrc, shards_mrc

SCRIPT = Path(sys.executable).parent / "bufsim"


def run(*args, cwd=None, script=False):
    cmd = [str(SCRIPT)] if script else [sys.executable, "-m", "bufsim"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    """A hot table (space 3) and a scan of a larger one (space 4), 9,000 gets."""
    rng = np.random.default_rng(11)
    hot = rng.zipf(1.4, 6000) % 700
    scan = np.arange(3000) // 2
    path = tmp_path_factory.mktemp("cli") / "trace.csv"
    pd.DataFrame({"space": np.concatenate([np.full(3000, 3), np.full(3000, 4),
                                           np.full(3000, 3)]),
                  "page": np.concatenate([hot[:3000], scan, hot[3000:]])}
                 ).to_csv(path, index=False)
    return path


class _Proc:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def inproc(capsys):
    """Run ``bufsim.cli.main`` in this process (same code as the script, no start-up
    cost); usage errors raise SystemExit(2) there, as argparse does."""
    from bufsim.cli import main

    def call(*args):
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code
        out = capsys.readouterr()
        return _Proc(code, out.out, out.err)
    return call


def one_error_line(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def listing(d: Path):
    return sorted(p.name for p in d.iterdir())


# ---- version, help ---------------------------------------------------------------------
def test_version_and_help_through_the_script_on_path(inproc):
    assert SCRIPT.is_file()
    p = run("--version", script=True)
    assert p.returncode == 0 and p.stdout.strip() == f"bufsim {bufsim.__version__}"
    h = run("sweep", "--help", script=True)
    assert h.returncode == 0 and "usage: bufsim sweep" in h.stdout and "64M:4G:x2" in h.stdout
    # the other commands' help in this process (the script's start is checked above)
    assert "blkparse" in inproc("convert", "blktrace", "--help").stdout
    assert inproc("notebooks", "run", "--help").returncode == 0


# ---- replay ----------------------------------------------------------------------------
def test_replay_table_json_csv_match_the_library(csv, tmp_path, inproc):
    res = bufsim.replay(bufsim.read_trace(csv), bufsim.mysql55(pool_pages="8M"))
    p = run("replay", csv, "--preset", "mysql55", "--pool", "8M", script=True)
    assert p.returncode == 0, p.stderr
    counters = p.stdout.split("\n\n")[0]   # the totals; per stream and per space follow
    table = dict(line.rsplit(None, 1) for line in counters.splitlines()[1:])
    assert int(table["NUMBER_PAGES_READ"].replace(",", "")) == res.totals["NUMBER_PAGES_READ"]
    assert float(table["hit_ratio"]) == pytest.approx(res.hit_ratio, abs=1e-6)

    j = inproc("replay", csv, "--preset", "mysql55", "--pool", "512", "--json")
    doc = json.loads(j.stdout)
    assert doc["totals"] == {k: int(v) for k, v in res.totals.items()}
    assert doc["config"]["pool_pages"] == 512 and doc["config"]["old_blocks_time_ms"] == 0
    assert doc["provenance"]["trace_sha256"] and len(doc["instances"]) == 1

    out = tmp_path / "r.csv"
    c = inproc("replay", csv, "--preset", "mysql55", "--pool", "8M", "--old-blocks-time", "1000",
            "--old-blocks-pct", "20", "-o", out)
    assert c.returncode == 0, c.stderr
    row = pd.read_csv(out).iloc[0]
    res2 = bufsim.replay(bufsim.read_trace(csv), bufsim.mysql55(
        pool_pages=512, old_blocks_time_ms=1000, old_blocks_pct=20))
    assert row["PAGES_NOT_MADE_YOUNG"] == res2.totals["PAGES_NOT_MADE_YOUNG"]
    assert row["NUMBER_PAGES_READ"] == res2.totals["NUMBER_PAGES_READ"]
    assert row["old_blocks_pct"] == 20 and row["hit_ratio"] == pytest.approx(res2.hit_ratio)
    assert listing(tmp_path) == ["r.csv"]          # no temporary file left behind


def _empty_trace(d):
    p = d / "empty.csv"
    p.write_text("space,page\n")
    return p


@pytest.mark.parametrize("case", ["unknown_column", "missing_column", "wrong_type_pool",
                                  "wrong_type_time", "missing_file", "empty_trace",
                                  "conflicting_formats", "conflicting_suffix", "bad_cell"])
def test_replay_bad_input_exits_2_with_one_line_and_writes_nothing(case, csv, tmp_path, inproc):
    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    bad = tmp_path / "bad.csv"
    bad.write_text("space,pg\n1,2\n")
    cell = tmp_path / "cell.csv"
    cell.write_text("space,page\n1,2\n1,x\n")
    args, needles = {
        "unknown_column": (["--columns", "blk=b"], ["--columns", "'blk' is not a trace column"]),
        "missing_column": ([], ["missing required column 'page'"]),
        "wrong_type_pool": (["--pool", "lots"], ["--pool", "'lots' is not a size"]),
        "wrong_type_time": (["--old-blocks-time", "1s"], ["--old-blocks-time",
                                                         "'1s' is not an integer"]),
        "missing_file": ([], ["TRACE: no such file"]),
        "empty_trace": ([], ["no data rows"]),
        "conflicting_formats": (["--json", "--csv"], ["--csv", "not allowed with", "--json"]),
        "conflicting_suffix": (["--csv"], ["suffix says json but --csv"]),
        "bad_cell": ([], ["row 1 (line 3)", "column 'page'", "'x'"]),
    }[case]
    trace = {"missing_column": bad, "missing_file": tmp_path / "none.csv",
             "empty_trace": _empty_trace(tmp_path), "bad_cell": cell}.get(case, csv)
    pool = [] if "--pool" in args else ["--pool", "8M"]
    # the acceptance list through the console script, the others in this process
    script = case in ("unknown_column", "wrong_type_pool", "missing_file", "empty_trace",
                      "conflicting_formats")
    p = (run if script else inproc)("replay", trace, *pool, *args, "-o", out)
    one_error_line(p, "bufsim replay: error:", *needles)
    assert listing(out.parent) == [] and p.stdout == ""


def test_out_of_range_config_names_the_field(csv, tmp_path, inproc):
    p = inproc("replay", csv, "--pool", "1M")
    one_error_line(p, "pool_pages=64 is out of range; allowed: 320..")
    p = inproc("replay", csv, "--pool", "8M", "--old-blocks-pct", "99")
    one_error_line(p, "--old-blocks-pct", "99 is out of range; allowed: 5..95")


def test_first_replay_says_it_compiles(csv, tmp_path, inproc, monkeypatch):
    """Before a replay whose kernel is not compiled yet (about a minute of silence on a
    first run), one stderr line says so, and where the kernel is kept; not otherwise."""
    from bufsim import engine
    monkeypatch.setattr(engine, "compiled", lambda cfg: False)
    p = inproc("replay", csv, "--pool", "16M")
    assert p.returncode == 0, p.stderr
    notice = [ln for ln in p.stderr.splitlines() if "compile" in ln]
    assert notice == [ln for ln in notice if "innodb replay kernel is not compiled" in ln
                      and "about a minute" in ln]
    assert len(notice) == 1
    p = inproc("sweep", csv, "--pool", "16M,32M", "--jobs", "1", "--no-progress",
               "-o", tmp_path / "sw.csv")
    assert p.returncode == 0, p.stderr
    assert [ln for ln in p.stderr.splitlines() if "compile" in ln] == [notice[0]]
    monkeypatch.setattr(engine, "compiled", lambda cfg: True)
    p = inproc("replay", csv, "--pool", "16M")
    assert p.returncode == 0 and "compile" not in p.stderr


def test_compiled_tells_a_kernel_in_the_cache_from_one_that_is_not(csv, tmp_path, child_env):
    """``engine.compiled``: True once the kernel has run in this process; False in a
    fresh interpreter over an empty cache folder (asked without compiling anything)."""
    from bufsim import engine, mysql56
    cfg = mysql56(pool_pages=1024)
    bufsim.replay(bufsim.read_trace(csv), cfg)
    assert engine.compiled(cfg) is True
    env = dict(child_env, NUMBA_CACHE_DIR=str(tmp_path / "empty"))
    src = ("import time; t = time.time(); from bufsim import engine, mysql56; "
           "print(engine.compiled(mysql56(pool_pages=1024)), round(time.time() - t))")
    proc = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    answer, seconds = proc.stdout.split()
    assert answer == "False"
    assert int(seconds) < 20   # no kernel was compiled to answer (a compile takes ~60 s)


def test_replay_with_a_column_mapping(csv, tmp_path, inproc):
    d = pd.read_csv(csv).rename(columns={"space": "sp", "page": "blk"})
    mapped = tmp_path / "mapped.csv"
    d.to_csv(mapped, index=False)
    a = inproc("replay", csv, "--pool", "8M", "--csv")
    b = inproc("replay", mapped, "--pool", "8M", "--csv", "--columns", "page=blk,space=sp")
    assert b.returncode == 0, b.stderr
    cols = ["NUMBER_PAGES_GET", "NUMBER_PAGES_READ", "hit_ratio"]
    from io import StringIO
    pd.testing.assert_frame_equal(pd.read_csv(StringIO(a.stdout))[cols],
                                  pd.read_csv(StringIO(b.stdout))[cols])


# ---- sweep -----------------------------------------------------------------------------
def test_sweep_writes_the_grid_a_chart_and_matches_serial(csv, tmp_path, inproc):
    out = tmp_path / "s.parquet"
    p = inproc("sweep", csv, "--pool", "5M:20M:x2", "--old-blocks-time", "0,1000", "--preset",
            "mysql55", "-o", out, "--jobs", "2")
    assert p.returncode == 0, p.stderr
    assert "6/6" in p.stderr                         # the bar's total
    both = pd.read_parquet(out)
    df = both[both["stream"] == "all"].reset_index(drop=True)
    # one row per configuration and stream: a single-thread CSV has one stream besides 'all'
    per = both[both["stream"] != "all"].reset_index(drop=True)
    assert len(per) == len(df) and (per["gets"] == df["gets"]).all()
    assert (per["misses"] == df["misses"]).all() and (per["read_ahead"] == df["read_ahead"]).all()
    assert df["read_ahead"].tolist() == df["NUMBER_PAGES_READ_AHEAD"].tolist()
    assert df[["pool_pages", "old_blocks_time_ms"]].values.tolist() == [
        [s, t] for s in (320, 640, 1280) for t in (0, 1000)]
    assert df["error"].isna().all()
    assert sorted(listing(tmp_path)) == ["s.parquet", "s.png", "s.svg"]
    lib = bufsim.sweep(bufsim.read_trace(csv), {"pool_pages": [320, 640, 1280],
                                                "old_blocks_time_ms": [0, 1000]},
                       jobs=1, preset="mysql55")
    for c in ("NUMBER_PAGES_READ", "PAGES_MADE_YOUNG", "PAGES_NOT_MADE_YOUNG", "hit_ratio"):
        assert df[c].tolist() == lib[c].tolist(), c


@pytest.mark.parametrize("args, needles", [
    (["--jobs", "2", "--executor", "dask://127.0.0.1:1"], ["--jobs and --executor exclude"]),
    (["--old-blocks-time", "0,abc"], ["--old-blocks-time: 'abc' is not an integer"]),
    (["--instances", "0"], ["--instances: 0 is out of range; allowed: 1..64"]),
    (["--chart", "c.jpg"], ["--chart", "must end with .png, .svg"]),
    (["--executor", "tcp://x"], ["--executor", "must be dask://HOST:PORT"]),
])
def test_sweep_bad_input(args, needles, csv, tmp_path, inproc, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = args[0] == "--jobs"
    p = (run if script else inproc)("sweep", csv, "--pool", "5M,10M", "-o", tmp_path / "s.csv",
                                    *args)
    one_error_line(p, "bufsim sweep: error:", *needles)
    assert listing(tmp_path) == []


def test_sweep_invalid_configuration_is_refused_before_any_replay(csv, tmp_path, inproc):
    p = inproc("sweep", csv, "--pool", "1M,8M", "-o", tmp_path / "s.parquet")
    one_error_line(p, "configuration {'pool_pages': 64}", "pool_pages=64 is out of range")
    assert listing(tmp_path) == []


# ---- mrc -------------------------------------------------------------------------------
def test_mrc_exact_and_shards(csv, tmp_path, inproc):
    trace = bufsim.read_trace(csv)
    out = tmp_path / "m.csv"
    p = run("mrc", csv, "--sizes", "5M:20M:x2", "-o", out)
    assert p.returncode == 0, p.stderr
    df = pd.read_csv(out)
    ref = exact_mrc(trace, [320, 640, 1280])
    assert df["hits"].tolist() == ref["hits"].tolist()
    assert sorted(listing(tmp_path)) == ["m.csv", "m.png", "m.svg"]
    assert "exact LRU miss-ratio curve" in p.stdout

    s = inproc("mrc", csv, "--shards", "0.5", "--seed", "3", "--sizes", "320,640", "-o",
            tmp_path / "s.json", "--no-chart")
    assert s.returncode == 0, s.stderr
    got = pd.read_json(tmp_path / "s.json")
    want = shards_mrc(trace, [320, 640], rate=0.5, seed=3)
    assert got["hit_ratio"].to_numpy() == pytest.approx(want["hit_ratio"].to_numpy())
    # default sizes: 5 MiB doubling until the footprint fits
    d = inproc("mrc", csv)
    sizes = [int(line.split()[0]) for line in d.stdout.splitlines()[2:]]
    assert sizes == [320, 640, 1280, 2560]


def test_mrc_bad_input(csv, tmp_path, inproc):
    one_error_line(inproc("mrc", csv, "--shards", "0"), "--shards", "0.0 is out of range")
    one_error_line(inproc("mrc", csv, "--shards", "half"), "--shards", "'half' is not a number")
    one_error_line(inproc("mrc", csv, "--sizes", "big"), "--sizes: 'big' is not a size")
    one_error_line(inproc("mrc", csv, "-o", tmp_path / "m.txt"), "-o", "must end with .csv")
    one_error_line(inproc("mrc", tmp_path / "no.csv"), "TRACE: no such file")
    one_error_line(inproc("mrc", csv, "-o", tmp_path / "m.csv", "--chart", tmp_path / "c.png",
                       "--no-chart"), "--chart and --no-chart exclude each other")
    assert listing(tmp_path) == []


# ---- advise ----------------------------------------------------------------------------
def test_advise_markdown_and_html(csv, tmp_path, inproc):
    trace = bufsim.read_trace(csv)
    rep = advise(trace, threads=8, cores=4, preset="mysql55", trace_label=str(csv), jobs=1)
    md = tmp_path / "r.md"
    p = run("advise", csv, "--threads", "8", "--cores", "4", "--preset", "mysql55", "-o", md,
            "--jobs", "1")
    assert p.returncode == 0, p.stderr
    text = md.read_text()
    # the figures are written beside the report and linked from it
    assert text == rep.markdown({"curves": "r-curves.png", "instances": "r-instances.png"})
    assert sorted(listing(tmp_path)) == ["r-curves.png", "r-curves.svg", "r-instances.png",
                                         "r-instances.svg", "r.md"]
    pages = rep.recommended_pages
    assert text.startswith(f"- **innodb_buffer_pool_size = {pages / 64:,.0f} MiB** "
                           f"({pages:,} pages")
    assert "![curves](r-curves.png)" in text and "Assumptions" in text
    h = inproc("advise", csv, "--threads", "8", "--cores", "4", "--preset", "mariadb1011",
               "-o", tmp_path / "r.html", "--jobs", "1")
    assert h.returncode == 0, h.stderr
    html = (tmp_path / "r.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<table>" in html and "<h2>Instances</h2>" in html
    assert "single buffer pool" in html and html.count("data:image/png;base64,") == 1


def test_advise_bad_input(csv, tmp_path, inproc):
    one_error_line(inproc("advise", csv, "--target-hit", "1.5"), "--target-hit", "out of range")
    one_error_line(inproc("advise", csv, "--threads", "many"), "--threads", "not an integer")
    one_error_line(inproc("advise", csv, "-o", tmp_path / "r.pdf"), "must end with .md, .html")
    one_error_line(inproc("advise", csv, "--preset", "mysql99"), "--preset", "invalid choice")
    one_error_line(inproc("advise", csv, "--protect", "nope"), "stream 'nope'", "allowed:")
    one_error_line(inproc("advise", csv, "--target-hit", "x=2"), "--target-hit: x=2",
                   "out of range")
    one_error_line(inproc("advise", _empty_trace(tmp_path)), "no data rows")
    assert listing(tmp_path) == ["empty.csv"]


# ---- convert ---------------------------------------------------------------------------
def test_convert_blktrace_then_replay(tmp_path, inproc):
    src = Path(__file__).parent / "data" / "blkparse_sample.txt"
    out = tmp_path / "pages.csv"
    p = run("convert", "blktrace", src, "-o", out, "--page-size", "16K", "--file-offset", "1M",
            "--space", "9")
    assert p.returncode == 0, p.stderr
    df = pd.read_csv(out)
    assert df.columns.tolist() == ["space", "page", "time_ns", "thread"]
    assert (df["space"] == 9).all()
    r = inproc("replay", out, "--pool", "5M", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["totals"]["NUMBER_PAGES_GET"] == len(df)
    one_error_line(inproc("convert", "blktrace", src, "-o", tmp_path / "x.csv", "--page-size",
                          "3000"), "--page-size", "power of two")
    one_error_line(inproc("convert", "blktrace", tmp_path / "none.txt", "-o", tmp_path / "y.csv"),
                   "IN: no such file")
    assert listing(tmp_path) == ["pages.csv"]


def test_sigint_stops_a_replay_within_a_second_and_writes_nothing(tmp_path):
    """Issue 17: Ctrl-C during a long replay (rows of 2**32-1 gets) exits within 1 s
    with the engine's message and leaves no output file, temporary or final."""
    import signal
    import time

    trace = tmp_path / "long.csv"
    trace.write_text("space,page,count\n0,1,1\n0,2,1\n" + "0,1,4294967295\n0,2,4294967295\n" * 4)
    out = tmp_path / "out" / "counters.json"
    out.parent.mkdir()
    # the same command on a short trace first, so that the child loads the compiled
    # kernels from the cache instead of compiling them while the signal arrives
    small = tmp_path / "small.csv"
    small.write_text("space,page,count\n0,1,1\n0,2,1\n0,1,1000\n")
    assert run("replay", small, "--pool", "8M", "--json").returncode == 0
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from bufsim.cli import main; sys.exit(main(sys.argv[1:]))")
    p = subprocess.Popen([sys.executable, "-c", code, "replay", str(trace), "--pool", "8M",
                          "--json", "-o", str(out)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        # wait until the replay is under way (imports and cache loads take ~1-2 s of CPU)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and p.poll() is None and _cpu_seconds(p.pid) < 4:
            time.sleep(0.2)
        assert p.poll() is None, p.stderr.read()
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
        waited = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    err = p.stderr.read()
    assert p.returncode == 130, err
    assert "interrupted: replay interrupted after" in err and "nothing written" in err, err
    assert listing(out.parent) == []
    print(f"exited {waited:.2f} s after SIGINT")  # measured, not asserted: CI may be loaded


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    import os
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
