"""The tool registry: what the model may call, and the one place every call goes through.

``execute`` never raises for anything a model can cause: an unknown tool, arguments that do not
fit the tool's pydantic ``Args`` (the same model its JSON schema came from), or an exception inside
the tool all come back as an error ``ToolResult``. Every result then has the known secret values
(``ctx.secrets``) scrubbed out and is capped in size before it can reach the model.

``tool_settings(config)`` builds ``ToolContext.settings``. Keys (each tool module documents what
it reads):
  ``exec``            the ``tools.exec`` section (timeout_seconds, max_output_chars)
  ``web_fetch``       the ``tools.web_fetch`` section (timeout_seconds, max_bytes, max_chars, allow_hosts)
  ``files``           read_file/list_dir caps (max_read_chars, max_list_entries); defaults when absent
  ``protected_paths`` files and directories no tool may touch (config file, Oracle wallet)
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from picoora.config import Config
from picoora.tools.base import Tool, ToolContext, ToolResult

log = logging.getLogger(__name__)

DEFAULT_MAX_RESULT_CHARS = 60_000
REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 4  # shorter "secrets" would mangle ordinary output and protect nothing
MAX_ERROR_MESSAGE_CHARS = 500


def meaningful_secrets(secrets: list[str]) -> list[str]:
    """The secret values worth hiding, longest first (so one containing another goes whole)."""
    return sorted({s for s in secrets if len(s.strip()) >= MIN_SECRET_LENGTH}, key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every known secret value replaced."""
    for secret in meaningful_secrets(secrets):
        text = text.replace(secret, REDACTED)
    return text


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... (result truncated: {len(text) - limit} more characters)"


def _describe_errors(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        field = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        problems.append(f"{field}: {err['msg']}")
    return "; ".join(problems)


def _expected(tool: type[Tool] | Tool) -> str:
    fields = tool.Args.model_fields
    return ", ".join(f"{name}{'' if f.is_required() else ' (optional)'}" for name, f in fields.items()) or "none"


class ToolRegistry:
    def __init__(self, max_result_chars: int = DEFAULT_MAX_RESULT_CHARS) -> None:
        self.max_result_chars = max_result_chars
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas, sorted by name (a stable prompt prefix caches better)."""
        return [self._tools[name].schema() for name in self.names()]

    async def execute(self, name: str, raw_args: Any, ctx: ToolContext) -> ToolResult:
        result = await self._execute(name, raw_args, ctx)
        return ToolResult(cap(scrub(result.content, ctx.secrets), self.max_result_chars), result.is_error)

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
            message = str(exc).strip() or "no details"
            return ToolResult.error(f"{name} failed: {type(exc).__name__}: {message[:MAX_ERROR_MESSAGE_CHARS]}")

    @staticmethod
    def _validate(tool: Tool, raw_args: Any) -> BaseModel | ToolResult:
        """The tool's validated Args, or an error result saying which fields are wrong."""
        if raw_args is None:
            raw_args = {}
        if isinstance(raw_args, str):  # some providers hand over the JSON text itself
            try:
                raw_args = json.loads(raw_args) if raw_args.strip() else {}
            except ValueError:
                raw_args = None
        if not isinstance(raw_args, dict):
            return ToolResult.error(f"arguments for {tool.name} must be a JSON object with: {_expected(tool)}")
        unknown = sorted(set(raw_args) - set(tool.Args.model_fields))
        problems = [f"{key}: unknown field" for key in unknown]
        try:
            args = tool.Args.model_validate(raw_args)
        except ValidationError as exc:
            problems.append(_describe_errors(exc))
            args = None
        if problems:
            return ToolResult.error(f"invalid arguments for {tool.name}: {'; '.join(problems)}. Expected: {_expected(tool)}")
        return args


def tool_settings(config: Config, config_path: Path | None = None) -> dict[str, Any]:
    """``ToolContext.settings`` from the config (see the module docstring for the keys)."""
    protected = [str(p) for p in (config_path, config.oracle.wallet_path) if p]
    return {
        "exec": config.tools.exec.model_dump(),
        "web_fetch": config.tools.web_fetch.model_dump(),
        "protected_paths": protected,
    }
