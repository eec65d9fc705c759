"""State, config and meta on PICO_STATE, PICO_CONFIG and PICO_META (meta is schema-wide: no agent_id)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from picoora.store import limits
from picoora.store.oracle import codec, schema
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.connection import UNIQUE_VIOLATED, error_code
from picoora.store.oracle.op import Op
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext


def merge(stmt: q.Sql, what: str, **binds: Any) -> Op[None]:
    """A MERGE that sets one row (insert or update), stamped now."""
    async def work(tx: Tx) -> None:
        try:
            await tx.run(stmt, now=utc_stamp(), **binds)
        except Exception as exc:
            # Two sessions merging the same new key: both see no row, one insert wins, the other gets
            # ORA-00001. Its MERGE run again finds the row and updates it (last writer wins, as in files).
            if error_code(exc) != UNIQUE_VIOLATED:
                raise
            await tx.run(stmt, now=utc_stamp(), **binds)

    return Op(work, what)


def is_schema_key(key: str) -> bool:
    """The schema's own bookkeeping rows in PICO_META (shown by ``details``, not by ``meta.all``)."""
    return key == schema.VERSION_KEY or key.startswith(("migration.", "schema."))


@dataclass(frozen=True)
class Table:
    family: str  # "state", "config", "meta": the name in errors and limits
    get: q.Sql
    set: q.Sql
    all: q.Sql
    key: str  # the bind names of the key and value columns
    value: str
    by_agent: bool = True  # rows scoped by agent_id (meta is not)
    keep: Callable[[str], bool] = lambda key: True  # which rows ``all`` returns


STATE = Table("state", q.STATE_GET, q.STATE_SET, q.STATE_ALL, "state_key", "state_value")
CONFIG = Table("config", q.CONFIG_GET, q.CONFIG_SET, q.CONFIG_ALL, "config_key", "config_value")
META = Table("meta", q.META_GET, q.META_SET, q.META_ALL, "meta_key", "meta_value", by_agent=False,
             keep=lambda key: not is_schema_key(key))


class OracleKeyValues:
    """``redact``: what a value becomes before it is stored (config: secrets redacted)."""

    def __init__(self, ctx: OracleContext, table: Table, redact: Callable[[str], str] = lambda value: value):
        self.ctx = ctx
        self._table = table
        self._redact = redact

    def _scope(self) -> dict[str, Any]:
        return {"agent_id": self.ctx.agent_id} if self._table.by_agent else {}

    @unit_of_work
    def get(self, key: str) -> Op[str | None]:
        table = self._table

        async def work(tx: Tx) -> str | None:
            row = await tx.one(table.get, **self._scope(), **{table.key: key})
            return None if row is None else codec.text(row[0])

        return Op(work, f"read {table.family}")

    @unit_of_work
    def set(self, key: str, value: str) -> Op[None]:
        table = self._table
        limits.check_key_value(table.family, key, value)
        return merge(table.set, f"save {table.family}", **self._scope(),
                     **{table.key: key, table.value: self._redact(value)})

    @unit_of_work
    def all(self) -> Op[dict[str, str]]:
        table = self._table

        async def work(tx: Tx) -> dict[str, str]:
            return {str(row[0]): codec.text(row[1]) for row in await tx.rows(table.all, **self._scope())
                    if table.keep(str(row[0]))}

        return Op(work, f"read {table.family}")


class OracleState(OracleKeyValues):
    def __init__(self, ctx: OracleContext):
        super().__init__(ctx, STATE)

    @unit_of_work
    def delete(self, key: str) -> Op[bool]:
        async def work(tx: Tx) -> bool:
            return await tx.run(q.STATE_DELETE, agent_id=self.ctx.agent_id, state_key=key) > 0

        return Op(work, "delete state")
