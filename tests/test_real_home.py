"""No test reads the real HOME: every test has its own (tests/conftest.py), and the guard that fails a test
reading the real one (tests/home_guard.py) does catch such a read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from picoora.migrate import find_go_home
from tests.home_guard import REAL_HOME, watching


def test_each_test_has_a_home_of_its_own(tmp_path):
    own = tmp_path / "user-home"
    assert os.environ["HOME"] == str(own) != REAL_HOME
    assert Path.home() == own and Path("~/.picooraclaw").expanduser() == own / ".picooraclaw"
    child = subprocess.run([sys.executable, "-c", "import pathlib; print(pathlib.Path.home())"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str(own)  # a picoora subprocess looks there too
    (own / ".picooraclaw" / "workspace").mkdir(parents=True)
    assert find_go_home() == own / ".picooraclaw"  # migrate's default search is the test's home


def test_the_guard_sees_a_read_of_the_real_home():
    target = Path(REAL_HOME) / ".picooraclaw" / "config.json"
    with watching() as reads:
        try:
            target.read_text()
        except OSError:
            pass  # nothing there on most machines: the attempt is what counts
    assert reads == [f"open {target}"]
    with watching() as reads:
        Path(os.environ["HOME"], "x").write_text("mine")  # the test's own home is fine
    assert reads == []
