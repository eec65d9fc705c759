"""``picoora trace [TURN_ID|last] [-s SESSION] [--json]``: why a turn answered as it did.

Shows the model and its usage, time to first token and total latency, the memories recalled into the
context with their scores, each tool call with its arguments, duration and outcome, and how the turn
ended, so a wrong answer can be traced to retrieval, tool choice, tool output or the model.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import CLIError, load_config

if TYPE_CHECKING:
    from picoora.store.base import TurnTrace


def register(app: typer.Typer) -> None:
    app.command("trace")(trace)


def trace(
    ctx: typer.Context,
    turn: str = typer.Argument("last", help="A turn id, or `last`."),
    session: str | None = typer.Option(None, "-s", "--session", help="With `last`: the last turn of this session."),
    as_json: bool = typer.Option(False, "--json", help="Print the trace as JSON."),
) -> None:
    """Show a turn's trace: model, tokens, latency, recalled memories, tool calls, how it ended."""
    from picoora.cli.opening import command_store
    from picoora.config import secret_values
    from picoora.secrets import scrub

    config = load_config(ctx)
    with command_store(config) as store:
        found = store.traces.last(session) if turn == "last" else store.traces.get(turn)
    if found is None:
        where = f"turn {turn}" if turn != "last" else "turn" + (f" in session {session}" if session else "")
        raise CLIError(f"no trace of a {where} yet: traces are kept from the first turn on")
    text = json.dumps(found.to_json(), ensure_ascii=False, indent=2) if as_json else "\n".join(render(found))
    print(scrub(text, secret_values(config)))  # traces are scrubbed when kept; this is the second net


def render(t: TurnTrace) -> list[str]:
    started = t.started_at.astimezone().strftime("%Y-%m-%d %H:%M:%S") if t.started_at else "-"
    first = f"{t.first_token_ms:.0f} ms" if t.first_token_ms is not None else "not streamed"
    lines = [
        f"Turn {t.turn_id}  session {t.session_key}  {started}",
        f"Model     {t.provider}/{t.model}: {t.model_calls} call(s), {t.prompt_tokens} prompt + "
        f"{t.completion_tokens} completion tokens",
        f"Latency   {t.latency_ms:.0f} ms total, first token {first}",
        f"Ended     {t.stop_reason}" + (f": {t.error or t.stop_detail}" if t.error or t.stop_detail else ""),
        "Recalled" + (f" (degraded: {t.recall_note})" if t.recall_note else ""),
    ]
    lines += [f"  {m.score:6.1%}  {m.memory_id}  {m.content}" + (f"  [{m.provenance}]" if m.provenance else "")
              for m in t.recalled] or ["  (no memories)"]
    lines.append("Tools")
    for call in t.tool_calls:
        mark = "ok" if call.ok else "failed"
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        lines.append(f"  {call.name}({arguments})  {call.duration_ms:.0f} ms  {mark}")
        if call.result_preview:
            lines.append(f"    → {' '.join(call.result_preview.split())[:160]}")
        if call.output_handle:
            lines.append(f"    whole output kept as {call.output_handle} (read_tool_output)")
        for used in call.used:  # search_docs: the chunks the answer could cite
            where = f"page {used['page']}" if used.get("page") else f"chunk {int(used.get('chunk', 0)) + 1}"
            lines.append(f"    · {used.get('score', 0) * 100:5.1f}%  {used.get('title', '')} ({where})")
    if not t.tool_calls:
        lines.append("  (no tool calls)")
    return lines
