"""A small Oracle SQL checker for the lint test and the fake connection (no database needed).

No available parser understands Oracle 23ai vector SQL, so (as ``shared/reference/oracle.md`` §2.3
describes) 23ai-only syntax is rewritten to something sqlglot's Oracle dialect parses, the shapes sqlglot
cannot parse (vector/text index DDL, PL/SQL calls) are matched against their documented grammar, and a
denylist catches syntax from other databases that sqlglot would happily accept.
"""

from __future__ import annotations

import re

# python-oracledb's own bind rules: skip string literals, quoted identifiers and comments.
_TOKENS = re.compile(r"""('(?:[^']|'')*')|("[^"]*")|(--[^\n]*)|(/\*.*?\*/)|(:\s*"[^"]+"|:\w+)""", re.DOTALL)
_LITERALS = re.compile(r"""'(?:[^']|'')*'|"[^"]*"|--[^\n]*|/\*.*?\*/""", re.DOTALL)

_IDENT = r"[A-Za-z][A-Za-z0-9_$#]*"
_VECTOR_INDEX = re.compile(
    rf"^CREATE VECTOR INDEX {_IDENT} ON {_IDENT}\s*\({_IDENT}\)"
    r" ORGANIZATION (?:INMEMORY NEIGHBOR GRAPH|NEIGHBOR PARTITIONS)"
    r"(?: DISTANCE (?:COSINE|DOT|EUCLIDEAN|EUCLIDEAN_SQUARED|MANHATTAN|HAMMING|JACCARD))?"
    r"(?: WITH TARGET ACCURACY \d{1,3})?"
    r"(?: PARAMETERS \((?:TYPE (?:HNSW|IVF)[^()]*)\))?"
    r"(?: PARALLEL \d+)?(?: ONLINE)?$"  # ONLINE: 26ai, for IVF ("Create IVF Index Online")
)
_TEXT_INDEX = re.compile(
    rf"^CREATE INDEX {_IDENT} ON {_IDENT}\s*\({_IDENT}\) INDEXTYPE IS CTXSYS\.CONTEXT(?: ONLINE)?"
    r"(?: PARAMETERS \('[^']*'\))?$"
)
_DROP_PRIMARY_KEY = re.compile(rf"^ALTER TABLE {_IDENT} DROP PRIMARY KEY$")
# Shapes sqlglot reads as opaque commands, matched against their documented grammar instead.
_COLUMN_TYPE = r"(?:VARCHAR2\(\d+(?: CHAR| BYTE)?\)|NUMBER(?:\(\d+(?:,\d+)?\))?|CLOB|DATE|TIMESTAMP)"
_SHAPES = (
    (re.compile(r"^ALTER TABLE \w+ MODIFY\b"), re.compile(
        rf"^ALTER TABLE {_IDENT} MODIFY \({_IDENT} {_COLUMN_TYPE}(?:, {_IDENT} {_COLUMN_TYPE})*\)$"),
     "ALTER TABLE ... MODIFY (column type, ...)"),
    (re.compile(r"^ALTER SESSION "), re.compile(r"^ALTER SESSION SET DDL_LOCK_TIMEOUT = \d{1,7}$"),
     "ALTER SESSION SET DDL_LOCK_TIMEOUT = n"),
    (re.compile(r"^LOCK TABLE "), re.compile(
        rf"^LOCK TABLE {_IDENT} IN (?:ROW SHARE|ROW EXCLUSIVE|SHARE|SHARE ROW EXCLUSIVE|EXCLUSIVE) MODE"
        r"(?: NOWAIT| WAIT \d+)?$"), "LOCK TABLE t IN mode MODE [NOWAIT | WAIT n]"),
)
_PLSQL_CALL = re.compile(rf"^BEGIN ({_IDENT}\.{_IDENT})\((.*)\); END;$", re.DOTALL)
_NAMED_ARG = re.compile(rf"^\s*{_IDENT}\s*=>\s*(.+?)\s*$", re.DOTALL)

_DENYLIST = (
    (re.compile(r",\s*(?:FROM|WHERE|\))", re.I), "trailing comma"),
    (re.compile(r",\s*$"), "trailing comma"),
    (re.compile(r"\bLIMIT\s+(?:\d|:)", re.I), "LIMIT (Oracle uses FETCH FIRST n ROWS ONLY)"),
    (re.compile(r"\bON\s+CONFLICT\b|\bON\s+DUPLICATE\s+KEY\b", re.I), "upsert syntax of another database (use MERGE)"),
    (re.compile(r"::\s*\w"), "::cast (use CAST or TO_*)"),
    (re.compile(r"`"), "backtick quoting"),
    (re.compile(r"\bAUTO_INCREMENT\b|\bSERIAL\b", re.I), "auto-increment of another database (use IDENTITY)"),
    (re.compile(r"\bILIKE\b|\bRETURNING\s+\*", re.I), "syntax of another database"),
    (re.compile(r"\bTRUE\b|\bFALSE\b"), "boolean literal in SQL (use 1/0)"),
    (re.compile(r"<=>"), "the <=> operator (use VECTOR_DISTANCE)"),
)


def bind_names(sql: str) -> list[str]:
    """Bind placeholders in order of appearance (upper-cased unless quoted), duplicates kept."""
    names = []
    for match in _TOKENS.finditer(sql):
        token = match.group(5)
        if token:
            name = token[1:].strip()
            names.append(name[1:-1] if name.startswith('"') else name.upper())
    return names


def check_binds(sql: str, binds: dict) -> None:
    """Named binds: the set of placeholder names must equal the keys passed (case-insensitive)."""
    wanted = set(bind_names(sql))
    given = {key.upper() for key in binds}
    if wanted != given:
        raise AssertionError(f"bind mismatch: SQL uses {sorted(wanted)}, call passes {sorted(given)}\n  {sql}")


def rewrite_23ai(sql: str) -> str:
    """23ai-only syntax in a form sqlglot's Oracle dialect parses (meaning kept, only the shape changes)."""
    sql = re.sub(r"VECTOR_EMBEDDING\(\s*(\w+)\s+USING\s+(.+?)\s+AS\s+data\s*\)", r"VECTOR_EMBEDDING(\1, \2)", sql,
                 flags=re.I)
    sql = re.sub(r"\bVECTOR\(\s*(?:\d+|\*)\s*,\s*(?:FLOAT32|FLOAT64|INT8|BINARY|\*)\s*(?:,\s*(?:DENSE|SPARSE)\s*)?\)",
                 "VECTOR", sql, flags=re.I)
    sql = re.sub(r"\bFETCH\s+(?:APPROX|APPROXIMATE|EXACT)\s+FIRST\b", "FETCH FIRST", sql, flags=re.I)
    sql = re.sub(r"(ROWS\s+ONLY)\s+WITH\s+TARGET\s+ACCURACY\s+\d+", r"\1", sql, flags=re.I)
    return sql


def problems(sql: str) -> list[str]:
    """What is wrong with one statement; empty when it is acceptable Oracle SQL."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ErrorLevel

    found = []
    bare = _LITERALS.sub("''", sql)
    for pattern, what in _DENYLIST:
        if pattern.search(bare):
            found.append(what)
    if re.match(r"^CREATE VECTOR INDEX\b", sql):
        return found + ([] if _VECTOR_INDEX.match(sql)
                        else ["CREATE VECTOR INDEX does not follow the documented grammar"])
    if "INDEXTYPE IS" in sql:
        return found + ([] if _TEXT_INDEX.match(sql) else ["Oracle Text index does not follow the documented grammar"])
    for applies, shape, grammar in _SHAPES:
        if applies.match(sql):
            return found + ([] if shape.match(sql) else [f"does not follow the documented grammar: {grammar}"])
    if re.match(r"^ALTER TABLE \w+ DROP PRIMARY KEY", sql):
        return found + ([] if _DROP_PRIMARY_KEY.match(sql) else ["malformed DROP PRIMARY KEY"])
    if sql.startswith("BEGIN"):
        call = _PLSQL_CALL.match(sql)
        if not call:
            return found + ["PL/SQL must be a single call: BEGIN pkg.proc(name => value, ...); END;"]
        args = _split_args(call.group(2))
        values = [_NAMED_ARG.match(arg) for arg in args]
        if not all(values):
            return found + ["PL/SQL arguments must all be named (name => value)"]
        sql = f"SELECT {call.group(1).replace('.', '_')}({', '.join(v.group(1) for v in values)}) FROM DUAL"
    if re.match(r"^CREATE (?:UNIQUE )?INDEX\b", sql) and sql.endswith(" ONLINE"):
        sql = sql.removesuffix(" ONLINE")  # SQL Reference CREATE INDEX: ONLINE after the columns; sqlglot lacks it
    try:
        trees = sqlglot.parse(rewrite_23ai(sql), read="oracle", error_level=ErrorLevel.RAISE)
    except sqlglot.errors.ParseError as err:
        return found + [f"does not parse: {str(err).splitlines()[0]}"]
    for tree in trees:
        if tree is None or isinstance(tree, exp.Command):
            found.append("not understood by the parser (parsed as an opaque command)")
        elif isinstance(tree, exp.Merge) and not isinstance(tree.args.get("on"), exp.Expression):
            found.append("MERGE without ON")
    if len(trees) != 1:
        found.append("more than one statement")
    return found


def _split_args(text: str) -> list[str]:
    """Split a call's argument list on top-level commas."""
    args, depth, current = [], 0, []
    for char in text:
        if char == "," and depth == 0:
            args.append("".join(current))
            current = []
            continue
        depth += char == "("
        depth -= char == ")"
        current.append(char)
    args.append("".join(current))
    return args
