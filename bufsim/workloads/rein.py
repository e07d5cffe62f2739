"""The 300M-row ``rein`` table of seed 004: PK SELECT and UPDATE, hot vs uniform.

Schema, as 004_6e932da445ffddef.txt gives it (latin1)::

    CREATE TABLE rein (id int(11) NOT NULL AUTO_INCREMENT, id2 int(11) NOT NULL,
      id3 int(11) DEFAULT NULL, PRIMARY KEY (id), KEY id2 (id2)) ENGINE=InnoDB

with 300,000,000 rows, ``id2`` uniform over 1..1,000,000 ("each value taken 300
times").  Geometry (COMPACT): a clustered record is 5 (header) + 1 (null bitmap:
``id3`` is nullable) + 4 + 6 (trx id) + 7 (roll ptr) + 4 + 4 = 31 bytes; node
records 13 bytes; ``id2`` records (id2, id) 13 bytes, filled in random key
order (``FILL_RANDOM`` = ln 2: 845 per leaf, 355,030 leaves).

Clustered fill (fitted, :data:`REIN_FILL`): the document reports ``rein.ibd`` at
22G.  At the key-order fill of 15/16 the two indexes would take 973,261 pages
(14.9 GiB); 22 GiB (1,441,792 pages) needs the clustered leaves about 53 % full:
at 0.53, 274 rows per leaf, 1,094,891 leaves + 959 node pages, and with ``id2``
1,451,285 pages = 22.1 GiB.  The table was loaded by 8 concurrent
mysqlslap connections with autocommit, so auto-increment ids arrive slightly out
of order and InnoDB's split heuristic (split at the insert point only when the
insert follows the page's last insert, in the middle otherwise) leaves many
half-full pages.  This is a fit to the reported file size, not a prediction;
pass ``fill=15/16`` for a perfectly ordered load.

Workloads (both a single autocommit statement per transaction; the document ran
100,000,000 SELECTs and 100,000 UPDATEs, 1..N concurrent connections):

* ``select``: ``SELECT id3 FROM rein WHERE id=@id``: a root-to-leaf descent of the
  clustered index (3 gets), or with ``ahi=True`` one leaf get with FLAG_AHI;
  1 row.
* ``update``: ``UPDATE rein SET id3=round(rand()*10000) WHERE id=@id``: the row is
  read by a descent (X-locking read, the AHI can answer it) and
  ``row_upd_clust_step`` then restores the cursor with an optimistic get of the
  same leaf, which it modifies (FLAG_MODIFY): height + 1 gets (2 with the AHI);
  1 row.  ``id3`` is in no index, so no secondary index is touched.  Undo-log and
  redo pages (system tablespace) are not modelled.

Distributions: ``hot``: ids uniform over the first :data:`HOT_ROWS` = 1,000,000
("der ersten Millionen Einträge"); ``uniform``: ids uniform over all rows.

:func:`page_frequency` gives the expected gets of every dense page per
transaction without expanding any trace (leaf weights from the id
distribution, summed up the tree level by level), for the contention models.
"""
from __future__ import annotations

import numpy as np

from .._validation import check_int
from .geometry import Column, Index, Table
from .plans import CpuCost, Database, Operator
from .txn import (
    PageFrequency, _add_descent_freq, _descent_width, _descents, _freq_zero,
    _leaf_weights_uniform, _txn_operator,
)

__all__ = ["REIN_ROWS", "HOT_ROWS", "ID2_VALUES", "REIN_FILL", "rein_table", "rein_database",
           "rein_stream", "rein_expected", "page_frequency"]

REIN_ROWS = 300_000_000
HOT_ROWS = 1_000_000
ID2_VALUES = 1_000_000
#: clustered-leaf fill fitted to the document's 22G rein.ibd (module docstring)
REIN_FILL = 0.53

KINDS = ("select", "update")
DISTS = ("hot", "uniform")


def rein_table(rows: int = REIN_ROWS, *, fill: float = REIN_FILL, name: str = "rein") -> Table:
    """The ``rein`` table of seed 004 with ``rows`` rows (module docstring)."""
    return Table(name, [Column("id", "int", False), Column("id2", "int", False),
                        Column("id3", "int", True)], int(rows), primary_key=("id",),
                 indexes=[Index("id2", ("id2",))], fill=fill)


def rein_database(rows: int = REIN_ROWS, *, fill: float = REIN_FILL, seed: int = 0) -> Database:
    """A Database holding only ``rein`` (at 300M rows: about 1.45M pages, a few
    seconds to lay out)."""
    return Database([rein_table(rows, fill=fill)], seed=seed)


def _check(kind, dist, hot_rows, n_rows):
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is unknown; allowed: {', '.join(KINDS)}")
    if dist not in DISTS:
        raise ValueError(f"dist={dist!r} is unknown; allowed: {', '.join(DISTS)}")
    check_int("hot_rows", hot_rows, 1, n_rows)
    return n_rows if dist == "uniform" else int(hot_rows)


def rein_stream(db: Database, n_txn: int, *, kind: str = "select", dist: str = "hot",
                hot_rows: int = HOT_ROWS, seed: int = 0, ahi: bool = False,
                cpu: CpuCost = CpuCost(), txn_ns: int = 0, table: str = "rein",
                batch: int = 1 << 16) -> Operator:
    """``n_txn`` single-statement transactions (``kind`` select or update) with ids
    drawn (seeded) from ``dist``.  ``txn_ns`` is charged once per transaction
    (statement overhead, think time).  ``rows`` and ``gets`` of the Operator are
    ``n_txn`` and ``n_txn x`` :func:`rein_expected` ``["gets"]``."""
    ix = db.index(table)
    span = _check(kind, dist, hot_rows, ix.geometry.rows)
    modify = kind == "update"
    width = _descent_width(ix, ahi, modify)

    def draw(rng, b, lo):
        return rng.integers(0, span, size=b, dtype=np.int64)    # entry = id - 1

    def build(ev, entries):
        _descents(ev, db, table, ix, entries, np.arange(entries.size), 0, ahi=ahi, modify=modify)

    def count(entries):
        return entries.size, entries.size * width

    return _txn_operator(f"rein {kind} {dist}", db, int(n_txn), batch, seed, draw, build, count,
                         cpu, 0, txn_ns)


def rein_expected(db: Database, *, kind: str = "select", ahi: bool = False,
                  table: str = "rein") -> dict:
    """Rows and page gets of one transaction (both constant)."""
    ix = db.index(table)
    _check(kind, "uniform", 1, ix.geometry.rows)
    return {"rows": 1, "gets": _descent_width(ix, ahi, kind == "update")}


def page_frequency(db: Database, *, kind: str = "select", dist: str = "hot",
                   hot_rows: int = HOT_ROWS, ahi: bool = False,
                   table: str = "rein") -> PageFrequency:
    """Expected gets per dense page for one transaction (no trace is expanded).

    A leaf's weight is the share of the drawn ids it holds; each level above
    sums its children's weights (a descent passes through the ancestors of its
    leaf), the root gets 1 per transaction.  With ``ahi`` only leaves are
    touched, as FLAG_AHI lookups; an update adds one (non-AHI) restore get of
    the leaf.  ``freq.gets.sum()`` equals :func:`rein_expected` ``["gets"]``.
    """
    ix = db.index(table)
    span = _check(kind, dist, hot_rows, ix.geometry.rows)
    freq = _freq_zero(db, f"rein {kind} {dist}")
    _add_descent_freq(freq, db, table, ix, _leaf_weights_uniform(ix, 0, span), ahi=ahi,
                      modify=kind == "update")
    return freq
