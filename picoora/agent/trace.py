"""Collects a turn's trace as it runs: model, usage, latency, recalled memories, tool calls, outcome.

Kept with the transcript (``Store.traces.append``) so ``picoora trace`` and the web chat's "why" view can
tell whether a wrong answer came from retrieval, tool choice, tool output or the model. Everything
that could hold a secret (tool arguments, results, memory text) is scrubbed before it is kept.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from picoora.llm.base import LLM, Usage
from picoora.messages import ToolCall
from picoora.secrets import scrub
from picoora.store.base import RecalledMemory, RecallResult, ToolCallTrace, TurnTrace
from picoora.tools.base import ToolResult

PREVIEW_CHARS = 300


class TraceRecorder:
    def __init__(self, turn_id: str, session_key: str, llm: LLM, secrets: Iterable[str]):
        self._secrets = list(secrets)
        self._started = time.monotonic()
        self.trace = TurnTrace(turn_id=turn_id, session_key=session_key, started_at=datetime.now(timezone.utc),
                               provider=llm.provider, model=llm.model)

    def _clean(self, text: str, limit: int = PREVIEW_CHARS) -> str:
        text = scrub(text, self._secrets)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def _since_start_ms(self) -> float:
        return round((time.monotonic() - self._started) * 1000, 1)

    def recalled(self, recall: RecallResult | None) -> None:
        if recall is None:
            return
        self.trace.recall_note = recall.note if recall.degraded else None
        self.trace.recalled = [
            RecalledMemory(m.memory.id, round(m.score, 4), None if m.similarity is None else round(m.similarity, 4),
                           self._clean(m.memory.content), m.memory.provenance.describe())
            for m in recall.matches
        ]

    def first_token(self) -> None:
        if self.trace.first_token_ms is None:
            self.trace.first_token_ms = self._since_start_ms()

    def model_call(self, usage: Usage) -> None:
        self.trace.model_calls += 1
        self.trace.prompt_tokens += usage.prompt_tokens
        self.trace.completion_tokens += usage.completion_tokens

    def tool_call(self, call: ToolCall, result: ToolResult, seconds: float) -> None:
        arguments: Any = json.loads(self._clean(json.dumps(call.arguments, ensure_ascii=False), limit=1 << 30))
        self.trace.tool_calls.append(ToolCallTrace(
            call_id=call.id, name=call.name, arguments=arguments, duration_ms=round(seconds * 1000, 1),
            ok=not result.is_error, result_preview=self._clean(result.content), output_handle=result.handle,
            used=list(result.details or []),
        ))

    def finish(self, stop_reason: str, error: str | None, detail: str | None = None) -> TurnTrace:
        self.trace.latency_ms = self._since_start_ms()
        self.trace.stop_reason = stop_reason
        self.trace.error = self._clean(error) if error else None
        self.trace.stop_detail = self._clean(detail) if detail else None
        return self.trace
