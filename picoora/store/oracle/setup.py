"""What ``picoora setup-oracle`` does to a database, step by step (the CLI only renders the outcome).

Every step is idempotent: a schema that exists is migrated or left alone, a loaded model is reported as
such (ORA-40204 counts as loaded), an index that exists is kept. ``dry_run_script`` lists the SQL a fresh
database would get, without connecting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from picoora.store.base import StoreError
from picoora.store.oracle import background, indexes, schema
from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import Database, Tx, error_code, error_codes, error_text
from picoora.store.oracle.indexes import IndexOutcome
from picoora.store.oracle.schema import EMBEDDING_DIMENSIONS

if TYPE_CHECKING:
    from picoora.store.oracle.schema import Migration

__all__ = ["EMBEDDING_DIMENSIONS", "IndexOutcome", "OracleSetup"]
DEFAULT_ONNX_FILE = "all_MiniLM_L12_v2.onnx"  # the file inside Oracle's augmented model zip (Go's default)
# What DBMS_VECTOR.LOAD_ONNX_MODEL needs to know about an embedding model (Oracle's documented default).
ONNX_METADATA = '{"function":"embedding","embeddingOutput":"embedding","input":{"input":["DATA"]}}'
MAX_MODEL_BYTES = 1 << 30  # Oracle refuses models over 1 GB
_FILE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_MODEL_LOAD_SECONDS = 900.0  # sending and importing a ~130 MB model can take minutes on a small database
# LOAD_ONNX_MODEL_CLOUD from a database that may not reach out: no network ACL for the user (ORA-24247), or
# no trust for the server's certificate (ORA-29024), usually wrapped in ORA-29273 "HTTP request failed".
_NO_NETWORK_ACL = "ORA-24247"
_NO_TLS_TRUST = "ORA-29024"
_URL_ADVICE = (
    "--onnx-url is the Autonomous Database path. On Oracle Database Free or on-premises, the database itself "
    "must be allowed to open the URL: as an administrator, DBMS_NETWORK_ACL_ADMIN.APPEND_HOST_ACE for the host "
    "(privilege 'connect' for the picoora user) and a wallet trusting its certificate; or download the model "
    "and use --onnx-file PATH (docs/oracle.md)"
)


class OracleSetup:
    """One connection's worth of setup steps. Raises OracleUnavailable (connect) or StoreError (a step)."""

    def __init__(self, db: Database):
        self.db = db
        self.model = db.model

    def connect(self) -> None:
        async def ping(tx: Tx) -> None:
            await tx.rows(q.MODELS)  # any cheap round trip proves user, password and service

        self.db.probe(ping)

    def migrate(self) -> tuple[int, list[Migration]]:
        """The version found (0: no schema) and the migrations applied (under the migration lock)."""
        return schema.upgrade(self.db, self.model)

    def model_loaded(self) -> bool:
        async def work(tx: Tx) -> bool:
            row = await tx.one(q.MODEL_LOADED, model_name=self.model)
            return bool(row and row[0])

        return self.db.run(work, what="check the ONNX model")

    def load_model_file(self, path: Path) -> bool:
        """Send a local .onnx file as a BLOB; False when the model was already there."""
        size = path.stat().st_size
        if size > MAX_MODEL_BYTES:
            raise ValueError(f"{path} is {size / 1e6:.0f} MB; Oracle accepts ONNX models up to 1 GB")
        data = path.read_bytes()

        async def work(tx: Tx) -> bool:
            return await _load(tx, q.LOAD_ONNX_BLOB, model_name=self.model, model_data=await tx.blob(data),
                               metadata=ONNX_METADATA)

        return self.db.run(work, what=f"load the ONNX model from {path}", timeout=_MODEL_LOAD_SECONDS)

    def load_model_directory(self, directory: str, file_name: str = DEFAULT_ONNX_FILE) -> bool:
        """Load from a file in a database DIRECTORY object (the Go setup's way)."""
        if not _FILE_NAME.match(file_name):
            raise ValueError(f"{file_name!r} is not a plain file name (letters, digits, _ . -)")

        async def work(tx: Tx) -> bool:
            return await _load(tx, q.LOAD_ONNX_DIRECTORY, directory=directory.upper(), file_name=file_name,
                               model_name=self.model, metadata=ONNX_METADATA)

        return self.db.run(work, what=f"load the ONNX model from directory {directory}", timeout=_MODEL_LOAD_SECONDS)

    def load_model_url(self, url: str) -> bool:
        """Let the database fetch the model itself (a pre-authenticated Object Storage URL; ADB's way)."""
        if not url.startswith("https://"):
            raise ValueError("--onnx-url must be an https:// URL "
                             "(for example an Object Storage pre-authenticated request)")

        async def work(tx: Tx) -> bool:
            try:
                return await _load(tx, q.LOAD_ONNX_CLOUD, model_name=self.model, uri=url, metadata=ONNX_METADATA)
            except Exception as exc:
                codes = error_codes(exc)
                if _NO_NETWORK_ACL in codes or _NO_TLS_TRUST in codes:
                    reason = ("has no network ACL for" if _NO_NETWORK_ACL in codes
                              else "does not trust the certificate of")
                    raise StoreError(f"The database {reason} {url.split('/')[2]} ({error_text(exc)}). "
                                     f"{_URL_ADVICE}") from None
                raise

        return self.db.run(work, what="load the ONNX model from the URL", timeout=_MODEL_LOAD_SECONDS)

    def self_test(self) -> int:
        """How many dimensions VECTOR_EMBEDDING returns with the configured model."""
        async def work(tx: Tx) -> int:
            row = await tx.one(q.SELF_TEST, text="picoora self-test: hello from setup-oracle")
            return int(row[0]) if row else 0

        return self.db.run(work, what="run VECTOR_EMBEDDING")

    def background_questions(self) -> int:
        """Embed the background questions automatic recall measures queries against (``background.py``);
        returns how many were embedded, 0 when the model's current set was complete already."""
        async def work(tx: Tx) -> int:
            return await background.fill(tx, self.model)

        return self.db.run(work, what="embed the background questions", timeout=_MODEL_LOAD_SECONDS)

    def vector_indexes(self, hnsw: bool = False, rebuild: bool = False) -> list[IndexOutcome]:
        """IVF (on disk; works on a default Free container) unless ``hnsw`` (needs a vector pool); deferred
        for a table that holds no vectors yet; ``rebuild``: existing ones dropped and created (see ``indexes``)."""
        return indexes.build_vector_indexes(self.db, hnsw, rebuild)

    def text_index(self) -> IndexOutcome:
        """The Oracle Text index keyword recall uses when present (absent from "slim" images)."""
        outcome = self._index(q.TEXT_INDEX_MEMORIES)
        if outcome.error is None and not self._text_index_usable():
            outcome.error = ("the index exists but is not usable (USER_INDEXES status or domain index status is not "
                             "VALID): drop IDX_PICO_MEMORIES_TEXT and run setup-oracle again")
        return outcome

    def _text_index_usable(self) -> bool:
        return self.db.run(indexes.text_index_usable, what="check the Oracle Text index")

    def _index(self, stmt: q.Sql) -> IndexOutcome:
        name = stmt.text.split(" INDEX ", 1)[1].split()[0]

        async def work(tx: Tx) -> bool:
            return await schema.run_ddl(tx, stmt)

        try:
            return IndexOutcome(name, self.db.run(work, what=f"create index {name}", timeout=indexes.INDEX_SECONDS))
        except Exception as exc:  # reported as a warning line: recall still works, just slower
            return IndexOutcome(name, False, str(exc))


async def _load(tx: Tx, stmt: q.Sql, **binds: object) -> bool:
    try:
        await tx.run(stmt, **binds)
    except Exception as exc:
        if error_code(exc) == "ORA-40204":  # loaded meanwhile (or by an earlier, interrupted run)
            return False
        raise
    return True


def model_source_binds(model: str, *, onnx_file: Path | None, onnx_dir: str | None,
                       onnx_url: str | None) -> tuple[q.Sql, dict[str, str]] | None:
    """The load statement and the binds it would get, for the dry run (None: no source given)."""
    if onnx_dir:
        name = onnx_file.name if onnx_file else DEFAULT_ONNX_FILE
        return q.LOAD_ONNX_DIRECTORY, {"directory": onnx_dir.upper(), "file_name": name, "model_name": model,
                                       "metadata": ONNX_METADATA}
    if onnx_url:
        return q.LOAD_ONNX_CLOUD, {"model_name": model, "uri": onnx_url, "metadata": ONNX_METADATA}
    if onnx_file:
        return q.LOAD_ONNX_BLOB, {"model_name": model, "model_data": f"<contents of {onnx_file}>",
                                  "metadata": ONNX_METADATA}
    return None


def dry_run_script(model: str, *, hnsw: bool, text_index: bool = True, onnx_file: Path | None = None,
                   onnx_dir: str | None = None, onnx_url: str | None = None) -> str:
    """The SQL setup-oracle runs on a fresh database, as a script a person can read (binds as comments)."""
    lines = [f"-- picoora setup-oracle --dry-run (model {model}); nothing was sent to a database", ""]

    def add(stmt: q.Sql, binds: Mapping[str, object] | None = None) -> None:
        for key, value in (binds or {}).items():
            lines.append(f"-- :{key} = {value!r}")
        lines.append(stmt.render(model) + ("\n/" if stmt.kind == "plsql" else ";"))
        lines.append("")

    lines.append(f"-- schema version {schema.LATEST_VERSION}")
    for migration in schema.MIGRATIONS:
        lines.append(f"-- migration {migration.version}: {migration.description}")
        for stmt in migration.statements:
            add(stmt)
        add(q.META_SET, {"meta_key": f"migration.{migration.version:03d}", "meta_value": migration.description,
                         "now": "<UTC now>"})
        add(q.META_SET, {"meta_key": schema.VERSION_KEY, "meta_value": str(migration.version), "now": "<UTC now>"})
    lines.append("-- the ONNX embedding model")
    add(q.MODEL_LOADED, {"model_name": model})
    load = model_source_binds(model, onnx_file=onnx_file, onnx_dir=onnx_dir, onnx_url=onnx_url)
    if load:
        add(*load)
    else:
        lines += ["-- (no --onnx-file, --onnx-dir or --onnx-url: the model must already be loaded)", ""]
    add(q.SELF_TEST, {"text": "picoora self-test: hello from setup-oracle"})
    questions = background.current_set()
    lines.append(f"-- background questions for automatic recall ({len(questions.texts)} rows, one executemany)")
    add(q.BACKGROUND_INSERT, {"embedding_model": model, "question_no": 1, "set_hash": questions.set_hash,
                              "content": questions.texts[0], "now": "<UTC now>"})
    lines.append("-- vector indexes (" + ("HNSW, needs a vector pool" if hnsw else "IVF") + ")")
    lines.append("-- (each is created once its table holds vectors; `memory reindex` rebuilds the memories' one)")
    for stmt in indexes.create_statements(hnsw):
        add(stmt)
    if text_index:
        lines.append("-- Oracle Text index for keyword recall (optional)")
        add(q.TEXT_INDEX_MEMORIES)
    return "\n".join(lines).rstrip() + "\n"


def describe_error(exc: BaseException) -> str:
    """A one-line reason for a failed step."""
    return error_text(exc) if error_code(exc) else str(exc)
