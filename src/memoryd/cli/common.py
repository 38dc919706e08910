"""What every ``memoryd`` command shares: the error-to-exit-code mapping, the service opener,
the --json and --now options, and the one-line renderings of memories and audit entries."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import click

from memoryd.clock import parse_instant, utc_now
from memoryd.config.settings import resolve_settings
from memoryd.errors import (
    DocumentNotFoundError,
    EvalCaseNotFoundError,
    InvalidInputError,
    MemorydError,
    MemoryNotFoundError,
    SyncSourceNotFoundError,
)
from memoryd.words import visible_controls

if TYPE_CHECKING:
    from memoryd.memory.model import AuditEntry, Memory
    from memoryd.service import MemoryService, ReviewItem, WriteResult

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


# The exit codes every command shares (click's own usage errors are 2 as well).
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

# The most rows a --limit may ask for: any more than a store holds, and an integer SQLite takes
# (a longer number was a traceback).
MAX_LISTED = 1_000_000_000

ID_HELP = (
    "Wherever a command takes a memory or document id, a unique start of it (at least 4 "
    "characters) will do, as git takes commits; an ambiguous one is refused with its matches."
)
EXIT_HELP = (
    (str(EXIT_OK), "done"),
    (str(EXIT_FAILED), "not found (or an ambiguous id), refused, or failed"),
    (
        str(EXIT_USAGE),
        "usage: an unknown command or option, a missing argument, or an option value that "
        "cannot be used (the error names the option)",
    ),
)


# The MCP server speaks JSON-RPC on standard output: its bytes are the protocol's.
RAW_OUTPUT_COMMANDS = ("mcp",)


class VisibleControls:
    """A text stream that shows control characters, bidi overrides and NUL as ``\\uXXXX``
    (tab and newline pass): every command's output goes through it, so a stored text can
    never erase, overwrite or reorder what the owner reads in a terminal. JSON output stays
    valid and means the same (``\\u001b`` is the escape JSON itself uses)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        """Write ``text`` with its control characters shown."""
        self._stream.write(visible_controls(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ErrorMappingGroup(click.Group):
    """Maps the project's errors to one line on stderr and an exit code, in one place: 2 for
    a usage error (an :class:`InvalidInputError` naming the options at fault), else 1."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a :class:`MemorydError` becomes ``error: …`` and its exit code."""
        try:
            return super().invoke(ctx)
        except MemorydError as error:
            click.echo(f"error: {visible_controls(cli_message(error))}", err=True)
            ctx.exit(exit_code(error))
        except Exception as error:
            damage = _store_damage(ctx, error)
            if damage is None:
                raise
            click.echo(f"error: {damage}", err=True)
            ctx.exit(EXIT_FAILED)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The id and exit-code conventions, after the command list."""
        super().format_epilog(ctx, formatter)
        with formatter.section("Ids"):
            formatter.write_text(ID_HELP)
        with formatter.section("Exit codes"):
            formatter.write_dl(EXIT_HELP)


def _store_damage(ctx: click.Context, error: Exception) -> MemorydError | None:
    """SQLite found damage mid-command (a store too big to check at open): the checked
    finding for the store's file, or None when the error is not about the file."""
    sqlite = sys.modules.get("sqlean")
    if sqlite is None or not isinstance(error, sqlite.DatabaseError):
        return None
    from memoryd.wiring import store_damage

    return store_damage(resolve_settings(db_option_of(ctx)), error)


def exit_code(error: MemorydError) -> int:
    """2 when the error is about how the command was called (it names the options at
    fault), else 1."""
    return EXIT_USAGE if isinstance(error, InvalidInputError) and error.fields else EXIT_FAILED


def text_of_file(file: Any, argument: str, expected: str) -> str:
    """A file argument's whole text (opened as bytes, ``-`` for stdin), read as UTF-8 with or
    without a byte-order mark; anything else (a backup, a picture, a UTF-16 file) is a usage
    error naming the argument, the first byte that is not UTF-8 and what was expected."""
    data: bytes = file.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidInputError(
            f"{argument.upper()} is not UTF-8 text (byte {data[error.start]:#04x} at offset "
            f"{error.start}); pass {expected}",
            fields=(argument,),
        ) from None


def parsed(option: str, parse: Callable[[], T]) -> T:
    """What ``parse`` makes of an option's text; its refusal names the option (``option``, by
    its Python name), so it is a usage error (exit code 2)."""
    try:
        return parse()
    except InvalidInputError as error:
        if error.fields:
            raise
        raise InvalidInputError(str(error), fields=(option,)) from None


# What a CLI user does next when an id is unknown.
_CLI_HINTS: tuple[tuple[type[MemorydError], str], ...] = (
    (MemoryNotFoundError, "list ids with `memoryd list`"),
    (DocumentNotFoundError, "`memoryd kb list` shows the ids"),
    (EvalCaseNotFoundError, "`memoryd eval list` shows the ids"),
    (SyncSourceNotFoundError, "`memoryd kb sync list` shows them"),
)


def cli_message(error: MemorydError) -> str:
    """The error's words, with the arguments at fault named as options and the CLI's next
    step for an unknown id."""
    message = str(error)
    # An argument at fault is named by its metavar in the message (TURNS_FILE), an option by
    # its flag.
    unnamed = [name for name in error.fields if name.upper() not in message]
    options = ["--" + name.replace("_", "-") for name in unnamed]
    if options and not all(option in message for option in options):
        message += " (" + ", ".join(options) + ")"
    hint = next((hint for kind, hint in _CLI_HINTS if isinstance(error, kind)), None)
    return f"{message}; {hint}" if hint else message


def db_option_of(ctx: click.Context) -> str | None:
    """The store chosen by ``--db`` (or ``MEMORYD_DB``), or None for the default."""
    root = ctx.find_root()
    return cast("str | None", root.obj["db"])


@contextmanager
def open_store_service(ctx: click.Context, *, create: bool = False) -> Iterator[MemoryService]:
    """The service over the store chosen by ``--db``, closed when the command is done."""
    with service_at(db_option_of(ctx), create=create) as service:
        yield service


@contextmanager
def service_at(location: str | None, *, create: bool) -> Iterator[MemoryService]:
    """The service over the store at ``location`` (a file or a postgresql:// URL)."""
    # Why here: the service pulls in storage, recall and the knowledge base, which `--help`
    # and a mistyped command never need (see bench/bench_startup.py).
    from memoryd.wiring import open_service

    service = open_service(resolve_settings(location), create=create)
    try:
        yield service
    finally:
        service.close()


def now_option(func: F) -> F:
    """``--now ISO``: act as if it were this time."""
    return click.option(
        "--now", "now_text", metavar="ISO", help="Act as if it were this time (for testing)."
    )(func)


def json_option(func: F) -> F:
    """``--json``: print JSON instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def with_json(func: F) -> F:
    """``--json``, and the click context as the command's first argument (the last two
    decorators of most commands)."""
    return json_option(cast("F", click.pass_context(func)))


def with_now_json(func: F) -> F:
    """``--now``, ``--json`` and the click context: what a command that acts at a time takes."""
    return now_option(with_json(func))


def trigger_options(func: F) -> F:
    """--wait, --now and --json, shared by the extraction triggers."""
    command: Any = now_option(json_option(click.pass_context(func)))
    wait = click.option("--wait", is_flag=True, help="Return after the extraction has run.")
    return cast(F, wait(command))


def now_from(now_text: str | None) -> datetime:
    """The instant given with ``--now``, else the current time."""
    if not now_text:
        return utc_now()
    return parsed("now", lambda: parse_instant(now_text, what="--now"))


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


class Shaped(Protocol):
    """A record with a JSON shape."""

    def to_json(self) -> object: ...


R = TypeVar("R", bound=Shaped)


def echo_list(
    records: Sequence[R], as_json: bool, line: Callable[[R], str], empty: str | None = None
) -> None:
    """A list command's output: with ``--json`` the records' JSON, else a line each (and
    ``empty`` when there are none)."""
    if as_json:
        print_json([record.to_json() for record in records])
        return
    if not records and empty is not None:
        click.echo(empty)
    for record in records:
        click.echo(line(record))


def echo_one(record: R, as_json: bool, line: Callable[[R], str]) -> None:
    """A command's one record: with ``--json`` its JSON, else its line."""
    if as_json:
        print_json(record.to_json())
    else:
        click.echo(line(record))


def memory_line(memory: Memory) -> str:
    """One memory on one line: id, kind, status, confidence and content."""
    content = "[purged]" if memory.purged_at else memory.content
    return (
        f"{memory.id}  {memory.kind.value:<9} {memory.status.value:<8} "
        f"{memory.confidence:.2f}  {content}"
    )


def echo_write_result(result: WriteResult) -> None:
    """What a remembered or proposed item became, the memory if one was written, and what it
    superseded."""
    memory = f" {memory_line(result.memory)}" if result.memory else ""
    click.echo(f"{result.outcome.value}: {result.reason}{memory and chr(10) + '  ' + memory}")
    for old in result.replaced:
        click.echo(f"  replaced {old.id} {_quoted(old)}")


def echo_review_item(item: ReviewItem, indent: str = "    ") -> None:
    """Why a pending memory waits for the owner, and the active fact it would replace."""
    if item.reason:
        click.echo(f"{indent}reason: {item.reason}")
    if item.would_replace is not None:
        click.echo(f"{indent}would replace: {memory_line(item.would_replace)}")


def review_json(item: ReviewItem) -> dict[str, Any]:
    """A pending memory's JSON with ``reason`` and ``would_replace`` added."""
    replaced = item.would_replace
    return {
        **item.pending.to_json(),
        "reason": item.reason,
        "would_replace": replaced.to_json() if replaced else None,
    }


def _quoted(memory: Memory) -> str:
    return "[purged]" if memory.purged_at else repr(memory.content)


def echo_memory(memory: Memory) -> None:
    """A memory's fields, one per line, leaving out the empty ones."""
    for key, value in memory.to_json().items():
        if value not in (None, [], False) or key in ("status", "content"):
            click.echo(f"{key:>18}: {value}")


def audit_line(entry: AuditEntry) -> str:
    """One audit entry on one line."""
    rule = f" [{entry.rule}]" if entry.rule else ""
    before = entry.from_status.value if entry.from_status else "-"
    return (
        f"{entry.at.isoformat()}  {entry.memory_id}  {entry.action} {before}→"
        f"{entry.to_status.value}  by {entry.actor.value}{rule}: {entry.reason}"
    )
