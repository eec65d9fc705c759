"""A fake Telegram Bot API on 127.0.0.1 for the channel tests, spoken to by python-telegram-bot.

Implements getMe, deleteWebhook, getUpdates (long polling over a queue the test fills with
``push``), sendMessage (recorded; rejects malformed HTML as Telegram does, or plays scripted failures:
``fail_next(429, retry_after=1)``, ``fail_next(500)``) and sendChatAction (recorded). Files:
``push_file`` sends a photo, voice note, audio or document whose bytes ``getFile`` and
``/file/bot<token>/<path>`` serve (chunked, so a file larger than announced shows only while it
streams); ``downloads`` lists the file fetches.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque

from tests.fakes._http import Exchange, FakeServer

_TAG = re.compile(r"</?([a-z]+)[^>]*>")
_ALLOWED = {"b", "i", "u", "s", "code", "pre", "a"}


def _html_ok(text: str) -> bool:
    """Rough Telegram HTML check: only known tags, properly nested."""
    stack = []
    for match in _TAG.finditer(text):
        tag, closing = match.group(1), match.group(0).startswith("</")
        if tag not in _ALLOWED:
            return False
        if closing:
            if not stack or stack.pop() != tag:
                return False
        else:
            stack.append(tag)
    return not stack


class FakeTelegram(FakeServer):
    def __init__(self, token: str = "123456:TEST-token-value-abcdef", port: int = 0):
        super().__init__(port=port)
        self.token = token
        self.updates: deque[dict] = deque()
        self.sent: list[dict] = []
        self.edits: list[dict] = []  # editMessageText bodies, in order
        self.commands: list[dict] = []  # what setMyCommands registered
        self.toasts: list[str] = []  # answerCallbackQuery texts (what a button press was told)
        self.actions: list[dict] = []
        self.calls: list[str] = []
        self.refused = 0  # requests that carried another token (answered 401)
        self.failures: deque[tuple[int, dict]] = deque()
        self.reject_html = False  # answer every HTML message with "can't parse entities"
        self._next_id = 1
        self._arrived = threading.Condition()
        self.files: dict[str, bytes] = {}  # file_id -> its bytes
        self.announced: dict[str, int] = {}  # file_id -> the size getFile claims
        self.file_path = ""  # set: getFile answers this path (a hostile or local-mode Bot API)
        self.downloads: list[str] = []  # file paths downloaded, in order

    # -- what the test does -----------------------------------------------------------------------

    def push(self, user_id: int, text: str, *, chat_id: int | None = None, username: str = "",
             chat_type: str = "private") -> None:
        with self._arrived:
            update_id = self._next_id
            self._next_id += 1
            sender = {"id": user_id, "is_bot": False, "first_name": "T"}
            if username:
                sender["username"] = username
            self.updates.append({"update_id": update_id, "message": {
                "message_id": update_id, "date": int(time.time()), "text": text, "from": sender,
                "chat": {"id": chat_id or user_id, "type": chat_type}}})
            self._arrived.notify_all()

    def push_file(self, user_id: int, kind: str, data: bytes, *, caption: str = "", name: str = "",
                  mime: str = "", announced: int | None = None, chat_id: int | None = None) -> None:
        """A message carrying a file: ``kind`` is photo, voice, audio or document; ``announced``: the size
        the message claims (default: the true one)."""
        size = len(data) if announced is None else announced
        with self._arrived:
            update_id = self._next_id
            self._next_id += 1
            file_id = f"file{update_id}"
            self.files[file_id] = data
            self.announced[file_id] = size
            described: dict = {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": size}
            if kind == "photo":
                small = {**described, "file_id": f"{file_id}s", "width": 90, "height": 60, "file_size": 10}
                self.files[f"{file_id}s"] = data[:10]
                media: object = [small, {**described, "width": 1280, "height": 960}]
            elif kind == "voice":
                media = {**described, "duration": 3, **({"mime_type": mime} if mime else {})}
            else:
                media = {**described, **({"mime_type": mime} if mime else {}), **({"file_name": name} if name else {})}
                if kind == "audio":
                    media["duration"] = 3
            message = {"message_id": update_id, "date": int(time.time()), kind: media,
                       "from": {"id": user_id, "is_bot": False, "first_name": "T"},
                       "chat": {"id": chat_id or user_id, "type": "private"}}
            if caption:
                message["caption"] = caption
            self.updates.append({"update_id": update_id, "message": message})
            self._arrived.notify_all()

    def press(self, user_id: int, data: str, *, chat_id: int | None = None) -> None:
        """A button press (a callback query) on the last message sent to the chat."""
        with self._arrived:
            update_id = self._next_id
            self._next_id += 1
            message = {"message_id": len(self.sent), "date": int(time.time()), "text": "",
                       "chat": {"id": chat_id or user_id, "type": "private"}}
            self.updates.append({"update_id": update_id, "callback_query": {
                "id": f"cb{update_id}", "chat_instance": "1", "data": data, "message": message,
                "from": {"id": user_id, "is_bot": False, "first_name": "T"}}})
            self._arrived.notify_all()

    def buttons(self, chat_id: int) -> list[str]:
        """The callback data of the buttons on the last message to the chat that has any."""
        for sent in reversed(self.sent):
            if int(sent["chat_id"]) == chat_id and sent.get("reply_markup"):
                markup = sent["reply_markup"]
                markup = json.loads(markup) if isinstance(markup, str) else markup
                return [button["callback_data"] for row in markup["inline_keyboard"] for button in row]
        return []

    def fail_next(self, status: int, retry_after: int | None = None) -> None:
        self.failures.append((status, {"retry_after": retry_after} if retry_after is not None else {}))

    def texts(self, chat_id: int) -> list[str]:
        return [m["text"] for m in self.sent if int(m["chat_id"]) == chat_id]

    # -- the API ----------------------------------------------------------------------------------

    def route(self, exchange: Exchange) -> None:
        try:
            self._route(exchange)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on a long poll (the channel was stopped)

    def _route(self, exchange: Exchange) -> None:
        if exchange.method == "GET" and exchange.path.startswith(f"/file/bot{self.token}/"):
            self._file(exchange, exchange.path.rsplit("/", 1)[1])
            return
        prefix = f"/bot{self.token}/"
        if not exchange.path.startswith(prefix):
            self.refused += 1
            exchange.send_json(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
            return
        method = exchange.path[len(prefix):]
        self.calls.append(method)
        if method in ("sendMessage", "sendChatAction") and self.failures:
            status, parameters = self.failures.popleft()
            exchange.send_json(status, {"ok": False, "error_code": status, "description": f"fake error {status}",
                                        **({"parameters": parameters} if parameters else {})})
            return
        handler = getattr(self, f"_{method}", None)
        if handler is None:
            exchange.send_json(404, {"ok": False, "error_code": 404, "description": "Not Found"})
            return
        handler(exchange)

    def _ok(self, exchange: Exchange, result: object) -> None:
        exchange.send_json(200, {"ok": True, "result": result})

    def _getMe(self, exchange: Exchange) -> None:
        self._ok(exchange, {"id": 999, "is_bot": True, "first_name": "pico", "username": "pico_bot",
                            "can_join_groups": False, "can_read_all_group_messages": False,
                            "supports_inline_queries": False})

    def _deleteWebhook(self, exchange: Exchange) -> None:
        self._ok(exchange, True)

    def _getUpdates(self, exchange: Exchange) -> None:
        body = exchange.body
        offset = int(body.get("offset", 0) or 0)
        timeout = min(float(body.get("timeout", 0) or 0), 1.0)  # short polls keep the tests quick
        with self._arrived:
            while offset and self.updates and self.updates[0]["update_id"] < offset:
                self.updates.popleft()  # confirmed by the client
            if not self.updates and timeout:
                self._arrived.wait(timeout)
            self._ok(exchange, list(self.updates))

    def _refused_markup(self, exchange: Exchange, body: dict) -> bool:
        """Telegram's answer to HTML it cannot parse (sent, and True, when it applies)."""
        if body.get("parse_mode") == "HTML" and (self.reject_html or not _html_ok(body["text"])):
            exchange.send_json(400, {"ok": False, "error_code": 400,
                                     "description": "Bad Request: can't parse entities: unsupported start tag"})
            return True
        return False

    def _sendMessage(self, exchange: Exchange) -> None:
        body = dict(exchange.body)
        if self._refused_markup(exchange, body):
            return
        if len(body["text"]) > 4096:
            exchange.send_json(400, {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"})
            return
        self.sent.append(body)
        self._ok(exchange, {"message_id": len(self.sent), "date": int(time.time()), "text": body["text"],
                            "chat": {"id": int(body["chat_id"]), "type": "private"}})

    def _editMessageText(self, exchange: Exchange) -> None:
        body = dict(exchange.body)
        if self._refused_markup(exchange, body):
            return
        target = next((m for i, m in enumerate(self.sent, 1) if i == int(body["message_id"])), None)
        if target is None:
            exchange.send_json(400, {"ok": False, "error_code": 400,
                                     "description": "Bad Request: message to edit not found"})
            return
        if target["text"] == body["text"]:
            exchange.send_json(400, {"ok": False, "error_code": 400,
                                     "description": "Bad Request: message is not modified"})
            return
        target["text"] = body["text"]
        self.edits.append(body)
        self._ok(exchange, {"message_id": int(body["message_id"]), "date": int(time.time()), "text": body["text"],
                            "chat": {"id": int(body["chat_id"]), "type": "private"}})

    def _answerCallbackQuery(self, exchange: Exchange) -> None:
        self.toasts.append(str(exchange.body.get("text", "")))
        self._ok(exchange, True)

    def _setMyCommands(self, exchange: Exchange) -> None:
        commands = exchange.body.get("commands") or []
        self.commands = json.loads(commands) if isinstance(commands, str) else list(commands)
        self._ok(exchange, True)

    def _sendChatAction(self, exchange: Exchange) -> None:
        if "action" not in exchange.body:  # a request the client gave up on halfway (its typing was stopped)
            exchange.send_json(400, {"ok": False, "error_code": 400, "description": "Bad Request: action is empty"})
            return
        self.actions.append(dict(exchange.body))
        self._ok(exchange, True)

    def _getFile(self, exchange: Exchange) -> None:
        file_id = str(exchange.body.get("file_id", ""))
        if file_id not in self.files:
            exchange.send_json(400, {"ok": False, "error_code": 400, "description": "Bad Request: invalid file_id"})
            return
        size = self.announced.get(file_id, len(self.files[file_id]))
        self._ok(exchange, {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": size,
                            "file_path": self.file_path or f"documents/{file_id}"})

    def _file(self, exchange: Exchange, file_id: str) -> None:
        self.downloads.append(file_id)
        if file_id not in self.files:
            exchange.send_json(404, {"ok": False, "error_code": 404, "description": "Not Found"})
            return
        exchange.send_bytes(200, self.files[file_id], chunked=True)

    def _close(self, exchange: Exchange) -> None:
        self._ok(exchange, True)
