"""A BEIR dataset on disk: ``corpus.jsonl[.gz]``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

Why a module of its own: the harness (``evaluate``) and the cached evaluation index (``beir_index``)
both read a dataset, and neither should import the other for it. As in BEIR, only queries that appear
in the split's qrels are kept; the corpus is read lazily (only the index build needs it). Errors name
the missing file and what a BEIR folder holds.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from zocrates_nb.errors import ZocratesError
from zocrates_nb.storage.hashing import sha256_file

__all__ = ["BeirDataset", "EvalDataError", "load_beir", "read_jsonl"]


class EvalDataError(ZocratesError):
    """The evaluation dataset is missing files or is malformed."""


@dataclass
class BeirDataset:
    name: str
    root: Path
    split: str
    corpus_path: Path
    corpus_sha256: str
    queries: dict[str, str]  # only the queries judged in this split
    qrels: dict[str, dict[str, int]]

    def corpus(self) -> dict[str, tuple[str, str]]:
        """doc id → (title, text), read on demand (only needed to build the index)."""
        out: dict[str, tuple[str, str]] = {}
        for row in read_jsonl(self.corpus_path):
            out[str(row["_id"])] = (row.get("title") or "", row.get("text") or "")
        return out


def read_jsonl(path: Path):
    """The JSON objects of a JSON-lines file (gzip when it ends in .gz); a bad line names its number."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise EvalDataError(
                        f"{path} line {number} is not JSON: {exc.msg}",
                        hint="Check the file is BEIR's JSON-lines format.",
                    ) from None


def load_beir(dataset_dir: str | Path, split: str = "test") -> BeirDataset:
    """Read queries and qrels of ``split`` (corpus lazily); errors name the missing file."""
    root = Path(dataset_dir).expanduser()
    corpus_path = next((root / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (root / n).is_file()), None)
    qrels_path = root / "qrels" / f"{split}.tsv"
    queries_path = root / "queries.jsonl"
    for needed, path in (
        ("corpus.jsonl[.gz]", corpus_path),
        ("queries.jsonl", queries_path),
        (f"qrels/{split}.tsv", qrels_path),
    ):
        if path is None or not path.is_file():
            available = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
            raise EvalDataError(
                f"{root} has no {needed}.",
                hint="A BEIR dataset folder holds corpus.jsonl[.gz], queries.jsonl and "
                "qrels/<split>.tsv" + (f"; splits here: {', '.join(available)}" if available else "."),
            )
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip("\r\n").split("\t")
            if number == 1 and parts[:1] == ["query-id"]:
                continue
            if len(parts) < 3 or not line.strip():
                continue
            try:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
            except ValueError:
                raise EvalDataError(
                    f"{qrels_path} line {number}: score {parts[2]!r} is not an integer.",
                    hint="Qrels lines are: query-id<TAB>corpus-id<TAB>score.",
                ) from None
    queries = {str(r["_id"]): r.get("text") or "" for r in read_jsonl(queries_path) if str(r["_id"]) in qrels}
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise EvalDataError(
            f"{len(missing)} judged queries are not in queries.jsonl (e.g. {missing[0]}).",
            hint="Use the queries.jsonl that belongs to this dataset.",
        )
    assert corpus_path is not None  # checked with the other files above
    return BeirDataset(root.name, root, split, corpus_path, sha256_file(corpus_path), queries, qrels)
