"""One line of ``picoora status``: a label, the sentence a person reads, whether it is healthy, and the same
facts typed for ``--json`` (numbers, booleans, names: never the sentence)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OK, BAD = "✓", "✗"


@dataclass
class Line:
    label: str
    text: str
    ok: bool = True  # False: this check found a problem (the text says what to do)
    facts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"check": self.label.lower().replace(" ", "_"), "ok": self.ok, **self.facts}


def count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
