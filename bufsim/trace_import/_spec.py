"""What a trace file may hold: the formats and their suffixes, the canonical
columns, the limits of a value, and the error for a missing file."""
from __future__ import annotations

import numpy as np

from .._validation import TraceError

#: Canonical column names a table may carry (map the file's names with ``columns=``).
CANONICAL_COLUMNS = ("space", "page", "time_ns", "time_ms", "thread", "statement", "count",
                     "flags")
#: Values of ``format=``.
FORMATS = ("csv", "tsv", "parquet", "npz", "oracle", "text")
SUFFIX = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".npz": "npz",
          ".bin": "oracle", ".oraclegeneral": "oracle", ".txt": "text"}
COMPRESSION = {".gz": "gzip", ".zst": "zstd", ".bz2": "bz2", ".xz": "xz"}
ALLOWED_SUFFIXES = ".csv, .tsv, .parquet, .npz, .bin or .oracleGeneral, .txt (each optionally " \
                   "compressed: .gz, .zst, also .bz2, .xz for the text formats)"
#: Largest page number (InnoDB's page_no is 32 bits).
MAX_PAGE_NO = 2**32 - 1
#: Largest run length of one row.
MAX_COUNT = 2**32 - 1
#: libCacheSim's oracleGeneral record (24 bytes, little-endian).
ORACLE_DTYPE = np.dtype([("time", "<u4"), ("obj_id", "<u8"), ("size", "<u4"),
                         ("next_access_vtime", "<i8")])
#: pandas' default NA strings (read_csv ``na_values``).
CSV_NA = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
          "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
NA_WORDS = ("nan", "na", "n/a", "null", "none", "<na>", "-nan", "#n/a")
#: Optional columns of free-form labels, read as text.
LABELS = ("thread", "statement")
#: Order of columns when two errors fall on one row.
ORDER = ("space", "page", "time", "thread", "statement", "count", "flags")


class FileMissing(TraceError, FileNotFoundError):
    """No file at the path (a TraceError, and a FileNotFoundError for older callers)."""
