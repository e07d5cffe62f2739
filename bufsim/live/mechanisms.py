"""Which §13 mechanism explains a row of the live grid that misses.

:func:`explain` applies a rule per counter and direction, stated before any comparison is
made: the mechanisms missing from the replay's preset, or only approximated by
``mariadb1011``, that move a count of :func:`bufsim.live.validation.run_grid`'s rows away
from the server's.
"""
from __future__ import annotations

from .tolerance import GAUGES_COMPARED

__all__ = ["explain"]

#: what still differs, by mechanism: the text :func:`explain` gives for each
_MECH = {
    "read_ahead": ("read-ahead target and failure tolerance (§13): MariaDB 10.11 reads the "
                   "area that follows the current one in page-number order, secondary-index "
                   "extents included, and gives up one failure earlier (both in mariadb1011; "
                   "mariadb105 reads the successor leaf's area), and pages of such an area "
                   "that hold no data are freed after the read (mariadb1011 has all three)"),
    "refill": ("free list refilled on demand (§13): the server keeps about lru_scan_depth "
               "free blocks (1536 by default, more than the whole pool at 6-20 MiB), so its "
               "LRU is a fraction of the pool and a warm run reads again; mariadb1011 "
               "refills at once whenever a block is taken leaving fewer than half of it "
               "(with more than 256 LRU pages), down to min(pool / 20 - 1, 256) LRU pages "
               "(MariaDB 10.11 buf_flush_LRU_list_batch's buf_lru_min_len: 17 at 6 MiB, "
               "62 at 20 MiB), while the server's cleaner works beside the query thread "
               "(mariadb105 has only the once-a-second cleaner)"),
    "overshoot": ("the cleaner's LRU batch overshoots its target (in mariadb1011): the server "
                  "creates the 131 pages of its temporary tablespace at startup "
                  "(NUMBER_PAGES_CREATED), dirty; a batch that reaches them writes them, "
                  "evicts clean pages to its target as well, and frees the written ones when "
                  "their writes complete (buf_page_write_complete), so the LRU falls by "
                  "them and can lose its old sublist; the replay frees them when the batch "
                  "ends (freeing them as they are written holds fewer rows: 3,046 of 3,072 "
                  "against 3,062), while on the server when each write completes is its own "
                  "timing"),
    "beside": ("the cleaner works beside the query (measured on the server, not in "
               "mariadb1011): the woken cleaner's batch runs after the wake-up while the "
               "query thread goes on reading, so which pages a warm run still finds depends "
               "on where in the run the batches fell, and at the default lru_scan_depth "
               "(1536, more than a 6-20 MiB pool) the server's LRU can pass 512 pages and "
               "form an old sublist (its re-accesses within old_blocks_time count as not "
               "made young) "
               "before the batch empties it; the replay's refill at once keeps the LRU "
               "at most pool - 768 pages (492 of 1,260 at 20 MiB: the wake-up needs fewer "
               "than lru_scan_depth / 2 free), under BUF_LRU_OLD_MIN_LEN (512), so it "
               "counts none.  Mostly with read-ahead on, whose burst is the likely carrier: "
               "a linear read-ahead takes up to 64 free blocks at once "
               "(buf_read_ahead_linear -> buf_page_init_for_read, one "
               "buf_LRU_get_free_block each); with read-ahead off the server counts none in "
               "most runs, but on a loaded machine a plan's own reads can do it too (20 MiB "
               "pct 5 time 0 read-ahead off, the k range's warm made young: 55, 0, 0, 0, "
               "100 in five runs, 2026-11-28).  The server does not repeat these counts: "
               "20 restarts of 20 MiB pct 95 time 1000 (2026-11-27) counted 0-536 not made "
               "young in the join's cold run and 0-302 in the scan's, so no one count holds "
               "every run (repeatability(), recheck_misses(), notebook 07); 128 runs of the "
               "join there (2026-11-29, docs/cleaner-race.md) counted 0-5,857, 50 or less in "
               "23, with the same gets and batches in every run, and neither CPU load nor one "
               "core moved the distribution: the lag is the microseconds from the cleaner's "
               "signal to its holding buf_pool.mutex, beside the read-ahead's takes"),
    "time": ("old_blocks_time is real time: the server makes young an old page re-accessed "
             "1000 ms or more after its first access; its runs take 0.02-0.7 s "
             "(performance_schema statement timer), so only the tables' roots and a point-"
             "select run's upper pages get there (0-7 pages per row on this grid); the "
             "replay's clock moves by its device reads only"),
    "warmup": ("the warm-up exemption (§3.1, §13 'who evicts'): pages are checked against "
               "old_blocks_time only once the instance has evicted or freed a page; the "
               "server starts the run holding its startup pages and evicts them first "
               "(run_grid(startup=True) replays them)"),
    "executor": "the executor model (§14) misses some page gets of this plan",
    "cycle": ("the LRU's length at a phase's end is where the cleaner's cycle stands (issue "
              "38, a gauge, not a count): with innodb_lru_scan_depth above the free list a "
              "pool can hold, every block a thread takes leaving fewer than lru_scan_depth / 2 "
              "free, with more than 256 LRU pages, wakes the cleaner (buf_LRU_get_free_block), "
              "whose batch evicts down to buf_lru_min_len = min(pool / 20 - 1, 256) pages "
              "(buf_flush_LRU_list_batch), and the LRU grows again from there; the replay "
              "runs the batch at the wake-up, the server beside the query thread (a read-ahead "
              "takes up to 64 blocks before it runs), so where a run ends in the cycle moves "
              "from run to run (see the residual check's spread in notebook 07)"),
}


def explain(row) -> str:
    """Which §13 mechanism (missing from the replay's preset, or only approximated by
    ``mariadb1011``) explains a row that misses.

    A rule per counter and direction, stated before any comparison is made; it
    does not change any number.
    """
    if row["holds"]:
        return "holds"
    m, real, sim = row["metric"], row["reported"], row["simulated"]
    cfg = str(row["config"])
    ra_on = "ra=on" in cfg
    default_depth = "lsd=default" in cfg
    out = []
    if m == "NUMBER_PAGES_READ":
        # which pages a warm run finds depends on when the batches ran, in either direction
        if ra_on:
            out.append(_MECH["read_ahead"])
        out.append(_MECH["refill"])
        out.append(_MECH["beside"] if default_depth else _MECH["overshoot"])
    elif m in ("PAGES_NOT_MADE_YOUNG", "PAGES_MADE_YOUNG"):
        if m == "PAGES_MADE_YOUNG" and "time=1000" in cfg and real > sim:
            out.append(_MECH["time"])
        out.append(_MECH["beside"] if default_depth else _MECH["overshoot"])
        out.append(_MECH["warmup"])
    elif m == "NUMBER_PAGES_GET":
        out.append(_MECH["executor"])
    elif m in GAUGES_COMPARED:
        out.append(_MECH["cycle"])
    return "; ".join(dict.fromkeys(out)) or "not explained by a listed mechanism"
