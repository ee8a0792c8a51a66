"""Structural checks on the embedded demo library's content (zocrates_nb/library/demo/).

The demo library is the first thing a new user sees and the data the note-recall evaluation runs
on, so these tests pin its shape: counts, key validity, paper metadata, genuine Zotero note HTML
with every construct the converter must handle, a spread of note sizes, and an evaluation set
that points at real notes. They read the files directly (json + html.parser) so they fail when the
content regresses, independently of the converter or the demo source implementation.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from zocrates_nb.library.base import KEY_ALPHABET, is_valid_key

DEMO = Path(__file__).resolve().parents[2] / "zocrates_nb" / "library" / "demo"
ITEM_URI = re.compile(r"^http://zotero\.org/users/local/demoUser/items/([A-Z0-9]{8})$")


def _load(name: str):
    return json.loads((DEMO / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def collections() -> list[dict]:
    return _load("collections.json")


@pytest.fixture(scope="module")
def papers() -> list[dict]:
    return _load("papers.json")


@pytest.fixture(scope="module")
def notes() -> list[dict]:
    return _load("notes.json")


@pytest.fixture(scope="module")
def note_html(notes) -> dict[str, str]:
    return {n["key"]: (DEMO / "notes" / n["file"]).read_text(encoding="utf-8") for n in notes}


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    lines = (DEMO / "note_questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class _NoteScan(HTMLParser):
    """Collects text, tags (with classes) and the attributes we care about from one note."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: Counter[str] = Counter()
        self.classes: Counter[str] = Counter()
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.first_tag: tuple[str, list[tuple[str, str | None]]] | None = None
        self.depth = 0
        self.list_depth = 0
        self.max_list_depth = 0

    def handle_starttag(self, tag, attrs):
        if self.first_tag is None:
            self.first_tag = (tag, attrs)
        self.tags[tag] += 1
        d = dict(attrs)
        self.attrs.append((tag, d))
        for cls in (d.get("class") or "").split():
            self.classes[f"{tag}.{cls}"] += 1
        if tag in ("ul", "ol"):
            self.list_depth += 1
            self.max_list_depth = max(self.max_list_depth, self.list_depth)

    def handle_endtag(self, tag):
        if tag in ("ul", "ol"):
            self.list_depth -= 1

    def handle_data(self, data):
        self.text.append(data)

    @property
    def words(self) -> int:
        return len(" ".join(self.text).split())


def _scan(html: str) -> _NoteScan:
    scan = _NoteScan()
    scan.feed(html)
    scan.close()
    return scan


@pytest.fixture(scope="module")
def scans(note_html) -> dict[str, _NoteScan]:
    return {k: _scan(h) for k, h in note_html.items()}


# ---------------------------------------------------------------- keys and collections


def test_key_alphabet_excludes_ambiguous_characters():
    assert not set("01O") & set(KEY_ALPHABET)


def test_all_keys_valid_and_unique(collections, papers, notes):
    keys = [c["key"] for c in collections] + [p["key"] for p in papers] + [n["key"] for n in notes]
    bad = [k for k in keys if not is_valid_key(k)]
    assert not bad, f"invalid Zotero keys: {bad}"
    dupes = [k for k, c in Counter(keys).items() if c > 1]
    assert not dupes, f"duplicate keys: {dupes}"


def test_collections(collections):
    assert len(collections) >= 4
    keys = {c["key"] for c in collections}
    assert all(c["name"].strip() for c in collections)
    assert len({c["name"] for c in collections}) == len(collections)
    nested = [c for c in collections if c["parent_key"]]
    assert nested, "need at least one nested sub-collection"
    assert all(c["parent_key"] in keys and c["parent_key"] != c["key"] for c in nested)


# ---------------------------------------------------------------- papers


def test_paper_count_and_fields(papers, collections):
    assert len(papers) >= 42
    col_keys = {c["key"] for c in collections}
    required = {
        "key",
        "item_type",
        "title",
        "creators",
        "year",
        "date",
        "doi",
        "publication",
        "abstract",
        "fulltext",
        "collections",
    }
    for p in papers:
        assert required <= p.keys(), (p.get("key"), required - p.keys())
        assert p["item_type"] == "journalArticle"
        assert p["title"].strip() and p["publication"].strip()
        assert p["creators"] and all(re.match(r"^[^,]+, \S", c) for c in p["creators"]), p["key"]
        assert isinstance(p["year"], int) and 1990 <= p["year"] <= 2030
        assert p["date"].startswith(str(p["year"]))
        assert p["doi"] is None or re.match(r"^10\.\d{4,9}/\S+$", p["doi"]), p["doi"]
        assert p["collections"] and set(p["collections"]) <= col_keys, p["key"]


def test_abstracts_are_several_sentences(papers):
    for p in papers:
        abstract = p["abstract"]
        assert abstract and abstract.strip(), p["key"]
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", abstract.strip()) if s]
        assert 3 <= len(sentences) <= 7, (p["key"], len(sentences))


def test_dois_unique(papers):
    dois = [p["doi"].lower() for p in papers if p["doi"]]
    assert len(dois) == len(set(dois))
    assert len(dois) >= 40


def test_fulltext_papers(papers):
    with_text = [p for p in papers if p["fulltext"]]
    assert len(with_text) >= 12
    for p in with_text:
        paras = [x for x in p["fulltext"].split("\n\n") if x.strip()]
        assert 3 <= len(paras) <= 6, (p["key"], len(paras))
        assert len(p["fulltext"].split()) >= 200, p["key"]
    # long enough for several ~250-token chunks in at least a few papers
    assert sum(len(p["fulltext"].split()) >= 300 for p in with_text) >= 3


def test_papers_cover_the_three_topics(papers, collections):
    by_name = {c["name"]: c["key"] for c in collections}
    counts = Counter(k for p in papers for k in p["collections"])
    for name in ("Spatial transcriptomics methods", "Single-cell analysis", "Tumor microenvironment"):
        assert counts[by_name[name]] >= 8, name


# ---------------------------------------------------------------- notes


def test_note_counts_and_links(notes, papers, collections):
    assert len(notes) >= 28
    paper_keys = {p["key"] for p in papers}
    col_keys = {c["key"] for c in collections}
    children = [n for n in notes if n["parent_key"]]
    standalone = [n for n in notes if not n["parent_key"]]
    assert len(children) >= 8 and len(standalone) >= 8
    for n in children:
        assert n["parent_key"] in paper_keys, n["key"]
        assert n["collections"] == [], f"child note {n['key']} must not be in collections"
    for n in standalone:
        assert n["collections"] and set(n["collections"]) <= col_keys, n["key"]
    assert len({k for n in standalone for k in n["collections"]}) >= 3
    assert all(n["file"] == f"{n['key']}.html" for n in notes)
    files = {p.name for p in (DEMO / "notes").glob("*.html")}
    assert files == {n["file"] for n in notes}, "notes/ and notes.json disagree"


def test_every_note_has_zotero_wrapper(note_html, scans):
    for key, html in note_html.items():
        assert html.startswith("<div ") and html.endswith("</div>"), key
        tag, attrs = scans[key].first_tag
        assert tag == "div"
        names = [a for a, _ in attrs]
        version = dict(attrs).get("data-schema-version")
        assert version in ("9", "10"), key
        if "data-citation-items" in names:
            assert names[0] == "data-citation-items", f"{key}: attributes must be sorted"
        # schema 10 only when an underline annotation exists (note-editor buildToHTML)
        assert (version == "10") == ("span.underline" in scans[key].classes), key


def test_note_size_buckets(scans):
    sizes = Counter()
    for scan in scans.values():
        w = scan.words
        sizes["short" if w < 50 else "medium" if w < 100 else "long"] += 1
    assert sizes["short"] >= 8, sizes
    assert sizes["medium"] >= 8, sizes
    assert sizes["long"] >= 8, sizes
    assert sum(300 <= s.words <= 800 for s in scans.values()) >= 3


def test_required_html_constructs_present(scans):
    tags = Counter()
    classes = Counter()
    for s in scans.values():
        tags.update(s.tags)
        classes.update(s.classes)
    for tag in (
        "h1",
        "h2",
        "h3",
        "ul",
        "ol",
        "li",
        "table",
        "th",
        "td",
        "pre",
        "blockquote",
        "strong",
        "em",
        "a",
        "img",
        "code",
    ):
        assert tags[tag] > 0, f"no <{tag}> in any demo note"
    for cls in ("span.math", "pre.math", "span.citation", "span.citation-item", "span.highlight", "span.underline"):
        assert classes[cls] > 0, f"no {cls} in any demo note"
    assert classes["span.highlight"] >= 2
    assert any(s.max_list_depth >= 2 for s in scans.values()), "need a nested list"


def test_math_delimiters(note_html):
    joined = "".join(note_html.values())
    assert re.search(r'<span class="math">\$[^$<]+\$</span>', joined)
    assert re.search(r'<pre class="math">\$\$[^$<]+\$\$</pre>', joined)


def _json_attr(value: str) -> dict | list:
    return json.loads(unquote(value))


def test_citations_point_at_demo_papers(scans, papers):
    paper_keys = {p["key"] for p in papers}
    seen = 0
    for key, scan in scans.items():
        cited_in_body: set[str] = set()
        for tag, attrs in scan.attrs:
            if tag == "span" and "citation" in (attrs.get("class") or "").split():
                data = _json_attr(attrs["data-citation"])
                for item in data["citationItems"]:
                    m = ITEM_URI.match(item["uris"][0])
                    assert m and m.group(1) in paper_keys, (key, item)
                    cited_in_body.add(m.group(1))
                    seen += 1
        wrapper = dict(scan.first_tag[1])
        if cited_in_body:
            items = _json_attr(wrapper["data-citation-items"])
            listed = {ITEM_URI.match(i["uris"][0]).group(1) for i in items}
            assert cited_in_body <= listed, key
            for i in items:
                assert i["itemData"]["title"] and i["itemData"]["author"], key
    assert seen >= 20


def test_annotations_carry_page_labels(scans, papers):
    paper_keys = {p["key"] for p in papers}
    found = Counter()
    for key, scan in scans.items():
        for tag, attrs in scan.attrs:
            cls = (attrs.get("class") or "").split()
            if tag == "span" and ("highlight" in cls or "underline" in cls):
                ann = _json_attr(attrs["data-annotation"])
                assert ann["pageLabel"], key
                assert is_valid_key(ann["annotationKey"]), key
                assert {"pageIndex", "rects"} <= ann["position"].keys()
                parent = ITEM_URI.match(ann["citationItem"]["uris"][0]).group(1)
                assert parent in paper_keys, key
                found["highlight" if "highlight" in cls else "underline"] += 1
    assert found["highlight"] >= 2 and found["underline"] >= 1


def test_special_notes_present(note_html, scans):
    joined = "\n".join(note_html.values())
    assert "Ignore all previous instructions" in joined, "need the prompt-injection test note"
    imgs = [a for s in scans.values() for t, a in s.attrs if t == "img"]
    assert any((a.get("alt") or "").startswith("UMAP of") for a in imgs)
    assert all(a.get("src") or a.get("data-attachment-key") for a in imgs)
    assert "<script" not in joined.lower()


def test_note_titles_distinct(scans):
    first_lines = []
    for scan in scans.values():
        text = " ".join(t.strip() for t in scan.text if t.strip())
        first_lines.append(text[:60])
    assert len(set(first_lines)) == len(first_lines)


# ---------------------------------------------------------------- evaluation questions


def test_questions_reference_existing_notes(questions, notes, scans):
    note_keys = {n["key"] for n in notes}
    assert len(questions) >= 34
    ids = [q["id"] for q in questions]
    assert len(set(ids)) == len(ids)
    for q in questions:
        assert set(q) == {"id", "query", "note_keys", "kind", "split"}
        assert q["kind"] in {"paraphrase", "keyword", "short", "child", "decision"} and q["split"] in {"dev", "test"}
        # questions, or the search-box phrasing people use for their notes ("my notes on the X paper")
        assert len(q["query"].split()) >= 5, q["id"]
        assert q["note_keys"] and set(q["note_keys"]) <= note_keys, q["id"]
    assert len({q["query"].lower() for q in questions}) == len(questions)


def test_questions_cover_sizes_and_kinds(questions, notes, scans):
    by_key = {n["key"]: n for n in notes}
    targets = {k for q in questions for k in q["note_keys"]}
    sizes = Counter()
    for k in targets:
        w = scans[k].words
        sizes["short" if w < 50 else "medium" if w < 100 else "long"] += 1
    assert min(sizes["short"], sizes["medium"], sizes["long"]) >= 5, sizes
    assert any(by_key[k]["parent_key"] for k in targets)
    assert any(not by_key[k]["parent_key"] for k in targets)


def test_questions_paraphrase_rather_than_copy(questions, note_html):
    """No question may quote a long span (8+ consecutive words) of its note verbatim."""
    for q in questions:
        words = re.findall(r"\w+", q["query"].lower())
        grams = {" ".join(words[i : i + 8]) for i in range(len(words) - 7)}
        for key in q["note_keys"]:
            scan = _scan(note_html[key])
            text = " ".join(re.findall(r"\w+", " ".join(scan.text).lower()))
            assert not any(g in text for g in grams), (q["id"], key)
