"""Scrubbing secrets out of stored config values: before they are written, and again before they are shown.

A config value is free text, often a JSON snapshot of the config. Two nets catch a secret: any JSON
field named like one (``password``, ``api_key``, ``token``, ...) is masked, and any known secret value
(the ones in the running config) is replaced wherever it appears.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from picoora.config import REDACTED, SECRET_FIELDS


def _mask_fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: REDACTED if key in SECRET_FIELDS and isinstance(item, str) and item else _mask_fields(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_mask_fields(item) for item in value]
    return value


def redact_value(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with secret-named JSON fields masked and every string in ``secrets`` replaced by ``***``."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, (dict, list)):
        masked = _mask_fields(parsed)
        if masked != parsed:
            text = json.dumps(masked, ensure_ascii=False)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
