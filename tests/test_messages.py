"""One codec: picoora's message shape and the Go version's read by the same code, broken arguments kept
under one key whatever the source."""

from __future__ import annotations

from picoora.messages import MAX_ARGUMENT_DEPTH, RAW_ARGUMENTS_KEY, TOO_DEEP, Image, Message, ToolCall, parse_arguments
from picoora.store.oracle import codec


def test_go_and_picoora_tool_calls_read_alike():
    go = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
    ours = {"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}
    assert ToolCall.from_dict(go) == ToolCall.from_dict(ours) == ToolCall("c1", "weather", {"city": "Oslo"})


def test_broken_arguments_land_under_one_key_from_every_reader():
    broken = '{"city": "Oslo"'
    go = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": broken}}]}
    from_files = Message.from_dict(go)
    from_oracle = codec.message_from_json(go)
    assert from_files.tool_calls[0].arguments == {RAW_ARGUMENTS_KEY: broken}
    assert from_oracle.tool_calls[0].arguments == {RAW_ARGUMENTS_KEY: broken}
    assert parse_arguments("[1, 2]") == {RAW_ARGUMENTS_KEY: "[1, 2]"}  # JSON, but not an object
    assert parse_arguments("") == {} and parse_arguments({"a": 1}) == {"a": 1}


def test_oracle_writes_the_go_shape_and_reads_it_back():
    message = Message(role="assistant", tool_calls=[ToolCall("c9", "recall", {"query": "cats"})])
    stored = codec.message_to_json(message)
    assert stored["tool_calls"][0]["function"]["arguments"] == '{"query": "cats"}'
    assert codec.message_from_json(stored) == message


def test_the_cancelled_mark_rides_along_only_when_set():
    plain, cancelled = Message(role="user", content="hi"), Message(role="user", content="hi", cancelled=True)
    assert "cancelled" not in plain.to_dict() and "cancelled" not in codec.message_to_json(plain)  # the Go shape
    for write, read in ((Message.to_dict, Message.from_dict), (codec.message_to_json, codec.message_from_json)):
        assert read(write(cancelled)) == cancelled and read(write(plain)) == plain
    assert Message.from_dict({"role": "user", "content": "hi", "cancelled": "yes"}).cancelled is False  # only true is


def test_images_are_written_as_references_without_bytes_and_malformed_ones_are_dropped():
    message = Message(role="user", content="look", images=[Image("a.png", "image/png", "inbox/a.png", b"\x89PNG")])
    for write, read in ((Message.to_dict, Message.from_dict), (codec.message_to_json, codec.message_from_json)):
        written = write(message)
        assert written["images"] == [{"name": "a.png", "mime": "image/png", "path": "inbox/a.png"}]
        assert read(written).images[0].data is None and read(written) == message  # bytes are not compared
    assert "images" not in Message(role="user", content="hi").to_dict()
    hostile = {"role": "user", "content": "x", "images": ["junk", {"name": 5}, None]}
    assert [(i.name, i.path) for i in Message.from_dict(hostile).images] == [("5", "")]
    assert Message.from_dict({"role": "user", "content": "x", "images": "not a list"}).images == []


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"deeper": value}
    return value


def test_deeply_nested_arguments_are_refused_under_one_key_never_a_recursion_error():
    """Round three: 100 000 "[" from a model raised RecursionError out of the JSON parser."""
    deep_text = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert parse_arguments(deep_text) == {RAW_ARGUMENTS_KEY: TOO_DEEP}
    assert parse_arguments(_nested(50_000)) == {RAW_ARGUMENTS_KEY: TOO_DEEP}  # a provider that parsed it already
    assert parse_arguments([_nested(50_000)]) == {RAW_ARGUMENTS_KEY: TOO_DEEP}
    assert parse_arguments(_nested(MAX_ARGUMENT_DEPTH - 2)) == _nested(MAX_ARGUMENT_DEPTH - 2)  # deep enough to use
