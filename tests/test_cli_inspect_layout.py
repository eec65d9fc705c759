"""``oracle-inspect`` lines up: one time format everywhere, columns at the same place on every row."""

from __future__ import annotations

import re

import pytest

from picoora.messages import Message
from picoora.store.files import FileStore
from tests.cli_support import closed_port_url_config, run_cli


@pytest.mark.slow
def test_transcript_rows_line_up_and_use_one_time_format(isolated_home):
    closed_port_url_config(isolated_home)
    store = FileStore(isolated_home / "workspace")
    for n in range(12):  # sequence numbers of one and two digits
        store.transcripts.append("cli:default",
                                 [Message(role="user" if n % 2 else "assistant", content=f"message {n}")])
    store.sessions.append("cli:default", [Message(role="user", content="hello")])
    store.close()
    table = run_cli("oracle-inspect", "transcripts", "-n", "12", home=isolated_home)
    overview = run_cli("oracle-inspect", home=isolated_home)
    assert table.returncode == 0 and overview.returncode == 0, table.stderr + overview.stderr
    rows = [line for line in table.stdout.splitlines() if re.match(r"  \d{4}-", line)]
    assert len(rows) == 12
    assert len({line.index("[cli:default]") for line in rows}) == 1, rows  # one column, whatever the number
    stamps = re.findall(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?", table.stdout + overview.stdout)
    assert stamps and all(len(stamp) == 19 for stamp in stamps)  # seconds everywhere
