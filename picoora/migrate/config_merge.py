"""The converted Go config laid over the picoora config already there, key by key, in the file's own JSON
(so ``${VAR}`` references and values from ``PICO_*`` variables stay as they are).

A key picoora's file leaves at its default (or at a gateway token picoora generated) takes the Go value.
A key edited in picoora keeps picoora's value, unless the Go side wins: with ``--force``, or when the
whole file is still what ``onboard`` wrote (its defaults plus the provider, model, gateway token and
owner onboard chose), which is the README's path: onboard first, then migrate.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from picoora.config import Config
from picoora.migrate.config_map import Conversion, Key, get_key, leaves

# What onboard writes besides the defaults: choices it made, not edits of the user's.
ONBOARD_KEYS: frozenset[Key] = frozenset({("agents", "defaults", "provider"), ("agents", "defaults", "model"),
                                          ("gateway", "token"), ("users",)})
GENERATED_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")
_MISSING = object()


@dataclass
class Merge:
    tree: dict[str, Any]  # the file's JSON after the merge
    from_go: list[str] = field(default_factory=list)  # picoora keys that took the Go value
    kept: list[str] = field(default_factory=list)  # picoora keys edited here whose Go value differs


def untouched(file_tree: dict[str, Any]) -> bool:
    """The file holds nothing but picoora's defaults and onboard's own choices."""
    defaults = Config().model_dump(mode="json")
    return all(key in ONBOARD_KEYS or get_key(defaults, key) == value for key, value in leaves(file_tree))


def merge(file_tree: dict[str, Any], conversion: Conversion, *, go_wins: bool) -> Merge:
    defaults = Config().model_dump(mode="json")
    result = Merge(tree=copy.deepcopy(file_tree))
    for ours in dict.fromkeys(key for _, key in conversion.carried):  # once each, in order
        key = tuple(ours.split("."))
        value = get_key(conversion.tree, key)
        current = _at(result.tree, key)
        if current == value:
            continue
        if go_wins or current is _MISSING or current == get_key(defaults, key) or _generated(key, current):
            _set(result.tree, key, _escaped(value))
            result.from_go.append(ours)
        else:
            result.kept.append(ours)
    return result


def _generated(key: Key, value: Any) -> bool:
    """A value picoora made up, not one its user chose: the gateway token onboard (or a first migration)
    writes, ``secrets.token_urlsafe(32)``. The Go web token is the one the user's clients know."""
    return key == ("gateway", "token") and isinstance(value, str) and bool(GENERATED_TOKEN.fullmatch(value))


def _at(tree: Any, key: Key) -> Any:
    for part in key:
        if not isinstance(tree, dict) or part not in tree:
            return _MISSING
        tree = tree[part]
    return tree


def _set(tree: dict[str, Any], key: Key, value: Any) -> None:
    node = tree
    for part in key[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[key[-1]] = value


def _escaped(value: Any) -> Any:
    # In picoora's file "${NAME}" is a reference to a variable; a Go value holding one is text.
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value
