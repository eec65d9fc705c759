"""The document parser's worker process (``picoora.docs.budget``): ``python -m picoora.docs.worker SUFFIX
MEMORY_BYTES`` reads the file on stdin, caps its own address space, parses, and writes one JSON object:
``{"title", "pages": [[text, page], ...]}``, ``{"error": line}`` for a broken file, or ``{"too_costly":
line}`` when it ran out of memory."""

from __future__ import annotations

import json
import resource
import sys


def main() -> None:
    suffix, memory = sys.argv[1], int(sys.argv[2])
    data = sys.stdin.buffer.read()
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    from picoora.docs.parsers import UnreadableDocument, parse_here

    try:
        title, pages = parse_here(data, suffix)
        answer: dict = {"title": title, "pages": [[p.text, p.page] for p in pages]}
    except MemoryError:
        answer = {"too_costly": f"parsing it needed more than {memory // (1024 * 1024)} MB of memory"}
    except UnreadableDocument as exc:
        answer = {"error": str(exc)}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
