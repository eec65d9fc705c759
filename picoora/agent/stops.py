"""When a turn should stop before its iteration cap or its wall clock: it goes in circles or gets nowhere.

- ``repeated_tool_call``: the same call (name and arguments) asked for a third time in the turn;
- ``oscillation``: the model alternates between two rounds of calls (A, B, A, B), which no single
  call's count catches (each was asked for only twice);
- ``no_progress``: ``NO_PROGRESS_ROUNDS`` rounds in a row in which every result failed or was one the
  turn had already seen (the same error, the same empty search), so another round will not help;
- ``token_budget``: the turn's tokens so far and the next request would pass
  ``agents.defaults.max_turn_tokens`` (0: no budget).

Each check gives a ``Stop``: the stop reason, the answer that tells the user why, and the result given
to calls that were asked for and not run (the history stays valid for every provider).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from picoora.messages import ToolCall

REPEAT_LIMIT = 3  # the third identical call in a turn stops it
NO_PROGRESS_ROUNDS = 3  # rounds in a row with nothing but failures and results seen before
RETRY_HINT = "Try rephrasing the request or giving more detail."


@dataclass(frozen=True)
class Stop:
    reason: str
    text: str
    unrun: str = ""  # the result of a call asked for and not run ("" when none was left open)


def signature(call: ToolCall) -> str:
    return call.name + "\0" + json.dumps(call.arguments, sort_keys=True, default=str)


class StopConditions:
    """The checks of one turn; ``before_round`` sees each round of calls, ``result`` each result it gets."""

    def __init__(self, max_turn_tokens: int = 0):
        self.max_turn_tokens = max_turn_tokens
        self._call_counts: dict[str, int] = {}
        self._rounds: list[tuple[str, ...]] = []  # each round's call signatures, sorted
        self._round_names: list[list[str]] = []
        self._seen_results: set[str] = set()
        self._stale_rounds = 0  # rounds in a row with nothing new
        self._failed_rounds = 0  # rounds in a row in which every call failed
        self._round_new = False  # this round brought a success not seen before
        self._round_failures = 0
        self._round_results = 0

    def before_round(self, calls: list[ToolCall]) -> Stop | None:
        """Before a round runs: whether it repeats a call a third time or goes back to the round before last."""
        repeated = None
        for call in calls:
            key = signature(call)
            self._call_counts[key] = self._call_counts.get(key, 0) + 1
            if self._call_counts[key] >= REPEAT_LIMIT and repeated is None:
                repeated = call
        if repeated is not None:
            return Stop("repeated_tool_call",
                        f"I stopped because I asked for `{repeated.name}` with the same arguments a third time in "
                        f"this turn, so I was going in circles. {RETRY_HINT}",
                        "Not run: the same call was already made twice in this turn.")
        this = tuple(sorted(signature(call) for call in calls))
        rounds = self._rounds
        if len(rounds) >= 3 and rounds[-1] == rounds[-3] and rounds[-2] == this and this != rounds[-1]:
            first, second = self._names(self._round_names[-1]), self._names([c.name for c in calls])
            return Stop("oscillation",
                        f"I stopped because I kept going back and forth between the same two steps ({first}, then "
                        f"{second}) without getting anywhere. {RETRY_HINT}",
                        "Not run: the turn was going back and forth between the same two steps.")
        rounds.append(this)
        self._round_names.append([call.name for call in calls])
        self._round_new, self._round_failures, self._round_results = False, 0, 0
        return None

    def result(self, content: str, failed: bool) -> None:
        """A result of the current round."""
        self._round_results += 1
        digest = hashlib.sha256(content.encode("utf-8", "replace")).hexdigest()
        if failed:
            self._round_failures += 1
        elif digest not in self._seen_results:
            self._round_new = True
        self._seen_results.add(digest)

    def after_round(self) -> Stop | None:
        """After a round's results are in: whether the last rounds got the turn anywhere."""
        self._stale_rounds = 0 if self._round_new else self._stale_rounds + 1
        self._failed_rounds = self._failed_rounds + 1 if self._round_failures == self._round_results else 0
        if self._stale_rounds < NO_PROGRESS_ROUNDS:
            return None
        what = ("all failed" if self._failed_rounds >= NO_PROGRESS_ROUNDS
                else "failed or brought back only results I already had")
        return Stop("no_progress",
                    f"I stopped because my last {NO_PROGRESS_ROUNDS} rounds of tool calls {what}, so more of the "
                    f"same would not help. {RETRY_HINT}")

    def over_budget(self, used: int, next_request: int) -> Stop | None:
        """Before a model call: whether the turn's tokens so far and the next request pass the budget."""
        budget = self.max_turn_tokens
        if not budget or used + next_request <= budget:
            return None
        return Stop("token_budget",
                    f"I stopped because this turn has used {used:,} tokens and the next model call (about "
                    f"{next_request:,} more) would pass its budget of {budget:,} (agents.defaults.max_turn_tokens). "
                    "Ask me to continue, or raise the budget.")

    @staticmethod
    def _names(names: list[str]) -> str:
        return ", ".join(f"`{name}`" for name in sorted(set(names)))
