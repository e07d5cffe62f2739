"""A workload of SQL statements, and its trace: statements drawn, compiled, one stream per thread.

A workload is a file:

* ``.sql``: statements separated by ``;`` at the end of a line, run once each in
  order by one client thread (``--`` comments and blank lines skipped);
* ``.toml``: templates with weights and parameter distributions::

      seed = 1                 # every draw comes from it
      threads = 2              # client threads: one trace stream each
      statements = 400         # statements per thread (or: rate = 50 and seconds = 8)

      [[template]]
      name = "point"
      sql = "SELECT c FROM sbtest WHERE id = {id}"
      weight = 10
      [template.params.id]
      dist = "zipf"            # uniform | zipf | sequential | choice
      min = 1
      max = 8000
      s = 1.1                  # zipf exponent (> 0); rank 1 (= min) is the hottest

  ``uniform``: integers ``min..max``; ``zipf``: rank ``k`` of ``1..max-min+1`` with
  probability proportional to ``k**-s``, the value ``min + k - 1``; ``sequential``:
  ``min, min + step, ...`` wrapping after ``max`` (one counter per template and
  parameter, shared by the threads); ``choice``: one of ``values`` (numbers or
  strings, quoted as SQL literals).

Every field is checked before anything is drawn or compiled; an error names the field,
the allowed values and the file's row and column.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_int
from ..trace import Chunk, Trace

__all__ = ["Template", "Param", "Workload", "read_workload", "WorkloadError",
           "compile_workload", "DISTRIBUTIONS", "read_history", "HISTORY_CONSUMER"]

DISTRIBUTIONS = ("uniform", "zipf", "sequential", "choice")
#: largest key range a zipf parameter may span (its cumulative table is held in memory)
ZIPF_MAX_N = 10_000_000
MAX_STATEMENTS = 10_000_000


class WorkloadError(ValueError):
    """A workload file that cannot be used; the message names the field, the allowed
    values and the row and column in the file."""


@dataclass(frozen=True)
class Param:
    name: str
    dist: str
    min: int = 0
    max: int = 0
    s: float = 1.0
    step: int = 1
    values: tuple = ()


@dataclass(frozen=True)
class Template:
    name: str
    sql: str
    weight: float = 1.0
    params: tuple = ()


@dataclass(frozen=True)
class Workload:
    """Templates, their weights, the number of threads and statements per thread, a seed."""

    templates: tuple
    threads: int = 1
    statements: int = 1
    seed: int = 0
    script: bool = False                 # a .sql file: every statement once, in order
    source: str = ""
    scripts: tuple = ()                  # per thread, (label, SQL) pairs (a server's history)

    def draw(self) -> list:
        """Per thread, the list of (template name, SQL text) it runs (deterministic)."""
        if self.scripts:
            return [list(s) for s in self.scripts]
        if self.script:
            return [[(t.name, t.sql) for t in self.templates]]
        rng = np.random.default_rng(self.seed)
        w = np.array([t.weight for t in self.templates], dtype=float)
        seq: dict = {}
        zipf_cdf: dict = {}
        out = []
        for _ in range(self.threads):
            picks = rng.choice(len(self.templates), size=self.statements, p=w / w.sum())
            stmts = []
            for k in picks:
                t = self.templates[int(k)]
                vals = {}
                for p in t.params:
                    vals[p.name] = _draw(p, rng, seq, zipf_cdf, t.name)
                stmts.append((t.name, _fill(t.sql, vals)))
            out.append(stmts)
        return out


def _draw(p: Param, rng, seq: dict, zipf_cdf: dict, tname: str):
    if p.dist == "uniform":
        return int(rng.integers(p.min, p.max + 1))
    if p.dist == "sequential":
        key = (tname, p.name)
        at = seq.get(key, 0)
        n = (p.max - p.min) // p.step + 1
        seq[key] = at + 1
        return p.min + (at % n) * p.step
    if p.dist == "zipf":
        key = (p.max - p.min + 1, p.s)
        if key not in zipf_cdf:
            k = np.arange(1, key[0] + 1, dtype=float)
            c = np.cumsum(k ** -p.s)
            zipf_cdf[key] = c / c[-1]
        return p.min + int(np.searchsorted(zipf_cdf[key], rng.random(), side="right"))
    return p.values[int(rng.integers(0, len(p.values)))]


def _literal(v) -> str:
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, float):
        return repr(v)
    return "'" + str(v).replace("\\", "\\\\").replace("'", "''") + "'"


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _fill(sql: str, vals: dict) -> str:
    return _PLACEHOLDER.sub(lambda m: _literal(vals[m.group(1)]), sql)


# ---- reading and checking a file ------------------------------------------------------------
def _locate(text: str, key: str, nth_table: int | None = None, table: str = "template"):
    """(row, column), 1-based, of ``key = `` in the file: after the ``nth_table``-th
    ``[[table]]`` header when given.  (1, 1) if not found."""
    lines = text.splitlines()
    start = 0
    if nth_table is not None:
        seen = -1
        for i, ln in enumerate(lines):
            if re.match(rf"\s*\[\[\s*{re.escape(table)}\s*\]\]", ln):
                seen += 1
                if seen == nth_table:
                    start = i
                    break
    pat = re.compile(rf"^(\s*)({re.escape(key)})\s*=")
    for i in range(start, len(lines)):
        m = pat.match(lines[i])
        if m:
            return i + 1, len(m.group(1)) + 1
    return (start + 1, 1)


def _fail(path, text, msg, key, nth=None):
    row, col = _locate(text, key, nth)
    raise WorkloadError(f"{path}: row {row}, column {col}: {msg}")


def read_workload(path, *, threads: int | None = None, statements: int | None = None,
                  seed: int | None = None) -> Workload:
    """Read and check a workload file (``.sql`` or ``.toml``, module docstring).

    ``threads``, ``statements`` and ``seed`` override the file's values (a ``.sql``
    script takes none of them).

    Raises
    ------
    WorkloadError
        Naming the field, the allowed values and the row and column in the file.
    FileNotFoundError
        If ``path`` does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--workload: {str(path)!r} is not a file")
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    if suffix == ".sql":
        if threads not in (None, 1) or statements is not None:
            raise WorkloadError(f"{path}: a .sql script runs every statement once in one "
                                "thread; --threads and --statements need a .toml workload")
        stmts = _split_sql(text)
        if not stmts:
            raise WorkloadError(f"{path}: row 1, column 1: no statement in the file")
        for row, col, sql in stmts:
            if _PLACEHOLDER.search(sql) and sql.lstrip()[:6].lower() in ("select", "update",
                                                                         "delete", "insert"):
                raise WorkloadError(f"{path}: row {row}, column {col}: placeholder "
                                    f"{_PLACEHOLDER.search(sql).group(0)} in a .sql script; "
                                    "templates with parameters go in a .toml workload")
        return Workload(tuple(Template(f"line {row}", sql) for row, col, sql in stmts),
                        script=True, source=str(path))
    if suffix != ".toml":
        raise WorkloadError(f"--workload: {str(path)!r} must end with .sql or .toml")
    import tomllib
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{path}: {exc}") from None
    allowed_top = {"seed", "threads", "statements", "rate", "seconds", "template"}
    for k in doc:
        if k not in allowed_top:
            _fail(path, text, f"unknown field {k!r}; allowed: {', '.join(sorted(allowed_top))}", k)

    def int_field(name, lo, hi, default, value=None):
        v = doc.get(name, default) if value is None else value
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            _fail(path, text, f"{name} = {v!r} is out of range; allowed: an integer {lo}..{hi}",
                  name)
        return v

    seed_v = int_field("seed", 0, 2**63 - 1, 0, seed)
    threads_v = int_field("threads", 1, 1024, 1, threads)
    if "rate" in doc or "seconds" in doc:
        if "statements" in doc:
            _fail(path, text, "give statements, or rate and seconds, not both", "statements")
        rate = doc.get("rate")
        secs = doc.get("seconds")
        for name, v in (("rate", rate), ("seconds", secs)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1e7:
                _fail(path, text, f"{name} = {v!r} is out of range; allowed: a number > 0 "
                                  "(rate: statements per second per thread)", name)
        n = int(round(rate * secs))
        if not 1 <= n <= MAX_STATEMENTS:
            _fail(path, text, f"rate * seconds = {n} statements is out of range; allowed: "
                              f"1..{MAX_STATEMENTS}", "rate")
        stmts_v = n if statements is None else int_field("statements", 1, MAX_STATEMENTS, 1,
                                                         statements)
    else:
        stmts_v = int_field("statements", 1, MAX_STATEMENTS, 100, statements)
    temps = doc.get("template")
    if not isinstance(temps, list) or not temps:
        raise WorkloadError(f"{path}: row 1, column 1: no [[template]] in the file; "
                            "a .toml workload needs at least one")
    out = []
    names = set()
    for i, t in enumerate(temps):
        for k in t:
            if k not in ("name", "sql", "weight", "params"):
                _fail(path, text, f"template {i + 1}: unknown field {k!r}; allowed: name, sql, "
                                  "weight, params", k, i)
        sql = t.get("sql")
        if not isinstance(sql, str) or not sql.strip():
            _fail(path, text, f"template {i + 1}: sql must be a non-empty string", "sql", i)
        name = t.get("name", f"template {i + 1}")
        if not isinstance(name, str) or name in names:
            _fail(path, text, f"template {i + 1}: name {name!r} must be a unique string", "name", i)
        names.add(name)
        w = t.get("weight", 1)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 < w <= 1e9:
            _fail(path, text, f"template {name!r}: weight = {w!r} is out of range; allowed: "
                              "a number > 0", "weight", i)
        params = t.get("params", {})
        used = set(_PLACEHOLDER.findall(sql))
        if not isinstance(params, dict):
            _fail(path, text, f"template {name!r}: params must be a table", "params", i)
        missing = used - set(params)
        if missing:
            _fail(path, text, f"template {name!r}: placeholder(s) {sorted(missing)} have no "
                              f"[template.params.NAME]", "sql", i)
        ps = []
        for pname, spec in params.items():
            ps.append(_param(path, text, name, i, pname, spec))
        out.append(Template(name, sql.strip().rstrip(";"), float(w), tuple(ps)))
    return Workload(tuple(out), threads_v, stmts_v, seed_v, source=str(path))


def _param(path, text, tname, i, pname, spec) -> Param:
    where = f"template {tname!r} parameter {pname!r}"
    if not isinstance(spec, dict):
        _fail(path, text, f"{where}: must be a table with dist = ...", pname, i)
    dist = spec.get("dist")
    if dist not in DISTRIBUTIONS:
        _fail(path, text, f"{where}: dist = {dist!r} is unknown; allowed: "
                          f"{', '.join(DISTRIBUTIONS)}", "dist", i)
    allowed = {"uniform": {"dist", "min", "max"}, "zipf": {"dist", "min", "max", "s"},
               "sequential": {"dist", "min", "max", "step"}, "choice": {"dist", "values"}}[dist]
    for k in spec:
        if k not in allowed:
            _fail(path, text, f"{where}: field {k!r} does not apply to dist = {dist!r}; "
                              f"allowed: {', '.join(sorted(allowed))}", k, i)
    if dist == "choice":
        vals = spec.get("values")
        if not isinstance(vals, list) or not vals or not all(
                isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in vals):
            _fail(path, text, f"{where}: values must be a non-empty list of numbers or strings",
                  "values", i)
        return Param(pname, dist, values=tuple(vals))
    lo, hi = spec.get("min"), spec.get("max")
    for k, v in (("min", lo), ("max", hi)):
        if isinstance(v, bool) or not isinstance(v, int) or abs(v) >= 2**62:
            _fail(path, text, f"{where}: {k} = {v!r} must be an integer (|x| < 2**62)", k, i)
    if hi < lo:
        _fail(path, text, f"{where}: max = {hi} is out of range; allowed: >= min ({lo})", "max", i)
    s, step = 1.0, 1
    if dist == "zipf":
        s = spec.get("s", 1.0)
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s <= 10:
            _fail(path, text, f"{where}: s = {s!r} is out of range; allowed: 0 < s <= 10", "s", i)
        if hi - lo + 1 > ZIPF_MAX_N:
            _fail(path, text, f"{where}: max - min + 1 = {hi - lo + 1} is out of range for "
                              f"zipf; allowed: <= {ZIPF_MAX_N}", "max", i)
    if dist == "sequential":
        step = spec.get("step", 1)
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            _fail(path, text, f"{where}: step = {step!r} is out of range; allowed: an integer "
                              ">= 1", "step", i)
    return Param(pname, dist, lo, hi, float(s), int(step))


def _split_sql(text: str) -> list:
    """(row, column, statement) of each statement of a script: ``;`` at a line's end."""
    out, cur, start = [], [], None
    for i, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not cur and (not stripped or stripped.startswith("--") or stripped.startswith("#")):
            continue
        if start is None:
            start = (i, len(line) - len(line.lstrip()) + 1)
        cur.append(line)
        if stripped.endswith(";"):
            out.append((*start, "\n".join(cur).strip().rstrip(";").strip()))
            cur, start = [], None
    if cur:
        out.append((*start, "\n".join(cur).strip().rstrip(";").strip()))
    return out


# ---- compile ----------------------------------------------------------------------------------
def compile_workload(compiler, workload: Workload, *, get_ns: int = 0, progress=None):
    """The trace of ``workload`` over ``compiler``'s geometry, and the per-statement report.

    Each thread is a stream; a thread's statements follow one another, each statement's
    last event carries FLAG_STMT_END.  Statements with equal text are compiled once.

    Returns
    -------
    trace : bufsim.Trace
        Over ``compiler.tablespaces`` (the tables and the modelled undo space).
    report : pandas.DataFrame
        One row per statement run: ``stream``, ``template``, ``sql``, ``gets`` (counted
        page gets), ``unsupported`` (the one-line reason, or empty).
    """
    drawn = workload.draw()
    total = sum(len(x) for x in drawn)
    cache: dict = {}
    rows, chunks = [], []
    done = 0
    for stream, stmts in enumerate(drawn):
        for tname, sql in stmts:
            cs = cache.get(sql)
            if cs is None:
                cs = compiler.compile(sql)
                cache[sql] = cs
            rows.append(dict(stream=stream, template=tname, sql=sql,
                             gets=cs.gets if cs.ok else 0,
                             unsupported="" if cs.ok else cs.line()))
            if cs.ok and cs.pages.size:
                c = cs.chunk(stream)
                if get_ns:
                    c = Chunk(c.page, c.count, np.full(len(c), int(get_ns), np.int64), c.stream,
                              c.flags)
                chunks.append(c)
            done += 1
            if progress is not None:
                progress(done, total)
    name = Path(workload.source).stem if workload.source else "live workload"
    streams = [f"thread {k}" for k in range(len(drawn))]
    return Trace(chunks, compiler.tablespaces, name, stream_names=streams), pd.DataFrame(
        rows, columns=["stream", "template", "sql", "gets", "unsupported"])


def check_against_server(conn, schema: str, statements, *, progress=None,
                         rows: dict | None = None) -> pd.DataFrame:
    """Run ``statements`` (``(template, sql)`` pairs) one by one on the server and set each
    one's compiled page gets beside the server's ``Innodb_buffer_pool_read_requests``
    delta.  Runs them: for a private server (the validation of notebook 09 and the live
    tests), never a user's.

    Each statement is compiled just before it runs, over the data as it is then (after a
    statement that changed rows the server's purge is waited for and the geometry read
    again, so ranks and leaves are the current ones).  ``rows``: the index entries read by
    SQL, shared with other compilers over the same data (:class:`bufsim.live.compile.Compiler`);
    used until the first statement that writes, not after.

    Returns
    -------
    pandas.DataFrame
        ``template``, ``sql``, ``compiled``, ``server``, ``unsupported``, and
        ``created``: the pages the server created while the statement ran
        (``Innodb_pages_created``: a new undo segment or undo page, a page split; not
        modelled, and their gets come on top of the compiled ones).
    """
    from .compile import Compiler
    from .workload import quiesce
    comp = Compiler(conn, schema, rows=rows)
    out = []
    statements = list(statements)
    for k, (tname, sql) in enumerate(statements):
        cs = comp.compile(sql)
        before, created0 = conn.status()["Innodb_buffer_pool_read_requests"], _created(conn)
        conn.execute(sql, doing=f"running {tname!r}")
        after, created1 = conn.status()["Innodb_buffer_pool_read_requests"], _created(conn)
        out.append(dict(template=tname, sql=sql, compiled=cs.gets if cs.ok else None,
                         server=after - before, unsupported="" if cs.ok else cs.line(),
                         created=created1 - created0))
        if cs.plan is not None and cs.plan.kind != "select" or (
                not cs.ok and sql.lstrip()[:6].lower() in ("update", "delete", "insert")):
            quiesce(conn)
            comp = Compiler(conn, schema)         # the data changed: no shared rows
        if progress is not None:
            progress(k + 1, len(statements))
    return pd.DataFrame(out, columns=["template", "sql", "compiled", "server", "unsupported",
                                       "created"])


def _created(conn) -> int:
    """The server's Innodb_pages_created: pages it allocated (a new undo segment or undo
    page, a page split), which the compiler does not model."""
    rows = conn.query("SHOW GLOBAL STATUS LIKE 'Innodb_pages_created'",
                      doing="reading Innodb_pages_created")
    return int(rows[0][1])


#: the performance_schema consumer that keeps the statement history read by :func:`read_history`
HISTORY_CONSUMER = "events_statements_history_long"
_KINDS = ("select", "insert", "update", "delete")


def read_history(conn, schema: str, *, limit: int = 100_000) -> tuple:
    """The statements the server ran in ``schema``, as a :class:`Workload` of one script per
    client thread (``performance_schema.events_statements_history_long``, oldest first),
    and the number of statements left out because the server truncated their text.

    Only SELECT, INSERT, UPDATE and DELETE are kept; this connection's own statements are
    left out.  The history is a ring of ``performance_schema_events_statements_history_long_size``
    statements: read it soon after the window of interest.

    Raises
    ------
    LiveError
        If performance_schema or the consumer is off, naming how to turn it on.
    """
    from .errors import LiveError
    limit = check_int("limit", limit, 1, MAX_STATEMENTS)
    on = conn.query("SELECT @@performance_schema", doing="reading @@performance_schema")
    if not on or not int(on[0][0]):
        raise LiveError(f"the statement history needs performance_schema: start the server with "
                        f"performance_schema=ON, performance_schema_consumer_events_statements_current=ON "
                        f"and performance_schema_consumer_{HISTORY_CONSUMER}=ON")
    for consumer in ("events_statements_current", HISTORY_CONSUMER):
        # the history is fed from the current events: both consumers must be on
        enabled = conn.query("SELECT ENABLED FROM performance_schema.setup_consumers "
                             "WHERE NAME = %s", (consumer,),
                             doing="reading performance_schema.setup_consumers")
        if not enabled or str(enabled[0][0]).upper() != "YES":
            raise LiveError(f"the consumer {consumer} is off: UPDATE performance_schema."
                            f"setup_consumers SET ENABLED = 'YES' WHERE NAME = '{consumer}' "
                            f"(or start the server with performance_schema_consumer_{consumer}"
                            "=ON), then run the workload")
    max_len = int(conn.query("SELECT @@performance_schema_max_sql_text_length",
                             doing="reading performance_schema_max_sql_text_length")[0][0])
    rows = conn.query(
        "SELECT h.THREAD_ID, h.EVENT_ID, h.SQL_TEXT FROM performance_schema."
        f"{HISTORY_CONSUMER} h LEFT JOIN performance_schema.threads t ON t.THREAD_ID = h.THREAD_ID "
        "WHERE h.CURRENT_SCHEMA = %s AND h.SQL_TEXT IS NOT NULL "
        "AND (t.PROCESSLIST_ID IS NULL OR t.PROCESSLIST_ID <> CONNECTION_ID()) "
        "ORDER BY h.TIMER_START, h.EVENT_ID LIMIT %s", (schema, int(limit)),
        doing=f"reading performance_schema.{HISTORY_CONSUMER}")
    threads: dict = {}
    truncated = 0
    for tid, eid, text in rows:
        sql = str(text).strip().rstrip(";")
        if not sql or sql.split(None, 1)[0].lower() not in _KINDS:
            continue
        if len(str(text)) >= max_len:
            truncated += 1
            continue
        threads.setdefault(int(tid), []).append((f"thread {tid} event {eid}", sql))
    scripts = tuple(tuple(v) for _, v in sorted(threads.items()))
    return Workload(templates=(), threads=max(1, len(scripts)), statements=1, seed=0,
                    source=f"{schema} history", scripts=scripts), truncated
