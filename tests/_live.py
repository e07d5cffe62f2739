"""Shared helpers of the tests marked ``live``: skip (or, in CI, fail) without a server."""
import os

import pytest

from bufsim.live import server_available


def require_server():
    """Skip the calling test where no private MariaDB server can be started.

    With ``BUFSIM_REQUIRE_LIVE=1`` (set by ``.ci/run``) the test fails instead, so a
    CI run cannot pass without having run the live tier.
    """
    ok, why = server_available()
    if ok:
        return
    if os.environ.get("BUFSIM_REQUIRE_LIVE") == "1":
        pytest.fail(f"BUFSIM_REQUIRE_LIVE=1 but no MariaDB server can be started: {why}")
    pytest.skip(f"no MariaDB server can be started here: {why}")
