"""The transcribed numbers in data/: every row names its document, and the tables are
internally consistent (a check on the transcription, not on the model)."""
import re

import pandas as pd
import pytest

from bufsim.paths import data_dir, repo_root

SEED_NAME = re.compile(r"^\d{3}_[0-9a-f]{16}\.txt$")
FILES = sorted(data_dir().glob("*.csv"))


def test_every_csv_is_listed_in_the_readme():
    readme = (data_dir() / "README.md").read_text()
    assert FILES
    for f in FILES:
        assert f"`{f.name}`" in readme, f.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_row_names_its_document(path):
    d = pd.read_csv(path)
    assert "source" in d.columns and d["source"].notna().all()
    assert all(SEED_NAME.match(s) for s in d["source"]), d["source"].unique()
    seeds = repo_root().parent / "shared" / "seeds"
    if seeds.is_dir():                   # the seeds sit beside the checkout when developing
        assert all((seeds / s).is_file() for s in d["source"].unique())


def test_ssb_pool_contents_percentages_match_pages():
    d = pd.read_csv(data_dir() / "ssb_q11_pool_contents.csv")
    assert (d.old + d.hot == d.pages).all()
    assert ((d.pages / 8192 * 100 - d.pct_buffer_pool).abs() < 5e-4).all()


def test_ssb_response_times_shape_and_counters():
    t = pd.read_csv(data_dir() / "ssb_response_times.csv")
    assert len(t) == 20 and set(t.run) == {"Cold", "Run1", "Run2", "Run3"}
    assert t.groupby(["version", "buffer_pool", "old_blocks_time_ms"]).size().eq(4).all()
    c = pd.read_csv(data_dir() / "ssb_q11_counters.csv").set_index(
        ["plan", "old_blocks_time_ms", "metric"]).value
    for plan in ("scan", "date_first"):
        for obt in (0, 1000):
            # INNODB_BUFFER_POOL_STATS: DATABASE_PAGES + FREE_BUFFERS within the 8,192-page pool
            assert c[plan, obt, "DATABASE_PAGES"] + c[plan, obt, "FREE_BUFFERS"] <= 8192
            assert c[plan, obt, "OLD_DATABASE_PAGES"] < c[plan, obt, "DATABASE_PAGES"]
