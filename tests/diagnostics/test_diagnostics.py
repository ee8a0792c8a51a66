"""Diagnostics: per-process JSONL segments read together by DuckDB; each view on known data."""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from zocrates_nb.diagnostics import plots
from zocrates_nb.diagnostics.events import EventLog, NullEventLog
from zocrates_nb.diagnostics.views import Diagnostics

REPO = Path(__file__).resolve().parents[2]

LOGGER = """
    import sys, time
    from pathlib import Path
    from zocrates_nb.diagnostics.events import EventLog
    directory, name, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    log = EventLog(directory, session=name)
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    for i in range(500):
        log.emit("search", query=f"{name} {i}", seq=i, k=5, mode="hybrid", latency_ms=float(i),
                 results=[{"key": f"K{i % 7}", "kind": "note", "lexical_rank": 1, "dense_rank": None, "score": 0.1}])
    print("done", flush=True)
"""


def test_two_processes_log_concurrently_and_every_event_is_read_back(tmp_path):
    directory, go = tmp_path / "diag", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(LOGGER), str(directory), name, str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("kernel-a", "kernel-b")
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    go.touch()  # both start appending at the same moment
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done" and "Warning" not in err, err
    diag = Diagnostics(directory)
    assert len(diag.segments()) == 2
    events = diag.events("search")
    assert len(events) == 1000
    for name in ("kernel-a", "kernel-b"):
        assert sorted(events.loc[events["session"] == name, "seq"]) == list(range(500))
    latency = diag.latency().set_index("kind")
    assert latency.loc["search", "n"] == 1000 and latency.loc["search", "max"] == 499.0


def test_torn_last_line_is_skipped(tmp_path):
    log = EventLog(tmp_path, session="s")
    log.emit("read", key="A", fast_path=True, rematerialised=False, latency_ms=1.0)
    log.emit("read", key="A", fast_path=False, rematerialised=True, latency_ms=3.0)
    # a process killed mid-write left half a record in its own segment
    (tmp_path / "events-host-999-20240101T000000.jsonl").write_text(
        json.dumps({"ts": "2024-01-01T00:00:00Z", "kind": "read", "session": "s", "key": "B", "fast_path": True})
        + "\n"
        + '{"ts": "2024-01-01T00:00:01Z", "kind": "read", "key": "B", "fast_pa'
    )
    diag = Diagnostics(tmp_path)
    assert len(diag.events()) == 3
    staleness = diag.staleness().set_index("key")
    assert staleness.loc["B", "reads"] == 1 and staleness.loc["A", "reads"] == 2


def test_empty_directory_gives_empty_frames_with_columns(tmp_path):
    for directory in (tmp_path / "missing", tmp_path):
        diag = Diagnostics(directory)
        expected = {
            diag.events: ["ts", "kind", "session"],
            diag.staleness: [
                "key",
                "reads",
                "fast_path_reads",
                "rematerialisations",
                "hash_changes",
                "fast_path_ratio",
                "last_read",
            ],
            diag.hit_rates: [
                "mode",
                "searches",
                "read_rate",
                "cited_rate",
                "hit_rate",
                "results",
                "lexical_share",
                "dense_share",
                "both_share",
                "used_results",
                "used_lexical_share",
                "used_dense_share",
            ],
            diag.token_costs: [
                "session",
                "role",
                "model",
                "calls",
                "prompt_tokens",
                "completion_tokens",
                "total_tokens",
                "profile_tokens",
                "cost_usd",
                "profile_share",
            ],
            diag.latency: ["kind", "n", "p50", "p95", "p99", "max"],
            diag.eval_runs: [
                "ts",
                "session",
                "dataset",
                "split",
                "mode",
                "ndcg@10",
                "recall@100",
                "mrr@10",
                "recall@5",
                "queries",
                "seconds",
            ],
        }
        for view, columns in expected.items():
            frame = view()
            assert frame.empty and list(frame.columns) == columns, view.__name__
    (tmp_path / "events-empty.jsonl").touch()  # a process that opened its segment but never wrote
    assert Diagnostics(tmp_path).events().empty


def _result(key, lexical=None, dense=None):
    return {"key": key, "kind": "note", "lexical_rank": lexical, "dense_rank": dense, "score": 0.5}


@pytest.fixture
def logged(tmp_path) -> Diagnostics:
    s1, s2 = EventLog(tmp_path, session="s1"), EventLog(tmp_path, session="s2")
    # s1: hybrid search; A read afterwards; B cited afterwards
    s1.emit(
        "search",
        query="q1",
        k=3,
        mode="hybrid",
        latency_ms=10.0,
        results=[_result("A", 1, None), _result("B", 2, 1), _result("C", None, 2)],
    )
    s1.emit("read", key="A", fast_path=True, rematerialised=False, latency_ms=2.0)
    s1.emit("answer", cited_keys=["B"], read_keys=["A"])
    # s1: a lexical search nobody used
    s1.emit("search", query="q2", k=2, mode="lexical", latency_ms=20.0, results=[_result("D", 1), _result("E", 2)])
    # s2: a read of D in ANOTHER session does not count for s1's search
    s2.emit("read", key="D", fast_path=False, rematerialised=True, latency_ms=30.0)
    # s2: hybrid search whose result was read only BEFORE the search (does not count)
    s2.emit("read", key="F", fast_path=True, rematerialised=False, latency_ms=4.0)
    s2.emit("search", query="q3", k=1, mode="hybrid", latency_ms=30.0, results=[_result("F", None, 1)])
    # sync noticed A changed twice; then A was read again via the fast path
    s1.emit("sync", new=0, changed=1, unchanged=4, removed=0, failed=0, changed_keys=["A"], seconds=0.5)
    s1.emit("sync", new=0, changed=1, unchanged=4, removed=0, failed=0, changed_keys=["A", "G"], seconds=0.25)
    s1.emit("read", key="A", fast_path=True, rematerialised=False, latency_ms=40.0)
    # LLM calls
    s1.emit(
        "llm",
        role="coordinator",
        model="m-big",
        prompt_tokens=1000,
        completion_tokens=200,
        profile_tokens=200,
        cost_usd=0.01,
        latency_ms=100.0,
    )
    s1.emit(
        "llm",
        role="reader",
        model="m-small",
        prompt_tokens=500,
        completion_tokens=50,
        profile_tokens=0,
        cost_usd=0.002,
        latency_ms=200.0,
    )
    s2.emit(
        "llm",
        role="coordinator",
        model="m-big",
        prompt_tokens=3000,
        completion_tokens=100,
        profile_tokens=200,
        cost_usd=0.03,
        latency_ms=300.0,
    )
    # evaluation runs
    s1.emit(
        "eval",
        dataset="scifact",
        split="test",
        mode="lexical",
        queries=300,
        seconds=1.5,
        **{"ndcg@10": 0.66, "recall@100": 0.9, "mrr@10": 0.62},
    )
    s1.emit(
        "eval",
        dataset="scifact",
        split="test",
        mode="hybrid",
        queries=300,
        seconds=9.0,
        **{"ndcg@10": 0.72, "recall@100": 0.95, "mrr@10": 0.69},
    )
    return Diagnostics(tmp_path)


def test_staleness(logged):
    s = logged.staleness().set_index("key")
    assert list(s.index) == ["A", "D", "F", "G"]
    assert s.loc["A", "reads"] == 2 and s.loc["A", "fast_path_reads"] == 2 and s.loc["A", "rematerialisations"] == 0
    assert s.loc["A", "hash_changes"] == 2 and s.loc["A", "fast_path_ratio"] == 1.0
    assert s.loc["D", "reads"] == 1 and s.loc["D", "rematerialisations"] == 1 and s.loc["D", "hash_changes"] == 1
    assert s.loc["D", "fast_path_ratio"] == 0.0
    assert s.loc["G", "reads"] == 0 and s.loc["G", "hash_changes"] == 1 and math.isnan(s.loc["G", "fast_path_ratio"])


def test_searches_and_hit_rates(logged):
    searches = logged.searches()
    assert list(searches["query"]) == ["q1", "q2", "q3"]
    assert list(searches["read"]) == [True, False, False]
    assert list(searches["cited"]) == [True, False, False]
    assert list(searches["hit"]) == [True, False, False]
    assert list(searches["results"]) == [3, 2, 1]
    rates = logged.hit_rates().set_index("mode")
    assert list(rates.index) == ["hybrid", "lexical", "all"]
    assert rates.loc["hybrid", "searches"] == 2 and rates.loc["hybrid", "hit_rate"] == 0.5
    assert rates.loc["lexical", "hit_rate"] == 0.0
    all_ = rates.loc["all"]
    assert all_["searches"] == 3 and all_["read_rate"] == pytest.approx(1 / 3)
    assert all_["cited_rate"] == pytest.approx(1 / 3) and all_["hit_rate"] == pytest.approx(1 / 3)
    # 6 results: lexical ranks on A, B, D, E; dense ranks on B, C, F; both on B
    assert all_["results"] == 6
    assert all_["lexical_share"] == pytest.approx(4 / 6) and all_["dense_share"] == pytest.approx(3 / 6)
    assert all_["both_share"] == pytest.approx(1 / 6)
    # used results: A (read; lexical only) and B (cited; both)
    assert all_["used_results"] == 2 and all_["used_lexical_share"] == 1.0 and all_["used_dense_share"] == 0.5
    assert rates.loc["hybrid", "results"] == 4 and rates.loc["hybrid", "dense_share"] == 0.75


def test_token_costs(logged):
    t = logged.token_costs()
    assert list(t["session"]) == ["s1", "s1", "s2"]
    by_role = logged.token_costs(by=("role",)).set_index("role")
    assert by_role.loc["coordinator", "calls"] == 2 and by_role.loc["coordinator", "prompt_tokens"] == 4000
    assert by_role.loc["coordinator", "completion_tokens"] == 300 and by_role.loc["coordinator", "total_tokens"] == 4300
    assert by_role.loc["coordinator", "profile_tokens"] == 400 and by_role.loc["coordinator", "profile_share"] == 0.1
    assert by_role.loc["coordinator", "cost_usd"] == pytest.approx(0.04)
    assert by_role.loc["reader", "profile_share"] == 0.0
    by_model = logged.token_costs(by=["model"]).set_index("model")
    assert by_model.loc["m-small", "prompt_tokens"] == 500
    with pytest.raises(Exception, match="subset"):
        logged.token_costs(by=("user",))


def test_latency_percentiles(logged):
    lat = logged.latency().set_index("kind")
    assert list(lat.index) == ["llm", "read", "search"]
    # llm: 100, 200, 300 → interpolated percentiles
    assert lat.loc["llm", "n"] == 3 and lat.loc["llm", "p50"] == 200.0
    assert lat.loc["llm", "p95"] == pytest.approx(290.0) and lat.loc["llm", "p99"] == pytest.approx(298.0)
    # read: 2, 30, 4, 40 → sorted 2, 4, 30, 40
    assert lat.loc["read", "p50"] == 17.0 and lat.loc["read", "max"] == 40.0


def test_eval_runs(logged):
    runs = logged.eval_runs()
    assert list(runs["mode"]) == ["lexical", "hybrid"]
    assert list(runs["ndcg@10"]) == [0.66, 0.72] and list(runs["queries"]) == [300, 300]


def test_new_events_are_seen_by_the_next_call(logged, tmp_path):
    before = len(logged.events())
    EventLog(tmp_path).emit("save", key="NEW1", parent_key=None, collection="C1")
    saves = logged.events("save")
    assert len(logged.events()) == before + 1 and list(saves["key"]) == ["NEW1"]


def test_plots_return_figures_with_and_without_data(logged, tmp_path):
    empty = Diagnostics(tmp_path / "nothing")
    for diag in (logged, empty):
        for plot, view in (
            (plots.plot_hit_rates, diag.hit_rates),
            (plots.plot_token_costs, diag.token_costs),
            (plots.plot_latency, diag.latency),
            (plots.plot_eval, diag.eval_runs),
            (plots.plot_staleness, diag.staleness),
        ):
            fig = plot(view())
            assert isinstance(fig, Figure)
            fig.savefig(tmp_path / f"{plot.__name__}.png")
            assert (tmp_path / f"{plot.__name__}.png").stat().st_size > 1000
    fig = plots.plot_eval(logged.eval_runs())
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["scifact"]


def test_plot_staleness_shows_fast_path_and_rematerialised_reads_per_document(logged, tmp_path):
    fig = plots.plot_staleness(logged.staleness())
    ax = fig.axes[0]
    keys = [t.get_text() for t in ax.get_yticklabels()]
    assert keys == ["G", "F", "D", "A"]  # most-read at the top (drawn last)
    by_label = {c.get_label(): [bar.get_width() for bar in c] for c in ax.containers}
    assert by_label["fast path (hash unchanged)"] == [0, 1, 0, 2]
    assert by_label["re-materialised (source changed)"] == [0, 0, 1, 0]
    assert "other reads" not in by_label
    notes = sorted(t.get_text().strip() for t in ax.texts)
    assert notes == ["1 change", "1 change", "2 changes"]  # G (sync), D (re-materialised), A (two syncs)
    few = plots.plot_staleness(logged.staleness(), limit=2)
    assert [t.get_text() for t in few.axes[0].get_yticklabels()] == ["D", "A"]
    assert "top 2 of 4" in few.axes[0].get_title(loc="left")
    empty = plots.plot_staleness(Diagnostics(tmp_path / "none").staleness())
    assert "no reads or source changes logged yet" in [t.get_text() for t in empty.axes[0].texts]


def test_emit_never_raises_and_warns_once(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    log = EventLog(blocker / "diag")
    with caplog.at_level(logging.WARNING, logger="zocrates_nb.diagnostics.events"):
        log.emit("search", query="q")
        log.emit("search", query="q")
        log.emit("read", key="K")
    assert len([r for r in caplog.records if "could not record" in r.getMessage()]) == 1


def test_event_shape_and_null_log(tmp_path):
    log = EventLog(tmp_path, session="abc")
    with log.timed("read", key="K") as fields:
        fields["fast_path"] = True
    log.emit("answer", session="override", cited_keys=["K"], odd=Path("/x"))  # non-JSON values become strings
    lines = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert lines[0]["kind"] == "read" and lines[0]["session"] == "abc" and lines[0]["fast_path"] is True
    assert lines[0]["ts"].endswith("Z") and lines[0]["latency_ms"] >= 0
    assert lines[1]["session"] == "override" and lines[1]["odd"] == "/x"
    stamps = [line["ts"] for line in lines]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert log.path.name.startswith("events-") and f"-{os.getpid()}-" in log.path.name
    NullEventLog().emit("search", query="q")
    assert NullEventLog(tmp_path / "null").with_session("x").session == "x"
    assert not (tmp_path / "null").exists()


def test_note_recall_runs_show_recall_at_5(tmp_path):
    from zocrates_nb.diagnostics.events import EventLog

    log = EventLog(tmp_path)
    log.emit(
        "eval",
        dataset="notes",
        split="notes",
        mode="hybrid",
        queries=45,
        **{"recall@5": 0.99, "mrr@10": 0.83},
        seconds=2.0,
    )
    [run] = Diagnostics(tmp_path).eval_runs().to_dict("records")
    assert run["dataset"] == "notes" and run["recall@5"] == 0.99 and run["mrr@10"] == 0.83
