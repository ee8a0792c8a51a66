"""Citation keys that stay the same across runs: the library's own (Better BibTeX) or generated ones.

A writer who cites ``[@korsunsky2019fast]`` today must find the same key in tomorrow's export, so a
generated key depends only on the item (first author, year, first significant title word) and, when
two exported items would share it, on their Zotero keys' order, never on the order an answer cites
them in. Keys the user pinned in Zotero (Better BibTeX, or Zotero's own Citation Key field) win.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

__all__ = ["assign_citation_keys", "generated_citation_key"]

#: words a title's key never starts with (Better BibTeX skips the same kind of function words)
_SKIP_WORDS = frozenset(
    "a an the of on in at to for from and or with by via into over under about as is are be do does how what "
    "when where which who why towards toward".split()
)


def _ascii_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in folded if not unicodedata.combining(c))
    return [w.lower() for w in re.findall(r"[A-Za-z0-9]+", plain)]


def generated_citation_key(family_name: str, year: int | None, title: str) -> str:
    """``korsunsky2019fast``: the first author's family name, the year and the title's first
    significant word, ASCII-folded and lower case (``anon`` / ``nd`` where a part is missing)."""
    name = "".join(_ascii_words(family_name)) or "anon"
    word = next((w for w in _ascii_words(title) if w not in _SKIP_WORDS and w[0].isalpha()), "")
    return f"{name}{year if year else 'nd'}{word}"


def assign_citation_keys(items: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """Item id -> citation key for ``items`` (each with ``id``, ``pinned`` and ``generated``).

    Pinned keys are kept as they are. Generated keys that collide with each other or with a pinned
    key get ``a``, ``b``, … in the order of the items' ids (Zotero keys), so the same set of items
    always gets the same keys.
    """
    keys = {item["id"]: item["pinned"] for item in items if item.get("pinned")}
    taken = set(keys.values())
    by_base: dict[str, list[str]] = {}
    for item in sorted((i for i in items if not i.get("pinned")), key=lambda i: i["id"]):
        by_base.setdefault(item["generated"], []).append(item["id"])
    for base, ids in sorted(by_base.items()):
        if len(ids) == 1 and base not in taken:
            keys[ids[0]] = base
            taken.add(base)
            continue
        suffixes = (chr(ord("a") + n) if n < 26 else f"x{n}" for n in range(10_000))
        for item_id in ids:
            key = next(f"{base}{s}" for s in suffixes if f"{base}{s}" not in taken)
            keys[item_id] = key
            taken.add(key)
    return keys
