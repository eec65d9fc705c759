"""The exec sandbox against the attacks that worked before it, through the real CLI and a scripted model.

Each command below got the config, the parent's environment or a way out of the workspace before
``exec`` ran under bubblewrap. The tests skip, saying why, where the kernel refuses namespaces.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from picoora.config import Config
from picoora.tools import default_registry
from picoora.tools.os_sandbox import ExecMode, Support, exec_mode
from tests.cli_support import run_cli, write_config
from tests.exec_support import SECRET, run_attacks
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.tools_support import require_sandbox

pytestmark = pytest.mark.slow  # real sandboxed processes: `pytest -m slow` (.ci/run) runs it


def test_exec_cannot_see_the_config_the_environment_or_the_store(isolated_home):
    require_sandbox()
    config_file = isolated_home / "config.json"
    workspace = isolated_home / "workspace"
    commands = [
        f"cat {config_file}; cat $PICOORA_HOME/config.json; echo end",
        "tr '\\0' '\\n' < /proc/1/environ | grep -c -e PICO -e KEY; "
        "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c PICO",
        "env | grep -c PICO",
        "ls -A .picoora | wc -l",
        'echo owned > "$(pwd)/../escaped.txt"; echo rc=$?',
        f"ls {isolated_home} | grep -vc -e '^workspace$' -e '^config.json$'; ls /root | wc -l",
        "ls /proc | grep -c '^[0-9]'",
        f"sed -i 's/true/false/' {config_file}; echo broken > {config_file}; echo rc=$?",
    ]
    results, done = run_attacks(isolated_home, commands)
    everything = "\n".join(results.values()) + done.stdout + done.stderr
    assert SECRET not in everything and "restrict_to_workspace" not in everything
    assert results[commands[0]].startswith("end")  # nothing came out of either cat
    assert results[commands[1]].split()[:2] == ["0", "0"]  # the launcher's environment is clean too
    assert results[commands[2]].split()[0] == "0"
    assert results[commands[3]].split()[0] == "0"  # the store's private directory shows up empty
    assert not (isolated_home / "escaped.txt").exists()  # it went to a throw-away tmpfs, if anywhere
    # $PICOORA_HOME shows only the workspace bound back into it (and an empty stand-in for the
    # config); the home directory is empty.
    assert results[commands[5]].split()[:2] == ["0", "0"]
    assert int(results[commands[6]].split()[0]) <= 6  # bwrap, sh, ls, grep: no host process
    assert json.loads(config_file.read_text())["providers"]["openai"]["api_key"] == SECRET
    assert (workspace / ".picoora" / "sessions").is_dir()  # the store itself is untouched


def test_exec_has_no_network_unless_the_config_says_so(isolated_home):
    require_sandbox()
    probe = (
        "python3 -c \"import socket,sys; s=socket.socket(); s.settimeout(2);"
        " print('connected' if s.connect_ex(('127.0.0.1', int(sys.argv[1])))==0 else 'refused')\" {port}"
    )
    with FakeOllama() as target:
        port = target.url.rsplit(":", 1)[1].strip("/")
        off, _ = run_attacks(isolated_home, [probe.format(port=port)])
        on, _ = run_attacks(isolated_home, [probe.format(port=port)], exec={"network": True})
    assert "refused" in off[probe.format(port=port)]
    assert "connected" in on[probe.format(port=port)]


def test_a_setsid_daemon_does_not_outlive_the_cli(isolated_home):
    require_sandbox()
    results, _ = run_attacks(isolated_home, ["setsid sleep 41.375 > /dev/null 2>&1 & echo started"])
    assert "started" in next(iter(results.values()))
    left = subprocess.run(["pgrep", "-f", "sleep 41.375"], capture_output=True, text=True).stdout.split()
    assert left == []


def test_without_a_sandbox_exec_is_off_unless_unsandboxed_mode_is_set(monkeypatch):
    import picoora.tools.os_sandbox as os_sandbox

    monkeypatch.setattr(os_sandbox, "probe", lambda: Support(False, "bubblewrap is not installed"))
    config = Config()
    mode = exec_mode(config.tools.exec)
    assert mode == ExecMode("off", mode.description) and "allow_unsandboxed" in mode.description
    assert "exec" not in default_registry(config).names()
    config.tools.exec.allow_unsandboxed = True
    assert exec_mode(config.tools.exec).name == "unsandboxed"
    assert "exec" in default_registry(config).names()


def test_status_says_which_exec_mode_is_in_force(isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    out = run_cli("status", home=isolated_home).stdout
    line = next(line for line in out.splitlines() if line.startswith("Exec:"))
    assert "sandboxed by bubblewrap" in line or "off:" in line
    config = json.loads((isolated_home / "config.json").read_text())
    config["tools"] = {"exec": {"enabled": False}}
    (isolated_home / "config.json").write_text(json.dumps(config))
    out = run_cli("status", home=isolated_home).stdout
    assert "Exec:" in out and "tools.exec.enabled is false" in out


@pytest.mark.parametrize("per_process", [16, 2])
def test_tool_calls_are_capped_per_turn_and_per_process(tmp_path, monkeypatch, per_process):
    """Two turns at once, 40 calls each: no turn runs more than 3 at once, the process no more than its cap."""
    import asyncio

    from picoora.tools import shell
    from picoora.tools.registry import ToolRegistry
    from tests.tools_support import make_ctx

    monkeypatch.setattr(shell, "exec_mode", lambda cfg: ExecMode("unsandboxed", "test"))
    registry = ToolRegistry()
    registry.register(shell.Exec())
    settings = {"max_parallel_calls_per_turn": 3, "max_parallel_calls": per_process}
    turns = [make_ctx(tmp_path, settings=settings) for _ in range(2)]
    slots = turns[0].workspace / "slots"
    slots.mkdir()
    # Each call leaves a file while it runs and counts its own turn's files and everyone's.
    command = ("f=slots/{turn}-$$; touch $f; echo $(ls slots | grep -c '^{turn}-') $(ls slots | wc -l); "
               "sleep 0.01; rm $f")

    async def burst() -> list[str]:
        calls = [registry.execute("exec", {"command": command.format(turn=t)}, ctx)
                 for t, ctx in enumerate(turns) for _ in range(40)]
        return [r.content for r in await asyncio.gather(*calls)]

    counts = [tuple(map(int, out.split()[:2])) for out in asyncio.run(burst())]
    assert max(turn for turn, _ in counts) <= 3
    assert max(everyone for _, everyone in counts) <= min(2 * 3, per_process)


def test_a_thousand_exec_calls_in_one_message_through_the_cli(isolated_home):
    """The attack as it came: one model message asking for 1,000 exec calls (649 processes at once
    before). Each command records how many were running when it started."""
    require_sandbox()
    workspace = isolated_home / "workspace"
    (workspace / "slots").mkdir(parents=True)
    commands = [f"f=slots/{i}; touch $f; ls slots | wc -l >> widths; sleep 0.01; rm $f" for i in range(1000)]
    replies = [Reply(tool_calls=[("exec", {"command": c}) for c in commands]), Reply(content="Done.")]
    with FakeOllama(replies=replies) as fake:
        # a window that holds 1,000 call/result pairs: a smaller one is (rightly) refused before sending
        write_config(isolated_home, ollama_url=fake.url, max_tool_iterations=2, context_window=262144)
        done = run_cli("agent", "-m", "go", home=isolated_home, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    widths = [int(line) for line in (workspace / "widths").read_text().split()]
    assert len(widths) == 1000
    assert max(widths) <= 4  # tools.max_parallel_calls_per_turn, default 4
