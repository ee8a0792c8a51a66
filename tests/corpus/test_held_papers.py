"""The held-paper lookup (issue 13): sync keeps (key, DOI, title) of every paper in one table, an
online turn reads that table instead of every manifest, and an older data directory is backfilled
at its next sync. Real corpus, real SQLite."""

from __future__ import annotations

import sqlite3

from zocrates_nb.agents.online import LibraryIdentity
from zocrates_nb.agents.online_clients import normalize_doi, normalize_title
from zocrates_nb.corpus import held_papers


def _from_manifests(wb) -> tuple[set, set]:
    corpus = wb.corpus
    manifests = [corpus.manifest(k) for k in corpus.keys(kind="paper")]
    return (
        {normalize_doi(m.get("doi")) for m in manifests if normalize_doi(m.get("doi"))},
        {normalize_title(m["title"]) for m in manifests},
    )


def test_online_identity_comes_from_the_table_without_reading_manifests(demo_workbench, monkeypatch):
    dois, titles = _from_manifests(demo_workbench)
    assert dois and titles
    from zocrates_nb.corpus import sync

    def refuse(*args, **kwargs):
        raise AssertionError("an online turn must not read manifests")

    monkeypatch.setattr(sync.Corpus, "manifest", refuse)
    identity = LibraryIdentity.from_tools(demo_workbench.tools)
    assert identity.dois == dois and identity.titles == titles


def test_removed_papers_leave_the_table(demo_workbench):
    key = demo_workbench.corpus.keys(kind="paper")[0]
    title = demo_workbench.corpus.manifest(key)["title"]
    demo_workbench.corpus.remove_documents([key])
    held = held_papers.load(demo_workbench.paths.meta_db)
    assert title not in {t for _, t in held}


def test_an_older_data_directory_is_backfilled_at_its_next_sync(demo_workbench):
    expected = _from_manifests(demo_workbench)
    with sqlite3.connect(demo_workbench.paths.meta_db) as conn:
        conn.execute("DROP TABLE held_papers")
        conn.execute("DROP TABLE held_papers_state")
    assert held_papers.load(demo_workbench.paths.meta_db) is None
    fallback = LibraryIdentity.from_tools(demo_workbench.tools)  # reads the manifests meanwhile
    assert (fallback.dois, fallback.titles) == expected
    demo_workbench.sync(progress=False)
    held = held_papers.load(demo_workbench.paths.meta_db)
    assert held is not None and len(held) == len(demo_workbench.corpus.keys(kind="paper"))
    identity = LibraryIdentity.from_tools(demo_workbench.tools)
    assert (identity.dois, identity.titles) == expected
