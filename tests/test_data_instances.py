"""data/ transcriptions of seeds 003 and 004 used by notebooks 03 and 04: internal checks
and, when the seeds sit beside the checkout, checks against the document's text."""
import re

import pandas as pd
import pytest

from bufsim.paths import data_dir, repo_root

SEEDS = repo_root().parent / "shared" / "seeds"
#: "N rows in set" printed under each listing, in document order
ROWS_IN_SET = {"sel1_sel2_ahi0_16bp": 23, "sel1_only_16bp": 24, "sel2_history_64bp": 72,
               "sel2_1600m_ahi0_16bp": 24}


def _listings():
    return pd.read_csv(data_dir() / "dbstress_mutex_listings.csv")


def test_listing_shapes():
    d = _listings()
    assert list(d.listing.unique()) == list(ROWS_IN_SET)
    for name, g in d.groupby("listing"):
        pools = g[g.mutex == "buf/buf0buf.c:1208"]
        n = int(g.n_instances.iloc[0])
        pos = pools.position.astype(int).tolist()
        assert pos == sorted(set(pos)) and 1 <= min(pos) and max(pos) == n
        if name == "sel2_history_64bp":       # rows 18..55 elided by the document
            assert len(g) < ROWS_IN_SET[name] and pos == list(range(1, 18)) + list(range(56, 65))
        else:
            assert len(g) == ROWS_IN_SET[name] and pos == list(range(1, n + 1))


def test_listing_hot_instances():
    d = _listings()
    p = d[d.mutex == "buf/buf0buf.c:1208"]
    hot = p.loc[p.groupby("listing").os_waits.idxmax()].set_index("listing")
    assert hot.os_waits.to_dict() == {"sel1_sel2_ahi0_16bp": 16301962, "sel1_only_16bp": 129430,
                                      "sel2_history_64bp": 9701683,
                                      "sel2_1600m_ahi0_16bp": 28717845}
    assert hot.position.astype(int).to_dict()["sel1_sel2_ahi0_16bp"] == 9


@pytest.mark.skipif(not SEEDS.is_dir(), reason="seed documents not beside the checkout")
def test_every_os_waits_value_is_in_the_document():
    text = (SEEDS / "003_b6a2090efc999b5b.txt").read_text()
    for v in _listings().os_waits:
        assert f"os_waits={v} " in text or f"os_waits={v}|" in text, v


@pytest.mark.skipif(not SEEDS.is_dir(), reason="seed documents not beside the checkout")
@pytest.mark.parametrize("name", ["dbstress_tps.csv", "rein_instances.csv"])
def test_quotes_are_verbatim(name):
    d = pd.read_csv(data_dir() / name)
    for src, q in zip(d.source, d.quote):
        text = re.sub(r"\s+", " ", (SEEDS / src).read_text())
        assert re.sub(r"\s+", " ", q) in text, q


def test_tps_levels_match_their_quotes():
    d = pd.read_csv(data_dir() / "dbstress_tps.csv")
    for r in d.itertuples():
        if r.qualifier in ("about", "over", "max"):
            assert f"{r.tps // 1000}.000" in r.quote, (r.experiment, r.quote)
    assert d.set_index("experiment").tps["sel1_sel2_ahi0"] * 2 == d.set_index("experiment").tps[
        "sel1_sel2"]
