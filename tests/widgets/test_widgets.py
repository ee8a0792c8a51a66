"""ChatPanel, ProfileEditor and the HTML renderers, driven from code (no browser).

The panel runs on a real Workbench over the demo library (real FTS5, ChromaDB, corpus); the one
remote service, the OpenAI API, is the loopback fake speaking the real wire format. Front-end
events are fed in the way the browser sends them (``_handle_custom_msg`` with the widget's own
message shape) or through ipywidgets' programmatic ``Button.click()``.
"""

from __future__ import annotations

import json
import re

import pytest

from zocrates_nb.errors import ZocratesError
from zocrates_nb.widgets import chat as chat_module
from zocrates_nb.widgets import render
from zocrates_nb.widgets.chat import ChatPanel
from zocrates_nb.widgets.profile_editor import ProfileEditor

QUESTION = "How can cell-type proportions be estimated for each Visium spot?"
KEY_RE = re.compile(r"\b[23456789A-NP-Z]{8}\b")


@pytest.fixture(scope="module")
def wb(demo_template, tmp_path_factory):
    """One workbench for the module, on a private copy of the session's synced demo library (no new sync)."""
    import shutil

    from zocrates_nb.workbench.core import open_workbench

    home = tmp_path_factory.mktemp("widgets-home") / "data"
    shutil.copytree(demo_template, home)
    workbench = open_workbench(home)
    yield workbench
    workbench.close()


@pytest.fixture
def panel(wb):
    return ChatPanel(wb)


# ----------------------------------------------------------------------------- ChatPanel


def test_panel_has_the_stable_css_handles(panel):
    assert "zc-chat" in panel.root._dom_classes
    assert "zc-chat-input" in panel.input._dom_classes
    # the Send button lives in the input widget's front end (static/chat.js)
    assert "zc-chat-send" in str(chat_module.ChatInput._esm)
    assert {"zc-save-collection", "zc-save-parent"} <= set(panel.collection_picker._dom_classes) | set(
        panel.parent_picker._dom_classes
    )
    assert "zc-save-session" in panel.save_session_button._dom_classes


def test_send_adds_user_and_assistant_bubbles_with_sources(panel, wb):
    answer = panel.send(QUESTION)
    assert [m.role for m in panel.messages] == ["user", "assistant"]
    user, assistant = panel.messages
    assert "zc-bubble-user" in user.widget._dom_classes and QUESTION in user.widget.value
    bubble = assistant.widget
    assert "zc-bubble-assistant" in bubble.root._dom_classes
    assert bubble.body.value and "<script" not in bubble.body.value.lower()
    assert answer.citations, "the demo library should give this question sources"
    sources = bubble.sources.value
    assert sources.startswith('<details class="zc-sources"')
    for citation in answer.citations:
        assert render.escape(citation.title) in sources
        assert citation.key not in sources, "raw Zotero keys must not reach the researcher"
    assert "zc-save-note" in bubble.save_button._dom_classes and not bubble.save_button.disabled
    assert panel.input.value == "" and not panel.input.disabled


def test_enter_in_the_browser_submits_the_text_it_carries(panel):
    # what static/chat.js posts on Enter or a Send click
    panel.input._handle_custom_msg({"event": "submit", "value": "What does MERFISH measure?"}, [])
    assert [m.role for m in panel.messages] == ["user", "assistant"]
    assert panel.messages[0].text == "What does MERFISH measure?"


def test_empty_question_shows_an_error_line_in_the_panel(panel):
    with pytest.raises(ZocratesError):
        panel.send("   ")
    assert "zc-error-line" in panel.error.value and "no question" in panel.error.value
    panel.input._handle_custom_msg({"event": "submit", "value": ""}, [])  # from the browser: shown, not raised
    assert "zc-error-line" in panel.error.value
    assert panel.messages == []


def test_save_answer_to_a_collection_confirms_and_is_searchable(panel, wb):
    panel.send(QUESTION)
    collection = wb.collections()[0]
    saved = panel.save_answer(collection_key=collection.key, title="Panel note: spot deconvolution recipe")
    assert saved.key and saved.collection_key == collection.key and saved.parent_key is None
    expected = f"Saved to collection ‘{collection.name}’ as ‘Panel note: spot deconvolution recipe’"
    assert render.escape(expected) in panel.messages[-1].widget.saved_line.value
    assert panel.messages[-1].saved == saved
    assert saved.key in wb.search("panel note spot deconvolution recipe", k=5).keys()


def test_save_as_note_button_files_a_child_note_under_the_picked_paper(panel, wb):
    panel.send(QUESTION)
    paper = wb.papers()[0]
    panel.collection_picker.value = wb.collections()[0].key
    panel.parent_picker.value = paper.key  # picking a paper clears the collection (xor)
    assert panel.collection_picker.value == ""
    panel.messages[-1].widget.save_button.click()
    saved = panel.messages[-1].saved
    assert saved is not None and saved.parent_key == paper.key and saved.collection_key is None
    confirmation = panel.messages[-1].widget.saved_line.value
    assert "child note" in confirmation and render.escape(paper.title) in confirmation
    assert wb.corpus.manifest(saved.key)["parent_key"] == paper.key


def test_save_session_saves_the_whole_conversation(panel, wb):
    panel.send(QUESTION)
    panel.send("What does MERFISH measure?")
    collection = wb.collections()[-1]
    panel.collection_picker.value = collection.key
    saved = panel.save_session()
    assert saved.collection_key == collection.key
    text = wb.read_document(saved.key)
    assert QUESTION in text and "What does MERFISH measure?" in text
    assert "Saved to collection" in panel.status.value


def test_saving_with_nothing_to_save_or_both_destinations_shows_errors(panel, wb):
    with pytest.raises(ZocratesError):
        panel.save_answer()
    assert "no answer to save" in panel.error.value
    panel.send(QUESTION)
    with pytest.raises(ZocratesError):
        panel.save_answer(collection_key=wb.collections()[0].key, parent_key=wb.papers()[0].key)
    assert "zc-error-line" in panel.error.value and "not both" in panel.error.value
    with pytest.raises(ZocratesError):
        panel.save_answer(index=7)
    assert "no answer number 7" in panel.error.value


def test_default_workbench_comes_from_zocrates_home(wb, monkeypatch):
    monkeypatch.setenv("ZOCRATES_HOME", str(wb.paths.root))
    assert ChatPanel().workbench is wb
    assert ProfileEditor().workbench is wb


def test_streaming_updates_the_bubble_before_the_answer_is_complete(wb, monkeypatch):
    from tests.fakes.openai_server import FakeOpenAI
    from tests.fakes.scripted_model import ScriptedModel, scripted_llm_settings

    seen: list[str] = []
    original = chat_module._AssistantBubble.on_token

    def spy(self, token):
        original(self, token)
        seen.append(self.body.value)

    monkeypatch.setattr(chat_module._AssistantBubble, "on_token", spy)
    monkeypatch.setattr(chat_module, "STREAM_RENDER_INTERVAL", 0.0)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-widgets-0000")
    with FakeOpenAI(responder=ScriptedModel()) as server:
        wb.config.set_llm(**scripted_llm_settings(server.base_url))
        try:
            panel = ChatPanel(wb)
            answer = panel.send("Which deconvolution methods work for spot-level spatial data?")
        finally:
            wb.config.clear_llm()
    assert answer.mode == "llm"
    assert len(seen) >= 2 and seen[0] != seen[-1], "the bubble should grow while tokens arrive"
    final = panel.messages[-1].widget.body.value
    assert final == render.render_answer_body(answer.text) and "According to" in final
    assert "sk-test" not in final
    assert not KEY_RE.search(re.sub(r"<[^>]+>", " ", final)), "keys are cleaned from the streamed answer"


def test_ask_failure_is_shown_in_the_panel(wb, monkeypatch):
    panel = ChatPanel(wb)

    def broken(question, session=None, on_token=None):
        raise ZocratesError("The language model endpoint refused the request.", "Check `zocrates-nb llm show`.")

    monkeypatch.setattr(wb, "ask", broken)
    panel.input._handle_custom_msg({"event": "submit", "value": QUESTION}, [])
    assert "refused the request" in panel.error.value and "llm show" in panel.error.value
    failed_bubble = panel.log.children[-1]
    assert "zc-bubble-assistant" in failed_bubble._dom_classes and "No answer" in failed_bubble.children[0].value
    assert [m.role for m in panel.messages] == ["user"]
    assert not panel.input.disabled


# ----------------------------------------------------------------------------- ProfileEditor


def test_profile_editor_placeholder_limit_and_counter(wb):
    from zocrates_nb.settings.profile import SAMPLE_RESEARCH_PROFILE

    wb.config.clear_profile()
    editor = ProfileEditor(wb)
    assert "zc-profile-editor" in editor._dom_classes
    assert editor.placeholder == SAMPLE_RESEARCH_PROFILE and editor.value == ""
    assert editor.max_chars == 1000
    assert editor.counter == "0 / 1000 characters · 0 tokens"
    js = editor._esm if isinstance(editor._esm, str) else str(editor._esm)
    assert "maxLength" in js and "zc-profile-counter" in js and "zc-profile-save" in js
    assert "textarea:focus::placeholder { color: transparent; opacity: 0; }" in str(editor._css)
    assert "--zc-text-muted" in str(editor._css)


def test_profile_editor_counter_uses_exact_tokens(wb):
    from zocrates_nb.settings.profile import profile_token_report

    editor = ProfileEditor(wb)
    editor.value = "Spatial transcriptomics postdoc; LaTeX for maths."
    tokens = profile_token_report(editor.value)["tokens"]
    assert editor.counter == f"{len(editor.value)} / 1000 characters · {tokens} tokens"
    assert editor.token_chars == len(editor.value)


def test_profile_editor_refuses_1001_characters_inline_and_keeps_the_file(wb):
    wb.config.set_profile("kept")
    editor = ProfileEditor(wb)
    editor.value = "x" * 1001
    with pytest.raises(ZocratesError):
        editor.save()
    assert editor.status_kind == "error" and "1000" in editor.status and "1001" in editor.status
    assert wb.config.profile() == "kept"
    editor._handle_custom_msg({"event": "save", "value": "y" * 1001}, [])  # the browser's Save: shown, not raised
    assert editor.status_kind == "error" and wb.config.profile() == "kept"


def test_profile_editor_save_and_clear_write_the_config_file(wb):
    editor = ProfileEditor(wb)
    editor._handle_custom_msg({"event": "save", "value": "I study lymph nodes with Visium."}, [])
    assert editor.status_kind == "ok" and "Saved" in editor.status
    on_disk = json.loads(wb.paths.config.read_text())
    assert on_disk["user_research_profile"] == "I study lymph nodes with Visium."
    editor.value = "x" * 1000
    editor.save()
    assert wb.config.profile() == "x" * 1000
    editor.clear()
    assert editor.value == "" and wb.config.profile() == "" and "Cleared" in editor.status


# ----------------------------------------------------------------------------- render (pure)


def test_markdown_is_sanitized_and_latex_left_for_mathjax():
    html = render.markdown_to_html(
        "Cost $5 and $6; **bold** $x_i^2$ and $$\\sum_i a_i$$ <script>alert(1)</script>"
        "<img src=x onerror=alert(2)> [link](javascript:alert(3))"
    )
    assert "<strong>bold</strong>" in html
    assert "$x_i^2$" in html and "$$\\sum_i a_i$$" in html and "<em>" not in html
    assert "<script" not in html and not re.search(r"<[^>]*onerror", html) and 'href="javascript' not in html
    assert "$5 and $6" in html


def test_search_hit_inlines_short_notes_and_shows_provenance():
    hit = {
        "key": "ABCD2345",
        "kind": "note",
        "parent_key": "PAPR2345",
        "title": "RCTD modes",
        "text": "Use **full mode** on Visium. <script>x()</script>",
        "word_count": 8,
        "ranks": {"lexical": 1, "dense": 3},
        "citation": "Cable et al., 2022",
    }
    html = render.render_search_results([hit], query="rctd <b>")
    assert "inlined" in html and "<blockquote" in html and "<strong>full mode</strong>" in html
    assert "child note" in html and "lexical #1 · dense #3" in html and "Cable et al., 2022" in html
    assert "<script" not in html and "rctd &lt;b&gt;" in html


def test_answer_sources_merge_inlined_note_text_and_hide_keys():
    answer = {
        "text": "See the note.",
        "mode": "llm",
        "citations": [
            {
                "key": "ABCD2345",
                "title": "RCTD modes",
                "citation": "RCTD modes",
                "kind": "note",
                "parent_title": "Robust decomposition",
            }
        ],
        "evidence": [
            {
                "key": "ABCD2345",
                "kind": "note",
                "title": "RCTD modes",
                "inlined": True,
                "text": "Use full mode on Visium.",
                "word_count": 5,
            }
        ],
    }
    html = render.render_answer(answer)
    assert "Use full mode on Visium." in html and "inlined" in html and "Robust decomposition" in html
    assert "ABCD2345" not in html
    assert 'data-mode="llm"' in html


def test_bundle_view_shows_provenance_and_sanitized_content():
    manifest = {
        "key": "ABCD2345",
        "title": "A <b>note</b>",
        "content_type": "text/note",
        "parent_key": None,
        "collections": ["Reading group"],
        "word_count": 12,
        "source_hash": "ab" * 32,
        "converter_version": "1.0",
        "abstract": None,
    }
    view = render.BundleView(manifest, "# Heading\n\ntext <img src=x onerror=alert(1)>")
    html = view._repr_html_()
    assert "A &lt;b&gt;note&lt;/b&gt;" in html and "Reading group" in html and "sha256 abababababab" in html
    assert not re.search(r"<[^>]*onerror", html) and "<h1>Heading</h1>" in html


def test_saved_message_wording():
    assert render.saved_message("T", collection="Reading group") == "Saved to collection ‘Reading group’ as ‘T’"
    assert render.saved_message("T", parent="Paper") == "Saved as a child note of ‘Paper’: ‘T’"
    assert render.saved_message("T") == "Saved to My Library (unfiled) as ‘T’"


def test_no_repr_of_a_bundle_carries_live_markup_from_its_note():
    from IPython.core.formatters import DisplayFormatter

    payload = "<script>alert(1)</script> and <img src=x onerror=alert(2)>"
    manifest = {"key": "ABCD2345", "title": f"Title {payload}", "content_type": "text/note", "source_hash": "cd" * 32}
    view = render.BundleView(manifest, f"# Heading\n\nBody {payload}\n\n<script>alert(3)</script>\n")
    data, _ = DisplayFormatter().format(view)  # every mimetype a notebook would receive
    assert set(data) == {"text/plain", "text/html"}  # no Markdown repr that could pass raw HTML
    assert "Body" in data["text/html"] and "Heading" in data["text/html"]
    for mimetype, text in data.items():
        if mimetype == "text/plain":  # shown as text, never parsed; still no note body
            assert "Body" not in text and "alert(3)" not in text
            continue
        assert "<script" not in text.lower() and not re.search(r"<[^>]*onerror", text), mimetype


def test_the_chat_panel_searches_one_library_when_asked(tmp_path):
    """Group libraries (issue 22): with more than one library the panel offers "Search in"; a choice keeps
    the answer's evidence to that library, "All libraries" searches them all."""
    from tests.library.test_desktop_annotations import build_annotated
    from zocrates_nb.widgets.picker import library_options
    from zocrates_nb.workbench.core import Workbench

    build_annotated(tmp_path / "zotero", "9")
    wb = Workbench(tmp_path / "data", zotero_dir=tmp_path / "zotero", auto_sync=False)
    try:
        wb.sync(vectors=False)
        panel = ChatPanel(wb)
        assert panel.library_picker.layout.display is None  # two libraries: shown
        assert [label for label, _ in panel.library_picker.options] == [
            "All libraries",
            "My Library",
            "Lab reading (group)",
        ]
        panel.library_picker.value = "2"
        answer = panel.send("What did we highlight about arrays and platform effects?")
        assert answer.evidence and {e.get("library_id") for e in answer.evidence} == {2}
        panel.library_picker.value = ""
        answer = panel.send("What did we highlight about arrays and platform effects?")
        assert {e.get("library_id") for e in answer.evidence} == {1, 2}
    finally:
        wb.close()
    assert library_options([]) == [("All libraries", "")]
    demo_panel_options = library_options([{"name": "Demo library", "kind": "local", "library_id": 1}])
    assert demo_panel_options == [("All libraries", ""), ("Demo library", "1")]


def test_sources_and_result_rows_name_a_group_library():
    from zocrates_nb.display.answers import render_source
    from zocrates_nb.display.render import render_search_hit

    item = {"kind": "note", "title": "Journal club", "library_kind": "group", "library_name": "Lab <reading>"}
    assert "in Lab &lt;reading&gt;" in render_source(item)
    assert "in Lab" not in render_source({**item, "library_kind": "user", "library_name": "My Library"})
    row = render_search_hit({**item, "key": "ABCD2345", "text": "t", "ranks": {}, "score": 0.1}, 1)
    assert 'class="zc-library">in Lab &lt;reading&gt;' in row
