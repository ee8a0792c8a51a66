"""Fuzzing the edges (issue 10): note HTML, queries, config values and REST bodies.

The rule everywhere: a clear ``ZocratesError`` (message + hint) or a result, never a traceback
and never a 500. Sizes: ZOCRATES_FUZZ_EXAMPLES (default 60; `make soak` runs more).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from zocrates_nb.errors import QueryError, ZocratesError

EXAMPLES = int(os.environ.get("ZOCRATES_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=200)  # surrogates included
FTS_SYNTAX = st.lists(
    st.sampled_from(
        [
            '"multi-agent"',
            "NOT",
            "AND",
            "OR",
            "title:x",
            "NEAR(a b)",
            "*",
            "^",
            "(",
            ")",
            '"',
            "-",
            ":",
            "cell",
            "type",
            "{a b}",
            "+",
            "\\",
            "'",
        ]
    ),
    max_size=8,
).map(" ".join)
TAGS = st.sampled_from(
    [
        "p",
        "h1",
        "h2",
        "ul",
        "ol",
        "li",
        "table",
        "tr",
        "td",
        "pre",
        "code",
        "a",
        "img",
        "script",
        "style",
        "div",
        "span",
        "blockquote",
        "math",
        "svg",
        "iframe",
        "b",
    ]
)


@st.composite
def note_html(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 12))):
        tag = draw(TAGS)
        attrs = draw(
            st.sampled_from(
                [
                    "",
                    ' href="javascript:alert(1)"',
                    ' onerror="x()"',
                    ' src="http://e/x.png"',
                    ' data-citation="%7B%22x%22%3A1%7D"',
                    ' style="color:red"',
                ]
            )
        )
        body = draw(st.one_of(ANY_TEXT, st.just("<b>nested</b>"), st.just("&amp;&lt;&#0;&#xD800;")))
        parts.append(f"<{tag}{attrs}>{body}" + (draw(st.sampled_from([f"</{tag}>", ""]))))
    return "".join(parts)


@given(html=st.one_of(note_html(), ANY_TEXT, st.binary(max_size=300)))
@FUZZ
@example(html="<p>\ud800</p>")
@example(html=b"\xff\xfe<\x00p>")
def test_note_html_converts_or_is_refused_clearly(html):
    from zocrates_nb.convert.convert import convert_note
    from zocrates_nb.widgets.render import markdown_to_html

    try:
        converted = convert_note(html)
    except ZocratesError as exc:
        assert exc.message
        return
    shown = markdown_to_html(converted.markdown)
    assert "<script" not in shown.lower() and "javascript:" not in shown.lower()
    json.dumps(converted.manifest_fields())


@pytest.fixture(scope="module")
def fuzz_workbench(demo_template, tmp_path_factory):
    from zocrates_nb.workbench.core import Workbench

    home = tmp_path_factory.mktemp("fuzz") / "home"
    shutil.copytree(demo_template, home)
    wb = Workbench(home, auto_sync=False)
    yield wb
    wb.close()


@given(
    query=st.one_of(ANY_TEXT, FTS_SYNTAX, st.binary(max_size=60).map(lambda b: b.decode("utf-8", "surrogateescape")))
)
@settings(max_examples=max(10, EXAMPLES // 2), deadline=None, suppress_health_check=list(HealthCheck))
@example(query='"multi-agent" NOT title:x')
@example(query="\ud800\udc00\udfff")
def test_any_query_searches_or_is_refused_clearly(fuzz_workbench, query):
    for mode in ("lexical", "hybrid"):
        try:
            results = fuzz_workbench.tools.search_corpus(query, k=5, mode=mode)
        except QueryError as exc:
            assert exc.hint
            continue
        assert isinstance(results.evidence_text, str)
        json.dumps(results.to_dict())


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=10,
)
FIELDS = st.sampled_from(
    [
        "base_url",
        "model",
        "models",
        "api_key_env",
        "timeout_s",
        "max_retries",
        "prices",
        "user_research_profile",
        "bogus",
    ]
)


@st.composite
def rest_bodies(draw) -> bytes:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.binary(max_size=200))
    if kind == 1:
        return json.dumps(draw(JSON_VALUES)).encode("utf-8", "surrogatepass")
    payload = draw(st.dictionaries(FIELDS, JSON_VALUES, max_size=4))
    text = json.dumps(payload)  # \\ud800 escapes stay escapes: the server must decode them
    return text.encode("utf-8")


@given(body=rest_bodies())
@FUZZ
@example(body=b'{"model": "\\ud800"}')
@example(body=b"[" * 50_000 + b"]" * 50_000)
@example(body=b'{"timeout_s": NaN}')
def test_rest_bodies_and_config_values_are_applied_or_refused_clearly(tmp_path_factory, body):
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.server.handlers import apply_llm_config, parse_llm_config_body
    from zocrates_nb.settings.config import ConfigStore

    paths = DataPaths(tmp_path_factory.mktemp("rest")).ensure()
    store = ConfigStore.for_paths(paths)
    try:
        apply_llm_config(store, parse_llm_config_body(body))
    except ZocratesError as exc:
        assert exc.message
        return
    json.loads(store.path.read_text(encoding="utf-8"))  # what was written reads back
    store.read()
