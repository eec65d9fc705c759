"""The registry: schemas from the Args models, validation errors, unknown tools, crashes, scrubbing, caps."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from picoora.config import Config
from picoora.store.files import FileStore
from picoora.tools import default_registry, tool_settings
from picoora.tools.base import Tool, ToolContext, ToolResult
from picoora.tools.registry import ToolRegistry
from tests.tools_support import make_ctx


class EchoArgs(BaseModel):
    text: str = Field(description="What to echo")
    times: int = Field(1, ge=1, le=3)


class Echo(Tool):
    name = "echo"
    description = "Echo text."
    Args = EchoArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, EchoArgs)
        return ToolResult(args.text * args.times)


class Broken(Tool):
    name = "broken"
    description = "Always fails."
    Args = EchoArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        raise RuntimeError(f"disk on fire while handling {args.text}")  # type: ignore[attr-defined]


class Leaky(Tool):
    """A tool whose output holds a secret it came across (an environment dump): ``{0}`` in the text is the
    first configured secret; an error when the text starts with ``fail:``, lower-cased as a DNS lookup's
    error names a host."""

    name = "leaky"
    description = "Shows what it finds."
    Args = EchoArgs

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        text = args.text.format(*ctx.secrets)  # type: ignore[attr-defined]
        if text.startswith("fail:"):
            return ToolResult.error(text.lower())
        return ToolResult(text)


def registry(max_result_chars: int = 60_000) -> ToolRegistry:
    reg = ToolRegistry(max_result_chars=max_result_chars)
    reg.register(Echo())
    reg.register(Broken())
    reg.register(Leaky())
    return reg


def run(reg: ToolRegistry, name: str, raw_args, ctx: ToolContext) -> ToolResult:
    return asyncio.run(reg.execute(name, raw_args, ctx))


def test_schemas_are_sorted_and_come_from_the_args_model():
    reg = registry()
    assert reg.names() == ["broken", "echo", "leaky"]
    echo = reg.schemas()[1]
    assert echo["type"] == "function"
    assert echo["function"]["name"] == "echo"
    params = echo["function"]["parameters"]
    assert params["required"] == ["text"]
    assert params["properties"]["times"]["maximum"] == 3


def test_duplicate_registration_is_refused():
    reg = registry()
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Echo())


def test_valid_call_runs_the_tool(tmp_path):
    assert run(registry(), "echo", {"text": "ab", "times": 2}, make_ctx(tmp_path)).content == "abab"


def test_json_text_arguments_are_accepted(tmp_path):
    assert run(registry(), "echo", '{"text": "hi"}', make_ctx(tmp_path)).content == "hi"


def test_unknown_tool_names_the_available_ones(tmp_path):
    result = run(registry(), "delete_everything", {}, make_ctx(tmp_path))
    assert result.is_error
    assert result.content == 'Error: tool "delete_everything" not found. Available tools: broken, echo, leaky'


def test_missing_and_wrong_fields_are_listed(tmp_path):
    result = run(registry(), "echo", {"times": "many", "colour": "red"}, make_ctx(tmp_path))
    assert result.is_error
    assert "colour: unknown field" in result.content
    assert "text: Field required" in result.content
    assert "times: Input should be a valid integer" in result.content
    assert result.content.endswith("Expected: text, times (optional)")


def test_out_of_range_value_is_reported(tmp_path):
    result = run(registry(), "echo", {"text": "x", "times": 9}, make_ctx(tmp_path))
    assert result.is_error and "times: Input should be less than or equal to 3" in result.content


@pytest.mark.parametrize("raw", [["text"], "not json", 42])
def test_arguments_that_are_not_an_object(tmp_path, raw):
    result = run(registry(), "echo", raw, make_ctx(tmp_path))
    assert result.is_error and "must be a JSON object" in result.content


def test_exception_in_a_tool_becomes_a_short_error(tmp_path):
    result = run(registry(), "broken", {"text": "x"}, make_ctx(tmp_path))
    assert result.is_error
    assert result.content == "Error: broken failed: RuntimeError: disk on fire while handling x"
    assert "Traceback" not in result.content


def test_an_error_line_names_no_absolute_path_of_the_host(tmp_path, isolated_home):
    """The model (and whoever steers it) learnt the host's layout from error lines."""
    ctx = make_ctx(isolated_home)
    workspace = Path(ctx.workspace).resolve()
    text = f"cannot open {workspace}/notes/a.txt, {isolated_home.resolve()}/config.json or {Path.home()}/.ssh"
    content = run(registry(), "broken", {"text": text}, ctx).content
    assert content.endswith("cannot open ./notes/a.txt, $PICOORA_HOME/config.json or ~/.ssh")


def test_secrets_are_scrubbed_from_results_and_errors(tmp_path):
    ctx = make_ctx(tmp_path, secrets=["sk-abcdef-longer", "sk-abcdef", "ab"])
    assert run(registry(), "leaky", {"text": "key={0} ab"}, ctx).content == "key=*** ab"
    # A lookup lower-cases a host name: an error is scrubbed in any letter case.
    ctx = make_ctx(tmp_path, secrets=["SK-ABCDEF"])
    error = run(registry(), "leaky", {"text": "fail: cannot resolve host {0}.example.com"}, ctx)
    assert error.is_error and error.content.endswith("fail: cannot resolve host ***.example.com")


@pytest.mark.parametrize("arguments", [
    {"text": "key sk-Secret-Value-123"},  # as is
    {"text": "SK-SECRET-VALUE-123.example.com"},  # upper-cased (a host name's case does not matter)
    {"text": "c2stU2VjcmV0LVZhbHVlLTEyMw=="},  # base64
    {"text": "x", "sk-secret-value-123": 1},  # a key
    '{"text": "sk-Secret-Value-123"}',  # the JSON text a provider handed over
])
def test_a_call_whose_arguments_hold_a_secret_is_refused_before_the_tool_runs(tmp_path, arguments):
    asked: list = []

    async def approve(name, args):
        asked.append(name)

    ctx = make_ctx(tmp_path, secrets=["sk-Secret-Value-123"])
    ctx.approve = approve
    result = run(registry(), "echo", arguments, ctx)
    assert result.is_error and "refused: the arguments of echo hold a secret" in result.content
    assert "ecret" not in result.content.replace("secret from", "") and asked == []
    assert not run(registry(), "echo", {"text": "sk-Secret-Value-12"}, ctx).is_error  # not the secret


def test_results_over_the_cap_are_cut_and_kept_whole(tmp_path):
    store = FileStore(tmp_path / "store")
    text = "".join(f"{n:04d}" for n in range(100))  # 400 characters
    result = run(registry(max_result_chars=100), "echo", {"text": text}, make_ctx(tmp_path, store, turn_id="t1"))
    assert result.content.startswith(text[:80]) and text[80:-20] not in result.content
    assert f"{text[-20:]}\n[400 characters in all kept as {result.handle}: read_tool_output" in result.content
    kept = store.tool_outputs.get(result.handle)
    assert (kept.content, kept.tool, kept.turn_id) == (text, "echo", "t1")


def test_without_a_store_a_long_result_is_cut_and_says_so(tmp_path):
    result = run(registry(max_result_chars=10), "echo", {"text": "0123456789abcdef"}, make_ctx(tmp_path))
    assert result.content.startswith("01234567\n… [6 characters left out here] …\nef")
    assert "could not be kept: there is no store here" in result.content and result.handle is None


def test_default_registry_and_settings(tmp_path):
    config = Config()
    config.oracle.wallet_path = "/opt/wallet"
    config.tools.web_fetch.allow_hosts = ["nas.local"]
    config.tools.exec.allow_unsandboxed = True  # exec is listed whether or not this machine has a sandbox
    names = default_registry(config).names()
    assert names == sorted(
        ["append_file", "cron", "edit_file", "exec", "forget", "list_dir", "read_file", "recall", "remember",
         "skill", "web_fetch", "web_search", "write_daily_note", "write_file"]
    )
    settings = tool_settings(config, config_path=Path("/etc/picoora.json"))
    assert settings.tools.exec.timeout_seconds == 60.0
    assert settings.tools.web_fetch.allow_hosts == ["nas.local"]
    assert settings.protected_paths == ("/etc/picoora.json", "/opt/wallet")


def test_default_registry_cap_fits_the_largest_configured_result():
    config = Config()
    config.tools.web_fetch.max_chars = 200_000
    assert default_registry(config).max_result_chars > 200_000


def test_shared_schemas_survive_every_adapter_unchanged(tmp_path: Path) -> None:
    """Tools hand out one schema dict each (no copy per call): every provider's adapter and the MCP server's
    listing must build their own dicts from it, never change it."""
    import json

    from picoora.llm.anthropic import to_anthropic_tool
    from picoora.llm.base import CallOptions
    from picoora.llm.constrained import constraint_for
    from picoora.mcp_server import _refusing_extras

    registry = default_registry(Config())
    schemas = registry.schemas()
    before = json.dumps(schemas, sort_keys=True)
    constraint_for(schemas, CallOptions(tool_choice="required"))  # Ollama's forced call: the union of them all
    for schema in schemas:
        to_anthropic_tool(schema)
        _refusing_extras(schema["function"])
    assert json.dumps(registry.schemas(), sort_keys=True) == before
    assert all(a is b for a, b in zip(registry.schemas(), schemas, strict=True))  # shared, so nothing was copied
    assert "additionalProperties" not in json.dumps(schemas)  # only the MCP listing adds it, to its own copy
