"""The prompt files' share of the context window (``IDENTITY.md``, ``SOUL.md``, ``USER.md``, ...).

Anyone who can edit the workspace can make a prompt file huge (an 800 KB ``SOUL.md`` once made every
turn overflow before the model was called, so it could not even repair the file). Together they get at
most ``PROMPT_FILES_SHARE`` of the window; a file longer than its part keeps its start, with a line saying
it was cut, and the short ones are never cut to make room for a long one.
"""

from __future__ import annotations

from dataclasses import replace

from picoora.agent.tokens import CHARS_PER_TOKEN
from picoora.store.base import Prompt

PROMPT_FILES_SHARE = 0.25  # of the context window, for all prompt files together


def fit_prompts(prompts: list[Prompt], context_window: int) -> list[Prompt]:
    """``prompts`` in their order, each cut to its part of the budget: the shortest are kept whole first,
    and what they leave is shared equally among the longer ones."""
    left = int(context_window * PROMPT_FILES_SHARE) * CHARS_PER_TOKEN
    allowed: dict[str, int] = {}
    by_length = sorted(prompts, key=lambda prompt: len(prompt.content))
    for position, prompt in enumerate(by_length):
        part = left // (len(by_length) - position)
        allowed[prompt.name] = min(len(prompt.content), part)
        left -= allowed[prompt.name]
    return [_cut(prompt, allowed[prompt.name]) for prompt in prompts]


def _cut(prompt: Prompt, most_chars: int) -> Prompt:
    if len(prompt.content) <= most_chars:
        return prompt
    notice = (f"\n\n[picoora: {prompt.name} is longer than its share of the context window; "
              f"only its first {most_chars} characters are shown]")
    return replace(prompt, content=prompt.content[:most_chars] + notice)
