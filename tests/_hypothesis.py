"""Example counts of the property tests, by hypothesis profile (see tests/conftest.py).

``examples(n)`` is ``n`` under the ``ci`` profile (``.ci/run`` selects it with
``HYPOTHESIS_PROFILE=ci``: the counts each test was written with) and a quarter of
it, at least 10, under the ``default`` profile of ``make test``: the same properties,
fewer random cases per run.
"""
from __future__ import annotations

from hypothesis import settings


def profile() -> str:
    get = getattr(settings, "get_current_profile_name", None)
    return get() if get is not None else settings._current_profile


def examples(n: int) -> int:
    """``n`` examples under the ``ci`` profile, ``max(10, n // 4)`` (never more than
    ``n``) otherwise."""
    return n if profile() == "ci" else min(n, max(10, n // 4))
