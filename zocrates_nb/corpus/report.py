"""What one sync did (``SyncReport``) and how a failure reads in it (``failure_reason``).

Why a module of its own: the sync run fills the report and the corpus writer adds warnings to it
(a vector-store error during a sync is a warning, not a failure), so both import it from here and
neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zocrates_nb.errors import ConversionError


@dataclass
class SyncReport:
    """What one sync did: counts, per-key failures and warnings, and how long it took."""

    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("new", "changed", "unchanged", "removed", "failed"), 0)
    )
    failures: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    changed_keys: list[str] = field(default_factory=list)  # re-materialized because their hash changed

    def to_dict(self) -> dict:
        return {
            "counts": dict(self.counts),
            "failures": [list(f) for f in self.failures],
            "warnings": [list(w) for w in self.warnings],
            "seconds": round(self.seconds, 3),
        }

    def summary(self) -> str:
        c = self.counts
        text = (
            f"{c['new']} new, {c['changed']} changed, {c['unchanged']} unchanged, "
            f"{c['removed']} removed, {c['failed']} failed in {self.seconds:.2f} s"
        )
        lines = [text] + [f"  failed {key}: {why}" for key, why in self.failures]
        return "\n".join(lines + [f"  warning {key}: {why}" for key, why in self.warnings])

    __str__ = summary

    def fail(self, key: str, reason: str) -> None:
        self.counts["failed"] += 1
        self.failures.append((key, reason))


def failure_reason(err: BaseException) -> str:
    """One line for a report or log: the error's message, with its type unless it is a conversion error."""
    message = getattr(err, "message", None) or str(err) or type(err).__name__
    return message if isinstance(err, ConversionError) else f"{type(err).__name__}: {message}"
