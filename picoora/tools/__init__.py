"""Tools the model can call: files, shell, web, memory, skills, MCP servers; one registry in front of them all."""

from __future__ import annotations

from picoora.config import Config
from picoora.tools.base import Tool, ToolSettings
from picoora.tools.registry import DEFAULT_MAX_RESULT_CHARS, ToolRegistry, tool_settings
from picoora.tools.tool_outputs import ReadToolOutput

__all__ = ["ToolRegistry", "default_registry", "guest_registry", "guest_tool_settings", "tool_settings"]

# Room above the largest single result a tool produces (web text, exec output) for its framing lines.
RESULT_FRAMING_CHARS = 2_000


def default_registry(config: Config) -> ToolRegistry:
    """A registry holding every tool the config enables (exec and web_fetch can be switched off; exec
    is also left out where no OS sandbox runs and unsandboxed commands are not allowed)."""
    from picoora.tools.files import FILE_TOOLS
    from picoora.tools.memory import MEMORY_TOOLS
    from picoora.tools.os_sandbox import exec_mode
    from picoora.tools.shell import Exec
    from picoora.tools.web import WebFetch

    tools_cfg = config.tools
    registry = _registry(max(tools_cfg.web_fetch.max_chars, tools_cfg.exec.max_output_chars))
    always: tuple[type[Tool], ...] = (*FILE_TOOLS, *MEMORY_TOOLS, ReadToolOutput)
    for tool_class in always:
        registry.register(tool_class())
    if exec_mode(tools_cfg.exec).runs:
        registry.register(Exec())
    if tools_cfg.web_fetch.enabled:
        registry.register(WebFetch())
    if config.cron.enabled:
        from picoora.tools.cron import Cron

        registry.register(Cron(default_zone=config.agents.defaults.timezone))
    _register_extensions(registry, config)
    return registry


def guest_registry(config: Config) -> ToolRegistry:
    """The tools for people other than the owner: their own memory and the web, nothing that reaches the
    owner's machine, files or schedules (no file tools, no exec, no cron)."""
    from picoora.tools.memory import MEMORY_TOOLS
    from picoora.tools.web import WebFetch
    from picoora.tools.web_search import WebSearch, usable

    registry = _registry(config.tools.web_fetch.max_chars)
    own: tuple[type[Tool], ...] = (*MEMORY_TOOLS, ReadToolOutput)  # read_tool_output: a guest's store is theirs
    for tool_class in own:
        registry.register(tool_class())
    if config.tools.web_fetch.enabled:
        registry.register(WebFetch())
    if usable(config.tools.web_search):  # searching the web reaches nothing of the owner's
        registry.register(WebSearch(config.tools.web_search))
    return registry


def guest_tool_settings(config: Config) -> ToolSettings:
    """A guest's tool settings: the owner's, without the owner's exemptions from the public-address guard
    (``web_fetch.allow_hosts`` names the owner's LAN, the gateway, the model server)."""
    web_fetch = config.tools.web_fetch.model_copy(update={"allow_hosts": []})
    return ToolSettings(config.tools.model_copy(update={"web_fetch": web_fetch}))


def _registry(largest_result: int) -> ToolRegistry:
    """An empty registry whose result cap holds the largest result its tools produce, framing included."""
    return ToolRegistry(max_result_chars=max(DEFAULT_MAX_RESULT_CHARS, largest_result + RESULT_FRAMING_CHARS))


def _register_extensions(registry: ToolRegistry, config: Config) -> None:
    """Skills, web_search and MCP servers, each only when configured and usable."""
    from picoora.config import picoora_home, workspace_path
    from picoora.skills import catalog_for
    from picoora.tools.skills import SkillTool
    from picoora.tools.web_search import WebSearch, usable

    if config.skills.enabled:
        registry.register(SkillTool(catalog_for(workspace_path(config), builtin=config.skills.builtin)))
    if usable(config.tools.web_search):
        registry.register(WebSearch(config.tools.web_search))
    servers = {name: cfg for name, cfg in config.tools.mcp_servers.items() if cfg.enabled}
    if servers:
        from picoora.tools.mcp_client import McpServers  # only then: a one-shot turn without MCP skips it

        registry.add_source(McpServers(servers, workspace_path(config), picoora_home() / "logs",
                                       config.tools.exec))
