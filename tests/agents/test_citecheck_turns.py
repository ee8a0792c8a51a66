"""Citations checked on whole turns through the real stack: a model scripted to fabricate (a key not in the
evidence, a real paper quoted with words it does not contain, a wrong page, a DOI that does not resolve, an
online candidate that was never returned) is caught on every count, while honest citations all pass — with
a model, without one, and in the diagnostics' answer event."""

from __future__ import annotations

import json
import re

from tests.fakes.agent_stack import (
    NOTE_KEY,
    NOTE_TITLE,
    PAPER_CITATION,
    PAPER_KEY,
    PAPER_TITLE,
    QUESTION,
    Stack,
    assert_key_free,
    online_client,
)
from tests.fakes.openai_server import FakeOpenAI, reply
from tests.fakes.scholarly_server import FakeScholarly, arxiv_entry, openalex_work
from tests.fakes.scripted_model import ScriptedModel, role_of
from zocrates_nb.agents.citecheck import REASONS
from zocrates_nb.agents.online_clients import ScholarlySearch
from zocrates_nb.diagnostics import plots
from zocrates_nb.diagnostics.views import CITATION_REASONS

ONLINE_TITLE = "Spatially informed cell-type deconvolution for spatial transcriptomics"
WORKS = [
    openalex_work(
        2, ONLINE_TITLE, ["Ying Ma", "Xiang Zhou"], 2022, "10.1038/s41587-022-01273-7", "CARD uses spatial correlation."
    )
]
EXISTING_DOI = "10.1101/2020.05.07.082545"  # a real paper OpenAlex knows, but not one retrieved this turn


class FabricatingModel(ScriptedModel):
    """Searches like ScriptedModel, then answers with honest citations and five kinds of fabrication."""

    def __init__(self, route: str = "both", honest_only: bool = False) -> None:
        super().__init__(route=route)
        self.honest_only = honest_only

    def __call__(self, body: dict) -> dict:
        role = role_of(body)
        if role == "library_synthesizer":
            self.roles.append(role)
            return reply(self.library_answer(body["messages"][-1]["content"]))
        if role == "online_synthesizer":
            self.roles.append(role)
            return reply(self.online_answer())
        return super().__call__(body)

    def library_answer(self, evidence: str) -> str:
        quote = re.search(r"doublet mode forced at most two per spot", evidence)
        assert quote is not None, "the note's words should be in the evidence"
        honest = (
            f"Use full mode: your note “{NOTE_TITLE}” says “{quote.group(0)}” [Note Key: {NOTE_KEY}]. "
            f"The method is *{PAPER_TITLE}* ({PAPER_CITATION}) [Paper Key: {PAPER_KEY}]."
        )
        if self.honest_only:
            return honest
        return (
            f"{honest}\n\n"
            "A second note agrees [Note Key: QQ7QQ7QQ].\n\n"
            "Cable et al. (2022) write that “RCTD always outperforms every other method”.\n\n"
            f"The platform effect is derived on one page (Cable et al., 2022, p. 412).\n\n"
            "The data are at 10.9999/zocrates.fabricated.1 and in 10.1101/2020.05.07.082545."
        )

    def online_answer(self) -> str:
        honest = f"- **{ONLINE_TITLE}** (Ma & Zhou, 2022) — spatial correlation for your lymph node spots."
        if self.honest_only:
            return honest
        return honest + "\n- **A foundation model for all spatial omics** (Nobody et al., 2025) — never returned."


def ask(demo_workbench, model: FabricatingModel, online_fake: FakeScholarly, question: str = QUESTION):
    with FakeOpenAI(responder=model) as server:
        stack = Stack(demo_workbench, server, online=online_client(online_fake))
        streamed: list[str] = []
        answer = stack.coordinator.ask(question, on_token=streamed.append)
    return answer, "".join(streamed), stack


def test_every_fabrication_is_caught_and_the_honest_citations_pass(demo_workbench):
    with FakeScholarly(works=WORKS) as fake:
        fake.known_dois.add(EXISTING_DOI)
        answer, streamed, stack = ask(demo_workbench, FabricatingModel(), fake)
    checks = answer.to_json()["citation_checks"]
    failed = {(c["reason"], c["text"]) for c in checks if c["reason"]}
    assert failed == {
        ("not_in_evidence", "[Note Key: QQ7QQ7QQ]"),
        ("quote_not_found", "“RCTD always outperforms every other method”"),
        ("page_not_in_evidence", "Cable et al., 2022, p. 412"),  # the demo paper was read without pages
        ("doi_unresolved", "10.9999/zocrates.fabricated.1"),
        ("doi_not_in_evidence", EXISTING_DOI),
        ("not_in_evidence", "**A foundation model for all spatial omics** (Nobody et al., 2025)"),
    }
    honest = [c for c in checks if not c["reason"]]
    assert {c["key"] for c in honest} >= {NOTE_KEY, PAPER_KEY}
    assert any(c["kind"] == "online" and c["title"] == ONLINE_TITLE for c in honest)
    assert any(c["kind"] == "quote" and c["quote_found"] and c["key"] == NOTE_KEY for c in honest)
    assert answer.to_json()["citations_verified"] == {"verified": len(honest), "cited": len(checks)}
    # every failure is marked where it stands, and the answer ends with the count and the reasons
    assert answer.text.count("⚠️ *(citation not verified:") == len(failed)
    assert "[Note Key: QQ7QQ7QQ] ⚠️ *(citation not verified: not among the sources" in answer.text
    assert answer.text.endswith(").*") and f"*Citations verified {len(honest)}/{len(checks)} (" in answer.text
    assert streamed.endswith(answer.text[answer.text.rindex("\n\n*Citations verified") :])
    assert_key_free(answer.text, demo_workbench)
    assert any(path.startswith("/openalex/works/doi:") for path, _ in fake.requests)
    (event,) = stack.events_of("answer")
    assert event["citations_cited"] == len(checks) and event["citations_verified"] == len(honest)
    assert event["citation_failures"]["not_in_evidence"] == 2 and event["citation_failures"]["doi_unresolved"] == 1
    assert event["role"] == "library_synthesizer" and event["model"] == "scripted-library_synthesizer"


def test_the_diagnostics_give_each_models_fabrication_rate(demo_workbench):
    with FakeScholarly(works=WORKS) as fake:
        fake.known_dois.add(EXISTING_DOI)
        ask(demo_workbench, FabricatingModel(), fake)
        ask(demo_workbench, FabricatingModel(honest_only=True), fake)
    Stack(demo_workbench, None).coordinator.ask(QUESTION)  # evidence-only: no model, all verified
    turns = demo_workbench.diagnostics.citation_checks()
    assert list(turns["model"]) == ["scripted-library_synthesizer"] * 2 + ["none"]
    assert list(turns["role"]) == ["library_synthesizer"] * 2 + ["evidence_only"]
    fabricated, honest, evidence_only = turns.to_dict("records")
    assert fabricated["failed"] == 6 and fabricated["not_in_evidence"] == 2 and fabricated["doi_unresolved"] == 1
    assert fabricated["quote_not_found"] == fabricated["page_not_in_evidence"] == 1
    assert honest["failed"] == 0 < honest["cited"] and evidence_only["failed"] == 0 < evidence_only["cited"]
    rates = demo_workbench.diagnostics.citation_rates().set_index("model")
    scripted = rates.loc["scripted-library_synthesizer"]
    expected = 6 / (fabricated["cited"] + honest["cited"])
    assert scripted["turns"] == 2 and abs(scripted["fabrication_rate"] - expected) < 1e-9
    assert rates.loc["none", "fabrication_rate"] == 0 and scripted["turns_with_failures"] == 0.5
    assert set(CITATION_REASONS) == set(REASONS)  # the view has a column for every reason the checker gives
    figure = plots.plot_citation_checks(turns)
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["none", "scripted-library_synthesizer"]


def test_an_honest_answer_verifies_fully_and_streams_what_it_shows(demo_workbench):
    with FakeScholarly(works=WORKS) as fake:
        answer, streamed, _ = ask(demo_workbench, FabricatingModel(honest_only=True), fake)
    verified = answer.to_json()["citations_verified"]
    assert verified["cited"] >= 5 and verified["verified"] == verified["cited"], answer.to_json()["citation_checks"]
    assert "⚠️" not in answer.text and streamed == answer.text
    assert answer.text.endswith(f"*Citations verified {verified['cited']}/{verified['cited']}.*")


def test_the_scripted_answer_with_keys_everywhere_verifies(demo_workbench, scholarly):
    """Keys in a header, a code span, a link and the parent's header all name retrieved items."""
    with FakeOpenAI(responder=ScriptedModel(route="library")) as server:
        answer = Stack(demo_workbench, server, online=online_client(scholarly)).coordinator.ask(QUESTION)
    verified = answer.to_json()["citations_verified"]
    assert verified["cited"] >= 4 and verified["verified"] == verified["cited"], answer.to_json()["citation_checks"]


def test_evidence_only_answers_verify_every_citation(demo_workbench):
    stack = Stack(demo_workbench, None)
    for question in (QUESTION, "what did I highlight about the platform effect", "Stereo-seq bin size"):
        answer = stack.coordinator.ask(question)
        record = answer.to_json()
        assert record["mode"] == "evidence-only"
        assert record["citations_verified"]["cited"] >= len(answer.evidence), record["citation_checks"]
        assert record["citations_verified"]["verified"] == record["citations_verified"]["cited"]
    assert json.dumps(record["citation_checks"])  # plain JSON for ask --json


def test_arxiv_dois_are_resolved_through_openalex_before_they_are_offered(demo_workbench):
    """An arXiv entry's DOI that OpenAlex does not know is dropped (the arXiv id stays); one it knows stays."""
    arxiv = [
        arxiv_entry("2403.00001v1", "Bin sizes for Stereo-seq", ["Li Wei"], 2024, "Bins.", doi="10.9999/not.a.doi"),
        arxiv_entry("2403.00002v1", "Segmentation-free spot calling", ["Ana Lopez"], 2024, "Spots.", doi=EXISTING_DOI),
    ]
    with FakeOpenAI(responder=ScriptedModel()) as server, FakeScholarly(arxiv=arxiv) as fake:
        fake.known_dois.add(EXISTING_DOI)
        answer = Stack(demo_workbench, server, online=online_client(fake)).coordinator.ask(
            "Find new papers on Stereo-seq binning"
        )
        offered = server.bodies()[0]["messages"][1]["content"]
        asked = sorted(path for path, _ in fake.requests if "/works/doi:" in path)
    assert asked == [f"/openalex/works/doi:{EXISTING_DOI}", "/openalex/works/doi:10.9999/not.a.doi"]
    assert "10.9999/not.a.doi" not in offered and "arXiv 2403.00001v1" in offered and f"DOI {EXISTING_DOI}" in offered
    by_title = {e["title"]: e for e in answer.evidence}
    assert by_title["Bin sizes for Stereo-seq"]["doi"] is None
    assert by_title["Segmentation-free spot calling"]["doi"] == EXISTING_DOI


def test_resolve_doi_tells_unknown_from_unreachable():
    with FakeScholarly(works=WORKS) as fake:
        client = online_client(fake)
        assert client.resolve_doi("https://doi.org/10.1038/S41587-022-01273-7") is True
        assert client.resolve_doi("10.9999/nothing") is False
    with FakeScholarly(fail={"openalex"}) as fake:
        assert online_client(fake).resolve_doi("10.1038/s41587-022-01273-7") is None
    assert ScholarlySearch(openalex_url="http://127.0.0.1:9", timeout_s=0.5).resolve_doi("10.1/x") is None


def test_the_citation_benchmark_runs_and_separates_honest_from_fabricated(demo_workbench):
    """benchmarks/bench_citecheck.py on three dev questions (its figures are in docs/writing.md)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_citecheck.py"
    spec = importlib.util.spec_from_file_location("bench_citecheck", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = bench.run(demo_workbench, "dev", 3)
    assert figures["questions"] == 3 and len(figures["honest"]) >= 8 and len(figures["fabricated"]) >= 6
    assert figures["honest_rate"] == 1.0 and figures["caught_rate"] == 1.0, figures["misses"]
