"""A separate process that writes to a FileStore, for the crash and concurrency tests.

  store_writer.py hammer WORKSPACE TAG   write forever, one line on stdout after each completed write
  store_writer.py race WORKSPACE TAG N   after "go" on stdin, append N messages to one session and transcript
  store_writer.py traces WORKSPACE TAG N after "go" on stdin, append N turn traces (rotating every ~8 KB)

An acknowledgement is printed only after the store call returned, so anything acknowledged must
survive a ``kill -9`` at any later moment.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from picoora.messages import Message
from picoora.store.base import TurnTrace
from picoora.store.files import FileStore, file_memories, trace_log
from tests.fakes.hash_embedder import HashEmbedder


def ack(*words: object) -> None:
    print(*words, flush=True)


def hammer(store: FileStore, tag: str) -> None:
    file_memories.COMPACT_MIN_DEAD_LINES = 4  # compact often, so kills land in compactions too
    trace_log.ROTATE_BYTES = 1024  # and rotate traces every few turns
    previous_memory = None
    ack("ready")
    for i in itertools.count():
        text = f"{tag}-{i}"
        store.sessions.append("hammer", [Message(role="user", content=text)])
        ack("session", text)
        (seq,) = store.transcripts.append("hammer", [Message(role="user", content=text)])
        ack("transcript", text, seq)
        store.state.set(f"counter-{tag}", str(i))
        ack("state", tag, i)
        memory = store.memories.add(f"hammer memory {tag} number {i} seen {i * 7} times").memory
        ack("memory", memory.id)
        if previous_memory is not None:
            ack("forgetting", previous_memory)  # an intent, not an acknowledgement: the kill may come now
            store.memories.forget(previous_memory)
            ack("forget", previous_memory)
            previous_memory = None
        else:
            previous_memory = memory.id
        store.memories.recall(f"hammer memory {tag}", limit=2)
        store.notes.append(text)
        ack("note", text)
        store.traces.append(TurnTrace(text, "hammer", model="m", stop_reason="answer"))
        ack("trace", text)


def race(store: FileStore, tag: str, count: int) -> None:
    ack("ready")
    sys.stdin.readline()
    for n in range(count):
        message = Message(role="user", content=f"{tag}-{n}")
        store.sessions.append("race", [message])
        store.transcripts.append("race", [message])
    ack("done")


def traces(store: FileStore, tag: str, count: int) -> None:
    trace_log.ROTATE_BYTES = 8000
    ack("ready")
    sys.stdin.readline()
    for n in range(count):
        store.traces.append(TurnTrace(f"{tag}-{n}", f"race:{tag}", model="m", stop_reason="answer"))
    ack("done")


def main() -> None:
    mode, workspace, tag = sys.argv[1:4]
    store = FileStore(Path(workspace), embedder=HashEmbedder())
    if mode == "hammer":
        hammer(store, tag)
    elif mode == "traces":
        traces(store, tag, int(sys.argv[4]))
    else:
        race(store, tag, int(sys.argv[4]))


if __name__ == "__main__":
    main()
