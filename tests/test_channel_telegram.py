"""The Telegram channel against a fake Bot API over real HTTP: who gets in (allow-list, pairing), how replies
are split and formatted, the typing indicator, retries on 429 and 5xx, and a token that never leaks."""

from __future__ import annotations

import asyncio
import logging

import pytest

from picoora.channel_registry import ChannelConfig
from picoora.config import Config
from picoora.gateway.channels.base import ChannelLinks
from picoora.gateway.channels.telegram.channel import TelegramChannel
from picoora.gateway.runtime.admission import Directory
from picoora.identities import Pairing
from picoora.store.files import FileStore
from tests.fakes.telegram_server import FakeTelegram

TOKEN = "123456:TEST-token-value-abcdef"


class Harness:
    """A channel on a fake Bot API, with an 'agent' that answers every admitted message."""

    def __init__(self, tmp_path, fake, allow_from, reply=lambda m: f"echo: {m.text}", config=None, delay=0.0):
        self.store = FileStore(tmp_path / "ws")
        self.config = config or Config()
        channel_config = ChannelConfig(enabled=True, token=TOKEN, allow_from=allow_from, api_base=fake.url)
        self.sleeps: list[float] = []

        async def quick_sleep(seconds):
            self.sleeps.append(seconds)
            await asyncio.sleep(0.01)

        directory = Directory(self.config, self.store)

        async def admit(sender, allow):
            return await asyncio.to_thread(directory.admit, sender, allow)

        async def get_state(key):
            return self.store.state.get(key)

        async def set_state(key, value):
            self.store.state.set(key, value)

        links = ChannelLinks(admit=admit, submit=self.submit, get_state=get_state, set_state=set_state)
        self.channel = TelegramChannel(channel_config, links, sleep=quick_sleep)
        self.reply, self.delay = reply, delay
        self.admitted = []  # Inbound envelopes the channel submitted as turns
        self._turns: set[asyncio.Task] = set()

    def submit(self, inbound):
        """The turn service's part, played by an 'agent' that answers after ``delay``."""
        self.admitted.append(inbound)

        async def turn():
            await asyncio.sleep(self.delay)
            await self.channel.send(inbound.chat_id, self.reply(inbound))

        task = asyncio.get_running_loop().create_task(turn())
        self._turns.add(task)
        return task

    async def run(self, until, seconds=10.0):
        tasks = [asyncio.create_task(self.channel.run())]
        try:
            deadline = asyncio.get_running_loop().time() + seconds
            while not until() and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.02)
        finally:
            for task in tasks + list(self._turns):
                task.cancel()
            await asyncio.gather(*tasks, *self._turns, return_exceptions=True)
            await self.channel.close()


def test_an_empty_allow_list_admits_nobody_and_a_stranger_gets_one_pairing_code(tmp_path):
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=[])
        fake.push(5, "hello?")
        fake.push(5, "hello??")
        asyncio.run(h.run(lambda: len(fake.calls) > 8, seconds=3))
    assert h.admitted == []  # nothing of theirs reached the agent
    [reply] = fake.texts(5)  # told once, not once per message
    assert "picoora pair approve" in reply
    code = reply.split("approve ")[1].split()[0]
    assert [r.code for r in Pairing(h.store).pending()] == [code]


def test_pairing_approval_admits_them_as_their_own_person_and_a_restart_answers_nothing_twice(tmp_path):
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=[])
        fake.push(5, "hi")
        asyncio.run(h.run(lambda: fake.texts(5) and h.store.state.get("telegram.offset"), seconds=5))
        code = fake.texts(5)[0].split("approve ")[1].split()[0]
        assert Pairing(h.store).approve(code, "sam").name == "sam"
        h2 = Harness(tmp_path, fake, allow_from=[])
        fake.push(5, "it's me again")
        asyncio.run(h2.run(lambda: h2.admitted and len(fake.texts(5)) > 1, seconds=5))
    assert [(m.text, m.person.name, m.person.owner) for m in h2.admitted] == [
        ("it's me again", "sam", False)]
    assert fake.texts(5)[-1] == "echo: it's me again"


@pytest.mark.parametrize("allow_from, user, username, expected", [
    (["*"], 7, "", ("guest-telegram-7", False)),
    (["7"], 7, "", ("owner", True)),
    (["@Alice"], 8, "alice", ("owner", True)),
    (["7"], 9, "mallory", None),
])
def test_the_allow_list_by_id_username_or_star(tmp_path, allow_from, user, username, expected):
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=allow_from)
        fake.push(user, "ping", username=username)
        asyncio.run(h.run(lambda: fake.texts(user), seconds=5))
    if expected is None:
        assert h.admitted == [] and "pair approve" in fake.texts(user)[0]
    else:
        person = h.admitted[0].person
        assert (person.name, person.owner) == expected and fake.texts(user) == ["echo: ping"]


def test_configured_people_win_over_the_allow_list(tmp_path):
    config = Config.model_validate({"users": [{"name": "me", "owner": True, "identities": ["telegram:7"]},
                                              {"name": "sam", "identities": ["telegram:@sam"]}]})
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=[], config=config)
        fake.push(7, "one")
        fake.push(8, "two", username="Sam")
        asyncio.run(h.run(lambda: len(h.admitted) == 2 and fake.texts(8), seconds=5))
    assert {(m.text, m.person.name, m.person.owner) for m in h.admitted} == {
        ("one", "me", True), ("two", "sam", False)}


def test_long_replies_are_split_on_paragraphs_and_formatted(tmp_path):
    paragraphs = [f"Paragraph {i}: " + "word " * 300 for i in range(6)]  # ~1,500 characters each
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=["7"], reply=lambda m: "**Title**\n\n" + "\n\n".join(paragraphs))
        fake.push(7, "tell me a lot")
        asyncio.run(h.run(lambda: len(fake.texts(7)) >= 3, seconds=5))
    sent = fake.texts(7)
    assert len(sent) == 3 and all(len(t) <= 4096 for t in sent)
    assert sent[0].startswith("<b>Title</b>")
    assert all(t.rstrip().endswith("word") for t in sent)  # every cut fell between paragraphs
    assert all(m["parse_mode"] == "HTML" for m in fake.sent)


def test_markup_telegram_rejects_goes_again_as_plain_text(tmp_path):
    with FakeTelegram(TOKEN) as fake:
        fake.reject_html = True
        h = Harness(tmp_path, fake, allow_from=["7"], reply=lambda m: "**bold** and <script>x</script>")
        fake.push(7, "hi")
        asyncio.run(h.run(lambda: fake.texts(7), seconds=5))
    assert fake.sent[-1].get("parse_mode") is None
    assert fake.texts(7) == ["**bold** and <script>x</script>"]  # the words, unchanged


@pytest.mark.parametrize(("reply", "shown"), [
    # Model HTML is escaped, so nothing becomes a tag.
    ('<a href="javascript:x">hi</a> `<b>`', '&lt;a href="javascript:x"&gt;hi&lt;/a&gt; <code>&lt;b&gt;</code>'),
    # The scrub mark is shown as it is: two marks on a line made the words between them bold.
    ("key *** and token *** here, **real bold**", "key *** and token *** here, <b>real bold</b>"),
])
def test_replies_become_telegram_html_that_says_what_the_model_wrote(tmp_path, reply, shown):
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=["7"], reply=lambda m: reply)
        fake.push(7, "hi")
        asyncio.run(h.run(lambda: fake.texts(7), seconds=5))
    assert fake.texts(7) == [shown]


def test_typing_is_shown_while_the_assistant_works(tmp_path):
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=["7"], delay=0.3)
        fake.push(7, "think hard")
        asyncio.run(h.run(lambda: fake.texts(7), seconds=5))
    assert fake.actions and fake.actions[0]["action"] == "typing" and int(fake.actions[0]["chat_id"]) == 7


def test_429_and_5xx_are_retried_with_backoff_and_the_reply_arrives(tmp_path):
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=["7"])
        fake.push(7, "hello")
        fake.fail_next(429, retry_after=3)
        fake.fail_next(500)
        asyncio.run(h.run(lambda: "echo: hello" in fake.texts(7), seconds=8))
    assert "echo: hello" in fake.texts(7)
    assert 3 in h.sleeps  # Telegram's retry_after was honoured


def test_the_bot_token_never_reaches_logs_or_errors(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeTelegram(TOKEN) as fake:
        h = Harness(tmp_path, fake, allow_from=["7"])
        fake.push(7, "hello")
        for _ in range(6):
            fake.fail_next(500)  # every send fails: the channel gives up with an error
        asyncio.run(h.run(lambda: len([c for c in fake.calls if c == "sendMessage"]) >= 5, seconds=8))

        refusing = Harness(tmp_path, fake, allow_from=["7"])

        async def refused():
            await refusing.channel.bot.initialize()
            with pytest.raises(RuntimeError) as failure:
                fake.fail_next(403)
                await refusing.channel.deliver("7", "x")
            await refusing.channel.close()
            return str(failure.value)

        error = asyncio.run(refused())
    records = [r.getMessage() for r in caplog.records]
    assert records and not any(TOKEN in line for line in records)
    assert TOKEN not in error and "refused" in error


def test_a_dead_bot_api_never_kills_the_channel(tmp_path):
    from tests.fakes._http import closed_port_url

    class Down:
        url = closed_port_url()

    h = Harness(tmp_path, Down, allow_from=["7"])
    asyncio.run(h.run(lambda: len(h.sleeps) >= 3, seconds=5))
    assert len(h.sleeps) >= 3  # it kept retrying with backoff instead of raising
