"""``picoora gateway`` as a real process says what will not work (a model not pulled, a Telegram token the
Bot API refuses) at start and in ``/ready``; a stranger's pairing request shows on its console (never the
code), and ``picoora pair list|approve|revoke`` from another shell decide who gets in, while it runs."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.telegram_server import FakeTelegram
from tests.test_gateway_lifecycle import TOKEN, gateway_home, start_gateway

pytestmark = pytest.mark.slow  # real gateway processes: `pytest -m slow` (.ci/run) runs it

BOT_TOKEN = "123456:TEST-token-value-abcdef"


def with_telegram(home: Path, fake: FakeTelegram, token: str = BOT_TOKEN) -> None:
    path = home / "config.json"
    data = json.loads(path.read_text())
    data["channels"] = {"telegram": {"enabled": True, "token": token, "allow_from": [], "api_base": fake.url}}
    path.write_text(json.dumps(data))


def ready(url: str) -> tuple[int, dict[str, dict]]:
    response = httpx.get(url + "/ready", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    return response.status_code, {check["name"]: check for check in response.json()["checks"]}


def wait_for(condition: Callable[[], object], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.05)


def stop(process) -> str:  # noqa: ANN001 - the gateway's Popen
    process.send_signal(signal.SIGTERM)
    assert process.wait(15) == 0
    return process.stderr.read()


def test_a_model_not_pulled_is_a_start_warning_and_ready_is_503_with_the_pull_command(isolated_home):
    with FakeOllama(models=("llama3.2:latest",)) as fake:
        gateway_home(isolated_home, fake.url)  # the config asks for qwen3:latest
        process, url, banner = start_gateway(isolated_home)
        try:
            warning = [line for line in banner if line.lstrip().startswith("warning:")]
            status, checks = ready(url)
        finally:
            stop(process)
    assert warning == ["  warning:   model: qwen3:latest is not pulled in Ollama: run `ollama pull qwen3:latest` "
                       "(/ready says so too)"]
    assert status == 503 and checks["model"]["ok"] is False and checks["store"]["ok"] is True
    assert "ollama pull qwen3:latest" in checks["model"]["detail"]


def test_a_pulled_model_and_a_working_channel_start_without_warnings_and_ready_is_200(isolated_home):
    with FakeOllama() as fake, FakeTelegram(BOT_TOKEN) as telegram:
        gateway_home(isolated_home, fake.url)
        with_telegram(isolated_home, telegram)
        process, url, banner = start_gateway(isolated_home)
        try:
            wait_for(lambda: ready(url)[0] == 200)
            status, checks = ready(url)
        finally:
            stop(process)
    assert not [line for line in banner if "warning:" in line]
    assert checks["channel telegram"] == {"name": "channel telegram", "ok": True, "detail": "connected"}
    assert checks["model"]["detail"] == "ollama answers and has qwen3:latest"


def test_a_refused_telegram_token_is_logged_at_start_and_named_by_ready_and_never_printed(isolated_home):
    wrong = "654321:WRONG-token-value-zyxwvu"
    with FakeOllama() as fake, FakeTelegram(BOT_TOKEN) as telegram:
        gateway_home(isolated_home, fake.url)
        with_telegram(isolated_home, telegram, token=wrong)
        process, url, _ = start_gateway(isolated_home)
        try:
            wait_for(lambda: "refused" in ready(url)[1]["channel telegram"]["detail"])
            status, checks = ready(url)
            time.sleep(0.5)  # a channel that kept retrying would ask again by now (it must not)
            asked = telegram.refused
        finally:
            log = stop(process)
    assert status == 503 and checks["channel telegram"]["ok"] is False
    assert "channels.telegram.token" in checks["channel telegram"]["detail"]
    assert "the Bot API refused the token" in log and "Traceback" not in log
    assert wrong not in log and wrong not in json.dumps(checks)
    assert asked == 1 and telegram.calls == []  # one getMe, refused; no retries, no polling


def test_a_stranger_is_logged_without_the_code_then_listed_approved_revoked_from_another_shell(isolated_home):
    with FakeOllama(responder=lambda body: Reply(content="Hello from the model.")) as fake, \
            FakeTelegram(BOT_TOKEN) as telegram:
        gateway_home(isolated_home, fake.url)
        with_telegram(isolated_home, telegram)
        process, _, _ = start_gateway(isolated_home)
        try:
            telegram.push(77, "let me in", username="sam")
            wait_for(lambda: telegram.texts(77))
            code = re.search(r"pair approve (\w+)", telegram.texts(77)[0]).group(1)

            waiting = run_cli("pair", "list", home=isolated_home)
            approved = run_cli("pair", "approve", code, "--as", "sam", home=isolated_home)
            with_access = run_cli("pair", "list", home=isolated_home)
            telegram.push(77, "hello again", username="sam")
            wait_for(lambda: "Hello from the model." in telegram.texts(77))

            revoked = run_cli("pair", "revoke", "sam", home=isolated_home)
            after = run_cli("pair", "list", home=isolated_home)
            telegram.push(77, "still there?", username="sam")
            wait_for(lambda: len(telegram.texts(77)) == 3)
            new_code = re.search(r"pair approve (\w+)", telegram.texts(77)[2]).group(1)
        finally:
            log = stop(process)

    assert f"{code}  telegram  @sam (id 77)" in waiting.stdout and "No one has access" in waiting.stdout
    assert approved.returncode == 0
    assert "No one is waiting." in with_access.stdout
    assert "telegram:77  as sam  (approved" in with_access.stdout
    assert "telegram:@sam" not in with_access.stdout  # an approval binds the account's id, never its username
    assert revoked.returncode == 0 and revoked.stdout.splitlines() == ["Revoked telegram:77 (was sam)."]
    assert "No one has access" in after.stdout
    assert new_code != code
    assert log.count("telegram: @sam (id 77) asked to talk to the assistant: `picoora pair list`") == 2
    assert code not in log and new_code not in log
    assert not any("let me in" in json.dumps(r) or "still there" in json.dumps(r) for r in fake.requests)


def test_revoking_someone_without_access_is_a_clear_error_and_changes_nothing(isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    for who in ("nobody", "", "*"):
        result = run_cli("pair", "revoke", who, home=isolated_home)
        assert result.returncode == 1 and "no approved access" in result.stderr, who
        assert "Traceback" not in result.stderr
    listed = run_cli("pair", "list", home=isolated_home)
    assert "No one is waiting." in listed.stdout and "No one has access" in listed.stdout


def test_config_users_are_listed_as_having_access(isolated_home):
    path = write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    data = json.loads(path.read_text())
    data["users"] = [{"name": "ana", "owner": True, "identities": ["telegram:1", "telegram:@ana"]}]
    path.write_text(json.dumps(data))
    listed = run_cli("pair", "list", home=isolated_home)
    assert "telegram:1  as ana  (config users" in listed.stdout
    assert "telegram:@ana  as ana  (config users" in listed.stdout
