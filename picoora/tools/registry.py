"""The tool registry: what the model may call, and the one place every call goes through.

``execute`` never raises for anything a model can cause: an unknown tool, arguments that do not
fit the tool's pydantic ``Args`` (the same model its JSON schema came from), or an exception inside
the tool all come back as an error ``ToolResult``. A call whose arguments hold a known secret value
(``ctx.secrets``, in any form ``scrub`` knows, any letter case) is refused before it is asked about or
runs: a tool's arguments leave the process (a search query, a host name looked up in DNS) or are stored
where a guest reads them (``remember``). Every result then has the known secret values
(``ctx.secrets``) scrubbed out (``picoora.secrets``) and is capped in size before it can reach the model;
a longer output is kept whole in the store for ``read_tool_output`` (``picoora.tools.tool_outputs``).

Calls wait for a slot before they run: at most ``tools.max_parallel_calls_per_turn`` of one turn
(one ``ToolContext``) and ``tools.max_parallel_calls`` of the whole process (per event loop) at
once, so a model asking for 1,000 ``exec`` calls in one message starts a few at a time.

``tool_settings(config)`` builds ``ToolContext.settings``: the typed ``tools`` section (each tool
module documents what it reads) and ``protected_paths``, files and directories no tool may touch
(the config file, an Oracle wallet).
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from picoora.config import Config
from picoora.secrets import holds_secret, scrub
from picoora.tools.base import Tool, ToolContext, ToolResult, ToolSettings
from picoora.tools.tool_outputs import head_and_tail, keep

log = logging.getLogger(__name__)

DEFAULT_MAX_RESULT_CHARS = 60_000
MAX_ERROR_MESSAGE_CHARS = 500
SECRET_IN_ARGUMENTS = ("refused: the arguments of {name} hold a secret from picoora's configuration, "
                       "which no tool call may carry; do not put it in any tool call")

# One process-wide limiter per event loop (a semaphore belongs to the loop it first waits on).
_process_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _slots(ctx: ToolContext) -> tuple[asyncio.Semaphore, asyncio.Semaphore]:
    """(this turn's limiter, this process's limiter), created on first use."""
    tools = ctx.settings.tools
    if ctx.turn_slots is None:
        ctx.turn_slots = asyncio.Semaphore(tools.max_parallel_calls_per_turn)
    loop = asyncio.get_running_loop()
    if loop not in _process_slots:
        _process_slots[loop] = asyncio.Semaphore(tools.max_parallel_calls)
    return ctx.turn_slots, _process_slots[loop]


def _describe_errors(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        problems.append(f"{field}: {err['msg']}")
    return "; ".join(problems)


def _expected(tool: type[Tool] | Tool) -> str:
    fields = tool.Args.model_fields
    return ", ".join(f"{name}{'' if f.is_required() else ' (optional)'}" for name, f in fields.items()) or "none"


class ToolSource(Protocol):
    """Tools that come and go with something outside (MCP servers): started before a turn, closed at the end."""

    async def prepare(self, registry: ToolRegistry) -> list[str]: ...  # notices for the user, each given once
    async def aclose(self) -> None: ...


def host_paths_hidden(message: str, workspace: Path) -> str:
    """An error line as the model may see it: paths in the workspace relative to it, picoora's home and the
    user's home by name (the host's layout is none of the model's business, nor of whoever steers it)."""
    from picoora.config import picoora_home

    places = [(workspace.resolve(), "."), (picoora_home().resolve(), "$PICOORA_HOME"), (Path.home().resolve(), "~")]
    for path, name in places:
        if str(path) != "/":
            message = message.replace(f"{path}/", f"{name}/").replace(str(path), name)
    return message


class ToolRegistry:
    def __init__(self, max_result_chars: int = DEFAULT_MAX_RESULT_CHARS) -> None:
        self.max_result_chars = max_result_chars
        self._tools: dict[str, Tool] = {}
        self._sources: list[ToolSource] = []

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    async def prepare(self) -> list[str]:
        """Bring the tool sources up (the first time) and let each tool look again at whether it is offered
        (``Tool.refresh``), before a turn lists the tools; the sources' notices."""
        notices: list[str] = []
        for source in self._sources:
            notices += await source.prepare(self)
        await self.refresh()
        return notices

    async def refresh(self) -> None:
        """Let each tool look again at whether it is offered (``Tool.refresh``), e.g. before listing them."""
        for tool in list(self._tools.values()):
            await tool.refresh()

    async def aclose(self) -> None:
        for source in self._sources:
            await source.aclose()

    def prompt_parts(self) -> list[str]:
        """The sections the offered tools add to the system prompt, in tool-name order."""
        return [part for name in self.names() if (part := self._tools[name].prompt_part())]

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self, *, on_demand: bool = False) -> list[str]:
        """The tools offered now, sorted; ``on_demand``: those offered only when asked for too."""
        return sorted(name for name, tool in self._tools.items()
                      if tool.available() and (on_demand or not tool.on_demand))

    def schemas(self, *, on_demand: bool = False) -> list[dict[str, Any]]:
        """OpenAI-style function schemas, sorted by name (a stable prompt prefix caches better)."""
        return [self._tools[name].schema() for name in self.names(on_demand=on_demand)]

    async def execute(self, name: str, raw_args: Any, ctx: ToolContext) -> ToolResult:
        if ctx.secrets and holds_secret(raw_args, ctx.secrets):
            log.warning("refused a call of %s: its arguments hold a configured secret", name)
            return ToolResult.error(SECRET_IN_ARGUMENTS.format(name=name))
        if ctx.approve is not None:  # before taking a slot: the owner may take minutes to answer
            refusal = await ctx.approve(name, raw_args if isinstance(raw_args, dict) else {"arguments": raw_args})
            if refusal:
                return ToolResult.error(refusal)
        turn_slots, process_slots = _slots(ctx)
        async with turn_slots, process_slots:
            result = await self._execute(name, raw_args, ctx)
        # An error may name what a lookup lower-cased (a host name in "cannot resolve host").
        content = scrub(result.content, ctx.secrets, ignore_case=result.is_error)
        full = scrub(result.full, ctx.secrets, ignore_case=result.is_error) if result.full is not None else None
        if full is None and len(content) > self.max_result_chars:
            full, content = content, head_and_tail(content, self.max_result_chars)
        if full is None:
            return ToolResult(content, result.is_error, details=result.details)
        content, handle = await keep(name, content, full, ctx)
        return ToolResult(content, result.is_error, handle=handle, details=result.details)

    async def _execute(self, name: str, raw_args: Any, ctx: ToolContext) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(f'tool "{name}" not found. Available tools: {", ".join(self.names()) or "none"}')
        args_or_error = self._validate(tool, raw_args)
        if isinstance(args_or_error, ToolResult):
            return args_or_error
        try:
            return await tool.run(args_or_error, ctx)
        except Exception as exc:  # a bug or an unexpected failure: the model gets a line, the log the traceback
            log.exception("tool %s failed", name)
            message = host_paths_hidden(str(exc).strip() or "no details", Path(ctx.workspace))
            return ToolResult.error(f"{name} failed: {type(exc).__name__}: {message[:MAX_ERROR_MESSAGE_CHARS]}")

    @staticmethod
    def _validate(tool: Tool, raw_args: Any) -> BaseModel | ToolResult:
        """The tool's validated Args, or an error result saying which fields are wrong."""
        if raw_args is None:
            raw_args = {}
        if isinstance(raw_args, str):  # some providers hand over the JSON text itself
            try:
                raw_args = json.loads(raw_args) if raw_args.strip() else {}
            except (ValueError, RecursionError):
                raw_args = None
        if not isinstance(raw_args, dict):
            return ToolResult.error(f"arguments for {tool.name} must be a JSON object with: {_expected(tool)}")
        own_check = getattr(tool, "check_arguments", None)  # a tool with a JSON schema of its own (MCP)
        if own_check is not None:
            own_problems: list[str] = own_check(raw_args)
            if own_problems:
                return ToolResult.error(f"invalid arguments for {tool.name}: {'; '.join(own_problems)}")
            return raw_args  # type: ignore[return-value]
        unknown = sorted(set(raw_args) - set(tool.Args.model_fields))
        problems = [f"{key}: unknown field" for key in unknown]
        try:
            args = tool.Args.model_validate(raw_args)
        except ValidationError as exc:
            problems.append(_describe_errors(exc))
            args = None
        if problems or args is None:  # args is None only when validation failed, which added a problem
            return ToolResult.error(f"invalid arguments for {tool.name}: {'; '.join(problems)}. "
                                    f"Expected: {_expected(tool)}")
        return args


def tool_settings(config: Config, config_path: Path | None = None) -> ToolSettings:
    """``ToolContext.settings`` from the config."""
    protected = tuple(str(p) for p in (config_path, config.oracle.wallet_path) if p)
    return ToolSettings(config.tools, protected)
