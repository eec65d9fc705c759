"""Said before the user waits for nothing: the REPL banner names a model that cannot answer, a wrong
address gets advice about the address (one line, no HTML page), and the REPL shows the waiting spinner."""

from __future__ import annotations

import pytest

from tests.cli_support import closed_port_url_config, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.web_page_server import WebPageServer
from tests.pty_support import repl_session


def test_the_repl_banner_says_when_ollama_is_down(isolated_home):
    closed_port_url_config(isolated_home)
    text, code = repl_session(isolated_home, [])
    assert code == 0, text
    assert "Note: the first message will fail: Cannot connect to Ollama" in text and "ollama serve" in text


@pytest.mark.slow
def test_the_repl_banner_says_when_the_model_is_not_pulled_and_shows_a_spinner_while_waiting(isolated_home):
    with FakeOllama(models=("gemma3:1b",)) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        text, _ = repl_session(isolated_home, [])
    assert "Model 'qwen3:latest' is not available" in text and "ollama pull qwen3:latest" in text

    with FakeOllama([Reply(content="Slow but here.")], delay=1.2) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        text, code = repl_session(isolated_home, ["hello"])
    assert code == 0 and "Note:" not in text
    assert "waiting for qwen3:latest…" in text and "Slow but here." in text


@pytest.mark.slow
def test_a_wrong_address_serving_web_pages_gets_address_advice_in_one_line(isolated_home):
    with WebPageServer(status=404) as web:
        write_config(isolated_home, ollama_url=web.url)
        result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert result.returncode == 1
    assert "with a web page ('404 Not Found'), not an API response: providers.ollama.api_base" in result.stderr
    assert "<html" not in result.stderr.lower() and "ollama pull" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.slow
def test_status_gives_address_advice_for_a_web_server(isolated_home):
    with WebPageServer(status=404) as web:
        write_config(isolated_home, ollama_url=web.url)
        result = run_cli("status", home=isolated_home)
    assert result.returncode == 1
    provider = next(line for line in result.stdout.splitlines() if line.startswith("Provider:"))
    assert "with a web page" in provider and "ollama serve" not in provider


class BusyAtFirstOllama(FakeOllama):
    """Ollama that turns the first model check (/api/show) away as busy (its queue was full a moment),
    then answers as usual."""

    turned_away = False

    def _show(self, exchange):  # noqa: ANN001 - the fake server's exchange
        if not self.turned_away:
            self.turned_away = True
            exchange.send_json(503, {"error": "server busy, please try again.  maximum pending requests exceeded"})
            return
        super()._show(exchange)


@pytest.mark.slow  # a real REPL on a pty
def test_a_check_that_only_met_a_busy_server_warns_of_nothing_and_the_message_works(isolated_home):
    with BusyAtFirstOllama([Reply(content="Here I am.")]) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        text, code = repl_session(isolated_home, ["hello"])
    assert fake.turned_away and code == 0 and "Here I am." in text
    assert "will fail" not in text and "Note:" not in text
