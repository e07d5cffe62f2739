"""pages_from_bytes(size, version=...): POOL_SIZE as each server version computes it."""
import pytest

from bufsim import pages_from_bytes


def test_default_is_the_nominal_page_count():
    assert pages_from_bytes("6M") == 384
    assert pages_from_bytes(128 * 2**20) == 8192


@pytest.mark.parametrize("size,pages", [
    # measured on MariaDB 10.11.19 (Debian 12) with 16 KiB pages, INNODB_BUFFER_POOL_STATS.POOL_SIZE
    ("6M", 379), ("7M", 443), ("8M", 507), ("10M", 630), ("12M", 758), ("16M", 1014),
    ("20M", 1265), ("24M", 1521), ("32M", 2028), ("64M", 4056), ("100M", 6335),
    ("128M", 8112), ("200M", 12675), ("256M", 16224), ("1G", 64896),
])
def test_mariadb1011_matches_the_server(size, pages):
    assert pages_from_bytes(size, "mariadb10.11") == pages


def test_mysql55_and_56_lose_one_frame_to_alignment():
    # descriptors are reserved on top of the chunk; the 4 KiB-aligned mmap costs one frame
    assert pages_from_bytes("128M", "5.5") == 8191
    assert pages_from_bytes("128M", "5.6") == 8191
    assert pages_from_bytes("1G", "5.6", instances=8) == 8 * 8191


def test_mysql57_counts_per_128m_chunk():
    assert pages_from_bytes("1G", "5.7") == 8 * 8191
    assert pages_from_bytes("256M", "5.7", instances=2) == 2 * 8191
    # a partial chunk is a chunk of its own
    assert pages_from_bytes("192M", "5.7") == 8191 + pages_from_bytes("64M", "5.7")
    assert pages_from_bytes("192M", "5.7") < 192 * 64


@pytest.mark.parametrize("bad,match", [
    (("6M", "mariadb9"), "version='mariadb9' is unknown"),
    (("6M", "mariadb10.11"), None),
    (("6M", "5.6", 0), "instances=0 is out of range"),
    (("12M", "mariadb10.11", 2), "instances=2 is out of range"),
    (("lots",), "is not a size"),
])
def test_bad_arguments_name_the_field(bad, match):
    if match is None:
        assert pages_from_bytes(*bad[:2]) == 379
        return
    size, *rest = bad
    kwargs = {}
    if len(rest) == 2:
        kwargs["instances"] = rest[1]
    with pytest.raises(ValueError, match=match):
        pages_from_bytes(size, *(rest[:1]), **kwargs)
