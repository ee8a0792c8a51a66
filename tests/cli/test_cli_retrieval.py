"""explain, eval --my-notes and eval --notes --split/--notes-only on the synced demo library."""

from __future__ import annotations

import json

from zocrates_nb.cli import main
from zocrates_nb.quality.evaluate import load_note_questions


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_reports_ranks_chunks_and_context(capsys, demo_home):
    code, out, _ = run(capsys, "explain", "What did I write about the Harmony integration paper?", "DR9EFQIE", "--json")
    assert code == 0
    report = json.loads(out)
    assert set(report["ranks"]) == {"lexical", "dense", "fused", "among notes"}
    assert report["ranks"]["fused"] is not None and report["ranks"]["fused"] <= 5
    assert report["context"].startswith("Note on the paper: Fast, sensitive and accurate integration")
    assert report["chunks"] and all(c["tokens"] <= 254 and c["cut_tokens"] == 0 for c in report["chunks"])
    code, out, _ = run(capsys, "explain", "Harmony theta", "DR9EFQIE")
    assert code == 0 and "ranks: lexical=" in out and "indexed context: Note on the paper" in out


def test_explain_unknown_key_is_refused_with_a_hint(capsys, demo_home):
    code, out, err = run(capsys, "explain", "anything at all", "ZZZZ9999")
    assert code != 0 and out == "" and "ZZZZ9999" in err and "hint" in err


def test_explain_renders_an_escaped_html_table(demo_workbench):
    from zocrates_nb.retrieval.explain import explain

    html = explain(demo_workbench.index, "<script>x</script> tertiary lymphoid", "R95YLLA6")._repr_html_()
    assert "<table>" in html and "<script>" not in html


def test_eval_my_notes_lists_least_findable(capsys, demo_home):
    code, out, _ = run(capsys, "eval", "--my-notes", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["notes"] >= 20 and 0.0 <= result["mrr@10"] <= 1.0 and 0.0 <= result["recall@5"] <= 1.0
    assert len(result["least_findable"]) <= 10
    assert all({"key", "title", "query", "rank"} <= set(row) for row in result["least_findable"])


def test_eval_notes_per_kind_split_and_notes_only(capsys, demo_home):
    code, out, _ = run(capsys, "eval", "--notes", "--split", "dev", "--json")
    assert code == 0
    dev = json.loads(out)
    assert dev["split"] == "dev" and dev["queries"] == len(load_note_questions(split="dev"))
    assert set(dev["per_kind"]) == {"paraphrase", "keyword", "short", "child", "decision"}
    assert all(set(row) == {"recall@5", "recall@10", "mrr@10", "queries"} for row in dev["per_kind"].values())
    code, out, _ = run(capsys, "eval", "--notes", "--split", "test", "--notes-only", "--json")
    only = json.loads(out)
    assert only["notes_only"] is True and only["split"] == "test"
    code, _, err = run(capsys, "eval", "--notes", "--split", "train")
    assert code != 0 and "split" in err


def test_feedback_pass_keeps_the_answer_on_top(demo_workbench):
    from zocrates_nb.index.hybrid import HybridIndex

    query = "What went wrong when Harmony's diversity penalty was raised to 4?"
    with_prf = HybridIndex(demo_workbench.paths, {"search": {"prf_notes": 3}}, embedder=demo_workbench.index.embedder)
    try:
        keys = [h.key for h in with_prf.search(query, k=5)]
        chunks = with_prf.search(query, k=50, collapse=False)
    finally:
        with_prf.close()
    assert "DR9EFQIE" in keys[:3]
    assert any(h.key == "DR9EFQIE" for h in chunks)
