"""State, config and meta: small key/value families (``PICO_STATE``, ``PICO_CONFIG``, ``PICO_META``).

Config is stored redacted (secret-named JSON fields and known secret values never reach it). Only state has
``delete``: config and meta are only ever set.
"""

from __future__ import annotations

from typing import Protocol

from picoora.store.families.calls import Caller


class KeyValues(Protocol):
    def get(self, key: str) -> str | None: ...
    def set(self, key: str, value: str) -> None: ...
    def all(self) -> dict[str, str]: ...


class State(KeyValues, Protocol):
    def delete(self, key: str) -> bool: ...  # True when the key was there


class AsyncKeyValues:
    def __init__(self, family: KeyValues, call: Caller):
        self.get = call.wrap(family.get)
        self.set = call.wrap(family.set)
        self.all = call.wrap(family.all)


class AsyncState(AsyncKeyValues):
    def __init__(self, family: State, call: Caller):
        super().__init__(family, call)
        self.delete = call.wrap(family.delete)
