"""Workloads: table geometry and query plans that generate page-access traces.

* :mod:`~bufsim.workloads.geometry`: COMPACT record sizes, B-tree levels and the
  page layout of a file-per-table tablespace.
* :mod:`~bufsim.workloads.plans`: plan operators (full and range scans, index
  lookups, nested-loop joins, BKA and DS-MRR orderings, updates) yielding trace
  chunks in bounded memory, each with the rows and page gets it should issue.
* :mod:`~bufsim.workloads.ssb`: the Star Schema Benchmark at any scale factor.
"""
from . import geometry, plans, ssb
from .geometry import Column, Index, Table, layout_space, table_geometry
from .plans import (
    CpuCost, Database, Operator, batch_sort, dedupe_consecutive, full_scan, lookups, range_scan,
    scan_join, secondary_range, sequence,
)

__all__ = [
    "geometry", "plans", "ssb", "Column", "Index", "Table", "layout_space", "table_geometry",
    "CpuCost", "Database", "Operator", "batch_sort", "dedupe_consecutive", "full_scan", "lookups",
    "range_scan", "scan_join", "secondary_range", "sequence",
]
