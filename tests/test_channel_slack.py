"""The Slack channel against a fake Slack (Socket Mode websocket + Web API) over real sockets: who gets in
(allow-list, pairing, guests of their own), DMs, mentions and threads as sessions, mrkdwn, envelopes
acknowledged or offered again, reconnecting after a drop, 429s, refused tokens, and tokens kept out of logs."""

from __future__ import annotations

import asyncio
import logging

import pytest

from picoora.channel_registry import SlackChannelConfig
from picoora.gateway.channels.slack.channel import SlackChannel
from picoora.gateway.channels.slack.format import to_mrkdwn
from picoora.identities import Pairing
from tests.fakes.channel_kit import (
    ChannelHarness,
    pair_then_talk,
    pairing_code,
    refuses_chat_id,
    wait_for,
)
from tests.fakes.slack_server import TEAM, FakeSlack

BOT, APP = "xoxb-fake-bot-token-1234", "xapp-1-fake-app-token-5678"


def harness(tmp_path, fake, allow_from, bot=BOT, app=APP, **kwargs):
    config = SlackChannelConfig(enabled=True, token=bot, app_token=app, allow_from=allow_from, api_base=fake.url)
    return ChannelHarness(tmp_path, SlackChannel, config, **kwargs)


def test_both_tokens_are_required_and_not_swapped(tmp_path):
    with FakeSlack() as fake:
        with pytest.raises(ValueError, match="app_token"):
            harness(tmp_path, fake, allow_from=["*"], app="")
        with pytest.raises(ValueError, match="swapped") as swapped:
            harness(tmp_path, fake, allow_from=["*"], bot=APP, app=BOT)
    assert BOT not in str(swapped.value) and APP not in str(swapped.value)


def test_a_stranger_gets_one_pairing_code_and_nothing_reaches_the_agent(tmp_path):
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=[])
        asyncio.run(h.run(lambda: fake.texts("DU5") and len(fake.acks) == 2, seconds=5,
                          meanwhile=lambda: (fake.dm("U5", "hello?"), fake.dm("U5", "again"))))
    assert h.admitted == []
    [reply] = fake.texts("DU5")
    code = pairing_code(reply)
    assert [(r.code, r.sender_id) for r in Pairing(h.store).pending()] == [(code, f"{TEAM}:U5")]
    assert h.channel.state == "connected"


@pytest.mark.parametrize("allow_from, expected", [
    (["*"], (f"guest-slack-{TEAM}-U7", False)),
    ([f"{TEAM}:U7"], ("owner", True)),
    (["@Alice"], ("owner", True)),
    (["U7"], ("owner", True)),  # the Go version's bare user id: the user in any workspace
    (["U8"], None),
])
def test_the_allow_list_by_team_and_id_bare_id_username_or_star(tmp_path, allow_from, expected):
    with FakeSlack() as fake:
        fake.usernames["U7"] = "alice"
        h = harness(tmp_path, fake, allow_from=allow_from)
        asyncio.run(h.run(lambda: fake.texts("DU7"), seconds=5,
                          meanwhile=lambda: fake.dm("U7", "ping")))
    if expected is None:
        assert h.admitted == [] and "pair approve" in fake.texts("DU7")[0]
        return
    [inbound] = h.admitted
    assert (inbound.person.name, inbound.person.owner) == expected
    assert (inbound.channel, inbound.sender_id, inbound.session) == ("slack", f"{TEAM}:U7", "slack:DU7")
    assert fake.texts("DU7") == ["echo: ping"]


def test_pairing_admits_a_stranger_as_their_own_person(tmp_path):
    with FakeSlack() as fake:
        admitted = pair_then_talk(lambda: harness(tmp_path, fake, allow_from=[]),
                                  lambda t: fake.dm("U5", t), lambda: fake.texts("DU5"), taken=lambda: fake.acks)
    assert [(m.text, m.person.name, m.person.owner) for m in admitted] == [("me again", "sam", False)]


def test_mentions_are_answered_in_their_thread_and_each_thread_is_a_session(tmp_path):
    def script():
        fake.channel_message("U1", "not for the bot")
        first = fake.mention("U1", "start a plan")
        wait_for(lambda: fake.texts("CGENERAL", first))
        fake.mention("U1", "and continue it", thread_ts=first)
        threads.append(first)
        threads.append(fake.mention("U2", "another topic"))

    threads: list[str] = []
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(h.run(lambda: len(fake.posted) == 3, seconds=5, meanwhile=script))
    first, other = threads
    assert [(m.text, m.session, m.person.name) for m in h.admitted] == [
        ("start a plan", f"slack:CGENERAL:{first}", f"guest-slack-{TEAM}-U1"),
        ("and continue it", f"slack:CGENERAL:{first}", f"guest-slack-{TEAM}-U1"),
        ("another topic", f"slack:CGENERAL:{other}", f"guest-slack-{TEAM}-U2")]
    assert fake.texts("CGENERAL", first) == ["echo: start a plan", "echo: and continue it"]
    assert fake.texts("CGENERAL", other) == ["echo: another topic"]


def test_replies_are_mrkdwn_and_nothing_the_model_writes_pings_the_channel(tmp_path):
    answer = "**Done**: see [the doc](https://example.com/a?b=1&c=2) and <!channel> `x*y`"
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"], reply=lambda m: answer)
        asyncio.run(h.run(lambda: fake.texts("DU7"), seconds=5,
                          meanwhile=lambda: fake.dm("U7", "hi")))
    assert fake.texts("DU7") == [
        "*Done*: see <https://example.com/a?b=1&amp;c=2|the doc> and &lt;!channel&gt; `x*y`"]


def test_what_slack_escapes_reaches_the_model_as_typed(tmp_path):
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(h.run(lambda: h.admitted, seconds=5,
                          meanwhile=lambda: fake.dm("U7", "is 1 &lt; 2 &amp;&amp; 3 &gt; 2?")))
    assert h.admitted[0].text == "is 1 < 2 && 3 > 2?"


@pytest.mark.parametrize("markdown, mrkdwn", [
    ("# Plan\n* one\n* two", "*Plan*\n• one\n• two"),
    ("_it_ and *it* and ~~gone~~", "_it_ and _it_ and ~gone~"),
    ("```python\nx = **1** < 2\n```", "```\nx = **1** &lt; 2\n```"),
    ("[a](javascript:alert(1))", "[a](javascript:alert(1))"),  # only http(s) links become links
    ("*" * 5000, "*" * 5000),  # hostile input: linear, unchanged
])
def test_markdown_to_mrkdwn(markdown, mrkdwn):
    assert to_mrkdwn(markdown) == mrkdwn


def test_a_dropped_socket_reconnects_and_an_unacknowledged_event_is_answered_once(tmp_path):
    def script():
        fake.dm("U7", "before")
        wait_for(lambda: fake.texts("DU7"))
        fake.drop()
        fake.dm("U7", "while away")  # kept by Slack, offered to the next connection
        fake.reopen()
        wait_for(lambda: fake.connections >= 2)
        fake.refresh()  # Slack's own "reconnect, please"
        wait_for(lambda: fake.connections >= 3)

    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(h.run(lambda: len(fake.texts("DU7")) == 2 and fake.connections >= 3, seconds=10,
                          meanwhile=script))
    assert fake.texts("DU7") == ["echo: before", "echo: while away"]
    assert [m.text for m in h.admitted] == ["before", "while away"]


def test_a_redelivered_event_is_not_a_second_turn(tmp_path):
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"])

        again: list[str] = []

        def script():
            ts = fake.dm("U7", "once")
            wait_for(lambda: fake.texts("DU7"))
            again.append(fake.redeliver(ts))

        asyncio.run(h.run(lambda: again and again[0] in fake.acks, seconds=5, meanwhile=script))
    assert again[0] in fake.acks  # acknowledged, so Slack stops offering it
    assert [m.text for m in h.admitted] == ["once"] and fake.texts("DU7") == ["echo: once"]


def test_429_waits_what_slack_asked_and_5xx_is_retried(tmp_path):
    with FakeSlack() as fake:
        fake.fail_next(429, retry_after=7)
        fake.fail_next(503)
        h = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(h.run(lambda: fake.texts("DU7"), seconds=8,
                          meanwhile=lambda: fake.dm("U7", "hello")))
    assert fake.texts("DU7") == ["echo: hello"]
    assert h.sleeps[0] == 7.0  # Slack's Retry-After


@pytest.mark.parametrize("which", ["bot", "app"])
def test_a_wrong_token_is_reported_as_refused_and_never_logged(tmp_path, caplog, which):
    caplog.set_level(logging.DEBUG)
    wrong = f"{'xoxb' if which == 'bot' else 'xapp'}-the-wrong-token-0000"
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"], **{which: wrong})
        asyncio.run(h.run(lambda: h.channel.state == "refused token", seconds=5))
    assert h.channel.state == "refused token"
    assert not any(wrong in r.getMessage() for r in caplog.records)


def test_the_tokens_never_reach_the_logs_even_at_debug(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(h.run(lambda: fake.texts("DU7"), seconds=5,
                          meanwhile=lambda: fake.dm("U7", "hello")))
    records = [r.getMessage() for r in caplog.records]
    assert any("HTTP Request" in line for line in records)  # the requests were logged
    assert not any(BOT in line or APP in line for line in records)


@pytest.mark.parametrize("chat_id", ["../chat.delete", "CGENERAL:../../x", "C1:1700.1:extra", "", "c lower"])
def test_a_chat_id_that_is_not_a_slack_chat_is_refused_before_any_request(tmp_path, chat_id):
    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"])

        refuses_chat_id(h, chat_id)
    assert fake.posted == []


def test_a_slack_connect_guest_with_the_owners_handle_is_not_the_owner(tmp_path):
    with FakeSlack() as fake:
        fake.usernames["UX"] = "alice"  # the same handle, in another organisation's workspace

        def script():
            fake.dm("UX", "I am alice, honest", user_team="TOTHERORG")

        h = harness(tmp_path, fake, allow_from=["@alice"])
        asyncio.run(h.run(lambda: fake.texts("DUX"), seconds=5, meanwhile=script))
    assert h.admitted == [] and "pair approve" in fake.texts("DUX")[0]
    assert Pairing(h.store).pending()[0].sender_id == "TOTHERORG:UX"


def test_a_message_that_arrives_while_the_gateway_stops_is_answered_after_the_restart(tmp_path):
    with FakeSlack() as fake:
        stopping = harness(tmp_path, fake, allow_from=["*"])
        stopping.stopping = True
        asyncio.run(stopping.run(lambda: False, seconds=1,
                                 meanwhile=lambda: fake.dm("U7", "are you there?")))
        assert fake.acks == [] and fake.posted == []  # not taken, so not acknowledged: Slack keeps it
        restarted = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(restarted.run(lambda: fake.texts("DU7") and fake.acks, seconds=5))
    assert [m.text for m in restarted.admitted] == ["are you there?"]
    assert fake.texts("DU7") == ["echo: are you there?"] and len(fake.acks) == 1


def test_configured_people_are_found_by_their_slack_identity(tmp_path):
    from picoora.config import Config

    people = Config.model_validate({"users": [{"name": "me", "owner": True, "identities": [f"slack:{TEAM}:U7"]},
                                              {"name": "sam", "identities": ["slack:@Sam"]}]})
    with FakeSlack() as fake:
        fake.usernames["U8"] = "sam"
        h = harness(tmp_path, fake, allow_from=[], config=people)
        asyncio.run(h.run(lambda: len(fake.posted) == 2, seconds=5, meanwhile=lambda: (
            fake.dm("U7", "one"), fake.dm("U8", "two"))))
    assert sorted((m.text, m.person.name, m.person.owner) for m in h.admitted) == [
        ("one", "me", True), ("two", "sam", False)]


def test_a_frame_that_is_not_json_is_skipped_and_the_socket_kept(tmp_path):
    def script():
        fake.push_raw("{not json")
        fake.push_raw("[1, 2]")
        fake.dm("U7", "still there?")

    with FakeSlack() as fake:
        h = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(h.run(lambda: fake.texts("DU7"), seconds=5, meanwhile=script))
    assert fake.texts("DU7") == ["echo: still there?"] and fake.connections == 1


def test_a_disconnect_before_hello_again_and_again_is_reopened_with_backoff_not_in_a_loop(tmp_path):
    with FakeSlack() as fake:
        fake.disconnect_at_once = True
        h = harness(tmp_path, fake, allow_from=["*"])
        asyncio.run(h.run(lambda: len(h.sleeps) >= 3, seconds=5))
    assert 3 <= len(h.sleeps) and fake.connections <= len(h.sleeps) + 1
