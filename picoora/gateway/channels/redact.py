"""Keeping a channel's tokens out of the logs, whoever writes the record.

Request URLs (Telegram) and websocket frames (Discord's IDENTIFY) carry the token, and httpx (INFO),
python-telegram-bot and websockets (DEBUG) log them from loggers of their own, which a logger filter would
not cover: a log record factory sees every record as it is made.
"""

from __future__ import annotations

import logging
from typing import Any

from picoora.secrets import meaningful, scrub


class TokenScrubbingRecords:
    """A log record factory that takes the tokens out of every record as it is made."""

    def __init__(self, *tokens: str):
        self.tokens = list(meaningful(tokens))
        self.previous = logging.getLogRecordFactory()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logger's problem, not ours
            return record
        if any(token in message for token in self.tokens):
            record.msg, record.args = scrub(message, self.tokens), None
        return record

    def install(self) -> None:
        logging.setLogRecordFactory(self)

    def uninstall(self) -> None:
        if logging.getLogRecordFactory() is self:
            logging.setLogRecordFactory(self.previous)
