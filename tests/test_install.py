"""install.sh end to end: a real install from a copy of this checkout into a temporary HOME.

The installs run with no index at all: pip (or uv) takes every dependency from a wheelhouse kept
in the user's cache folder, the way an offline machine would. Only when that wheelhouse lacks
something (the first run on a machine, or a new dependency) does the fixture fill it with
``pip download`` from the configured index, once. Ollama is a fake on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.ollama_server import FakeOllama

pytestmark = pytest.mark.slow  # installs the package into fresh venvs: `pytest -m slow` (.ci/run) runs it

REPO = Path(__file__).resolve().parent.parent
INSTALL_SH = REPO / "install.sh"
WHEELHOUSE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "picoora-test-wheelhouse"
# The venvs install.sh builds use this interpreter, so the wheelhouse matches their Python.
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def copy_checkout(dest: Path) -> Path:
    """The files a clone would have (tracked, plus new files not ignored), without .venv or build output."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """Every wheel the checkout needs (and setuptools to build it), for installs with no index."""
    checkout = copy_checkout(tmp_path_factory.mktemp("wheelhouse-probe"))
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(WHEELHOUSE),
                "--find-links", str(WHEELHOUSE), f"{checkout}[all]", "setuptools>=64", "wheel"]  # install.sh: all
    if subprocess.run([*download, "--no-index"], capture_output=True, timeout=300).returncode != 0:
        filled = subprocess.run(download, capture_output=True, text=True, timeout=900)
        assert filled.returncode == 0, f"could not fill {WHEELHOUSE}: {filled.stderr}"
    return WHEELHOUSE


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """A user whose HOME is ``home``: no PICOORA_HOME, no virtualenv, no PICO_* from the machine."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PICO_", "PICOORA_", "VIRTUAL_ENV", "PYTHON", "PIP_", "UV_"))}
    return {**env, "HOME": str(home), "NO_COLOR": "1", **extra}


def offline(wheelhouse: Path) -> dict[str, str]:
    """pip's and uv's settings for installing from ``wheelhouse`` only."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse), "PYTHON": BASE_PYTHON,
            "UV_NO_INDEX": "1", "UV_FIND_LINKS": str(wheelhouse), "UV_OFFLINE": "1"}


def run(args: list[str], env: dict[str, str], timeout: float = 600, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          cwd=cwd)


def install(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(["bash", str(INSTALL_SH), *args], env)


def change_code(checkout: Path, version: str) -> None:
    """New code under the same package version (pyproject.toml untouched), as on a branch: only
    ``picoora --version`` shows whether the re-run brought it."""
    path = checkout / "picoora" / "__init__.py"
    path.write_text(re.sub(r'^__version__ = ".*"$', f'__version__ = "{version}"', path.read_text(), count=1,
                           flags=re.M))


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_install_use_upgrade_uninstall_purge(tmp_path, installer, wheelhouse):
    if installer == "uv" and shutil.which("uv") is None:
        pytest.skip("uv is not installed: only the venv + pip path runs here")
    checkout = copy_checkout(tmp_path / "checkout")
    home = tmp_path / "user"
    home.mkdir()
    bin_dir, picoora_home = home / ".local" / "bin", home / ".picoora"
    link = bin_dir / "picoora"

    with FakeOllama(models=["qwen3:latest"]) as ollama:
        env = user_env(home, PICOORA_INSTALLER=installer, PICO_PROVIDERS_OLLAMA_API_BASE=ollama.url,
                       **offline(wheelhouse))

        first = install(env, "--from", str(checkout))
        assert first.returncode == 0, first.stdout + first.stderr
        assert link.is_symlink() and link.resolve() == (picoora_home / "venv" / "bin" / "picoora").resolve()
        assert f"{bin_dir} is not on your PATH" in first.stdout
        assert f"Next: {link} agent -m" in first.stdout  # Ollama answers with the model: chat is next
        config = picoora_home / "config.json"
        assert config.stat().st_mode & 0o777 == 0o600
        assert (picoora_home / "workspace" / "USER.md").is_file()

        on_path = {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
        assert run(["picoora", "--help"], on_path).returncode == 0
        status = run(["picoora", "status"], on_path, timeout=120)
        assert status.returncode == 0, status.stdout + status.stderr
        assert f"Config:    {config} ✓" in status.stdout
        assert "not reachable" not in status.stdout

        # Data and edits the user made before the upgrade.
        remembered = run(["picoora", "memory", "add", "The boat is called Ariadne"], on_path, timeout=120)
        assert remembered.returncode == 0, remembered.stderr
        edited = json.loads(config.read_text())
        edited["agents"]["defaults"]["temperature"] = 0.3
        config.write_text(json.dumps(edited))
        user_md = picoora_home / "workspace" / "USER.md"
        user_md.write_text("I sail.\n")

        change_code(checkout, "0.1.0+changed")
        again = install(on_path, "--from", str(checkout))
        assert again.returncode == 0, again.stdout + again.stderr
        assert "Creating the virtual environment" not in again.stdout  # upgraded in place
        assert "not on your PATH" not in again.stdout
        assert "Next: picoora agent -m" in again.stdout
        assert "Upgrading picoora" in again.stdout
        assert run(["picoora", "--version"], on_path).stdout.splitlines()[0] == "picoora 0.1.0+changed"
        assert json.loads(config.read_text())["agents"]["defaults"]["temperature"] == 0.3
        assert user_md.read_text() == "I sail.\n"
        listed = run(["picoora", "memory", "list", "--json"], on_path, timeout=120)
        assert "Ariadne" in listed.stdout

    gone = install(env, "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert not link.exists() and not link.is_symlink()
    assert not (picoora_home / "venv").exists()
    assert config.is_file() and user_md.read_text() == "I sail.\n"
    assert "Kept your config and data" in gone.stdout

    purged = install(env, "--uninstall", "--purge")
    assert purged.returncode == 0, purged.stderr
    assert not picoora_home.exists() and home.is_dir()


def test_help_and_bad_arguments(tmp_path):
    env = user_env(tmp_path)
    shown = install(env, "--help")
    assert shown.returncode == 0 and "--uninstall" in shown.stdout and "--from PATH" in shown.stdout
    for args, message in ((["--bogus"], "unknown option: --bogus"), (["--from"], "--from needs a path"),
                          (["--purge"], "--purge goes with --uninstall")):
        done = install(env, *args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


@pytest.mark.parametrize("target, message", [
    ("missing", "no such file or folder"),
    ("folder", "not a picoora checkout"),
    ("notes.txt", "give a checkout folder or a .whl file"),
])
def test_from_must_be_a_checkout_or_a_wheel(tmp_path, target, message):
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    done = install(user_env(tmp_path), "--from", str(tmp_path / target))
    assert done.returncode == 1 and message in done.stderr
    assert not (tmp_path / ".picoora").exists()  # nothing was created before the check


def test_an_old_or_missing_python_is_explained(tmp_path):
    old = tmp_path / "python3.8"
    old.write_text("#!/bin/sh\nexit 1\n")
    old.chmod(0o755)
    done = install(user_env(tmp_path, PYTHON=str(old)), "--from", str(REPO))
    assert done.returncode == 1 and "is not Python 3.10 or newer" in done.stderr
    bash = shutil.which("bash")
    nothing = run([bash, str(INSTALL_SH), "--from", str(REPO)], user_env(tmp_path, PATH=str(tmp_path / "empty")))
    assert nothing.returncode == 1 and "needs Python 3.10 or newer" in nothing.stderr
    assert "sudo apt install python3 python3-venv" in nothing.stderr


def test_a_file_of_the_users_at_the_link_path_is_never_replaced(tmp_path):
    bin_dir = tmp_path / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "picoora").write_text("#!/bin/sh\necho mine\n")
    done = install(user_env(tmp_path), "--from", str(REPO))
    assert done.returncode == 1 and "is not a link" in done.stderr
    assert (bin_dir / "picoora").read_text() == "#!/bin/sh\necho mine\n"


@pytest.mark.parametrize("layout", ["home itself", "someone else's folder"])
def test_purge_refuses_folders_that_are_not_picooras(tmp_path, layout):
    if layout == "home itself":
        target = tmp_path
    else:
        target = tmp_path / "projects"
        target.mkdir()
        (target / "thesis.tex").write_text("years of work")
    (tmp_path / "keep.txt").write_text("x")
    done = install(user_env(tmp_path, PICOORA_HOME=str(target)), "--uninstall", "--purge")
    assert done.returncode == 1 and "refusing to delete" in done.stderr
    assert (tmp_path / "keep.txt").exists() and target.is_dir()
    assert layout == "home itself" or (target / "thesis.tex").exists()


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed (.ci/run installs it)")
def test_install_script_is_shellcheck_clean():
    done = subprocess.run(["shellcheck", str(INSTALL_SH)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout


def test_a_broken_wheel_fails_clearly_and_leaves_config_and_data_alone(tmp_path, wheelhouse):
    home = tmp_path / "user"
    (home / ".picoora" / "workspace").mkdir(parents=True)
    config = home / ".picoora" / "config.json"
    config.write_text('{"agents": {"defaults": {"temperature": 0.2}}}')
    (tmp_path / "dl").mkdir()
    (tmp_path / "dl" / "picoora-9.9.9-py3-none-any.whl").write_bytes(b"not a zip")
    done = run(["bash", str(INSTALL_SH), "--from", "picoora-9.9.9-py3-none-any.whl", "--no-onboard"],
               user_env(home, PICOORA_INSTALLER="pip", **offline(wheelhouse)), cwd=tmp_path / "dl")
    assert done.returncode == 1
    assert f"installing picoora from {tmp_path / 'dl' / 'picoora-9.9.9-py3-none-any.whl'} failed" in done.stderr
    assert "your config and data are untouched" in done.stderr
    assert config.read_text() == '{"agents": {"defaults": {"temperature": 0.2}}}'
    assert not (home / ".local" / "bin" / "picoora").exists()
