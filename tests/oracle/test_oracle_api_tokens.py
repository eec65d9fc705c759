"""People's API tokens on the Oracle backend (the fake database): kept hashed in the owner's PICO_STATE rows."""

from __future__ import annotations

from picoora.api_tokens import ApiTokens
from picoora.config import UserConfig


def test_tokens_made_looked_up_and_revoked_on_oracle(open_store, config, fake):
    config.users = [UserConfig(name="sam")]
    store = open_store()
    tokens = ApiTokens(store, config)
    record, secret = tokens.create("sam", "tablet")
    other = open_store()  # another process, e.g. the CLI beside the gateway
    assert ApiTokens(other, config).person_of(secret).name == "sam"
    assert [(r.id, r.person, r.label) for r in ApiTokens(other, config).listed()] == [(record.id, "sam", "tablet")]
    state_rows = [str(row) for row in fake.tables["PICO_STATE"].rows]
    assert any("api.token." in row for row in state_rows)
    assert not any(secret in str(row) for table in fake.tables.values() for row in table.rows)  # only its hash
    ApiTokens(other, config).revoke(record.id)
    assert tokens.person_of(secret) is None and tokens.listed() == []
