"""Workloads: table geometry and query plans that generate page-access traces.

* :mod:`~bufsim.workloads.geometry`: COMPACT record sizes, B-tree levels and the
  page layout of a file-per-table tablespace.
* :mod:`~bufsim.workloads.plans`: plan operators (full and range scans, index
  lookups, nested-loop joins, BKA and DS-MRR orderings, updates) yielding trace
  chunks in bounded memory, each with the rows and page gets it should issue.
* :mod:`~bufsim.workloads.ssb`: the Star Schema Benchmark at any scale factor.
* :mod:`~bufsim.workloads.sysbench`: sysbench 0.4 OLTP read-only transactions on
  ``sbtest`` and mysqldump scans (the side-load experiment of 001).
* :mod:`~bufsim.workloads.rein`: the 300M-row table of 004, PK SELECT and UPDATE,
  hot and uniform, with analytic page frequencies.
* :mod:`~bufsim.workloads.dbt3`: DBT-3 (TPC-H) at a scale factor, queries 2-21 of 002
  as plain nested loops, DS-MRR and Batched Key Access; its schema and seeded data are
  in :mod:`~bufsim.workloads.dbt3_schema`, its per-query plans in
  :mod:`~bufsim.workloads.dbt3_plans` (both re-exported by ``dbt3``).
* :mod:`~bufsim.workloads.dbstress`: dbSTRESS tables and SEL1 / SEL2 #1-#9 / UPDATE
  transactions of 003, with exact page frequencies.
"""
from . import dbstress, dbt3, geometry, plans, rein, ssb, sysbench
from .geometry import Column, Index, Table, layout_space, table_geometry
from .plans import (
    CpuCost, Database, Operator, batch_sort, dedupe_consecutive, full_scan, lookups, range_scan,
    scan_join, secondary_range, sequence,
)

__all__ = [
    "dbstress", "dbt3", "geometry", "plans", "rein", "ssb", "sysbench", "Column", "Index", "Table", "layout_space", "table_geometry",
    "CpuCost", "Database", "Operator", "batch_sort", "dedupe_consecutive", "full_scan", "lookups",
    "range_scan", "scan_join", "secondary_range", "sequence",
]
