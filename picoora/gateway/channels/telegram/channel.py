"""Telegram, by long polling (no public URL needed), on python-telegram-bot's ``Bot``.

- ``channels.telegram.api_base`` replaces the Bot API root, so the tests run against a fake Bot API.
- Messages older than ``STALE_SECONDS`` when the channel starts are skipped (a restart answers what
  arrived while it was down for a moment, not a day-old backlog).
- Replies are split at Telegram's limit on paragraph or line boundaries and sent as HTML; when Telegram
  rejects the markup, the same text goes again as plain text.
- Network errors, timeouts, 5xx and 429 (honouring ``retry_after``) are retried with backoff; they never
  end the channel or the gateway.
- The bot token is part of every request URL: it is scrubbed from every log record and error text.
- Answers stream into one message by ``editMessageText`` (``runtime.streaming``); the chat commands are
  registered with ``setMyCommands`` at start, so Telegram offers them as the user types "/".
- A photo, voice note, audio file or document becomes an ``Attachment`` (the caption is the text),
  fetched by ``getFile`` and the file URL only once the runtime takes it (``runtime.media``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from typing import Any

from picoora.gateway.channels.attachments import download, plain_mime
from picoora.gateway.channels.base import (
    CONNECTED,
    NOT_A_QUESTION,
    REFUSED_TOKEN,
    UNREACHABLE,
    AsksApprovals,
    EditsMessages,
)
from picoora.gateway.channels.links import (
    COMMANDS,
    Attachment,
    DownloadFailed,
    Kind,
    ShuttingDown,
    TooLarge,
    approval_button,
)
from picoora.gateway.channels.redact import TokenScrubbingRecords
from picoora.gateway.channels.split import split_message
from picoora.gateway.channels.telegram.format import TELEGRAM_LIMIT, to_telegram_html
from picoora.identities import Sender
from picoora.secrets import scrub

log = logging.getLogger(__name__)

POLL_TIMEOUT_SECONDS = 25
STALE_SECONDS = 300
OFFSET_KEY = "telegram.offset"
BACKOFF_SECONDS = (1.0, 2.0, 5.0, 10.0, 30.0)
SEND_ATTEMPTS = 5
PUBLIC_API = "https://api.telegram.org"
# Telegram announces no type for photos and voice notes: it re-encodes photos as JPEG and records voice as Opus.
PHOTO_TYPE, VOICE_TYPE = "image/jpeg", "audio/ogg"


class TelegramChannel(EditsMessages, AsksApprovals):
    name = "telegram"

    def __init__(self, *args: Any, sleep: Any = asyncio.sleep, **kwargs: Any):
        super().__init__(*args, **kwargs)
        from telegram import Bot

        if not self.config.token:
            raise ValueError("channels.telegram.token is empty: set it (or PICO_CHANNELS_TELEGRAM_TOKEN)")
        self._records = TokenScrubbingRecords(self.config.token)
        self._records.install()  # before the Bot exists: it logs its URL when made
        root = self._root = (self.config.api_base or PUBLIC_API).rstrip("/")
        self.bot = Bot(self.config.token, base_url=f"{root}/bot", base_file_url=f"{root}/file/bot")
        self._sleep = sleep
        self._oldest = 0.0  # messages sent before this (epoch seconds) are not answered

    def _clean(self, exc: BaseException) -> str:
        return scrub(str(exc) or type(exc).__name__, [self.config.token])

    async def run(self) -> None:
        offset = await self._start()
        if self.state == REFUSED_TOKEN:
            return  # a refused token: polling again would only be refused again (/ready says why)
        failures = 0
        while True:
            try:
                updates = await self.bot.get_updates(offset=offset, timeout=POLL_TIMEOUT_SECONDS,
                                                     allowed_updates=["message", "callback_query"],
                                                     read_timeout=POLL_TIMEOUT_SECONDS + 10)
                failures = 0
            except Exception as exc:  # network trouble, 5xx, 429: wait and poll again
                await self._sleep(self._backoff(exc, failures))
                failures += 1
                continue
            taken = 0
            for update in updates:
                if not await self._handle(update):
                    break  # shutting down: this update and the later ones wait for the next start
                offset, taken = update.update_id + 1, taken + 1
            if taken:  # remembered, so a restart neither answers these again nor skips newer ones
                await self.links.set_state(OFFSET_KEY, str(offset))
            if taken < len(updates):
                await asyncio.Event().wait()  # until cancelled: the gateway is stopping

    async def _start(self) -> int | None:
        """Initialise the bot (getMe) and return the stored update offset; retried until the Bot API answers.
        A refused token is not retried: ``problem`` says so and None is returned."""
        from telegram.error import InvalidToken

        failures = 0
        while True:
            try:
                await self.bot.initialize()
                await self._register_commands()
                self._oldest = time.time() - STALE_SECONDS
                stored = await self.links.get_state(OFFSET_KEY)
                self.report(CONNECTED)
                return int(stored) if stored and stored.isdigit() else None
            except InvalidToken:
                self.report(REFUSED_TOKEN, "the Bot API refused the token: check channels.telegram.token "
                                           "(@BotFather's /mybots shows it)")
                log.error("telegram: %s; the channel is off until the gateway restarts", self.problem)
                return None
            except Exception as exc:
                self.report(UNREACHABLE, f"cannot reach the Bot API yet ({self._clean(exc)}); retrying")
                log.warning("telegram: cannot reach the Bot API yet (%s); retrying", self._clean(exc))
                await self._sleep(self._backoff(exc, failures))
                failures += 1

    async def _register_commands(self) -> None:
        from telegram import BotCommand

        try:
            await self.bot.set_my_commands([BotCommand(name, what) for name, what in COMMANDS.items()])
        except Exception as exc:  # the commands still work when typed; only the menu is missing
            log.warning("telegram: could not register the chat commands: %s", self._clean(exc))

    async def _handle(self, update: Any) -> bool:
        """Take one update; False when the gateway is shutting down and it must wait for the next start."""
        if update.callback_query is not None:
            await self._button_pressed(update.callback_query)
            return True
        message = update.message
        if message is None or message.from_user is None:
            return True
        attachments = self._attachments(message)
        text = message.text or message.caption or ""
        if not text and not attachments:
            return True  # a sticker, a location, a poll: nothing to answer
        if message.date is not None and message.date.timestamp() < self._oldest:
            return True  # from long before this start
        user = message.from_user
        sender = Sender("telegram", str(user.id), user.username or "")
        try:
            await self.receive(sender, str(message.chat_id), text, private=message.chat.type == "private",
                               attachments=attachments, message_id=message.message_id, username=user.username or "")
        except ShuttingDown:
            return False
        except Exception:  # one bad update must not stop the polling
            log.exception("telegram: could not handle an update")
        return True

    def _attachments(self, message: Any) -> tuple[Attachment, ...]:
        """What the message carries beyond text (the largest size of a photo), not yet downloaded."""
        number = message.message_id
        if message.photo:
            photo = max(message.photo, key=lambda size: size.width * size.height)
            return (self._attachment("image", photo, f"photo-{number}.jpg", PHOTO_TYPE),)
        if message.voice is not None:
            voice = message.voice
            return (self._attachment("audio", voice, f"voice-{number}.ogg", voice.mime_type or VOICE_TYPE),)
        if message.audio is not None:
            audio = message.audio
            return (self._attachment("audio", audio, audio.file_name or f"audio-{number}", audio.mime_type),)
        if message.document is not None:
            document = message.document
            return (self._attachment("document", document, document.file_name or f"file-{number}",
                                     document.mime_type),)
        return ()

    def _attachment(self, kind: Kind, file: Any, name: str, mime: str | None) -> Attachment:
        async def fetch(limit: int) -> bytes:
            return await self._download(file.file_id, limit)

        return Attachment(kind, name, plain_mime(mime), file.file_size, fetch)

    async def _download(self, file_id: str, limit: int) -> bytes:
        """getFile, then the file itself, at most ``limit`` bytes."""
        try:
            file = await self.bot.get_file(file_id)
        except Exception as exc:
            raise DownloadFailed(f"Telegram did not give the file: {self._clean(exc)}") from None
        if file.file_size is not None and file.file_size > limit:
            raise TooLarge()
        url = file.file_path or ""
        if not url.startswith(f"{self._root}/file/bot"):  # a path elsewhere (a local file) is never read
            raise DownloadFailed("Telegram gave no address to download the file from")
        return await download(url, limit, where="Telegram", secret=self.config.token)

    async def _button_pressed(self, query: Any) -> None:
        """An approval button; the presser is told the outcome in a toast."""
        answer = NOT_A_QUESTION
        if query.from_user is not None:
            sender = Sender("telegram", str(query.from_user.id), query.from_user.username or "")
            _, answer = await self.approval_pressed(sender, query.data or "")
        try:
            await self.bot.answer_callback_query(query.id, text=answer[:200])
        except Exception as exc:  # the toast is cosmetic
            log.debug("telegram: answerCallbackQuery: %s", self._clean(exc))

    async def ask_approval(self, chat_id: str, request_id: str, question: str, choices: dict[str, str]) -> str:
        from telegram import InlineKeyboardButton, InlineKeyboardMarkup

        buttons = [InlineKeyboardButton(label, callback_data=approval_button(request_id, key))
                   for key, label in choices.items()]
        sent = await self.bot.send_message(chat_id=int(chat_id), text=question,
                                           reply_markup=InlineKeyboardMarkup([buttons]))
        return str(sent.message_id)

    async def settle_approval(self, chat_id: str, message_id: str, text: str) -> None:
        await self.bot.edit_message_text(text, chat_id=int(chat_id), message_id=int(message_id))

    def _backoff(self, exc: BaseException, failures: int) -> float:
        from telegram.error import RetryAfter

        if isinstance(exc, RetryAfter):
            with warnings.catch_warnings():  # an int today, a timedelta in a later major version: both work
                warnings.simplefilter("ignore")
                seconds = exc.retry_after
            return float(seconds.total_seconds() if hasattr(seconds, "total_seconds") else seconds)
        log.warning("telegram: %s; retrying", self._clean(exc))
        return BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS) - 1)]

    async def show_typing(self, chat_id: str) -> None:
        await self.bot.send_chat_action(chat_id=int(chat_id), action="typing")

    async def deliver(self, chat_id: str, text: str) -> None:
        for piece in split_message(text or "(no answer)", TELEGRAM_LIMIT):
            await self._send_piece(int(chat_id), piece)

    def split(self, text: str) -> list[str]:
        return split_message(text, TELEGRAM_LIMIT)

    async def start_message(self, chat_id: str, text: str) -> str:
        self._stop_typing(chat_id)
        sent = await self.bot.send_message(chat_id=int(chat_id), text=text)
        return str(sent.message_id)

    async def edit_message(self, chat_id: str, message_id: str, text: str, *, final: bool) -> None:
        if not final:  # a preview, plain: half an answer's markup may not parse
            await self.bot.edit_message_text(text, chat_id=int(chat_id), message_id=int(message_id))
            return
        await self._send_piece(int(chat_id), text, edit_of=int(message_id))

    async def _send_piece(self, chat_id: int, text: str, *, edit_of: int | None = None) -> None:
        """Send (or, with ``edit_of``, put into that message) one piece as HTML, plain when Telegram rejects
        the markup; retried with backoff on 429, 5xx and network errors."""
        from telegram.error import BadRequest, Forbidden, InvalidToken

        formatted: str | None = to_telegram_html(text)
        for attempt in range(SEND_ATTEMPTS):
            try:
                mode = "HTML" if formatted is not None else None
                body = formatted if formatted is not None else text
                if edit_of is not None:
                    await self.bot.edit_message_text(body, chat_id=chat_id, message_id=edit_of, parse_mode=mode)
                else:
                    await self.bot.send_message(chat_id=chat_id, text=body, parse_mode=mode)
                return
            except BadRequest as exc:
                if edit_of is not None and "not modified" in str(exc).lower():
                    return  # the message already says exactly this
                if formatted is not None and "parse" in str(exc).lower():
                    formatted = None  # Telegram rejected the markup: the same words, plain
                    continue
                raise RuntimeError(f"Telegram refused the message: {self._clean(exc)}") from None
            except (Forbidden, InvalidToken) as exc:
                raise RuntimeError(f"Telegram refused the message: {self._clean(exc)}") from None
            except Exception as exc:  # 429, 5xx, network: back off and try again
                if attempt == SEND_ATTEMPTS - 1:
                    raise RuntimeError(f"Telegram did not take the message: {self._clean(exc)}") from None
                await self._sleep(self._backoff(exc, attempt))

    async def close(self) -> None:
        await super().close()
        try:
            await self.bot.shutdown()
        except Exception as exc:  # closing a connection that is already gone
            log.debug("telegram: shutdown: %s", self._clean(exc))
        self._records.uninstall()
