"""OpenAlex / arXiv clients against the loopback scholarly fake, and the online synthesizer in a turn."""

from __future__ import annotations

import pytest

from tests.fakes.agent_stack import PROFILE, Stack, assert_key_free
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scholarly_server import FakeScholarly, arxiv_entry, openalex_work
from tests.fakes.scripted_model import ScriptedModel, role_of
from zocrates_nb.agents.coordinator import deterministic_route, parse_route
from zocrates_nb.agents.online_clients import (
    OnlineSearchError,
    ScholarlySearch,
    abstract_from_inverted_index,
    normalize_doi,
)

WORKS = [
    # in the demo library already (Ståhl et al., 2016): same DOI, different case
    openalex_work(
        1,
        "Visualization and analysis of gene expression in tissue sections by spatial transcriptomics",
        ["Patrik L. Ståhl", "Fredrik Salmén"],
        2016,
        "10.1126/SCIENCE.AAF2403",
        "Spatial barcodes.",
    ),
    openalex_work(
        2,
        "Spatially informed cell-type deconvolution for spatial transcriptomics",
        ["Ying Ma", "Xiang Zhou"],
        2022,
        "10.1038/s41587-022-01273-7",
        "CARD uses spatial correlation of cell-type composition across locations to deconvolve spots.",
    ),
    openalex_work(
        3,
        "DestVI identifies continuums of cell types in spatial transcriptomics data",
        ["Romain Lopez", "Baoguo Li", "Hadas Keren-Shaul"],
        2022,
        "10.1038/s41587-022-01272-8",
        "DestVI models continuous variation within cell types in spot-level spatial data.",
    ),
    # in the demo library already (Tangram): no DOI here, same title up to case and spacing
    openalex_work(
        4,
        "Deep learning and alignment of spatially resolved single-cell  transcriptomes with TANGRAM",
        ["Tommaso Biancalani"],
        2021,
        None,
        "Tangram aligns single-cell profiles to space.",
    ),
]
ARXIV = [
    arxiv_entry(
        "2401.01234v1",
        "A benchmark of  spatial\n deconvolution methods",
        ["Ana Lopez", "Bo Chen"],
        2024,
        "We benchmark eighteen deconvolution methods.",
    ),
    # the same paper as OpenAlex work 3 (same title): dropped as a duplicate
    arxiv_entry(
        "2101.00001v2",
        "DestVI identifies continuums of cell types in spatial transcriptomics data",
        ["Romain Lopez"],
        2021,
        "Preprint of DestVI.",
    ),
]


def test_openalex_shape_is_parsed():
    with FakeScholarly(works=WORKS) as fake:
        found = ScholarlySearch(
            openalex_url=fake.openalex_url, arxiv_url=None, mailto="me@example.org"
        ).search_openalex("spatial deconvolution", limit=5)
        path, params = fake.requests[0]
    assert path == "/openalex/works" and params["search"] == "spatial deconvolution"
    assert params["per-page"] == "5" and params["mailto"] == "me@example.org"
    card, destvi = found[1], found[2]
    assert card.title.startswith("Spatially informed") and card.year == 2022
    assert card.doi == "10.1038/s41587-022-01273-7" and card.authors == ("Ying Ma", "Xiang Zhou")
    assert card.abstract.startswith("CARD uses spatial correlation") and card.citation == "Ma & Zhou, 2022"
    assert destvi.citation == "Lopez et al., 2022" and found[3].doi is None


def test_arxiv_atom_is_parsed():
    with FakeScholarly(arxiv=ARXIV) as fake:
        found = ScholarlySearch(openalex_url=fake.openalex_url, arxiv_url=fake.arxiv_url).search_arxiv("deconv", 3)
        assert fake.requests[0][1]["search_query"] == "all:deconv"
    assert found[0].title == "A benchmark of spatial deconvolution methods"
    assert found[0].arxiv_id == "2401.01234v1" and found[0].year == 2024 and found[0].source == "arxiv"
    assert found[0].abstract == "We benchmark eighteen deconvolution methods." and found[0].authors == (
        "Ana Lopez",
        "Bo Chen",
    )


def test_merge_dedupes_and_one_failing_service_is_tolerated():
    with FakeScholarly(works=WORKS, arxiv=ARXIV) as fake:
        both = ScholarlySearch(openalex_url=fake.openalex_url, arxiv_url=fake.arxiv_url).search("x", limit=10)
    assert [c.source for c in both] == ["openalex"] * 4 + ["arxiv"]
    with FakeScholarly(works=WORKS, arxiv=ARXIV, fail={"openalex"}) as fake:
        only_arxiv = ScholarlySearch(openalex_url=fake.openalex_url, arxiv_url=fake.arxiv_url).search("x")
    assert {c.source for c in only_arxiv} == {"arxiv"}
    with FakeScholarly(fail={"openalex", "arxiv"}) as fake:
        with pytest.raises(OnlineSearchError) as info:
            ScholarlySearch(openalex_url=fake.openalex_url, arxiv_url=fake.arxiv_url).search("x")
    assert "503" in info.value.message and info.value.hint


def test_helpers():
    assert abstract_from_inverted_index({"b": [1], "a": [0, 2]}) == "a b a"
    assert normalize_doi("https://doi.org/10.1/ABC") == normalize_doi("doi:10.1/abc") == "10.1/abc"


@pytest.mark.parametrize(
    "question, route",
    [
        ("Find new papers on spatial deconvolution", "online"),
        ("Which recent preprints are not in my library?", "online"),
        ("What do my notes say about RCTD, and new papers on it?", "both"),
        ("What do my notes say about RCTD?", None),
    ],
)
def test_deterministic_routing(question, route):
    assert deterministic_route(question) == route


def test_parse_route_is_strict():
    assert parse_route('Sure! {"route": "both", "online_query": "rctd"}') == ("both", "rctd")
    assert parse_route("no json here") == ("library", "")
    assert parse_route('{"route": "delete everything"}') == ("library", "")


def test_online_turn_skips_papers_already_in_the_library(demo_workbench):
    model = ScriptedModel()
    with FakeOpenAI(responder=model) as server, FakeScholarly(works=WORKS, arxiv=ARXIV) as fake:
        online = ScholarlySearch(openalex_url=fake.openalex_url, arxiv_url=fake.arxiv_url)
        stack = Stack(demo_workbench, server, online=online)
        answer = stack.coordinator.ask("Find new papers on spatial deconvolution not in my library")
        bodies = server.bodies()
        asked = [path for path, _ in fake.requests]
    assert model.roles == ["online_synthesizer"]  # deterministic route: no coordinator call
    assert answer.route == "online" and sorted(asked) == ["/arxiv/api/query", "/openalex/works"]
    system, user = bodies[0]["messages"][0]["content"], bodies[0]["messages"][1]["content"]
    assert PROFILE in system and PROFILE not in user
    assert "Spatially informed cell-type deconvolution" in user and "DestVI identifies" in user
    assert "A benchmark of spatial deconvolution methods" in user
    # held by the demo library: Ståhl et al. by DOI (other case), Tangram by title (no DOI)
    assert "Visualization and analysis" not in user and "TANGRAM" not in user
    assert [c.kind for c in answer.citations] == ["online"] * 3
    assert answer.citations[0].url == "https://doi.org/10.1038/s41587-022-01273-7"
    assert answer.citations[0].citation == "Ma & Zhou, 2022"
    assert {e["source"] for e in answer.evidence} == {"openalex", "arxiv"}
    assert answer.usage["by_role"]["online_synthesizer"]["calls"] == 1
    assert_key_free(answer.text, demo_workbench)


def test_online_turn_when_everything_found_is_already_held(demo_workbench):
    held = [WORKS[0], WORKS[3]]
    with FakeOpenAI(responder=ScriptedModel()) as server, FakeScholarly(works=held) as fake:
        online = ScholarlySearch(openalex_url=fake.openalex_url, arxiv_url=fake.arxiv_url)
        answer = Stack(demo_workbench, server, online=online).coordinator.ask(
            "Find new papers on spatial deconvolution"
        )
        assert server.requests == []  # nothing new: no model call at all
    assert "No new papers found online" in answer.text and "2 matches are already in your library" in answer.text
    assert answer.citations == []


def test_both_route_and_online_failure_keeps_the_library_answer(demo_workbench):
    model = ScriptedModel(route="both")
    with FakeOpenAI(responder=model) as server, FakeScholarly(fail={"openalex", "arxiv"}) as fake:
        online = ScholarlySearch(openalex_url=fake.openalex_url, arxiv_url=fake.arxiv_url)
        stack = Stack(demo_workbench, server, online=online)
        answer = stack.coordinator.ask("Which RCTD mode should I use on Visium?")
        roles = [role_of(b) for b in server.bodies()]
        assert len(fake.requests) == 2  # both services were tried
    assert roles[0] == "coordinator" and "library_synthesizer" in roles and "online_synthesizer" not in roles
    assert answer.route == "both" and "## Papers not yet in your library" in answer.text
    assert "Online search failed" in answer.text and answer.notices
    assert "RCTD modes on Visium" in answer.text
    assert_key_free(answer.text, demo_workbench)


def test_online_requested_without_a_client_says_so(demo_workbench):
    with FakeOpenAI(responder=ScriptedModel()) as server:
        answer = Stack(demo_workbench, server).coordinator.ask("Find new papers on spatial deconvolution")
    assert answer.route == "library" and "Online search is not set up" in answer.notices[0]
    assert answer.read_keys and answer.citations and {c.kind for c in answer.citations} <= {"note", "paper"}
    assert "## Papers not yet in your library" not in answer.text
