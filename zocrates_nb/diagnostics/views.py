"""Diagnostics views: DuckDB over every process's event segment, as pandas DataFrames.

This is the only module that imports ``duckdb``. It never writes a DuckDB file
(several kernels would fight over its single-writer lock): each call reads all
``*.jsonl`` segments of the directory together into an in-memory table, with
``ignore_errors`` so a torn last line left by a killed kernel is skipped.

Views read through an explicit schema (the field names of ``docs/contracts.md``),
so a kind that has not been logged yet still gives a DataFrame with the right
columns, and a field of the wrong type becomes NULL instead of losing the event.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from zocrates_nb.errors import ZocratesError

#: why a citation failed (``agents.citecheck.REASONS``; kept here as names so diagnostics import no agent)
CITATION_REASONS = (
    "not_in_evidence",
    "quote_not_found",
    "quote_not_in_evidence",
    "page_out_of_span",
    "page_not_in_evidence",
    "doi_not_in_evidence",
    "doi_unresolved",
    "citation_mismatch",
)
CITATION_GROUPS = ("model", "role", "mode", "route", "session")
#: Typed columns the views rely on (from the event contract); other fields are kept by ``events()``.
SCHEMA: dict[str, str] = {
    "ts": "TIMESTAMPTZ",
    "kind": "VARCHAR",
    "session": "VARCHAR",
    "latency_ms": "DOUBLE",
    # search
    "query": "VARCHAR",
    "k": "INTEGER",
    "mode": "VARCHAR",
    "results": "STRUCT(key VARCHAR, kind VARCHAR, lexical_rank INTEGER, dense_rank INTEGER, score DOUBLE)[]",
    # read / save
    "key": "VARCHAR",
    "fast_path": "BOOLEAN",
    "rematerialised": "BOOLEAN",
    "parent_key": "VARCHAR",
    "collection": "VARCHAR",
    # sync (changed_keys: optional list of keys whose source hash changed)
    "changed_keys": "VARCHAR[]",
    "seconds": "DOUBLE",
    # llm
    "role": "VARCHAR",
    "model": "VARCHAR",
    "prompt_tokens": "BIGINT",
    "completion_tokens": "BIGINT",
    "profile_tokens": "BIGINT",
    "cost_usd": "DOUBLE",
    # eval
    "dataset": "VARCHAR",
    "split": "VARCHAR",
    "ndcg@10": "DOUBLE",
    "recall@100": "DOUBLE",
    "mrr@10": "DOUBLE",
    "recall@5": "DOUBLE",
    "queries": "INTEGER",
    # answer (role/model: the synthesizer that wrote it; none for an evidence-only answer)
    "cited_keys": "VARCHAR[]",
    "read_keys": "VARCHAR[]",
    "route": "VARCHAR",
    "citations_cited": "INTEGER",
    "citations_verified": "INTEGER",
    "citation_failures": "STRUCT(" + ", ".join(f"{reason} INTEGER" for reason in CITATION_REASONS) + ")",
}
TOKEN_GROUPS = ("session", "role", "model")

_STALENESS_SQL = """
WITH reads AS (
    SELECT key, count(*) AS reads,
           count(*) FILTER (WHERE fast_path) AS fast_path_reads,
           count(*) FILTER (WHERE rematerialised) AS rematerialisations,
           max(ts) AS last_read
    FROM ev WHERE kind IN ('read', 'lookup') AND key IS NOT NULL GROUP BY key),
synced AS (
    SELECT key, count(*) AS sync_changes
    FROM (SELECT unnest(changed_keys) AS key FROM ev WHERE kind = 'sync' AND changed_keys IS NOT NULL)
    GROUP BY key)
SELECT coalesce(r.key, s.key) AS key,
       coalesce(r.reads, 0) AS reads,
       coalesce(r.fast_path_reads, 0) AS fast_path_reads,
       coalesce(r.rematerialisations, 0) AS rematerialisations,
       coalesce(s.sync_changes, 0) + coalesce(r.rematerialisations, 0) AS hash_changes,
       r.fast_path_reads / nullif(r.reads, 0) AS fast_path_ratio,
       r.last_read
FROM reads r FULL OUTER JOIN synced s ON r.key = s.key
ORDER BY key
"""

# One row per (search, result): was that result read / cited later in the same session?
_RESULTS_SQL = """
CREATE OR REPLACE TEMP TABLE s AS
    SELECT row_number() OVER (ORDER BY ts, session) AS search_id, ts, session,
           coalesce(mode, 'unknown') AS mode, query, results
    FROM ev WHERE kind = 'search';
CREATE OR REPLACE TEMP TABLE res AS
    SELECT x.search_id, x.ts, x.session, x.r.key AS key,
           x.r.lexical_rank IS NOT NULL AS lexical, x.r.dense_rank IS NOT NULL AS dense
    FROM (SELECT search_id, ts, session, unnest(results) AS r FROM s WHERE results IS NOT NULL) x;
CREATE OR REPLACE TEMP TABLE used AS
    SELECT res.*,
        EXISTS (SELECT 1 FROM ev e WHERE e.kind = 'read' AND e.session = res.session
                AND e.ts >= res.ts AND e.key = res.key) AS was_read,
        EXISTS (SELECT 1 FROM ev e WHERE e.kind = 'answer' AND e.session = res.session
                AND e.ts >= res.ts AND list_contains(e.cited_keys, res.key)) AS was_cited
    FROM res;
"""

_SEARCHES_SQL = """
SELECT s.search_id, s.ts, s.session, s.mode, s.query,
       count(u.key) AS results,
       coalesce(bool_or(u.was_read), false) AS read,
       coalesce(bool_or(u.was_cited), false) AS cited,
       coalesce(bool_or(u.was_read OR u.was_cited), false) AS hit
FROM s LEFT JOIN used u ON u.search_id = s.search_id
GROUP BY ALL ORDER BY s.search_id
"""

_HIT_RATES_SQL = """
WITH per_search AS ({searches}),
searches AS (
    SELECT coalesce(mode, 'all') AS mode, count(*) AS searches,
           avg(read::INT) AS read_rate, avg(cited::INT) AS cited_rate, avg(hit::INT) AS hit_rate
    FROM per_search GROUP BY GROUPING SETS ((mode), ())),
results AS (
    SELECT coalesce(s.mode, 'all') AS mode, count(*) AS results,
           avg(u.lexical::INT) AS lexical_share, avg(u.dense::INT) AS dense_share,
           avg((u.lexical AND u.dense)::INT) AS both_share,
           count(*) FILTER (WHERE u.was_read OR u.was_cited) AS used_results,
           avg(u.lexical::INT) FILTER (WHERE u.was_read OR u.was_cited) AS used_lexical_share,
           avg(u.dense::INT) FILTER (WHERE u.was_read OR u.was_cited) AS used_dense_share
    FROM used u JOIN s ON s.search_id = u.search_id GROUP BY GROUPING SETS ((s.mode), ()))
SELECT searches.mode, searches.searches, searches.read_rate, searches.cited_rate, searches.hit_rate,
       coalesce(results.results, 0) AS results, results.lexical_share, results.dense_share, results.both_share,
       coalesce(results.used_results, 0) AS used_results, results.used_lexical_share, results.used_dense_share
FROM searches LEFT JOIN results ON results.mode = searches.mode
WHERE searches.searches > 0
ORDER BY searches.mode = 'all', searches.mode
"""

_TOKEN_SQL = """
SELECT {groups}, count(*) AS calls,
       coalesce(sum(prompt_tokens), 0)::BIGINT AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::BIGINT AS completion_tokens,
       (coalesce(sum(prompt_tokens), 0) + coalesce(sum(completion_tokens), 0))::BIGINT AS total_tokens,
       coalesce(sum(profile_tokens), 0)::BIGINT AS profile_tokens,
       sum(cost_usd) AS cost_usd,
       coalesce(sum(profile_tokens), 0) / nullif(sum(prompt_tokens), 0) AS profile_share
FROM ev WHERE kind = 'llm' GROUP BY {groups} ORDER BY {groups}
"""

_LATENCY_SQL = """
SELECT kind, count(*) AS n,
       quantile_cont(latency_ms, 0.5) AS p50, quantile_cont(latency_ms, 0.95) AS p95,
       quantile_cont(latency_ms, 0.99) AS p99, max(latency_ms) AS max
FROM ev WHERE latency_ms IS NOT NULL GROUP BY kind ORDER BY kind
"""

_EVAL_SQL = """
SELECT ts, session, dataset, split, mode, "ndcg@10", "recall@100", "mrr@10", "recall@5", queries, seconds
FROM ev WHERE kind = 'eval' ORDER BY ts
"""


_CITATIONS_SQL = f"""
SELECT row_number() OVER (ORDER BY ts) AS turn, ts, session, coalesce(role, 'evidence_only') AS role,
       coalesce(model, 'none') AS model, mode, route,
       coalesce(citations_cited, 0) AS cited, coalesce(citations_verified, 0) AS verified,
       coalesce(citations_cited, 0) - coalesce(citations_verified, 0) AS failed,
       {", ".join(f"coalesce(citation_failures.{r}, 0) AS {r}" for r in CITATION_REASONS)}
FROM ev WHERE kind = 'answer' AND citations_cited IS NOT NULL ORDER BY ts
"""

_CITATION_RATES_SQL = """
WITH turns AS ({turns})
SELECT {groups}, count(*) AS turns, sum(cited)::BIGINT AS cited, sum(verified)::BIGINT AS verified,
       1 - sum(verified) / nullif(sum(cited), 0) AS fabrication_rate,
       avg((failed > 0)::INT) AS turns_with_failures
FROM turns GROUP BY {groups} ORDER BY {groups}
"""


class Diagnostics:
    """Read-only views over ``<data-dir>/diagnostics/*.jsonl``; every call sees the latest events."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET TimeZone = 'UTC'")
        self._mutex = threading.Lock()  # one DuckDB connection: serialise the views
        self.skipped_lines = 0  # lines that were JSON but not an object (counted on each read)
        self._scratch: tempfile.TemporaryDirectory | None = None

    def __repr__(self) -> str:
        return f"Diagnostics({str(self.directory)!r})"

    def segments(self) -> list[Path]:
        """The non-empty event files, one per process that logged."""
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob("*.jsonl") if p.is_file() and p.stat().st_size > 0)

    def _readable_files(self) -> list[str]:
        """The segments, each with only its object lines: a line that is valid JSON but not an object
        (``[1, 2]``, ``42``) would turn DuckDB's whole schema into one ``json`` column, so it is
        left out of a scratch copy and counted in ``skipped_lines`` (torn lines DuckDB skips itself)."""
        files, skipped = [], 0
        for path in self.segments():
            data = path.read_bytes()
            lines = data.split(b"\n")
            keep = [line for line in lines if not line.strip() or line.lstrip()[:1] == b"{"]
            if len(keep) == len(lines):
                files.append(str(path))
                continue
            skipped += len(lines) - len(keep)
            if self._scratch is None:
                self._scratch = tempfile.TemporaryDirectory(prefix="zocrates-diag-")
            copy = Path(self._scratch.name) / path.name
            copy.write_bytes(b"\n".join(keep))
            files.append(str(copy))
        self.skipped_lines = skipped
        return files

    def _load(self) -> None:
        """(Re)build the typed in-memory table ``ev`` from all segments."""
        columns = ", ".join(f'"{name}" {sql_type}' for name, sql_type in SCHEMA.items())
        self._con.execute(f"CREATE OR REPLACE TEMP TABLE ev ({columns})")
        files = self._readable_files()
        if files:
            self._con.execute(
                "INSERT INTO ev SELECT * FROM read_json($files, format = 'newline_delimited', "
                "ignore_errors = true, columns = $columns) WHERE kind IS NOT NULL",
                {"files": files, "columns": SCHEMA},
            )

    def _query(self, *sql: str) -> pd.DataFrame:
        with self._mutex:
            try:
                self._load()
                for statement in sql[:-1]:
                    self._con.execute(statement)
                return self._con.execute(sql[-1]).df()
            except duckdb.Error as exc:
                raise ZocratesError(
                    f"Could not read the diagnostics in {self.directory}: {exc}",
                    hint="Move damaged *.jsonl files out of that directory and try again.",
                ) from exc

    # -- views -----------------------------------------------------------------
    def events(self, kind: str | None = None) -> pd.DataFrame:
        """All events (every field any event carries), oldest first; ``kind`` filters."""
        with self._mutex:
            files = self._readable_files()
            if not files:
                return pd.DataFrame({name: pd.Series(dtype="object") for name in ("ts", "kind", "session")})
            try:
                rel = self._con.execute(
                    "SELECT * FROM read_json_auto($files, format = 'newline_delimited', ignore_errors = true, "
                    "union_by_name = true, sample_size = -1) WHERE kind IS NOT NULL "
                    "AND ($kind IS NULL OR kind = $kind) ORDER BY ts",
                    {"files": files, "kind": kind},
                )
                return rel.df()
            except duckdb.Error as exc:
                raise ZocratesError(
                    f"Could not read the diagnostics in {self.directory}: {exc}",
                    hint="Move damaged *.jsonl files out of that directory and try again.",
                ) from exc

    def staleness(self) -> pd.DataFrame:
        """Per document: reads, fast-path reads, re-materialisations, hash changes, fast-path ratio.

        ``hash_changes`` counts each detected change of the source hash: a ``sync`` event
        listing the key in ``changed_keys`` or a ``read`` that had to re-materialise.
        """
        return self._query(_STALENESS_SQL)

    def searches(self) -> pd.DataFrame:
        """One row per search: whether any of its results was read / cited later in the same session."""
        return self._query(_RESULTS_SQL, _SEARCHES_SQL)

    def hit_rates(self) -> pd.DataFrame:
        """Per search mode (and 'all'): hit rates and each retriever's share of the results.

        ``read_rate``/``cited_rate``/``hit_rate``: share of searches with a result read
        (``read`` event) / cited (``answer.cited_keys``) / either, afterwards in the same
        session. ``lexical_share``/``dense_share``/``both_share``: share of returned results
        that had a lexical rank / a dense rank / both; ``used_*``: the same among results
        that were read or cited.
        """
        return self._query(_RESULTS_SQL, _HIT_RATES_SQL.format(searches=_SEARCHES_SQL))

    def token_costs(self, by: Sequence[str] = TOKEN_GROUPS) -> pd.DataFrame:
        """LLM calls, tokens, cost and the profile's share of prompt tokens, grouped by ``by``."""
        groups = list(by)
        if not groups or any(g not in TOKEN_GROUPS for g in groups):
            raise ZocratesError(
                f"token_costs(by=...) takes a non-empty subset of {TOKEN_GROUPS}, not {tuple(by)}.",
                hint='For example by=("role",) or by=("session", "model").',
            )
        return self._query(_TOKEN_SQL.format(groups=", ".join(groups)))

    def latency(self) -> pd.DataFrame:
        """p50/p95/p99/max of ``latency_ms`` per event kind (interpolated percentiles)."""
        return self._query(_LATENCY_SQL)

    def eval_runs(self) -> pd.DataFrame:
        """Every logged evaluation run (nDCG@10, Recall@100, MRR@10; note runs: Recall@5), oldest first."""
        return self._query(_EVAL_SQL)

    def citation_checks(self) -> pd.DataFrame:
        """One row per answer: which synthesizer (role, model) wrote it, how many citations it made, how
        many verified against that turn's evidence, and the failures by reason (one column each)."""
        return self._query(_CITATIONS_SQL)

    def citation_rates(self, by: Sequence[str] = ("model",)) -> pd.DataFrame:
        """Citations and the share that failed verification (``fabrication_rate``) per ``by`` group."""
        groups = list(by)
        if not groups or any(g not in CITATION_GROUPS for g in groups):
            raise ZocratesError(
                f"citation_rates(by=...) takes a non-empty subset of {CITATION_GROUPS}, not {tuple(by)}.",
                hint='For example by=("model",) or by=("model", "role").',
            )
        return self._query(_CITATION_RATES_SQL.format(turns=_CITATIONS_SQL, groups=", ".join(groups)))

    def close(self) -> None:
        self._con.close()
        if self._scratch is not None:
            self._scratch.cleanup()
