"""The one secrets module: encoded forms scrubbed, DSN passwords hidden, both stores and the CLI redacting."""

from __future__ import annotations

import base64
import json
import subprocess
from urllib.parse import quote

import pytest

from picoora.config import Config, ConfigError, load_config, secret_values
from picoora.secrets import REDACTED, dsn_password, encoded_forms, redact_dsn, redact_text, redact_tree, scrub
from picoora.store.files import FileStore
from tests.cli_support import REPO, run_cli

SECRET = 'sk-test-"quoted"/and+slash=0123'


def test_scrub_hides_the_value_and_its_likely_encodings():
    forms = [
        SECRET,
        json.dumps(SECRET)[1:-1],
        quote(SECRET, safe=""),
        base64.b64encode(SECRET.encode()).decode(),
    ]
    for form in forms:
        assert SECRET not in scrub(f"before {form} after", [SECRET])
        assert form not in scrub(f"before {form} after", [SECRET])


@pytest.mark.parametrize("prefix", [b"", b"A", b"AB", b"PICO_PROVIDERS_OPENAI_API_KEY="])
def test_scrub_hides_a_secret_inside_a_larger_base64_blob_at_any_alignment(prefix):
    """``tr '\\0' '\\n' < /proc/$PPID/environ | base64 -w0`` moved the secret to an unknown offset."""
    blob = base64.b64encode(prefix + SECRET.encode() + b"\nOTHER=1").decode()
    before, redacted, after = scrub(blob, [SECRET]).partition(REDACTED)
    assert redacted
    # Every base64 character that depends on the secret alone is gone (at most one partly-secret
    # character survives on each side).
    removed = len(blob) - len(before) - len(after)
    assert removed >= len(SECRET) * 4 // 3 - 2


@pytest.mark.parametrize("size", [10, 600, 50_000])
def test_every_form_is_found_in_short_and_long_text_alike(size):
    """Long texts are tested form by form before the alternation runs: no form may slip past that test."""
    for form in sorted(encoded_forms(SECRET)):
        text = "x" * size + form + "y" * size
        assert form not in scrub(text, [SECRET]) and REDACTED in scrub(text, [SECRET]), form
    assert scrub("z" * size, [SECRET]) == "z" * size


def test_short_values_are_left_alone():
    assert scrub("abc and abcd", ["abc"]) == "abc and abcd"


@pytest.mark.parametrize(
    "dsn, shown, password",
    [
        ("oracle://picoora:hunter2x@db:1521/FREEPDB1", "oracle://picoora:***@db:1521/FREEPDB1", "hunter2x"),
        ("picoora/hunter2x@db:1521/FREEPDB1", "picoora/***@db:1521/FREEPDB1", "hunter2x"),
        ("db.example.com:1521/FREEPDB1", "db.example.com:1521/FREEPDB1", None),
        ("(DESCRIPTION=(ADDRESS=(HOST=db)(PORT=1521)))", "(DESCRIPTION=(ADDRESS=(HOST=db)(PORT=1521)))", None),
    ],
)
def test_a_dsn_is_shown_without_its_password(dsn, shown, password):
    assert redact_dsn(dsn) == shown
    assert dsn_password(dsn) == password


def test_config_secrets_include_dsn_passwords_and_env_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("PICO_ORACLE_DSN", "picoora/dsn-pass-9876@db:1521/FREEPDB1")
    monkeypatch.setenv("PICO_PROVIDERS_OPENAI_API_KEY", "env-key-abcdef")
    config = load_config(tmp_path / "missing.json")
    assert {"dsn-pass-9876", "env-key-abcdef"} <= set(secret_values(config))
    tree = redact_tree(config.model_dump(mode="json"))
    assert "dsn-pass-9876" not in json.dumps(tree) and "env-key-abcdef" not in json.dumps(tree)


def test_a_config_error_never_shows_a_secret(monkeypatch, tmp_path):
    path = tmp_path / "config.json"
    # The key is in the right place; the secret is also pasted into a field that fails validation.
    path.write_text(json.dumps({"providers": {"openai": {"api_key": "pasted-secret-123"}},
                                "agents": {"defaults": {"max_tokens": "pasted-secret-123"}}}))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "pasted-secret-123" not in str(err.value) and "max_tokens" in str(err.value)


def test_the_file_store_keeps_config_rows_redacted(tmp_path):
    store = FileStore(tmp_path / "ws", secrets=["known-secret-value"])
    try:
        snapshot = {"oracle": {"password": "pw-123456", "dsn": "u/dsnpw99@h/s"}, "note": "known-secret-value"}
        store.config.set("full_config", json.dumps(snapshot))
        store.config.set("note", "uses known-secret-value")
        on_disk = (tmp_path / "ws" / ".picoora" / "state" / "config.json").read_text()
        for leaked in ("pw-123456", "dsnpw99", "known-secret-value"):
            assert leaked not in on_disk
        assert json.loads(store.config.get("full_config"))["oracle"]["password"] == REDACTED
        assert store.config.get("note") == "uses ***"
    finally:
        store.close()


def test_redact_text_leaves_ordinary_values_alone():
    assert redact_text("qwen3:latest", ["some-secret"]) == "qwen3:latest"
    assert redact_text('{"model": "x"}') == '{"model": "x"}'


def test_cli_error_lines_are_scrubbed(isolated_home):
    """A storage failure quoting the DSN back must not print its password on the CLI's error line."""
    config = Config()
    config.oracle.enabled = True
    config.oracle.mode = "dsn"
    config.oracle.dsn = "picoora/cli-dsn-pw-4242@127.0.0.1:9/NOPE"
    config.oracle.connect_timeout_seconds = 0.5
    config.providers.ollama.api_base = "http://127.0.0.1:9"
    (isolated_home / "config.json").write_text(config.model_dump_json())
    done = run_cli("status", home=isolated_home, timeout=60)
    assert "cli-dsn-pw-4242" not in done.stdout + done.stderr


def test_the_cli_error_line_scrubs_known_secrets(capsys):
    from picoora.cli import errors

    errors._known_secrets[:] = ["scrub-me-please"]
    try:
        errors.report(errors.CLIError("driver said: login scrub-me-please failed for u/pw1234@db"))
    finally:
        errors._known_secrets.clear()
    line = capsys.readouterr().err
    assert "scrub-me-please" not in line and "pw1234" not in line and "u/***@db" in line


def test_no_other_scrubber_is_left():
    found = subprocess.run(["grep", "-rlE", r"def (scrub|redact_value|meaningful_secrets)\b", "picoora"],
                           capture_output=True, text=True, cwd=REPO).stdout.split()
    assert found == ["picoora/secrets.py"]
    hand_rolled = subprocess.run(["grep", "-rn", "replace(secret", "picoora"], capture_output=True, text=True,
                                 cwd=REPO).stdout
    assert hand_rolled == ""
