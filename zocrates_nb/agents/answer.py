"""What a chat turn returns (``Answer``) and what a conversation keeps (``ChatSession``).

Answers are shown to people and saved into notebooks, so their text and reprs
are key-free, their HTML is sanitized, and remote images in model output are
never loaded automatically (a Markdown image URL can exfiltrate data, OWASP LLM05).
Keys stay available internally (``Citation.key``, evidence provenance) for
Save as Note and diagnostics.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from zocrates_nb.agents.citecheck import Verification

_REMOTE_IMAGE_RE = re.compile(r"!\[(?P<alt>[^\]\n]*)\]\((?P<url>[^)\s]+)(?:\s+\"[^\"\n]*\")?\)")
_HTML_IMG_RE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)


_PROTECTED_RE = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|`[^`\n]*`", re.DOTALL)
_TAG_START_RE = re.compile(r"<(?=[A-Za-z/!?])")


def inert_markdown(markdown: str) -> str:
    """Markdown whose raw HTML shows as text (``<script>`` → ``&lt;script>``); maths and code kept.

    Notebook frontends render trusted Markdown output with its HTML, so model output must not
    carry live tags. Only ``<`` that starts a tag is escaped: ``a < b`` and ``$a<b$`` stay.
    """
    out, last = [], 0
    for match in _PROTECTED_RE.finditer(markdown):
        out.append(_TAG_START_RE.sub("&lt;", markdown[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(_TAG_START_RE.sub("&lt;", markdown[last:]))
    return "".join(out)


_LINK_RE = re.compile(
    r"(?<!\\)\[(?P<text>[^\]\n]*)\]\(\s*(?P<url><[^>\n]*>|[^\s)]*(?:\([^\s)]*\)[^\s)]*)*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?\s*\)"
)
_REF_DEF_RE = re.compile(r"^(?P<lead> {0,3}\[[^\]\n]+\]:)[ \t]*(?P<url><[^>\n]*>|\S+).*$", re.MULTILINE)
_SAFE_SCHEMES = ("http:", "https:", "mailto:")


def _safe_url(url: str) -> bool:
    """Only web and mail links, or links without a scheme: entities are decoded and control
    characters dropped first, as a Markdown renderer would (``java&#115;cript:`` is javascript)."""
    import html as html_lib

    plain = html_lib.unescape(url.strip("<>"))
    plain = "".join(ch for ch in plain if ch > " " and ch != "\x7f").lower()
    scheme_end = plain.find(":")
    if scheme_end == -1 or any(ch in plain[:scheme_end] for ch in "/?#"):
        return True
    return plain.startswith(_SAFE_SCHEMES)


def safe_links(markdown: str) -> str:
    """Markdown whose links all go to http(s)/mailto (or nowhere): ``[x](javascript:…)`` → ``x``.

    Why: JupyterLab renders a trusted output's Markdown links as live anchors, and link text and
    targets can come from note text an attacker wrote (the same rule ``sanitize_html`` applies)."""
    text = _LINK_RE.sub(lambda m: m.group(0) if _safe_url(m.group("url")) else m.group("text"), markdown)
    return _REF_DEF_RE.sub(lambda m: m.group(0) if _safe_url(m.group("url")) else m.group("lead") + " #", text)


def without_remote_images(markdown: str) -> str:
    """Turn Markdown/HTML images into plain links so nothing is fetched when the answer is displayed."""
    text = _REMOTE_IMAGE_RE.sub(lambda m: f"[image: {m.group('alt') or 'untitled'}]({m.group('url')})", markdown)
    return _HTML_IMG_RE.sub("[image removed]", text)


@dataclass(frozen=True)
class Citation:
    """A source the answer cites: what a reader sees (title, citation) plus the key, kept internal."""

    title: str
    citation: str
    kind: str  # "note" | "paper" | "online"
    key: str = field(default="", repr=False)
    parent_title: str | None = None
    url: str | None = None

    def to_json(self, include_key: bool = False) -> dict:
        out = {"title": self.title, "citation": self.citation, "kind": self.kind}
        if self.parent_title:
            out["parent_title"] = self.parent_title
        if self.url:
            out["url"] = self.url
        if include_key and self.key:
            out["key"] = self.key
        return out


ROLE_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "profile_tokens", "cost_usd", "latency_ms")


class TurnUsage:
    """Sums LLM usage per role for one turn; ``as_dict()`` is ``Answer.usage``."""

    def __init__(self) -> None:
        self.by_role: dict[str, dict[str, Any]] = {}

    def add(self, role: str, usage: dict) -> None:
        slot = self.by_role.setdefault(role, {name: 0 for name in ROLE_FIELDS})
        slot["calls"] += 1
        for name in ("prompt_tokens", "completion_tokens", "profile_tokens", "latency_ms"):
            slot[name] += usage.get(name) or 0
        cost = usage.get("cost_usd")
        slot["cost_usd"] = None if cost is None or slot["cost_usd"] is None else slot["cost_usd"] + cost
        slot.setdefault("model", usage.get("model"))

    def as_dict(self) -> dict:
        total: dict[str, Any] = {name: 0 for name in ROLE_FIELDS}
        for slot in self.by_role.values():
            for name in ROLE_FIELDS:
                if name == "cost_usd":
                    total[name] = None if slot[name] is None or total[name] is None else total[name] + slot[name]
                else:
                    total[name] += slot[name]
        if not self.by_role:
            total["cost_usd"] = 0.0
        total["total_tokens"] = total["prompt_tokens"] + total["completion_tokens"]
        return {"by_role": {role: dict(slot) for role, slot in self.by_role.items()}, "total": total}


@dataclass
class Answer:
    """One answer: key-free Markdown text, citations, evidence with provenance, usage and mode."""

    text: str
    citations: list[Citation]
    evidence: list[dict]
    usage: dict
    mode: str  # "llm" | "evidence-only"
    session_id: str
    question: str = ""
    route: str = "library"  # "library" | "online" | "both"
    read_keys: list[str] = field(default_factory=list, repr=False)
    cited_keys: list[str] = field(default_factory=list, repr=False)
    notices: list[str] = field(default_factory=list)
    #: every citation of ``text`` checked against this turn's evidence (``agents.citecheck``)
    verification: Verification | None = field(default=None, repr=False)

    def to_json(self) -> dict:
        """The ``zocrates-nb ask --json`` shape. Evidence keeps its provenance (keys included)."""
        return {
            "answer": self.text,
            "citations": [c.to_json() for c in self.citations],
            "evidence": self.evidence,
            "usage": self.usage,
            "mode": self.mode,
            "session_id": self.session_id,
            "route": self.route,
            "notices": self.notices,
            "citations_verified": (
                {"verified": self.verification.verified, "cited": self.verification.cited}
                if self.verification is not None
                else None
            ),
            "citation_checks": [c.to_json() for c in self.verification.checks] if self.verification is not None else [],
        }

    def _repr_markdown_(self) -> str:
        lines = [self.text]
        if self.citations:
            lines.append("\n**Sources**\n")
            lines += [
                f"- {c.title} ({c.citation})" if c.citation and c.citation != c.title else f"- {c.title}"
                for c in self.citations
            ]
        return inert_markdown(safe_links(without_remote_images("\n".join(lines))))

    def _repr_html_(self) -> str:
        from zocrates_nb.display.answers import render_answer  # sanitizes through zocrates_nb.sanitize

        view = {
            "text": without_remote_images(self.text),
            "mode": self.mode,
            "citations": self.citations,
            "evidence": self.evidence,
        }
        return render_answer(view)

    def __repr__(self) -> str:
        return (
            f"Answer(mode={self.mode!r}, route={self.route!r}, citations={len(self.citations)}, "
            f"evidence={len(self.evidence)}, text={self.text[:80]!r}…)"
        )


@dataclass
class Turn:
    """One question and its answer; ``state_delta`` is what the coordinator set at the start."""

    question: str
    state_delta: dict = field(default_factory=dict)
    answer: Answer | None = None


@dataclass
class ChatSession:
    """A multi-turn conversation: its turns, the message history the agents see, and its state."""

    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    turns: list[Turn] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)  # [{"role": "user"|"assistant", "content": …}]
    state: dict = field(default_factory=dict)

    def recent_history(self, max_turns: int = 6) -> list[dict]:
        """The last ``max_turns`` exchanges (user + assistant messages)."""
        return [dict(m) for m in self.history[-2 * max_turns :]] if max_turns > 0 else []

    def transcript_markdown(self) -> str:
        """The conversation as Markdown (for Save session as note)."""
        parts = []
        for turn in self.turns:
            parts.append(f"**Q:** {turn.question}\n")
            if turn.answer is not None:
                parts.append(turn.answer.text + "\n")
        return "\n".join(parts)
