"""What the Go version wrote by itself, so a migration can tell it from what its user wrote: the prompt
files its ``onboard`` ships (known by their SHA-256, every version in the Go project's history), the
placeholders of the MEMORY.md it writes, and the examples its heartbeat puts in a new HEARTBEAT.md
(everything above its "tasks below this line" marker).

An unedited Go template says nothing about its user and would push out picoora's own instructions
(``recall``/``remember`` guidance, safety lines), so it is left behind.
"""

from __future__ import annotations

import hashlib
import re

# SHA-256 of normalise(text) for each version of workspace/<NAME> in github.com/jasperan/picooraclaw
# (and its stale cmd/picooraclaw/internal/onboard/workspace copy), read from the project's git history.
GO_PROMPT_SHA256: dict[str, frozenset[str]] = {
    "AGENT.md": frozenset({"c007ed948f3bb4a21b320e695a6e63e5c9e520586a3d535d919677fa6467d08e"}),
    "IDENTITY.md": frozenset({
        "13504a54bdec5b36343f3a5f8e30bd921b4be91c757531abb6afcfc44e81f7eb",
        "2ffffa922252605c12a944591b0c5dff98d2fcd3816a97aca4afd9b61ec712e3",
        "a1dc34ce0fe9f292010915bacd3ccc8e90e7ac01bfbbc81f8d898f82199ef3ec",
        "ae58c8a24730ba92d8a421b3805e329d92d5a0f923b16ed3ffc48b575c58e985",
        "d69fa71f1e9cd462fc0c50160475b48558e915301ddcb66fea51dca65e1e782c",
    }),
    "SOUL.md": frozenset({"70120d70d62f24f72f12ea68e3a2e4165ad97fa5a1d146ce0de3ebba848a55d1"}),
    "USER.md": frozenset({"9804c95bcd1f59b824e85dd0955cae769025a3d9d37fe57080a7d8c2187ec900"}),
}

# The items (as ``records.memory_items`` reads them) of the MEMORY.md the Go ``onboard`` writes: its
# placeholders and its "## Configuration" example bullets, none of them something the user said.
GO_MEMORY_TEMPLATE_ITEMS = frozenset({
    "This file stores important information that should persist across sessions.",
    "(Important facts about user)", "(Important facts about the user)", "(User preferences learned over time)",
    "(Things to remember)", "Model preferences", "Channel settings", "Skills enabled",
})

# The last line of the HEARTBEAT.md the Go heartbeat creates; its examples and instructions are above it.
HEARTBEAT_MARKER = re.compile(r"^\s*Add your heartbeat tasks below this line:?\s*$", re.IGNORECASE | re.MULTILINE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_NO_TASK = re.compile(r"\s*(#.*|[-*+>]*\s*(\[[ xX]?\])?\s*|-{3,})")  # a heading, an empty item, a rule


def normalise(text: str) -> str:
    """Line ends, trailing spaces and blank lines around the text do not make an edit."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").strip().split("\n"))


def is_go_template(name: str, text: str) -> bool:
    digest = hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()
    return digest in GO_PROMPT_SHA256.get(name, frozenset())


def heartbeat_tasks(text: str) -> str:
    """The tasks a Go HEARTBEAT.md holds: what follows Go's marker when it is there (above it are Go's
    examples), else the whole file; "" when nothing but headings, comments and blank lines is left."""
    marker = HEARTBEAT_MARKER.search(text)
    tasks = _COMMENT.sub("", text[marker.end():] if marker else text).strip()
    has_task = any(not _NO_TASK.fullmatch(line) for line in tasks.splitlines())
    return tasks if has_task else ""
