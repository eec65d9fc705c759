"""How a turn's events look in the terminal (answer on stdout, the rest on stderr)."""

from __future__ import annotations

import io

from picoora.agent.events import (
    ErrorEvent,
    FinalAnswer,
    NoticeEvent,
    ReasoningEvent,
    TokenEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from picoora.cli.render import TurnRenderer, format_call

KEY = "cli:default"


def _render(events, *, stream: bool) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()  # not terminals: no colour codes
    renderer = TurnRenderer(out, err, stream=stream)
    for event in events:
        renderer(event)
    return out.getvalue(), err.getvalue()


def test_format_call_quotes_values_and_shortens_long_ones():
    assert format_call("recall", {"query": "favourite language", "max_results": 3}) == (
        'recall(query="favourite language", max_results=3)'
    )
    long = format_call("write_file", {"path": "a.txt", "content": "x" * 500})
    assert long.startswith('write_file(path="a.txt", content="xxx')
    assert long.endswith("…)") and len(long) < 100


def test_streamed_answer_is_not_printed_twice():
    events = [
        ReasoningEvent(KEY, "thinking about it"),
        TokenEvent(KEY, "You prefer "),
        TokenEvent(KEY, "Go."),
        FinalAnswer(KEY, "You prefer Go."),
    ]
    out, err = _render(events, stream=True)
    assert out == "You prefer Go.\n"
    assert err == "thinking about it\n"


def test_without_streaming_only_the_final_answer_is_printed():
    events = [ReasoningEvent(KEY, "hmm"), TokenEvent(KEY, "You prefer Go."), FinalAnswer(KEY, "You prefer Go.")]
    out, err = _render(events, stream=False)
    assert out == "You prefer Go.\n"
    assert err == ""


def test_tool_calls_one_line_each_also_when_they_overlap():
    events = [
        TokenEvent(KEY, "Let me look."),
        ToolCallStarted(KEY, "c1", "recall", {"query": "language"}),
        ToolCallFinished(KEY, "c1", "recall", "Found 1 memory", ok=True),
        ToolCallStarted(KEY, "c2", "read_file", {"path": "a.md"}),
        ToolCallStarted(KEY, "c3", "forget", {"id": "zz"}),
        ToolCallFinished(KEY, "c3", "forget", "Error: no memory with ID zz\nmore detail", ok=False),
        ToolCallFinished(KEY, "c2", "read_file", "# A", ok=True),
        TokenEvent(KEY, "Done."),
        FinalAnswer(KEY, "Done."),
    ]
    out, err = _render(events, stream=True)
    assert out == "Let me look.\nDone.\n"
    assert err.splitlines() == [
        '→ recall(query="language") ✓',
        '→ read_file(path="a.md")',
        '→ forget(id="zz") ✗ Error: no memory with ID zz',
        '→ read_file(path="a.md") ✓',
    ]


def test_final_text_differing_from_the_stream_is_printed():
    events = [TokenEvent(KEY, "partial"), FinalAnswer(KEY, "The complete answer.")]
    out, _ = _render(events, stream=True)
    assert out == "partial\nThe complete answer.\n"


def test_an_error_stop_is_shown_once_on_stderr():
    message = "Cannot connect to Ollama at http://localhost:11434. Start it with `ollama serve`."
    out, err = _render([ErrorEvent(KEY, message), FinalAnswer(KEY, message, stop_reason="error")], stream=True)
    assert out == ""
    assert err == message + "\n"


def test_a_limit_stop_and_a_notice_go_to_stderr():
    events = [
        NoticeEvent(KEY, "gemma3 cannot call tools; answering without them."),
        FinalAnswer(KEY, "Stopped after 20 tool iterations.", stop_reason="max_iterations"),
    ]
    out, err = _render(events, stream=False)
    assert out == ""
    assert err.splitlines() == ["gemma3 cannot call tools; answering without them.",
                                "Stopped after 20 tool iterations."]
