"""The one place that hides secrets: ``scrub`` for free text, ``redact_tree`` for config-shaped data.

Two nets, used together wherever text can leave the process (tool results, stored config rows, the
inspector, config errors, the CLI's error lines):

- ``scrub`` replaces every known secret value (the ones in the running config) in the forms a
  leak is likely to take: as is, JSON-escaped (a value inside a JSON string), percent-encoded (a
  URL), and base64 at each of the three byte alignments (``base64 -w0`` of a whole environment
  dump moves the secret's encoding with its offset). A value shorter than ``MIN_SECRET_LENGTH``
  is left alone: replacing ``abc`` everywhere would mangle output and protect nothing.
- ``redact_tree`` masks every field named like a secret (``api_key``, ``password``, ...) in a
  dict/list tree, and ``redact_dsn`` hides the password of a DSN (``scheme://user:pw@host``,
  Oracle's ``user/pw@host``). ``redact_text`` applies all of it to a value that may hold JSON.

This module imports nothing from picoora, so the config, the stores, the tools and the CLI can all
use it without import cycles.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

REDACTED = "***"
MIN_SECRET_LENGTH = 4
# An encoded fragment shorter than this is too likely to occur by chance in ordinary output.
MIN_ENCODED_LENGTH = 8
_PREFILTER_CHARS = 512  # shorter texts (a streamed token) are cheaper to scrub than to test form by form
SECRET_FIELDS = frozenset({"api_key", "password", "wallet_password", "token", "app_token"})
SECRET_MAPS = frozenset({"env", "headers"})  # maps whose every value is a secret (an MCP server's env and headers)

# scheme://user:password@host  and  Oracle's user/password@host (an EZConnect string with credentials)
# The scheme starts where a run of scheme characters starts (the lookbehind): tried from every letter
# of a long word, the pattern was quadratic (40 KB of "a" took 5 s). Any such run before "://" counts,
# so it redacts at least what it did.
_URL_PASSWORD = re.compile(
    r"(?P<head>(?<![A-Za-z0-9+.-])[A-Za-z0-9+.-]+://[^/\s:@]*:)(?P<secret>[^@\s/]+)(?P<tail>@)")
_SLASH_PASSWORD = re.compile(r"(?P<head>(?:^|(?<=[\s\"'=(]))[A-Za-z0-9_.$#-]+/)(?P<secret>[^@\s/]+)(?P<tail>@)")


def dsn_password(dsn: str) -> str | None:
    """The password embedded in ``dsn``, or None when it carries none."""
    for pattern in (_URL_PASSWORD, _SLASH_PASSWORD):
        match = pattern.search(dsn)
        if match:
            return match.group("secret")
    return None


def redact_dsn(text: str) -> str:
    """``text`` with the password of any DSN in it replaced by ``***``."""
    for pattern in (_URL_PASSWORD, _SLASH_PASSWORD):
        text = pattern.sub(lambda m: f"{m.group('head')}{REDACTED}{m.group('tail')}", text)
    return text


def _base64_cores(raw: bytes) -> set[str]:
    """For each byte alignment, the base64 characters that depend on ``raw`` alone."""
    cores = set()
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * shift + raw).decode("ascii")
            # Character i covers stream bits [6i, 6i + 6); keep those inside raw's bits.
            first = -(-8 * shift // 6)
            last = (8 * (shift + len(raw)) - 6) // 6
            core = encoded[first : last + 1]
            if len(core) >= MIN_ENCODED_LENGTH:
                cores.add(core)
    return cores


def encoded_forms(secret: str) -> set[str]:
    """The forms of ``secret`` that ``scrub`` replaces."""
    # Each text form is at least as long as the secret itself, so none is too short to hide.
    forms = {secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1], quote(secret, safe="")}
    return forms | _base64_cores(secret.encode("utf-8"))


def meaningful(secrets: Iterable[str]) -> list[str]:
    """The secret values worth hiding."""
    return sorted({s for s in secrets if len(s.strip()) >= MIN_SECRET_LENGTH})


class Scrubber:
    """A reusable ``scrub`` for one set of secrets (the patterns are built once). ``ignore_case``: for texts
    that may have lower-cased a secret (a host name in a DNS error)."""

    def __init__(self, secrets: Iterable[str], *, ignore_case: bool = False):
        forms = {form for secret in meaningful(secrets) for form in encoded_forms(secret)}
        # Longest first, so a secret containing another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)
        self._folded = [form.casefold() for form in self._forms]
        self._ignore_case = ignore_case
        flags = re.IGNORECASE if ignore_case else 0
        self._pattern = re.compile("|".join(map(re.escape, self._forms)), flags) if self._forms else None

    @property
    def forms(self) -> list[str]:
        return self._forms

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        # The alternation tries every form at every position (milliseconds for a 20 KB answer); a substring
        # test per form is a fast scan, so a long text runs it only when it holds a secret.
        if len(text) > _PREFILTER_CHARS and not self.found_in(text):
            return text
        return self._pattern.sub(REDACTED, text)

    def found_in(self, text: str) -> bool:
        """Whether ``text`` holds a known form of a secret (case-insensitively when so built)."""
        if self._ignore_case:
            folded = text.casefold()
            return any(form in folded for form in self._folded)
        return any(form in text for form in self._forms)


class StreamScrubber:
    """``scrub`` for a text that arrives in pieces (streamed tokens): a secret split across two pieces is
    seen whole. Each piece gives back what is safe to send; the end of the text that could still be the
    start of a known form (of any secret) is held back until the next piece shows what it is, or until
    :meth:`flush` at the end of the stream."""

    def __init__(self, secrets: Iterable[str]):
        self._scrub = _scrubber(tuple(meaningful(secrets)))
        forms = self._scrub.forms
        self._prefixes = {form[:k] for form in forms for k in range(1, len(form))}
        self._longest = max(map(len, forms), default=0)
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._scrub(self._held + piece)
        keep = next((k for k in range(min(len(text), self._longest - 1), 0, -1) if text[-k:] in self._prefixes), 0)
        self._held = text[len(text) - keep:]
        return text[:len(text) - keep]

    def flush(self) -> str:
        rest, self._held = self._held, ""
        return rest


@functools.lru_cache(maxsize=8)
def _scrubber(secrets: tuple[str, ...], ignore_case: bool = False) -> Scrubber:
    return Scrubber(secrets, ignore_case=ignore_case)


def scrub(text: str, secrets: Iterable[str], *, ignore_case: bool = False) -> str:
    """``text`` with every known secret value, and its likely encodings, replaced by ``***``.
    The pattern for a set of secrets is built once (a process has one config)."""
    return _scrubber(tuple(meaningful(secrets)), ignore_case)(text)


def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON-like tree, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def holds_secret(value: Any, secrets: Iterable[str]) -> bool:
    """Whether a JSON-like tree (a tool call's arguments) holds a known secret in any form ``scrub`` knows,
    in any letter case: a host name, a search query or a stored note need not keep the case to leak it."""
    scrubber = _scrubber(tuple(meaningful(secrets)), True)
    return any(scrubber.found_in(text) for text in _strings(value))


def scrub_tree(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of a JSON-like tree (a tool call's arguments) with every string, keys included, scrubbed."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {scrub_tree(key, secrets): scrub_tree(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub_tree(item, secrets) for item in value]
    return value


def redact_tree(value: Any) -> Any:
    """A copy of a JSON-like tree with secret-named fields masked and DSN passwords hidden."""
    if isinstance(value, dict):
        return {
            key: REDACTED if key in SECRET_FIELDS and isinstance(item, str) and item
            else {k: REDACTED if isinstance(v, str) and v else v for k, v in item.items()}
            if key in SECRET_MAPS and isinstance(item, dict) else redact_tree(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_tree(item) for item in value]
    if isinstance(value, str):
        return redact_dsn(value)
    return value


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """A stored or shown value: JSON in it redacted field by field, DSNs and known secrets hidden."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, (dict, list)):
        masked = redact_tree(parsed)
        if masked != parsed:
            text = json.dumps(masked, ensure_ascii=False)
    return scrub(redact_dsn(text), secrets)
