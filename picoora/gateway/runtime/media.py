"""A chat message's attachments, taken inside the sender's turn: what the model gets, what the chat is told.

- a picture goes to the model with the text when the session's model takes pictures (it is saved in the
  person's files, and the transcript keeps only that reference: ``picoora.messages.Image``); otherwise
  the person is told plainly and the model is not asked;
- a voice note or audio file is transcribed (``picoora.llm.transcription``); the transcript is the turn's
  text, and the chat sees "heard: ..." first. Not configured, failed or timed out: a plain reply, and
  a recording that could not be heard is kept in the person's files;
- a document is saved in the person's files with a short reply, and one the knowledge base reads (``.pdf``,
  ``.docx``, ``.md``, ...) is added to the person's documents, so ``search_docs`` finds it; with a caption, the
  turn runs on the caption and is told where the file is.

Limits and type allow-lists (``media`` in the config) are checked on what the platform announced before
anything is downloaded, and again while downloading. Files are written new (a clashing name gets a
suffix, never an overwrite), with a name made safe, readable and writable by the owner only: nothing
received is ever made executable or run. A guest's files go to their own private folder, which no one
else's tools can read.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from picoora.gateway.channels.links import Attachment, DownloadFailed, TooLarge
from picoora.llm.base import LLMError
from picoora.llm.transcription import NOT_CONFIGURED, Transcriber, TranscriptionError
from picoora.messages import Image
from picoora.store.layout import FileLayout

if TYPE_CHECKING:
    from picoora.assistant import Assistant
    from picoora.config import MediaConfig

INBOX = "inbox"  # the owner's files, in the open workspace (their file tools can read them)
MB = 1_000_000
NAME_CHARS = 100
_UNSAFE = re.compile(r"[^\w.\- ()+,=@]+")
# What the bytes really are: the type a model is told must not be the sender's word for it.
_IMAGE_MAGIC = ((b"\xff\xd8\xff", "image/jpeg"), (b"\x89PNG\r\n\x1a\n", "image/png"), (b"GIF87a", "image/gif"),
                (b"GIF89a", "image/gif"))
_EXTENSIONS = {"image/jpeg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp",
               "audio/ogg": ".ogg", "audio/mpeg": ".mp3", "audio/mp4": ".m4a", "audio/wav": ".wav"}


@dataclass
class Taken:
    """What a message's attachments came to."""

    text: str  # the turn's text: the caption, a transcript, notes on saved files ("" with ``reply``)
    images: list[Image] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # for the chat before the answer ("heard: ...")
    reply: str = ""  # the whole answer, when the model is not to be asked


async def take(assistant: Assistant, session: str, caption: str, attachments: tuple[Attachment, ...]) -> Taken:
    media = assistant.config.media
    folder = files_folder(assistant)
    text_parts = [caption] if caption.strip() else []
    taken = Taken("")
    refusals: list[str] = []
    saved: list[str] = []
    for attachment in attachments:
        refused = refusal(attachment, media) or await _useless(assistant, session, attachment)
        if refused:
            refusals.append(refused)
            continue
        try:
            data = await attachment.fetch(limit_of(attachment, media))
        except TooLarge:
            refusals.append(f"{_label(attachment)} is larger than the {limit_of(attachment, media) / MB:g} MB "
                            f"limit ({_setting(attachment)}); I did not take it.")
            continue
        except DownloadFailed as exc:
            refusals.append(f"I could not fetch {_label(attachment)}: {exc}")
            continue
        if attachment.kind == "image":
            refused = _add_image(assistant, attachment, data, folder, taken)
            if refused:
                refusals.append(refused)
        elif attachment.kind == "audio":
            heard, problem = await _hear(assistant, attachment, data, folder)
            if problem:
                refusals.append(problem)
            else:
                taken.said.append(f"heard: {heard}")
                text_parts.append(heard)
        else:
            try:
                path = save(folder, attachment.name, data, attachment.mime)
            except OSError as exc:
                refusals.append(f"I could not save {_label(attachment)}: {exc.strerror or exc}")
                continue
            saved.append(shown(assistant, path) + await _into_documents(assistant, path))
    if saved:
        names = ", ".join(saved)
        if text_parts or taken.images:
            text_parts.append(f"[file saved: {names}]")
            taken.said.append(f"Saved {names}.")
        else:
            refusals.append(f"Saved {names}.")
    if refusals and not text_parts and not taken.images:
        taken.reply = "\n".join(refusals)
        return taken
    taken.said = refusals + taken.said
    taken.text = "\n\n".join(text_parts)
    return taken


def refusal(attachment: Attachment, media: MediaConfig) -> str:
    """Why ``attachment`` is not taken on what the platform announced ("" when it may be fetched)."""
    allowed = {"image": media.image_types, "audio": media.audio_types, "document": media.document_types}
    if attachment.mime not in allowed[attachment.kind]:
        return (f"I don't take {attachment.mime or 'files of unknown type'} as {attachment.kind}s "
                f"({_label(attachment)}); media.{attachment.kind}_types lists what I do.")
    limit = limit_of(attachment, media)
    if attachment.size is not None and attachment.size > limit:
        return (f"{_label(attachment)} is {attachment.size / MB:.1f} MB, over the {limit / MB:g} MB limit "
                f"({_setting(attachment)}); I did not take it.")
    return ""


def limit_of(attachment: Attachment, media: MediaConfig) -> int:
    megabytes = {"image": media.max_image_mb, "audio": media.max_audio_mb,
                 "document": media.max_document_mb}[attachment.kind]
    return int(megabytes * MB)


def _setting(attachment: Attachment) -> str:
    return f"media.max_{attachment.kind}_mb"


def _label(attachment: Attachment) -> str:
    shown = attachment.name[:60] if attachment.name else ""
    return f"the {attachment.kind} {shown!r}" if shown else f"the {attachment.kind}"


async def _useless(assistant: Assistant, session: str, attachment: Attachment) -> str:
    """Why fetching ``attachment`` would be for nothing ("" when it would not): not downloaded then."""
    if attachment.kind == "audio" and not assistant.config.transcription.base_url:
        return NOT_CONFIGURED
    if attachment.kind != "image":
        return ""
    try:
        sees = await assistant.sees_images(session)
    except LLMError as exc:
        return f"I could not ask the model whether it takes pictures: {exc}"
    if sees:
        return ""
    model = await assistant.session_model(session)
    return (f"The model I use here ({model.label}) cannot look at pictures, so I did not take it. Pick one "
            "that can with /model (for Ollama, e.g. `ollama pull qwen2.5vl` or `llava`; for OpenAI-compatible "
            "and Anthropic providers, list it in agents.defaults.vision_models if it is not known).")


def _add_image(assistant: Assistant, attachment: Attachment, data: bytes, folder: Path, taken: Taken) -> str:
    """The picture into ``taken`` for the model; why not, when it cannot go."""
    mime = sniffed_image(data)
    if mime is None or mime not in assistant.config.media.image_types:
        return f"{_label(attachment)} is not a picture I can read (JPEG, PNG, GIF or WebP); I did not take it."
    try:
        path = save(folder, attachment.name, data, mime)
    except OSError as exc:
        return f"I could not save {_label(attachment)}: {exc.strerror or exc}"
    taken.images.append(Image(name=attachment.name or path.name, mime=mime,
                              path=relative_to_workspace(assistant, path), data=data))
    return ""


async def _hear(assistant: Assistant, attachment: Attachment, data: bytes, folder: Path) -> tuple[str, str]:
    """(transcript, "") or ("", what to tell the chat)."""
    config = assistant.config.transcription
    name = attachment.name or f"voice{_EXTENSIONS.get(attachment.mime, '.ogg')}"
    try:
        heard = await Transcriber(config).transcribe(data, name, attachment.mime)
    except TranscriptionError as exc:
        try:
            kept = f"I kept the recording as {shown(assistant, save(folder, name, data, attachment.mime))}."
        except OSError as error:
            kept = f"I could not keep the recording either: {error.strerror or error}."
        return "", f"I could not transcribe your voice message: {exc}. {kept}"
    if not heard:
        return "", "I could not make out any words in that recording."
    return heard, ""


def sniffed_image(data: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def files_folder(assistant: Assistant) -> Path:
    """Where a person's received files go: the owner's ``inbox/`` in the workspace; a guest's own private
    folder beside their store (no one else's tools reach it)."""
    if not assistant.person:
        return assistant.workspace / INBOX
    return FileLayout(assistant.workspace).person(assistant.person) / INBOX


def relative_to_workspace(assistant: Assistant, path: Path) -> str:
    return path.relative_to(assistant.workspace).as_posix()


async def _into_documents(assistant: Assistant, path: Path) -> str:
    """A saved file the knowledge base can read goes into the person's documents; what they are told of it."""
    from picoora.docs.parsers import SUFFIXES

    if path.suffix.lower() not in SUFFIXES:
        return ""
    [outcome] = await assistant.add_document_sources([str(path)])
    if outcome.status == "failed":
        return f" (not added to your documents: {outcome.error})"
    return " and added to your documents"


def shown(assistant: Assistant, path: Path) -> str:
    """A saved file as its person is told of it: ``inbox/name``."""
    return path.relative_to(files_folder(assistant).parent).as_posix()


def safe_name(name: str, mime: str) -> str:
    """A file name that stays in its folder: no directories, no leading dots (hidden, ``..``), no control or
    shell characters, at most ``NAME_CHARS`` long with its extension kept."""
    base = unicodedata.normalize("NFKC", name.replace("\\", "/")).rsplit("/", 1)[-1]
    base = _UNSAFE.sub("_", base).strip(" ._")
    stem, dot, extension = base.rpartition(".")
    if not dot:
        stem, extension = base, ""
    extension = extension[:10]
    stem = stem[: NAME_CHARS - len(extension) - 1].strip(" ._") or "file"
    if not extension:
        return stem + _EXTENSIONS.get(mime, "")
    return f"{stem}.{extension}"


def save(folder: Path, name: str, data: bytes, mime: str) -> Path:
    """``data`` written as a new file in ``folder`` under a safe form of ``name`` ("report (2).pdf" when the
    name is taken); mode 0600, never executable; a symlink in the way is not followed."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if folder.is_symlink():
        raise OSError(f"{folder} is a symbolic link: not writing received files through it")
    stem, dot, extension = safe_name(name, mime).rpartition(".")
    if not dot:
        stem, extension = extension, ""
    suffix = f".{extension}" if extension else ""
    for number in range(1, 1000):
        path = folder / (f"{stem}{suffix}" if number == 1 else f"{stem} ({number}){suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        return path
    raise OSError(f"too many files named {stem}{suffix} in {folder}")
