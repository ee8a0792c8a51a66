"""The README is a front door and docs/ holds the rest: short, and every link stays inside the repository
or goes to a public site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!`)\[[^\]`]*\]\(([^)\s]+)\)")


def test_readme_is_a_short_front_door():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    for heading in (
        "## Quick start",
        "## A first session",
        "## Use your own Zotero",
        "## Connect a model",
        "## Command line",
        "## Where to go next",
    ):
        assert heading in text
    assert "make lab" in text and "make test" in text
    assert (REPO / "docs" / "images" / "chat-panel.png").is_file() and "docs/images/chat-panel.png" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_links_stay_in_the_repository_or_go_to_public_sites(page):
    text = page.read_text(encoding="utf-8")
    assert "../shared" not in text, "readers of the repository do not have ../shared"
    for target in LINK.findall(text):
        if target.startswith(("https://", "http://", "#")):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(REPO), f"{target} leaves the repository"
        assert path.exists(), f"{page.name} links to {target}, which does not exist"
        anchor = target.split("#", 1)[1] if "#" in target else None
        if anchor and path.suffix == ".md":
            assert anchor in heading_anchors(path), f"{page.name} links to {target}: no such heading"


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
