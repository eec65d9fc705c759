"""docs/migrate.md's table of every Go config key says what the converter does with each: carried (same
key), converted (another key) or not carried. Checked against ``convert`` on a Go config with every key of
the Go struct set (tests/go_home.py), so a channel or preset picoora gains cannot stay listed as missing."""

from __future__ import annotations

import re
from pathlib import Path

from picoora.migrate.config_map import convert, dotted, leaves
from tests.go_home import go_full_config

DOC = Path(__file__).resolve().parent.parent / "docs" / "migrate.md"
ROW = re.compile(r"^\| `([a-z_.*]+)` \| (carried to|converted to|not carried)(?: `([a-z_.*]+)`)?")


def table() -> dict[tuple[str, ...], tuple[str, str | None]]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            rows[tuple(match[1].split("."))] = (match[2], match[3])
    return rows


def row_for(key: tuple[str, ...], rows):
    """The row naming ``key``: of those that match it, the one whose names come first (``providers.nvidia.*``
    is more specific than ``providers.*.api_key``)."""
    matching = [pattern for pattern in rows if len(pattern) == len(key) and
                all(p in ("*", k) for p, k in zip(pattern, key, strict=True))]
    return min(matching, key=lambda pattern: [part == "*" for part in pattern]) if matching else None


def test_every_go_key_has_a_row_that_says_what_the_converter_does():
    go = go_full_config()
    conversion = convert(go)
    carried = dict(conversion.carried)
    rows = table()
    used = set()
    for key, _value in leaves(go):
        pattern = row_for(key, rows)
        assert pattern is not None, f"{dotted(key)} has no row in docs/migrate.md"
        used.add(pattern)
        verb, target = rows[pattern]
        ours = carried.get(dotted(key))
        if ours is None:
            assert verb == "not carried", f"{dotted(key)}: the converter drops it, the table says {verb} {target}"
            continue
        written = dotted(tuple(k if p == "*" else t for p, k, t in
                               zip(pattern, key, target.split("."), strict=False))) if target else None
        assert written == ours, f"{dotted(key)}: the converter writes {ours}, the table says {target}"
        assert verb == ("carried to" if ours == dotted(key) else "converted to"), dotted(key)
    assert set(rows) - used == set(), "rows for keys the Go config does not have"
