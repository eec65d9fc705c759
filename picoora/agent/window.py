"""The model's context window: what a request may take, and what the user is told when it is full.

Sizes are picoora's own rough estimate (``picoora.agent.tokens``), the same compaction uses, because
Ollama cuts an oversized prompt silently from the front (the instructions and memories would go) instead of
reporting an overflow.
"""

from __future__ import annotations

from picoora.agent.tokens import estimate_messages_tokens, estimate_tokens
from picoora.config import AgentDefaults
from picoora.messages import Message

# After an overflow, the stored history kept verbatim plus this turn may fill this share of the window
# (the rest is for the system prompt, the summary and the answer).
OVERFLOW_KEPT_SHARE = 0.5


def prompt_budget(settings: AgentDefaults) -> int:
    """Tokens a request may take: the window less room for the answer (Ollama's num_ctx holds both)."""
    window = settings.context_window
    return window - min(settings.max_tokens, window // 4)


def overflow_room(settings: AgentDefaults, turn: list[Message]) -> int:
    """Tokens of the older conversation that may stay verbatim beside ``turn`` after an overflow."""
    return max(int(settings.context_window * OVERFLOW_KEPT_SHARE) - estimate_messages_tokens(turn), 0)


def too_large(system: str, turn: list[Message], settings: AgentDefaults) -> str | None:
    """Why the turn's own messages cannot fit the window with the system prompt, or None when they can; it
    names the larger of the two, the one to shorten."""
    message, instructions, budget = estimate_messages_tokens(turn), estimate_tokens(system), prompt_budget(settings)
    needed = instructions + message
    if needed <= budget:
        return None
    fits = (f"needs about {needed:,} tokens of the {budget:,} the model can take (agents.defaults.context_window "
            f"{settings.context_window:,}, less room for the answer). Nothing was sent and the transcript keeps it.")
    if instructions > message:
        return (f"The system prompt is too long for the model: about {instructions:,} tokens (your message is "
                f"about {message:,}); the request {fits} Shorten the system message or the prompt files, or use a "
                "model with a larger context window and raise agents.defaults.context_window to match it.")
    return (f"Your message is too long for the model: about {message:,} tokens (the system prompt is about "
            f"{instructions:,}); the request {fits} Send it shorter, or save it as a file in the workspace and "
            "ask me to read it.")


def context_full(why: str, settings: AgentDefaults) -> str:
    return (
        f"The conversation does not fit the model's context window, {why}. Start a new session with /new, "
        "or use a model with a larger context window and set agents.defaults.context_window to match it "
        f"(now {settings.context_window}; for Ollama, raising it raises num_ctx)."
    )
