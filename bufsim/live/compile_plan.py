"""A statement's plan as the server chose it: EXPLAIN FORMAT=JSON and the optimizer trace.

:func:`parse_plan` maps the two JSON documents MariaDB 10.11 gives for one statement
(``EXPLAIN FORMAT=JSON`` and ``INFORMATION_SCHEMA.OPTIMIZER_TRACE`` of that EXPLAIN)
onto a :class:`Plan`: the tables in join order with their access (``const``,
``eq_ref``, ``ref``, ``range``, ``index``, ``ALL``), the index, the key parts and
what they are compared with, whether the index covers the statement (``using_index``)
and whether a condition is pushed into it (``index_condition``), and the
records-in-range estimates ("dives") the optimiser made, each a page-reading
descent of the index.  Anything the page-get model does not follow (filesort,
temporary tables, subqueries, full-text, partitions, index merge, block joins other
than BKA) is an :class:`Unsupported` naming the plan node and the reason.

It is pure: no server, so the mapping is tested on recorded JSON
(``tests/data/explain/``).

References
----------
MariaDB 10.11 ``sql/sql_explain.cc`` (Explain_table_access::print_explain_json: the
keys ``access_type``, ``key``, ``used_key_parts``, ``ref``, ``using_index``,
``index_condition``, ``attached_condition``, ``join_type`` / ``mrr_type``),
``sql/opt_range.cc`` (the optimizer trace's ``range_scan_alternatives`` and their
``ranges``, printed by print_range).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

__all__ = ["TableAccess", "Dive", "Plan", "Unsupported", "parse_plan", "parse_range",
           "Bound", "ACCESS_TYPES", "statement_kind", "statement_limit", "parse_tuple", "table_aliases"]

#: access types the page-get model follows
ACCESS_TYPES = ("const", "system", "eq_ref", "ref", "range", "index", "ALL")

#: keys of a query block that carry no plan node of their own
_BLOCK_KEYS = {"select_id", "cost", "nested_loop", "table", "const_condition",
               "outer_ref_condition", "pseudo_bits_condition", "r_loops", "r_total_time_ms",
               "message"}
#: keys of a table node the model reads or may ignore
_TABLE_KEYS = {"table_name", "access_type", "possible_keys", "key", "key_length",
               "used_key_parts", "ref", "rows", "filtered", "attached_condition",
               "using_index", "index_condition", "update", "delete", "insert", "cost",
               "loops", "r_loops", "r_rows", "r_filtered", "r_total_time_ms",
               "buffer_type", "buffer_size", "join_type", "mrr_type", "using_join_buffer",
               "block-nl-join", "rowid_filter", "first_match", "not_exists", "bka_condition"}


class Unsupported(ValueError):
    """A plan node the page-get model does not follow: ``node`` and ``reason``."""

    def __init__(self, node: str, reason: str):
        super().__init__(f"{node}: {reason}")
        self.node = node
        self.reason = reason


@dataclass(frozen=True)
class Bound:
    """One side of a range: the key-part values and whether the bound is included."""

    values: tuple
    inclusive: bool


@dataclass(frozen=True)
class Dive:
    """A records-in-range estimate the optimiser made: index and ranges (in trace order)."""

    table: str
    index: str
    ranges: tuple


@dataclass(frozen=True)
class TableAccess:
    """One table of a plan, in join order."""

    alias: str
    access: str
    key: str | None = None
    used_key_parts: tuple = ()
    ref: tuple = ()
    covering: bool = False
    icp: bool = False
    condition: str | None = None
    ranges: tuple = ()
    join_buffer: str | None = None      # None, "BKA"
    first_match: str | None = None      # semi-join FirstMatch: stop at the first matching row
    mrr: str | None = None              # EXPLAIN's mrr_type (DS-MRR), e.g. "Rowid-ordered scan"
    rowid_filter: str | None = None     # the index of a range rowid filter
    rows_estimate: float | None = None
    buffer_type: str | None = None      # a join buffer's EXPLAIN buffer_type: flat, incremental
    buffer_bytes: int | None = None     # its EXPLAIN buffer_size, rounded down ("159KiB")


@dataclass(frozen=True)
class Plan:
    """A statement's plan: its kind, tables in join order, the optimiser's dives."""

    kind: str                            # select, update, delete, insert
    tables: tuple
    dives: tuple = ()
    impossible: bool = False            # "Impossible WHERE" and the like: reads no table
    notes: tuple = field(default=())
    key_uses: tuple = ()                 # (table, index, field, equals) of the optimizer trace
    const_tables: tuple = ()             # tables the optimiser read as const (by the trace)
    limit: tuple | None = None           # (offset, count) of a top-level LIMIT
    aliases: dict = field(default_factory=dict)   # alias -> [schema.]table, from the trace
    after: tuple = ()                    # "filesort", "temporary table" over the join's rows


_KIND = re.compile(r"^\s*(select|update|delete|insert|replace|with|explain|show|set)\b", re.I)


def statement_kind(sql: str) -> str:
    """The statement's first keyword in lower case (``select``, ``update``, ...)."""
    m = _KIND.match(sql)
    if not m:
        word = sql.strip().split(None, 1)[0] if sql.strip() else "(empty)"
        raise Unsupported("statement", f"{word!r} is not a SELECT, INSERT, UPDATE or DELETE")
    return m.group(1).lower()


# ---- ranges as the optimizer trace prints them ------------------------------------------
_TOKEN = re.compile(r"\s*(?:'((?:[^'\\]|\\.|'')*)'|(NULL)\b|([-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)"
                    r"|([^,()]+?))\s*(,|\))")


def _values(text: str, pos: int):
    """The comma-separated values of a parenthesised tuple starting at ``text[pos] == '('``."""
    if text[pos] != "(":
        raise ValueError(f"expected '(' at {pos} in {text!r}")
    pos += 1
    out = []
    while True:
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot read a value at {pos} in {text!r}")
        s, null, num, other, sep = m.groups()
        if s is not None:
            out.append(s.replace("''", "'").replace("\\'", "'"))
        elif null is not None:
            out.append(None)
        elif num is not None:
            out.append(int(num) if re.fullmatch(r"[-+]?[0-9]+", num) else float(num))
        else:
            out.append(other.strip())
        pos = m.end()
        if sep == ")":
            return tuple(out), pos


def parse_tuple(text: str) -> tuple:
    """The values of a parenthesised tuple as the optimizer trace prints it: ``(5, 'a', NULL)``."""
    return _values(text.strip(), 0)[0]


def parse_range(text: str):
    """``(lower, upper, columns)`` of one range the optimizer trace prints.

    Forms: ``(a) <= (c) <= (b)``, ``(a) < (c)``, ``(c) < (b)``, ``(a,b) <= (c,d) <= (a,b)``;
    a missing side is None.  Column names are returned as printed.
    """
    t = text.strip()
    parts = re.split(r"\s+(<=|<)\s+", t)
    if len(parts) not in (3, 5):
        raise ValueError(f"range {text!r} is not of the form (v) <= (col) <= (w)")
    tuples = [parts[i] for i in range(0, len(parts), 2)]
    ops = [parts[i] for i in range(1, len(parts), 2)]

    def is_cols(s):
        return not re.search(r"'|\d|NULL", s.strip("() ")) or re.fullmatch(
            r"\(\s*`?[A-Za-z_][\w$]*`?(\s*,\s*`?[A-Za-z_][\w$]*`?)*\s*\)", s.strip()) is not None

    if len(tuples) == 3:
        lo_vals, _ = _values(tuples[0], 0)
        cols = tuple(c.strip(" `") for c in tuples[1].strip("() ").split(","))
        hi_vals, _ = _values(tuples[2], 0)
        return Bound(lo_vals, ops[0] == "<="), Bound(hi_vals, ops[1] == "<="), cols
    if is_cols(tuples[0]):
        cols = tuple(c.strip(" `") for c in tuples[0].strip("() ").split(","))
        hi_vals, _ = _values(tuples[1], 0)
        return None, Bound(hi_vals, ops[0] == "<="), cols
    lo_vals, _ = _values(tuples[0], 0)
    cols = tuple(c.strip(" `") for c in tuples[1].strip("() ").split(","))
    return Bound(lo_vals, ops[0] == "<="), None, cols


# ---- EXPLAIN FORMAT=JSON -> Plan -------------------------------------------------------
def _as_json(doc):
    if isinstance(doc, (str, bytes)):
        return json.loads(doc)
    return doc


def _trace_dives(trace) -> tuple:
    """The records-in-range dives of an optimizer trace, in the order they were made."""
    out = []

    def walk(o, table):
        if isinstance(o, dict):
            t = o.get("table", table) if isinstance(o.get("table"), str) else table
            alts = o.get("range_scan_alternatives")
            if isinstance(alts, list):
                for a in alts:
                    if isinstance(a, dict) and a.get("ranges"):
                        out.append(Dive(t, a["index"], tuple(a["ranges"])))
            for k, v in o.items():
                if k != "range_scan_alternatives":
                    walk(v, t)
        elif isinstance(o, list):
            for v in o:
                walk(v, table)

    walk(trace, None)
    return tuple(out)


def _key_uses(trace) -> tuple:
    """The optimizer trace's ``ref_optimizer_key_uses``: (table, index, field, equals)."""
    out = []

    def walk(o):
        if isinstance(o, dict):
            uses = o.get("ref_optimizer_key_uses")
            if isinstance(uses, list):
                for u in uses:
                    if isinstance(u, dict) and "equals" in u:
                        out.append((u.get("table"), u.get("index"), u.get("field"), u["equals"]))
            for k, v in o.items():
                if k != "ref_optimizer_key_uses":
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(trace)
    return tuple(out)


_NOT_ALIAS = {"join", "on", "left", "right", "inner", "outer", "straight_join", "cross",
              "natural", "use", "force", "ignore", "where", "using", "group", "order", "having",
              "limit", "semi", "for", "lock", "window", "union"}
_FROM_ITEM = re.compile(r"(?:\bfrom\b|\b(?:straight_)?join\b|,)\s*\(*\s*((?:`?\w+`?\.)?`?\w+`?)"
                        r"(?:\s+(?:as\s+)?(?!(?:" + "|".join(sorted(_NOT_ALIAS)) + r")\b)`?(\w+)`?)?",
                        re.I)


def table_aliases(trace) -> dict:
    """alias -> table (``schema.table`` where the query names a schema) of the first query
    block, read from the optimizer trace's ``expanded_query`` (``... from (sbtest t join
    dates d on(...))``).  A table without an alias maps to itself."""
    q = None

    def walk(o):
        nonlocal q
        if q is not None:
            return
        if isinstance(o, dict):
            if isinstance(o.get("expanded_query"), str):
                q = o["expanded_query"]
                return
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(trace)
    out = {}
    at = re.search(r"\sfrom\s", q or "", re.I)
    if not at:
        return out
    for name, alias in _FROM_ITEM.findall(q[at.start():]):
        name = name.replace("`", "")
        if alias and alias.lower() not in _NOT_ALIAS:
            out[alias] = name
        else:
            out.setdefault(name.split(".")[-1], name)
    return out


def _const_tables(trace) -> tuple:
    """Tables whose ``rows_estimation`` says ``table_type: const`` (or system)."""
    out = []

    def walk(o):
        if isinstance(o, dict):
            if o.get("table_type") in ("const", "system") and isinstance(o.get("table"), str):
                out.append(o["table"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(trace)
    return tuple(dict.fromkeys(out))


_LIMIT = re.compile(r"\blimit\s+(\d+)(?:\s*(,|offset)\s*(\d+))?\s*;?\s*$", re.I)


def statement_limit(sql: str):
    """(offset, count) of a LIMIT that ends the statement, or None."""
    m = _LIMIT.search(sql or "")
    if not m:
        return None
    a, sep, b = m.groups()
    if sep is None:
        return 0, int(a)
    if sep == ",":
        return int(a), int(b)
    return int(b), int(a)


def _chosen_ranges(trace) -> dict:
    """Per table, the ranges of the range access the optimiser chose."""
    out = {}

    def walk(o, table):
        if isinstance(o, dict):
            t = o.get("table", table) if isinstance(o.get("table"), str) else table
            plan = o.get("range_access_plan")
            if isinstance(plan, dict) and plan.get("type") == "range_scan":
                out[(t, plan.get("index"))] = tuple(plan.get("ranges", ()))
            for k, v in o.items():
                walk(v, t)
        elif isinstance(o, list):
            for v in o:
                walk(v, table)

    walk(trace, None)
    return out


def _table_access(node: dict, where: str, chosen: dict) -> TableAccess:
    name = node.get("table_name", "?")
    where = f"{where} table {name}"
    for k in node:
        if k not in _TABLE_KEYS:
            reason = {"partitions": "partitioned table (partition pruning is not modelled)",
                      "materialized": "a subquery the server materialises",
                      "filesort": "filesort"}.get(k, f"plan key {k!r} is not modelled")
            raise Unsupported(where, reason)
    acc = node.get("access_type")
    if acc not in ACCESS_TYPES:
        raise Unsupported(where, f"access type {acc!r} (modelled: {', '.join(ACCESS_TYPES)})")
    if name.startswith("<"):
        raise Unsupported(where, f"derived or temporary table {name}")
    jb = None
    if "block-nl-join" in node or node.get("using_join_buffer") or node.get("join_type"):
        jt = str(node.get("join_type", "BNL"))
        if jt != "BKA" or acc not in ("eq_ref", "ref"):
            raise Unsupported(where, f"join buffer {jt} (block nested loop is not modelled; "
                                     "BKA with eq_ref/ref is)")
        jb = "BKA"
    rf = None
    if node.get("rowid_filter"):
        f = node["rowid_filter"]
        fr = f.get("range") if isinstance(f, dict) else None
        if not isinstance(fr, dict) or set(f) - {"range", "rows", "selectivity_pct", "r_rows",
                                                  "r_selectivity_pct", "r_buffer_size",
                                                  "r_filling_time_ms", "r_lookups"}:
            raise Unsupported(where, "rowid filter other than one range filter")
        rf = fr.get("key")
    if node.get("not_exists"):
        raise Unsupported(where, "not_exists (an outer join stopped at its first match) is "
                                 "not modelled")
    ranges = ()
    if acc == "range":
        ranges = chosen.get((name, node.get("key")), ())
        if not ranges:
            raise Unsupported(where, f"range access on {node.get('key')} without ranges in the "
                                     "optimizer trace")
    return TableAccess(
        alias=name, access="const" if acc == "system" else acc, key=node.get("key"),
        used_key_parts=tuple(node.get("used_key_parts", ())), ref=tuple(node.get("ref", ())),
        covering=bool(node.get("using_index", False)), icp="index_condition" in node,
        condition=node.get("attached_condition"), ranges=ranges, join_buffer=jb,
        rows_estimate=node.get("rows"), first_match=node.get("first_match"),
        mrr=node.get("mrr_type"), rowid_filter=rf,
        buffer_type=node.get("buffer_type") if jb else None,
        buffer_bytes=buffer_bytes(node.get("buffer_size")) if jb else None)


def buffer_bytes(size) -> int | None:
    """EXPLAIN's ``buffer_size`` of a join buffer in bytes, rounded down: the server prints
    it in whole KiB (under 16 MiB) or MiB, truncated (MariaDB 10.11.18 sql/sql_explain.cc:2029,
    sql/my_json_writer.cc:216 ``Json_writer::add_size``), so "159KiB" is at least 159 * 1024."""
    if size is None:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*(KiB|MiB|GiB)?\s*", str(size))
    if not m:
        return None
    return int(m.group(1)) * {None: 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]


#: plan messages of a statement that reads no table beyond its const lookups and dives
_EMPTY_MESSAGES = ("Impossible WHERE", "Impossible WHERE noticed after reading const tables",
                   "no matching row in const table", "No tables used",
                   "Impossible HAVING", "Impossible HAVING noticed after reading const tables")


def _message(msg: str, where: str) -> None:
    if msg not in _EMPTY_MESSAGES:
        raise Unsupported(f"{where} message", f"{msg!r} (only {', '.join(_EMPTY_MESSAGES[:3])} "
                                              "are modelled)")


#: keys of a node above the join (a filesort or a temporary table) that carry no plan node
_AFTER_KEYS = {"sort_key", "cost", "r_loops", "r_total_time_ms", "r_used_priority_queue",
               "r_output_rows", "r_buffer_size", "r_sort_mode", "filesort_priority_queue_optimization",
               "select_id"}


def _inside(qb: dict, node: str, extra: set):
    """Raise Unsupported for a node above the join that holds more than the join."""
    k = sorted(extra)[0]
    reason = {"subqueries": "subqueries", "having_condition": "HAVING",
              "duplicates_removal": "semi-join duplicate removal",
              "filesort": "filesort"}.get(k, f"plan key {k!r} is not modelled")
    raise Unsupported(f"query_block {qb.get('select_id', 1)} {node} {k}", reason)


def _after_join(qb: dict, limit) -> tuple:
    """The query block without the nodes that sort or group the join's output rows, and
    their names ("filesort", "temporary table").

    ``filesort`` over a ``temporary_table`` (GROUP BY ... ORDER BY), or a
    ``temporary_table`` over the join (GROUP BY, DISTINCT): the rows go into an
    internal temporary table (MEMORY, or Aria once it outgrows tmp_table_size: never
    InnoDB in MariaDB) and are sorted there, so these nodes read no InnoDB page and the
    join below them reads what it reads without them.  A filesort of the first table
    before the join (``read_sorted_file``) is not one of them.  A temporary table with a
    LIMIT and no sort after it can stop the join early: not unwrapped."""
    after = []
    block = qb
    while True:
        fs = block.get("filesort")
        if isinstance(fs, dict) and isinstance(fs.get("temporary_table"), dict):
            extra = set(fs) - _AFTER_KEYS - {"temporary_table"}
            if extra:
                _inside(qb, "filesort", extra)
            after.append("filesort")
            block = {**{k: v for k, v in block.items() if k != "filesort"},
                     "temporary_table": fs["temporary_table"]}
            continue
        tt = block.get("temporary_table")
        if isinstance(tt, dict) and ("nested_loop" in tt or "table" in tt):
            if limit is not None and "filesort" not in after:
                raise Unsupported(f"query_block {qb.get('select_id', 1)} temporary_table",
                                  "a temporary table under a LIMIT without a sort (the join "
                                  "can stop once the LIMIT is met)")
            extra = set(tt) - _AFTER_KEYS - {"nested_loop", "table"}
            if extra:
                _inside(qb, "temporary_table", extra)
            after.append("temporary table")
            rest = {k: v for k, v in block.items() if k not in ("temporary_table", "having_condition")}
            block = {**rest, **tt}
            continue
        break
    return block, tuple(after)


def parse_plan(explain, trace=None, sql: str = "") -> Plan:
    """Map ``EXPLAIN FORMAT=JSON`` (and the optimizer trace of that EXPLAIN) onto a Plan.

    Raises
    ------
    Unsupported
        Naming the plan node and the reason, for any node the model does not follow.
    """
    doc = _as_json(explain)
    tr = _as_json(trace) if trace is not None else {}
    kind = statement_kind(sql) if sql else "select"
    if kind not in ("select", "update", "delete", "insert"):
        raise Unsupported("statement", f"{kind.upper()} is not modelled")
    qb = doc.get("query_block")
    if kind == "insert":
        return Plan("insert", (), limit=None)
    if not isinstance(qb, dict):
        raise Unsupported("plan", "no query_block in EXPLAIN FORMAT=JSON")
    limit = statement_limit(sql)
    qb, after = _after_join(qb, limit)
    if after:
        limit = None                     # sorted or grouped after the join: every row is read
    elif re.search(r"\border\s+by\b[^()]*\bdesc\b", sql or "", re.I):
        raise Unsupported("statement ORDER BY ... DESC", "a backward index scan is not modelled")
    for k in qb:
        if k not in _BLOCK_KEYS:
            reason = {"filesort": "filesort", "temporary_table": "temporary table",
                      "subqueries": "subqueries", "union_result": "UNION",
                      "having_condition": "HAVING", "read_sorted_file": "filesort",
                      "duplicates_removal": "semi-join duplicate removal"}.get(
                k, f"plan key {k!r} is not modelled")
            raise Unsupported(f"query_block {qb.get('select_id', 1)} {k}", reason)
    common = dict(key_uses=_key_uses(tr), const_tables=_const_tables(tr),
                  limit=limit, aliases=table_aliases(tr), after=after)
    msg = qb.get("table", {}).get("message") if isinstance(qb.get("table"), dict) else None
    msg = msg or (qb.get("message") if "table" not in qb and "nested_loop" not in qb else None)
    if msg is not None:
        _message(msg, f"query_block {qb.get('select_id', 1)}")
        return Plan(kind, (), _trace_dives(tr), impossible=True, notes=(msg,), **common)
    chosen = _chosen_ranges(tr)
    where = f"query_block {qb.get('select_id', 1)}"
    if "table" in qb:
        nodes = [qb["table"]]
    else:
        nodes = []
        for item in qb.get("nested_loop", []):
            bnl = item.get("block-nl-join")
            if (set(item) == {"block-nl-join"} and isinstance(bnl, dict)
                    and bnl.get("join_type") == "BKA" and isinstance(bnl.get("table"), dict)
                    and set(bnl) <= {"table", "join_type", "mrr_type", "buffer_type",
                                     "buffer_size", "attached_condition", "r_loops",
                                     "r_filtered", "r_unpack_time_ms", "r_other_time_ms",
                                     "r_effective_rows"}):
                # Batched Key Access: the inner table's access and MRR type, the join's
                # condition after it
                inner = {k: v for k, v in bnl["table"].items() if k != "index_condition_bka"}
                if "index_condition_bka" in bnl["table"]:
                    inner["bka_condition"] = True
                if bnl.get("attached_condition"):
                    inner["attached_condition"] = bnl["attached_condition"]
                inner["join_type"] = "BKA"
                if bnl.get("mrr_type"):
                    inner["mrr_type"] = bnl["mrr_type"]
                for k in ("buffer_type", "buffer_size"):
                    if bnl.get(k) is not None:
                        inner[k] = bnl[k]
                nodes.append(inner)
                continue
            if set(item) != {"table"}:
                k = next(iter(set(item) - {"table"}))
                if isinstance(bnl, dict) and str(bnl.get("join_type", "")).startswith("BKA"):
                    name = bnl.get("table", {}).get("table_name", "?")
                    raise Unsupported(f"{where} nested_loop block-nl-join table {name} "
                                      f"{bnl.get('join_type')}",
                                      "Batched Key Access (probes batched through a join "
                                      f"buffer, {bnl.get('mrr_type', 'MRR')}) is not modelled")
                reason = {"read_sorted_file": "filesort", "filesort": "filesort",
                          "temporary_table": "temporary table",
                          "duplicates_removal": "semi-join duplicate removal",
                          "block-nl-join": "block nested loop"}.get(k, f"plan node {k!r}")
                raise Unsupported(f"{where} nested_loop {k}", reason)
            nodes.append(item["table"])
    if not nodes:
        raise Unsupported(where, "no table access")
    tables = []
    for node in nodes:
        if "message" in node and "access_type" not in node:
            _message(node["message"], where)
            return Plan(kind, (), _trace_dives(tr), impossible=True, notes=(node["message"],),
                        **common)
        tables.append(_table_access(node, where, chosen))
    if kind != "select" and len(tables) != 1:
        raise Unsupported(where, f"multi-table {kind.upper()}")
    return Plan(kind, tuple(tables), _trace_dives(tr), **common)
