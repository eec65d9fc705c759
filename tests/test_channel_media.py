"""Pictures, voice notes and files on Telegram, through the real channel, runtime and assistant: a fake Bot API
serving the files, a fake Ollama (with or without "vision"), a fake speech-to-text endpoint."""

from __future__ import annotations

import asyncio
import base64
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from picoora.assistant import build_assistant
from picoora.config import Config
from picoora.gateway.runtime.services import GatewayRuntime
from picoora.identities import Person
from tests.fakes._http import closed_port_url
from tests.fakes.channel_kit import wait_for
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.slack_server import TEAM, FakeSlack
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.transcription_server import FakeTranscription

TOKEN = "123456:TEST-token-value-abcdef"
OWNER = 7
GUEST = 8
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200  # the bytes say PNG whatever the chat claims
JPEG = b"\xff\xd8\xff\xe0" + b"\x01" * 300


def make_config(telegram: FakeTelegram, ollama: FakeOllama, *, model: str = "qwen3", transcription: str = "",
                stt_seconds: float = 0.3, **media: Any) -> Config:
    return Config.model_validate({
        "agents": {"defaults": {"model": model}},
        "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
        "memory": {"embedder": "none"},
        "channels": {"telegram": {"enabled": True, "token": TOKEN, "allow_from": ["*"], "api_base": telegram.url}},
        "users": [{"name": "me", "owner": True, "identities": [f"telegram:{OWNER}"]}],
        "transcription": {"base_url": transcription, "api_key": "stt-key-123", "timeout_seconds": stt_seconds},
        "media": media,
    })


def converse(config: Config, platform: Any, script: Any, *, chat: int = OWNER, session: str = "") -> dict[str, Any]:
    """Run the gateway while ``script`` (in a thread) talks to the platform's fake; the owner's workspace and
    what the chat's session (``telegram:<chat>`` unless given) recorded come back."""
    session = session or f"telegram:{chat}"

    async def scenario() -> dict[str, Any]:
        async with build_assistant(config) as assistant:
            runtime = GatewayRuntime(assistant)
            await runtime.start()
            await asyncio.to_thread(script)
            await runtime.stop_intake()
            await runtime.turns.drain(5)
            if chat == OWNER:
                history = await assistant.history(session)
            else:
                async with runtime.people.lease(Person(f"guest-telegram-{chat}")) as theirs:
                    history = await theirs.history(session)
            await runtime.close()
            return {"workspace": assistant.workspace, "history": [e.message for e in history]}

    return asyncio.run(scenario())


def replies(telegram: FakeTelegram, chat: int, count: int) -> Any:
    return lambda: wait_for(lambda: len(telegram.texts(chat)) >= count)


def inbox(workspace: Path) -> dict[str, bytes]:
    folder = workspace / "inbox"
    return {p.name: p.read_bytes() for p in folder.iterdir()} if folder.exists() else {}


# -- pictures ---------------------------------------------------------------------------------------------


def test_a_photo_reaches_a_vision_model_as_base64_and_the_transcript_keeps_only_a_reference(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama(models=["qwen2.5vl"], vision_models=["qwen2.5vl"],
                                                     responder=lambda b: Reply(content="A cat.")) as ollama:
        config = make_config(telegram, ollama, model="qwen2.5vl")

        def script():
            telegram.push_file(OWNER, "photo", JPEG, caption="what is this?")
            replies(telegram, OWNER, 1)()
            telegram.push(OWNER, "and now?")
            replies(telegram, OWNER, 2)()

        seen = converse(config, telegram, script)
    first, second = ollama.requests[0]["messages"], ollama.requests[1]["messages"]
    assert first[-1] == {"role": "user", "content": "what is this?", "images": [base64.b64encode(JPEG).decode()]}
    assert telegram.texts(OWNER) == ["A cat.", "A cat."]
    saved = inbox(seen["workspace"])
    assert list(saved.values()) == [JPEG] and telegram.downloads == ["file1"]  # the largest size only
    path = f"inbox/{next(iter(saved))}"
    asked_again = next(m for m in second if m["content"].startswith("[image:"))  # the later turn: a note, no bytes
    assert "images" not in asked_again and asked_again["content"] == f"[image: {path}]\nwhat is this?"
    recorded = seen["history"][0]
    assert [(i.mime, i.path, i.data) for i in recorded.images] == [("image/jpeg", path, None)]


def test_a_photo_to_a_model_without_vision_gets_a_plain_reply_and_the_model_is_not_asked(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama)
        seen = converse(config, telegram, lambda: (telegram.push_file(OWNER, "photo", JPEG),
                                                   replies(telegram, OWNER, 1)()))
    [reply] = telegram.texts(OWNER)
    assert "ollama/qwen3" in reply and "cannot look at pictures" in reply and "/model" in reply
    assert ollama.requests == [] and inbox(seen["workspace"]) == {} and telegram.downloads == []


def test_a_file_that_claims_to_be_a_photo_but_is_not_one_is_refused(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama(models=["llava"], vision_models=["llava"]) as ollama:
        config = make_config(telegram, ollama, model="llava")
        converse(config, telegram, lambda: (telegram.push_file(OWNER, "photo", b"#!/bin/sh\nrm -rf ~\n"),
                                            replies(telegram, OWNER, 1)()))
    assert "not a picture I can read" in telegram.texts(OWNER)[0] and ollama.requests == []


# -- voice ------------------------------------------------------------------------------------------------


def test_a_voice_note_is_transcribed_shown_as_heard_and_answered_as_the_turn(isolated_home):
    answer = Reply(content="Milk is on the list.")
    with FakeTelegram(TOKEN) as telegram, FakeOllama(replies=[answer], delay=0.5) as ollama, \
            FakeTranscription("add milk to the shopping list") as stt:
        config = make_config(telegram, ollama, transcription=stt.base_url)
        seen = converse(config, telegram, lambda: (telegram.push_file(OWNER, "voice", b"OggS-opus-bytes"),
                                                   replies(telegram, OWNER, 2)()))
    assert telegram.texts(OWNER) == ["heard: add milk to the shopping list", "Milk is on the list."]
    after_heard = telegram.calls[telegram.calls.index("sendMessage"):]
    assert "sendChatAction" in after_heard  # typing again while the model answers
    [upload] = stt.uploads
    assert (upload.data, upload.mime, upload.fields["model"]) == (b"OggS-opus-bytes", "audio/ogg", "whisper-1")
    assert upload.filename.endswith(".ogg") and upload.authorization == "Bearer stt-key-123"
    assert ollama.requests[0]["messages"][-1]["content"] == "add milk to the shopping list"
    assert [m.content for m in seen["history"]] == ["add milk to the shopping list", "Milk is on the list."]


def test_an_audio_file_is_transcribed_under_its_own_name_and_type(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama(replies=[Reply(content="Noted.")]) as ollama, \
            FakeTranscription("meeting at noon") as stt:
        config = make_config(telegram, ollama, transcription=stt.base_url)
        converse(config, telegram, lambda: (telegram.push_file(OWNER, "audio", b"ID3-mp3", name="memo.mp3",
                                                               mime="audio/mpeg"), replies(telegram, OWNER, 2)()))
    assert telegram.texts(OWNER) == ["heard: meeting at noon", "Noted."]
    assert (stt.uploads[0].filename, stt.uploads[0].mime) == ("memo.mp3", "audio/mpeg")


def test_a_voice_note_without_transcription_configured_says_how_to_set_it_up(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama)
        converse(config, telegram, lambda: (telegram.push_file(OWNER, "voice", b"OggS"), replies(telegram, OWNER, 1)()))
    assert "transcription.base_url" in telegram.texts(OWNER)[0] and ollama.requests == []
    assert telegram.downloads == [] and "getFile" not in telegram.calls


@pytest.mark.parametrize(("server", "says"), [({"status": 500}, "answered 500: fake failure 500"),
                                              ({"delay": 0.6}, "did not answer within 0.3 s")])
def test_a_failing_or_silent_transcription_server_gets_a_clear_reply_and_the_recording_is_kept(isolated_home, server,
                                                                                               says):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama, FakeTranscription(**server) as stt:
        config = make_config(telegram, ollama, transcription=stt.base_url)
        seen = converse(config, telegram, lambda: (telegram.push_file(OWNER, "voice", b"OggS-words"),
                                                   replies(telegram, OWNER, 1)()))
    [reply] = telegram.texts(OWNER)
    assert "could not transcribe" in reply and says in reply and "inbox/voice-1.ogg" in reply
    assert inbox(seen["workspace"]) == {"voice-1.ogg": b"OggS-words"} and ollama.requests == []
    assert stt.uploads[0].data == b"OggS-words"


def test_an_unreachable_transcription_server_names_the_setting(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama, transcription=closed_port_url())
        converse(config, telegram, lambda: (telegram.push_file(OWNER, "voice", b"OggS"), replies(telegram, OWNER, 1)()))
    assert "check transcription.base_url" in telegram.texts(OWNER)[0]


# -- documents --------------------------------------------------------------------------------------------


def test_documents_are_saved_with_safe_names_never_overwritten_never_executable(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama)

        def script():
            telegram.push_file(OWNER, "document", b"%PDF-1", name="report.pdf", mime="application/pdf")
            replies(telegram, OWNER, 1)()
            telegram.push_file(OWNER, "document", b"%PDF-2", name="report.pdf", mime="application/pdf")
            replies(telegram, OWNER, 2)()
            telegram.push_file(OWNER, "document", b"pwned", name="../../.picoora/sessions/x.json", mime="text/plain")
            replies(telegram, OWNER, 3)()
            telegram.push_file(OWNER, "document", b"#!/bin/sh", name=".bashrc", mime="text/plain")
            replies(telegram, OWNER, 4)()

        seen = converse(config, telegram, script)
    workspace = seen["workspace"]
    assert inbox(workspace) == {"report.pdf": b"%PDF-1", "report (2).pdf": b"%PDF-2", "x.json": b"pwned",
                                "bashrc": b"#!/bin/sh"}
    told = telegram.texts(OWNER)
    assert [line.split(" (not added")[0] for line in told[:2]] == ["Saved inbox/report.pdf",
                                                                  "Saved inbox/report (2).pdf"]
    assert all("not added to your documents: cannot be parsed as .pdf" in line for line in told[:2])  # not a PDF
    assert told[2:] == ["Saved inbox/x.json.", "Saved inbox/bashrc."]  # kept, not documents the library reads
    assert not (workspace / ".picoora" / "sessions" / "x.json").exists()
    for path in (workspace / "inbox").iterdir():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert ollama.requests == []  # a file alone is saved, not sent to the model


def test_a_document_with_a_caption_is_saved_and_the_model_is_told_where(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama(responder=lambda b: Reply(content="Read it.")) as ollama:
        config = make_config(telegram, ollama)
        converse(config, telegram, lambda: (
            telegram.push_file(OWNER, "document", b"a,b\n1,2\n", name="data.csv", mime="text/csv", caption="sum it"),
            replies(telegram, OWNER, 2)()))
    assert telegram.texts(OWNER) == ["Saved inbox/data.csv.", "Read it."]
    assert ollama.requests[0]["messages"][-1]["content"] == "sum it\n\n[file saved: inbox/data.csv]"


def test_oversized_and_wrong_typed_files_are_refused_before_downloading(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama, max_document_mb=1)

        def script():
            telegram.push_file(OWNER, "document", b"x", name="big.pdf", mime="application/pdf", announced=3_000_000)
            replies(telegram, OWNER, 1)()
            telegram.push_file(OWNER, "document", b"MZ", name="setup.exe", mime="application/x-msdownload")
            replies(telegram, OWNER, 2)()

        seen = converse(config, telegram, script)
    too_big, wrong_type = telegram.texts(OWNER)
    assert "3.0 MB, over the 1 MB limit (media.max_document_mb)" in too_big
    assert "application/x-msdownload" in wrong_type and "media.document_types" in wrong_type
    assert telegram.downloads == [] and "getFile" not in telegram.calls and inbox(seen["workspace"]) == {}


def test_a_file_larger_than_announced_is_cut_off_while_streaming(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama, max_document_mb=0.5)
        seen = converse(config, telegram, lambda: (
            telegram.push_file(OWNER, "document", b"y" * 2_000_000, name="liar.pdf", mime="application/pdf",
                               announced=1000),
            replies(telegram, OWNER, 1)()))
    assert "larger than the 0.5 MB limit" in telegram.texts(OWNER)[0]
    assert telegram.downloads == ["file1"] and inbox(seen["workspace"]) == {}


def test_a_bot_api_pointing_at_a_local_file_is_not_followed(isolated_home, tmp_path):
    private = tmp_path / "id_rsa"
    private.write_text("PRIVATE KEY")
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        telegram.file_path = str(private)
        config = make_config(telegram, ollama)
        seen = converse(config, telegram, lambda: (
            telegram.push_file(OWNER, "document", b"x", name="a.txt", mime="text/plain"),
            replies(telegram, OWNER, 1)()))
    assert "Telegram gave no address" in telegram.texts(OWNER)[0] and inbox(seen["workspace"]) == {}


def test_a_guests_file_goes_to_their_own_private_folder_not_the_owners_inbox(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama)
        seen = converse(config, telegram, lambda: (
            telegram.push_file(GUEST, "document", b"guest notes", name="notes.txt", mime="text/plain"),
            replies(telegram, GUEST, 1)()), chat=GUEST)
    workspace = seen["workspace"]
    assert telegram.texts(GUEST) == ["Saved inbox/notes.txt and added to your documents."]
    assert inbox(workspace) == {}
    own = workspace / ".picoora" / "people" / f"guest-telegram-{GUEST}" / "inbox" / "notes.txt"
    assert own.read_bytes() == b"guest notes"
    documents = asyncio.run(_documents(config, f"guest-telegram-{GUEST}"))
    assert documents["guest"] == ["notes.txt"] and documents["owner"] == []  # theirs alone


async def _documents(config: Config, guest: str) -> dict[str, list[str]]:
    async with build_assistant(config) as assistant:
        runtime = GatewayRuntime(assistant)
        async with runtime.people.lease(Person(guest)) as theirs:
            guests = [Path(d.source).name for d in await theirs.documents()]
        return {"owner": [Path(d.source).name for d in await assistant.documents()], "guest": guests}


def test_a_stranger_s_file_is_never_downloaded(isolated_home):
    with FakeTelegram(TOKEN) as telegram, FakeOllama() as ollama:
        config = make_config(telegram, ollama)
        config.channels.telegram.allow_from = []
        converse(config, telegram, lambda: (
            telegram.push_file(99, "document", b"spam", name="a.pdf", mime="application/pdf"),
            replies(telegram, 99, 1)()))
    assert "pair approve" in telegram.texts(99)[0]
    assert telegram.downloads == [] and "getFile" not in telegram.calls


# -- Discord and Slack ------------------------------------------------------------------------------------

DISCORD = "ODk5.fake-discord-token.value"
BOT, APP = "xoxb-fake-bot-token-1234", "xapp-1-fake-app-token-5678"


def real_then_forged(make: Any, name: str, tokens: dict[str, str], owner: str, session: str, send: Any,
                     texts: Any, files_path: str) -> Any:
    """The owner sends a real file alone, then "hi" with a file whose address is another server's (as a forged
    event would): what the chat was told, the owner's inbox, what the other server was asked, the model's text."""
    with make() as platform, make() as elsewhere, FakeOllama(responder=lambda b: Reply(content="Got it.")) as ollama:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": {name: {**tokens, "enabled": True, "allow_from": ["*"], "api_base": platform.url}},
            "users": [{"name": "me", "owner": True, "identities": [owner]}],
        })

        def script():
            send(platform, "", "plan.md", "text/markdown", b"# plan", "")
            wait_for(lambda: texts(platform))
            send(platform, "hi", "x.txt", "text/plain", b"", f"{elsewhere.url}/{files_path}/F9")
            wait_for(lambda: len(texts(platform)) >= 2)

        seen = converse(config, platform, script, session=session)
    asked = ollama.requests[-1]["messages"][-1]["content"]
    return texts(platform), inbox(seen["workspace"]), elsewhere.downloads, asked


def test_a_discord_attachment_is_saved_and_one_pointing_off_discords_cdn_is_never_fetched(isolated_home):
    def send(fake, text, name, mime, data, url):
        fake.dm("61", text, files=[{"filename": name, "content_type": mime, "data": data, "url": url}])

    told, saved, elsewhere, model_got = real_then_forged(
        lambda: FakeDiscord(DISCORD), "discord", {"token": DISCORD}, "discord:61", "discord:761", send,
        lambda fake: fake.texts("761"), "attachments")
    assert told == ["Saved inbox/plan.md and added to your documents.", "Got it."] and saved == {"plan.md": b"# plan"}
    assert elsewhere == [] and model_got == "hi"


def test_a_slack_file_is_fetched_with_the_bot_token_from_slack_only_and_saved(isolated_home):
    def send(fake, text, name, mime, data, url):
        fake.dm("U7", text, files=[{"name": name, "mimetype": mime, "data": data, "url": url}])

    told, saved, elsewhere, model_got = real_then_forged(
        lambda: FakeSlack(BOT, APP), "slack", {"token": BOT, "app_token": APP}, f"slack:{TEAM}:U7",
        "slack:DU7", send, lambda fake: fake.texts("DU7"), "files-pri")
    assert told == ["Saved inbox/plan.md and added to your documents.", "Got it."] and saved == {"plan.md": b"# plan"}
    assert elsewhere == [] and model_got == "hi"


@pytest.mark.parametrize("platform", ["discord", "slack"])
def test_a_voice_message_on_discord_or_slack_is_transcribed_and_answered(isolated_home, platform):
    """The same path as Telegram's voice note: the recording is fetched from the platform, heard, shown as
    "heard: ..." and answered as the turn."""
    if platform == "discord":
        make, tokens, owner, chat = (lambda: FakeDiscord(DISCORD)), {"token": DISCORD}, "discord:61", "761"

        def send(fake):
            fake.dm("61", "", files=[{"filename": "voice-message.ogg", "content_type": "audio/ogg",
                                      "data": b"OggS-discord", "url": ""}])
    else:
        make, tokens, owner, chat = (lambda: FakeSlack(BOT, APP)), {"token": BOT, "app_token": APP}, \
            f"slack:{TEAM}:U7", "DU7"

        def send(fake):
            fake.dm("U7", "", files=[{"name": "audio_message.m4a", "mimetype": "audio/mp4",
                                      "data": b"m4a-slack", "url": ""}])
    with make() as fake, FakeOllama(replies=[Reply(content="Booked.")]) as ollama, \
            FakeTranscription("book the dentist for friday") as stt:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": {platform: {**tokens, "enabled": True, "allow_from": ["*"], "api_base": fake.url}},
            "users": [{"name": "me", "owner": True, "identities": [owner]}],
            "transcription": {"base_url": stt.base_url, "timeout_seconds": 5},
        })
        converse(config, fake, lambda: (send(fake), wait_for(lambda: len(fake.texts(chat)) >= 2)),
                 session=f"{platform}:{chat}")
    assert fake.texts(chat) == ["heard: book the dentist for friday", "Booked."]
    assert [u.data for u in stt.uploads] == [b"OggS-discord" if platform == "discord" else b"m4a-slack"]
    assert ollama.requests[0]["messages"][-1]["content"] == "book the dentist for friday"
