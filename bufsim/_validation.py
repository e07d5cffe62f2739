"""One validation layer for the public API: integers, nanoseconds, numbers, ranges.

Every configuration field, function argument and table cell that must be an
integer or a number goes through these checks, so that they accept the same
values (Python and NumPy integers; never ``bool``, never a float, even an
integral one such as ``1.0``, where an integer is required) and fail with the
same kind of message: the field, the value *and its type*, and the allowed range.
Errors are :class:`ValueError`; trace files raise its subclass :class:`TraceError`.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from numba import njit

__all__ = ["TraceError", "check_int", "check_int_fields", "check_ns", "check_number", "check_bool",
           "describe", "span", "renamed"]

#: Largest nanosecond value the int64 virtual clock holds.
MAX_NS = 2**63 - 1


class TraceError(ValueError):
    """A trace file or trace argument that cannot be read: names the file, and where a
    row is at fault its 0-based data row, the column and (CSV/TSV/text) the line."""


@njit(cache=True, nogil=True)
def span(a):
    """``(a.min(), a.max())`` of a non-empty one-dimensional integer array in one pass
    (NumPy takes two: a replay checks every chunk's pages and cpu_ns this way)."""
    lo = a[0]
    hi = a[0]
    for i in range(1, a.shape[0]):
        v = a[i]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


def describe(value) -> str:
    """``repr`` of a value with its type, for messages (``1.7 (float)``, ``'3' (str)``)."""
    r = repr(value)
    if len(r) > 60:
        r = r[:57] + "..."
    return f"{r} ({type(value).__name__})"


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _range(lo, hi) -> str:
    if lo is None and hi is None:
        return "any integer"
    if hi is None:
        return f">= {lo}"
    if lo is None:
        return f"<= {hi}"
    return f"{lo}..{hi}"


def check_int(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as a Python ``int`` in ``lo..hi`` (either bound may be None).

    Parameters
    ----------
    name : str
        The field or argument, as the user spells it.
    value
        A Python or NumPy integer.  ``bool``, floats (even ``1.0``), strings and
        None are refused rather than converted, so that ``1.7`` never becomes 1.
    lo, hi : int, optional
        Inclusive bounds.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Naming ``name``, the value and its type, and the allowed range.
    """
    if not _is_int(value):
        raise ValueError(f"{name} must be an integer ({_range(lo, hi)}), got {describe(value)}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{name}={v} is out of range; allowed: {_range(lo, hi)}")
    return v


def check_int_fields(obj, names, lo: int | None = None, hi: int | None = None) -> None:
    """Check integer fields of a (frozen) dataclass instance and store each as a Python
    ``int``; the error names ``Class.field`` (see :func:`check_int`).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Cpu:
    ...     row_ns: int = 1
    ...     def __post_init__(self):
    ...         check_int_fields(self, ("row_ns",), 0)
    >>> Cpu(-1)
    Traceback (most recent call last):
    ...
    ValueError: Cpu.row_ns=-1 is out of range; allowed: >= 0
    """
    for f in names:
        v = check_int(f"{type(obj).__name__}.{f}", getattr(obj, f), lo, hi)
        object.__setattr__(obj, f, v)


def check_ns(name: str, value, lo: int = 0, hi: int = MAX_NS) -> int:
    """An integer number of nanoseconds in ``lo..hi`` (default ``0..2**63-1``).

    See :func:`check_int`; nanoseconds are never fractional.
    """
    return check_int(name, value, lo, hi)


def check_number(name: str, value, *, allow_nan: bool = False, allow_inf: bool = False,
                 lo: float | None = None, hi: float | None = None) -> float:
    """A real number (Python or NumPy int or float, not ``bool``) as a ``float``.

    Parameters
    ----------
    name : str
    value
    allow_nan, allow_inf : bool
        Whether NaN / infinite values are accepted (both refused by default).
    lo, hi : float, optional
        Inclusive bounds (not applied to NaN).

    Raises
    ------
    ValueError
        Naming ``name``, the value and its type, and what is allowed.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {describe(value)}")
    try:
        x = float(value)
    except (OverflowError, ValueError):  # an int beyond the float range
        raise ValueError(f"{name}={value} is out of range; allowed: a finite number") from None
    if math.isnan(x):
        if not allow_nan:
            raise ValueError(f"{name} is NaN; allowed: a finite number")
        return x
    if math.isinf(x) and not allow_inf:
        raise ValueError(f"{name}={x} is not finite; allowed: a finite number")
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        rng = f"{lo}..{hi}" if lo is not None and hi is not None else \
            (f">= {lo}" if lo is not None else f"<= {hi}")
        raise ValueError(f"{name}={x!r} is out of range; allowed: {rng}")
    return x


def check_bool(name: str, value) -> bool:
    """``True`` or ``False`` (Python or NumPy bool; not 0/1)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {describe(value)}")
    return bool(value)


def renamed(new: str, new_value, old: str, old_value, *, stacklevel: int = 3):
    """The value of a keyword argument renamed from ``old`` to ``new`` (the name of the
    configuration field): ``old`` still works, with a :class:`DeprecationWarning`;
    giving both is an error.  None means "not given"."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(f"give {new}= only ({old}= is its deprecated name), not both")
    warnings.warn(f"{old}= is deprecated; use {new}= (the configuration field's name)",
                  DeprecationWarning, stacklevel=stacklevel)
    return old_value
