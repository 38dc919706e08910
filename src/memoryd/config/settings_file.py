"""Writing ``$MEMORYD_HOME/memoryd.toml`` for ``memoryd config set`` and ``unset``.

An edit changes the one line that holds the key (or adds it to its table, or adds the table),
so comments and layout survive. The edited text is parsed again and must give exactly the
document intended; when it does not (the key sat in an inline table, a dotted key or a
multi-line value), the whole file is written anew from the parsed document, which keeps every
value but loses comments, and the change says so. The file is replaced atomically (a
temporary file, then a rename) and is readable by its owner only (0600), whatever the umask;
the change says when it holds a secret: an API key, or a store URL with a password.
"""

from __future__ import annotations

import copy
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from memoryd.config.settings import (
    KEYS,
    SettingsError,
    holds_secret,
    is_postgres_url,
    parse_value,
    read_document,
    unknown_key_message,
)
from memoryd.storage.file_modes import private_home

SECRET_FILE_MODE = 0o600

_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*)\s*\]\s*(?:#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[")
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")


@dataclass(frozen=True)
class FileChange:
    """What ``config set`` / ``unset`` did to the file."""

    path: Path
    key: str
    # The value the file held before (None: it was not set there).
    previous: Any
    # False when the file was written anew from its values (its comments are gone).
    kept_layout: bool
    mode: int
    # Whether the file now holds an API key or a store password (and so is 0600).
    holds_secret: bool


def value_for_file(key: str, text: str) -> Any:
    """The value ``config set KEY TEXT`` writes: checked and typed for ``key`` (a port is a
    number), paths made absolute so the file means the same from any folder."""
    if key not in KEYS:
        raise SettingsError(unknown_key_message(key))
    value = parse_value(key, text)
    kind = KEYS[key].kind
    if kind == "file" or (kind == "store" and not is_postgres_url(str(value))):
        value = str(Path(str(value)).expanduser().absolute())
    return value


def set_value(path: Path, key: str, value: Any) -> FileChange:
    """Write ``key = value`` into the settings file at ``path`` (created if need be)."""
    document = read_document(path)
    intended = copy.deepcopy(document)
    table = _table_for(intended, key, path, create=True)
    leaf = key.rpartition(".")[2]
    previous = table.get(leaf)
    table[leaf] = value
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    edited = _edited(text, key, f"{_key(leaf)} = {literal(value)}\n")
    return _write(path, key, previous, edited, intended)


def unset_value(path: Path, key: str) -> FileChange | None:
    """Remove ``key`` from the settings file; None when the file does not set it."""
    if key not in KEYS:
        raise SettingsError(unknown_key_message(key))
    document = read_document(path)
    intended = copy.deepcopy(document)
    table = _table_for(intended, key, path, create=False)
    leaf = key.rpartition(".")[2]
    if table is None or leaf not in table:
        return None
    previous = table.pop(leaf)
    as_left = copy.deepcopy(intended)
    if not table and "." in key:
        # A table left empty goes too, unless a comment keeps its header in the file.
        parent = _table_for(intended, key.rpartition(".")[0], path, create=False)
        parent.pop(key.split(".")[-2])
    edited = _edited(path.read_text(encoding="utf-8"), key, None)
    return _write(path, key, previous, edited, intended, as_left)


def _table_for(
    document: dict[str, Any], key: str, path: Path, *, create: bool
) -> dict[str, Any] | Any:
    table: Any = document
    for part in key.split(".")[:-1]:
        if part not in table:
            if not create:
                return None
            table[part] = {}
        table = table[part]
        if not isinstance(table, dict):
            raise SettingsError(f"{path}: {part} must be a table; fix the file by hand")
    return table


def _write(
    path: Path,
    key: str,
    previous: Any,
    edited: str | None,
    intended: dict[str, Any],
    also: dict[str, Any] | None = None,
) -> FileChange:
    """Write the edited text if it parses to ``intended`` (or ``also``), else the whole
    document anew."""
    kept = edited is not None and _parses_to(edited, [intended, also or intended])
    text = edited if kept and edited is not None else dumps(intended)
    secret = holds_secrets(intended)
    mode = _mode_for(path, secret)
    write_atomically(path, text, mode)
    return FileChange(path, key, previous, kept, mode, secret)


def _parses_to(text: str, wanted: list[dict[str, Any]]) -> bool:
    try:
        return tomllib.loads(text) in wanted
    except tomllib.TOMLDecodeError:
        return False


def _edited(text: str, key: str, line: str | None) -> str | None:
    """``text`` with ``key``'s line replaced by ``line`` (removed when None), or ``line`` added
    at the end of its table, or the table added at the end; None when the key's place cannot
    be found line by line."""
    table, _, leaf = key.rpartition(".")
    lines = text.splitlines(keepends=True)
    current: str | None = ""
    found: int | None = None
    header: int | None = -1 if table == "" else None
    last_in_table: int | None = None
    for index, raw in enumerate(lines):
        heading = _HEADER.match(raw)
        if heading or _ARRAY_HEADER.match(raw):
            current = re.sub(r"\s+", "", heading.group(1)) if heading else None
            if current == table and table:
                header = index
            continue
        assignment = _ASSIGNMENT.match(raw)
        if assignment and current == table:
            last_in_table = index
            if assignment.group(1) == leaf:
                found = index
    if found is not None and line is None and header is not None and header >= 0:
        del lines[found]
        _drop_empty_section(lines, header)
    elif found is not None:
        lines[found : found + 1] = [line] if line is not None else []
    elif line is None:
        return None
    elif header is not None:
        at = (last_in_table if last_in_table is not None else header) + 1
        lines.insert(max(at, 0), line)
    else:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines.extend((["\n"] if lines else []) + [f"[{table}]\n", line])
    return "".join(lines)


def _drop_empty_section(lines: list[str], header: int) -> None:
    """Remove the table header at ``header`` when nothing but blank lines follows it up to the
    next header (a comment keeps it), with those blank lines."""
    end = header + 1
    while (
        end < len(lines) and not _HEADER.match(lines[end]) and not _ARRAY_HEADER.match(lines[end])
    ):
        if lines[end].strip():
            return
        end += 1
    del lines[header:end]


def _mode_for(path: Path, secret: bool) -> int:
    # Settings name the store and the routes the owner uses: theirs alone, secret or not.
    return SECRET_FILE_MODE


def holds_secrets(document: Mapping[str, Any]) -> bool:
    """Whether a settings document holds an API key or a store URL with a password."""
    for name, value in document.items():
        if isinstance(value, dict) and holds_secrets(value):
            return True
        if name == "api_key" and value:
            return True
        if name == "db" and isinstance(value, str) and holds_secret(value):
            return True
    return False


def write_atomically(path: Path, text: str, mode: int) -> None:
    """Replace ``path`` with ``text`` in one rename: a reader sees the old file or the new,
    never half of one. The temporary file has ``mode`` before any byte is written."""
    if not path.parent.is_dir():
        private_home(path.parent)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def dumps(document: Mapping[str, Any]) -> str:
    """A TOML document: top-level values first, then one ``[table]`` per table."""
    lines = [f"{_key(k)} = {literal(v)}\n" for k, v in document.items() if not _is_table(v)]
    for name, value in document.items():
        if _is_table(value):
            lines.extend(_table_lines([name], value))
    return "".join(lines).lstrip("\n")


def _table_lines(path: list[str], table: Mapping[str, Any]) -> list[str]:
    values = [f"{_key(k)} = {literal(v)}\n" for k, v in table.items() if not _is_table(v)]
    subtables = [(k, v) for k, v in table.items() if _is_table(v)]
    lines: list[str] = []
    if values or not subtables:
        lines = ["\n", f"[{'.'.join(_key(part) for part in path)}]\n", *values]
    for name, value in subtables:
        lines.extend(_table_lines([*path, name], value))
    return lines


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def literal(value: Any) -> str:
    """``value`` as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_key(k)} = {literal(v)}" for k, v in value.items())
        return "{" + (f" {inner} " if inner else "") + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
