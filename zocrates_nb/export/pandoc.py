"""An answer as Pandoc/Quarto Markdown whose citations are ``[@citekey]``, next to a ``.bib``.

The synthesizers cite papers by author and year, "(Ståhl et al., 2016, p. 12)" or "Ståhl et al.
(2016)", and the evidence-only answer the same way. Each such citation of an exported reference
becomes Pandoc's citation syntax, so ``pandoc --citeproc`` (or Quarto) formats it in the writer's
style and lists it under References; a parenthesis that also holds other words keeps them as
Pandoc prefixes ("see @key"). References the text never names in that form still appear in the
list, through ``nocite``. Nothing else in the text changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from zocrates_nb.export.csl import Reference

__all__ = ["pandoc_markdown"]

_LOCATOR = r"(?:pp?\.|pages?|ch\.|chap\.|sec\.|§|fig\.|table)\s*[\w.–\-]+"  # noqa: RUF001 - the en dash is a page range
_GROUP = re.compile(r"\(([^()\n]+)\)")


def _cite_pattern(short_citations: Sequence[str]) -> re.Pattern[str]:
    alternatives = sorted({re.escape(c) for c in short_citations if c}, key=len, reverse=True)
    return re.compile(rf"(?P<cite>{'|'.join(alternatives)})(?P<loc>,\s*{_LOCATOR})?")


def _group(inner: str, cite: re.Pattern[str], key_of: Mapping[str, str], used: set[str]) -> str | None:
    """``[see @a, p. 3; @b]`` for the inside of one parenthesis, or None if a part cites nothing known."""
    parts = []
    for part in inner.split(";"):
        match = next((m for m in cite.finditer(part) if not part[m.end() :].strip(" ,.")), None)
        if match is None:
            return None
        key = key_of[match.group("cite")]
        used.add(key)
        prefix = part[: match.start()].strip()
        locator = (match.group("loc") or "").lstrip(", ").strip()
        parts.append(" ".join(filter(None, [prefix, f"@{key}"])) + (f", {locator}" if locator else ""))
    return "[" + "; ".join(parts) + "]"


def pandoc_markdown(
    text: str, references: Sequence[Reference], keys: Mapping[str, str], *, title: str, bibliography: str
) -> tuple[str, list[str]]:
    """The answer's Markdown with Pandoc citations, a YAML header and a References section.

    Returns the Markdown and the citation keys its text cites (the others go into ``nocite``).
    """
    key_of: dict[str, str] = {}
    for ref in references:  # two papers with the same "Author et al., Year": the first one cited wins
        key_of.setdefault(ref.short_citation, keys[ref.item_id])
    used: set[str] = set()
    body = text
    if key_of:
        cite = _cite_pattern(list(key_of))
        body = _GROUP.sub(lambda m: _group(m.group(1), cite, key_of, used) or m.group(0), body)
        for short, key in key_of.items():  # narrative: "Ståhl et al. (2016)" -> "@key"
            who, _, year = short.rpartition(", ")
            if who and year:
                narrative = re.compile(rf"{re.escape(who)}\s+\({re.escape(year)}(?:,\s*(?P<loc>{_LOCATOR}))?\)")

                def _narrative(m: re.Match[str], key: str = key) -> str:
                    used.add(key)
                    return f"@{key}" + (f" [{m.group('loc')}]" if m.group("loc") else "")

                body = narrative.sub(_narrative, body)
    cited = [keys[r.item_id] for r in references if keys[r.item_id] in used]
    uncited = [keys[r.item_id] for r in references if keys[r.item_id] not in used]
    header = ["---", f"title: {json.dumps(title, ensure_ascii=False)}", f"bibliography: {json.dumps(bibliography)}"]
    if uncited:
        header.append("nocite: |\n  " + ", ".join(f"@{k}" for k in uncited))
    header.append("---")
    references_section = "\n\n## References\n\n::: {#refs}\n:::\n" if references else "\n"
    return "\n".join(header) + "\n\n" + body.rstrip() + references_section, cited
