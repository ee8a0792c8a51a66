"""A cheap snapshot of one data directory, for ``zocrates-nb status`` and ``GET /zocrates/status``.

Cheap on purpose: the Jupyter server calls it on every status request, so it
imports no ChromaDB and opens ``conversion_meta.db`` read-only (it never creates
it). It reports whether an API key is set, never the key.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from zocrates_nb.errors import ConfigError, ZocratesError
from zocrates_nb.index.lexical.libraries import known_libraries
from zocrates_nb.settings.config import ConfigStore, LLMSettings, merge_defaults
from zocrates_nb.settings.profile import profile_token_report
from zocrates_nb.storage.space import write_problem
from zocrates_nb.storage.sqlite_tx import connect_reading

if TYPE_CHECKING:
    from zocrates_nb.paths import DataPaths


def library_label(library: dict) -> str:
    """A human label for the configured library source."""
    source = library.get("source", "demo")
    if source == "zotero-sqlite":
        where = library.get("zotero_dir") or library.get("sqlite_path") or "the default Zotero data directory"
        return f"Zotero desktop ({where})"
    if source == "zotero-web":
        kind = library.get("library_type", "user")
        local = ", local API" if library.get("local") else ""
        return f"Zotero Web API ({kind} {library.get('library_id') or '?'}{local})"
    return "demo library"


def _corpus_counts(paths: DataPaths) -> tuple[dict[str, int], int, str | None, dict[str, Any]]:
    """(documents by kind, chunk rows, error, papers by text source) from conversion_meta.db; zeros when it
    does not exist yet. The text sources are one GROUP BY over a table of one row per paper."""
    if not paths.meta_db.exists():
        return {}, 0, None, {}
    try:
        conn = connect_reading(paths.meta_db, timeout=5)  # no -shm where the directory cannot be written
    except sqlite3.Error as exc:
        return {}, 0, f"cannot open {paths.meta_db.name}: {exc}", {}
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        documents: dict[str, int] = {}
        if "documents" in tables:
            documents = {
                kind: n for kind, n in conn.execute("SELECT kind, count(*) FROM documents GROUP BY kind ORDER BY kind")
            }
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0] if "chunks" in tables else 0
        sources: dict[str, Any] = {}
        if "document_text" in tables:
            sources = dict(conn.execute("SELECT source, count(*) FROM document_text GROUP BY source"))
            sources["pdf_failures"] = conn.execute("SELECT total(pdf_failures) FROM document_text").fetchone()[0]
        sources["libraries"] = known_libraries(conn)  # the user's own and each group library ([] before them)
        return documents, chunks, None, {k: v if k == "libraries" else int(v) for k, v in sources.items()}
    except sqlite3.Error as exc:
        return {}, 0, f"cannot read {paths.meta_db.name}: {exc}", {}
    finally:
        conn.close()


def collect_status(paths: DataPaths) -> dict[str, Any]:
    """Version, data dir, profile, LLM (no key), library source, corpus and index counts.

    A damaged config does not hide the rest: its message and hint are reported
    under ``config_error`` and the defaults are shown for the config part.
    """
    from zocrates_nb import __version__
    from zocrates_nb.settings.credentials import api_key_source

    status: dict[str, Any] = {"version": __version__, "data_dir": str(paths.root)}
    store = ConfigStore.for_paths(paths)
    try:
        config = store.read()
    except ConfigError as exc:
        config = merge_defaults({})
        status["config_error"] = {"message": exc.message, "hint": exc.hint}
    profile = config["user_research_profile"]
    report = profile_token_report(profile, config["max_research_profile_chars"])
    settings = LLMSettings.from_config(config)
    try:
        key_source = api_key_source(paths, settings)
    except ZocratesError as exc:
        key_source, status["secrets_error"] = None, {"message": exc.message, "hint": exc.hint}
    documents, chunks, db_error, sources = _corpus_counts(paths)
    status.update(
        {
            "config_path": str(store.path),
            "profile_configured": bool(profile.strip()),
            "profile_chars": report["chars"],
            "profile_limit": report["limit"],
            "profile_tokens": report["tokens"],
            "profile_share_of_128k": report["share_of_128k"],
            "llm": {
                "configured": settings.configured,
                "base_url": settings.base_url,
                "model": settings.model,
                "models": dict(settings.models),
                "api_key_env": settings.api_key_env,
                "api_key_set": key_source is not None,
                "api_key_source": key_source,
            },
            "library": {"source": config["library"].get("source", "demo"), "label": library_label(config["library"])},
            "vectors": {"mode": config["vectors"].get("mode", "persistent")},
            "corpus": {
                "notes": documents.get("note", 0),
                "papers": documents.get("paper", 0),
                "documents": sum(documents.values()),
            },
            "index": {"chunks": chunks, "embedding": _embedding_model(config)},
        }
    )
    libraries = sources.pop("libraries", None)
    if libraries:
        status["corpus"]["libraries"] = [{"name": lib.name, "kind": lib.kind, "documents": n} for lib, n in libraries]
    if sources:  # where the papers' text came from: their PDFs (with pages) or the library's full text
        status["corpus"]["pages"] = {
            "from_pdf": sources.get("pdf", 0),
            "from_fulltext": sources.get("fulltext", 0),
            "metadata_only": sources.get("metadata", 0),
            "pdf_failures": sources.get("pdf_failures", 0),
        }
    if db_error:
        status["corpus"]["error"] = db_error
    from zocrates_nb.library.writing.outbox import Outbox

    status["outbox"] = Outbox.for_paths(paths).counts()  # saved notes not in Zotero / not synced down yet
    from zocrates_nb.health.checks import quick_health

    status["health"] = quick_health(paths)
    status["writable"] = not (paths.root.exists() and write_problem(paths.root))  # no write hints when not
    from zocrates_nb.index.vectors.fill import read_progress

    dense = read_progress(paths.root)
    if dense is not None:  # a fill in progress, or one a killed sync left to resume
        status["index"]["dense_progress"] = dense
    return status


def _embedding_model(config: dict) -> dict[str, Any]:
    """The embedding model the config names: the offline default, or ``config["embedding"]`` (never a key)."""
    from zocrates_nb.index.embed.build import MODEL_DIM, MODEL_ID

    section = config.get("embedding") or {}
    if not section.get("base_url"):
        return {"model": MODEL_ID, "dim": MODEL_DIM, "base_url": None}
    return {"model": section.get("model"), "dim": section.get("dim"), "base_url": section["base_url"]}


def _model_text(model: dict) -> str:
    where = f" via {model['base_url']}" if model.get("base_url") else " (offline)"
    return f"embeddings {model['model']} ({model['dim']}-d){where}"


def format_status(status: dict[str, Any]) -> str:
    """The status as a few readable lines (for the CLI)."""
    llm = status["llm"]
    # while the directory cannot be written, suggest no command that writes (the space line says why)
    suggest = (lambda command: f" — `{command}`") if status.get("writable", True) else (lambda command: "")
    if llm["configured"]:
        roles = ", ".join(f"{r}={m}" for r, m in sorted(llm["models"].items()))
        llm_line = (
            f"{llm['base_url']} · model {llm['model'] or '(none)'}"
            + (f" · roles {roles}" if roles else "")
            + f" · API key {'set (' + llm['api_key_source'] + ')' if llm['api_key_set'] else 'NOT set'}"
        )
    else:
        llm_line = "not configured (answers are evidence-only)" + suggest(
            "zocrates-nb llm set --base-url URL --model NAME"
        )
    profile = (
        f"{status['profile_chars']} / {status['profile_limit']} characters · {status['profile_tokens']} tokens "
        f"({status['profile_share_of_128k']:.2%} of 128k)"
        if status["profile_configured"]
        else "not set" + suggest("zocrates-nb profile set --text '...'")
    )
    corpus = status["corpus"]
    lines = [
        f"zocrates_nb {status['version']}",
        f"data directory : {status['data_dir']}",
        f"library        : {status['library']['label']}",
        f"corpus         : {corpus['notes']} notes, {corpus['papers']} papers"
        + (f" ({corpus['error']})" if corpus.get("error") else ""),
        *([f"libraries      : {_libraries_line(corpus['libraries'])}"] if len(corpus.get("libraries", [])) > 1 else []),
        *([f"pages          : {pages_line(corpus, status['library']['source'])}"] if _pages_shown(status) else []),
        f"index          : {status['index']['chunks']} chunks"
        + (f" · {_model_text(status['index']['embedding'])}" if status["index"].get("embedding") else "")
        + (f" · {_dense_line(status['index']['dense_progress'])}" if status["index"].get("dense_progress") else ""),
        f"profile        : {profile}",
        f"LLM            : {llm_line}",
    ]
    outbox = status.get("outbox") or {}
    if outbox.get("outbox"):
        lines.append(f"outbox         : {outbox['outbox']} saved notes not yet in Zotero — `zocrates-nb outbox list`")
    if outbox.get("waiting"):
        from zocrates_nb.library.writing.outbox import format_age

        oldest = outbox.get("oldest_waiting_s")
        lines.append(
            f"outbox         : {outbox['waiting']} saved notes waiting for Zotero to sync"
            + (f" (the oldest for {format_age(oldest)})" if oldest is not None else "")
        )
    if "health" in status:
        lines.append(f"health         : {status['health']['summary']}")
    for problem in ("config_error", "secrets_error"):
        if problem in status:
            lines.append(f"PROBLEM        : {status[problem]['message']}\n  → {status[problem]['hint']}")
    return "\n".join(lines)


def _libraries_line(libraries: list[dict]) -> str:
    """``My Library (107 documents) · Lab reading (group, 12 documents)``."""
    return " · ".join(
        f"{lib['name']} ({'group, ' if lib['kind'] == 'group' else ''}{lib['documents']:,} documents)"
        for lib in libraries
    )


def _pages_shown(status: dict) -> bool:
    """The pages line where PDFs can be read (a desktop library) or were: not for the demo or the Web API."""
    corpus = status["corpus"]
    if not (corpus.get("pages") and corpus.get("papers")):
        return False
    desktop = status["library"]["source"] in ("zotero-sqlite", "zotero-dir")
    return desktop or bool(corpus["pages"]["from_pdf"] or corpus["pages"]["pdf_failures"])


def pages_line(corpus: dict, source: str = "zotero-dir") -> str:
    """ "812 of 950 papers from their PDF; 138 from Zotero's full-text cache (no pages)" for ``status``."""
    pages, papers = corpus["pages"], corpus["papers"]
    parts = [f"{pages['from_pdf']} of {papers} papers from their PDF"]
    if pages["from_fulltext"]:
        where = "the library's full text" if source == "demo" else "Zotero's full-text cache"
        parts.append(f"{pages['from_fulltext']} from {where} (no pages)")
    if pages["metadata_only"]:
        parts.append(f"{pages['metadata_only']} with no full text")
    line = "; ".join(parts)
    if pages["pdf_failures"]:
        line += f" · {pages['pdf_failures']} PDFs could not be read (`zocrates-nb sync` says why)"
    return line


def _dense_line(progress: dict) -> str:
    from zocrates_nb.index.vectors.fill import progress_line

    return progress_line(progress) or ""
