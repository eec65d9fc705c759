"""What a migration did (or, in a dry run, would do), item by item, and its text for people."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from picoora.store.base import StoreError

# outcome -> how it reads in the report
LABELS = {"done": "migrated", "would": "would migrate", "unchanged": "unchanged", "kept": "kept",
          "replaced": "replaced", "skipped": "not migrated"}


@dataclass
class Item:
    name: str
    outcome: str  # a LABELS key
    detail: str = ""


@dataclass
class Section:
    title: str
    items: list[Item] = field(default_factory=list)

    def _add(self, outcome: str, name: str, detail: str) -> None:
        self.items.append(Item(name, outcome, detail))

    def done(self, name: str, detail: str = "") -> None:
        self._add("done", name, detail)

    def would(self, name: str, detail: str = "") -> None:
        self._add("would", name, detail)

    def unchanged(self, name: str, detail: str = "") -> None:
        self._add("unchanged", name, detail)

    def kept(self, name: str, detail: str) -> None:
        self._add("kept", name, detail)

    def replaced(self, name: str, detail: str) -> None:
        self._add("replaced", name, detail)

    def skipped(self, name: str, why: str) -> None:
        self._add("skipped", name, why)


@dataclass
class Report:
    source: str
    target: str
    dry_run: bool
    sections: list[Section] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (Go config key, why it has no equivalent)
    notes: list[str] = field(default_factory=list)

    def section(self, title: str) -> Section:
        self.sections.append(Section(title))
        return self.sections[-1]

    def count(self, outcome: str) -> int:
        return sum(item.outcome == outcome for s in self.sections for item in s.items)

    def lines(self) -> list[str]:
        head = "Dry run: nothing is written. " if self.dry_run else ""
        out = [f"{head}Migrating {self.source} into {self.target}"]
        for section in self.sections:
            if not section.items:
                continue
            out.append(f"{section.title}:")
            out += [f"  {LABELS[i.outcome]}: {i.name}" + (f" ({i.detail})" if i.detail else "") for i in section.items]
        if self.dropped:
            out.append("Config keys with no equivalent in picoora (not carried):")
            by_reason: dict[str, list[str]] = {}
            for key, why in self.dropped:
                by_reason.setdefault(why, []).append(key)
            out += [f"  {', '.join(keys)}: {why}" for why, keys in by_reason.items()]
        if self.notes:
            out.append("Notes:")
            out += [f"  {note}" for note in self.notes]
        return out


@contextmanager
def one_item(section: Section, name: str) -> Iterator[None]:
    """A store that refuses one item (a key or a role longer than it holds, ...) lists it; the rest still comes."""
    try:
        yield
    except (StoreError, ValueError) as err:
        section.skipped(name, f"the store refused it: {err}")
