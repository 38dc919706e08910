"""The claims in docs/ that can be checked by reading the code: docs/service.md's route table
names exactly the API's routes, and docs/configuration.md's key table names exactly the keys
memoryd knows, with the defaults the code applies."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from fastapi.routing import APIRoute

from memoryd.cli import main as cli_main
from memoryd.config.keys import KEYS, key_summary, unknown_key_message
from memoryd.config.settings import DEFAULT_DAILY_AT, DEFAULT_HOST, DEFAULT_PORT
from memoryd.http.api import create_app
from memoryd.http.proxy_routes import proxy_router
from memoryd.kb.converted import Limits
from memoryd.providers.query_model import int8_queries_by_default
from memoryd.proxy.policy import ProxySettings
from memoryd.recall.policy import RecallPolicy

DOCS = Path(__file__).resolve().parents[2] / "docs"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _table(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with ``header`` (cells split
    on ``|`` that is not escaped, ``\\|`` kept as ``|`` inside a cell)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
        rows.append([cell.replace("\\|", "|").strip() for cell in cells])
    return rows


def _expanded(path: str) -> Iterator[str]:
    """``/a[/{id}]`` → ``/a`` and ``/a/{id}``; ``/a/{id}/x|y`` → both; a query dropped."""
    path = re.sub(r"\[?\?[^\]]*\]?$", "", path)
    optional = re.fullmatch(r"(.*)\[(.*)\](.*)", path)
    if optional:
        yield from _expanded(optional[1] + optional[3])
        yield from _expanded(optional[1] + optional[2] + optional[3])
        return
    head, _, last = path.rpartition("/")
    for name in last.split("|"):
        yield re.sub(r"\{[^}]*\}", "{}", f"{head}/{name}")


def documented_routes(text: str) -> set[tuple[str, str]]:
    """``(method, path)`` for each route service.md's API table names (a path written without
    a method has the one before it: "`POST /v1/observe`, `/v1/compaction`")."""
    routes: set[tuple[str, str]] = set()
    for row in _table(text, "| route | what |"):
        method = ""
        for span in re.findall(r"`([^`]*)`", row[0]):
            words = span.split()
            if words and words[0] in METHODS:
                method, words = words[0], words[1:]
            if len(words) == 1 and words[0].startswith("/v1/"):
                routes.update((method, path) for path in _expanded(words[0]))
    return routes


def _api_routes(routes: Any) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif (included := getattr(route, "original_router", None)) is not None:
            yield from _api_routes(included.routes)


def served_routes() -> set[tuple[str, str]]:
    """Every ``(method, path)`` the API serves under /v1/, the chat proxy's included."""
    app = create_app(None, "t" * 32, web=False)  # type: ignore[arg-type]
    routes = [*_api_routes(app.routes), *_api_routes(proxy_router.routes)]
    return {
        (method, re.sub(r"\{[^}]*\}", "{}", route.path))
        for route in routes
        for method in route.methods or ()
        if route.path.startswith("/v1/")
    }


def test_service_md_names_exactly_the_routes_the_api_serves() -> None:
    documented = documented_routes((DOCS / "service.md").read_text(encoding="utf-8"))
    served = served_routes()
    assert sorted(served - documented) == [], "served but not in docs/service.md's table"
    assert sorted(documented - served) == [], "in docs/service.md's table but not served"


def test_a_route_left_out_of_service_md_is_caught() -> None:
    text = (DOCS / "service.md").read_text(encoding="utf-8")
    broken = text.replace("`POST /v1/forget`", "`POST /v1/forgot`")
    documented = documented_routes(broken)
    assert ("POST", "/v1/forget") in served_routes() - documented
    assert ("POST", "/v1/forgot") in documented - served_routes()


def documented_keys(text: str) -> dict[str, str]:
    """Each key configuration.md's table names, with the default written in its row (a row of
    several keys lists their defaults in order; ``llm.<setting>`` rows name each setting in
    backticks after the word that introduces them)."""
    keys: dict[str, str] = {}
    for row in _table(text, "| key | what |"):
        names = re.findall(r"`([^`]*)`", row[0])
        defaults = [part.strip() for part in row[4].split(",")]
        for number, name in enumerate(names):
            default = defaults[number] if len(defaults) == len(names) else row[4]
            if "<setting>" not in name:
                keys[name] = default
                continue
            if "`provider`" in row[1]:  # the row that lists its settings
                settings = re.findall(r"`([a-z_]+)`", row[1])
                settings = [s for s in settings if s not in ("openai", "anthropic", "local")]
            else:  # an operation's or the chat route: the settings llm.<setting> listed
                settings = [k.split(".")[-1] for k in keys if re.fullmatch(r"llm\.[a-z_]+", k)]
            operations = re.findall(r"`([a-z]+)`", row[1]) if "<operation>" in name else [""]
            for operation in operations:
                for setting in settings:
                    full = name.replace("<operation>", operation).replace("<setting>", setting)
                    keys[full] = default
    return keys


def test_configuration_md_names_exactly_the_keys_memoryd_knows() -> None:
    documented = documented_keys((DOCS / "configuration.md").read_text(encoding="utf-8"))
    assert sorted(set(KEYS) - set(documented)) == [], "known but not in configuration.md"
    assert sorted(set(documented) - set(KEYS)) == [], "in configuration.md but not known"


def test_a_key_left_out_of_configuration_md_is_caught() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    broken = text.replace("`max_retries`, `structured`", "`structured`")
    assert "llm.reflect.max_retries" not in documented_keys(broken)
    assert "llm.reflect.max_retries" in documented_keys(text)


def test_configuration_md_states_the_defaults_the_code_applies(tmp_path: Path) -> None:
    documented = documented_keys((DOCS / "configuration.md").read_text(encoding="utf-8"))
    proxy, limits = ProxySettings(), Limits()
    switch = {True: "on", False: "off"}
    applied = {
        "serve.host": DEFAULT_HOST,
        "serve.port": str(DEFAULT_PORT),
        "serve.daily_at": DEFAULT_DAILY_AT,
        "proxy.enabled": switch[proxy.enabled],
        "proxy.inject": proxy.inject,
        "proxy.observe": switch[proxy.observe],
        "proxy.recall_timeout": f"{proxy.recall_deadline:g}",
        "kb.convert_seconds": f"{limits.convert_seconds:g}",
        "kb.convert_memory_mb": str(limits.convert_memory_bytes // (1024 * 1024)),
    }
    assert {key: documented[key] for key in applied} == applied
    # The int8 query model's default follows the CPU, as the table says.
    assert documented["embed.int8_queries"] == "on where the CPU has VNNI, else off"
    flags = "processor\t: 0\nflags\t\t: fpu sse2 avx2 {}\n"
    for extra, expected in (("avx512_vnni", True), ("avx_vnni", True), ("", False)):
        info = tmp_path / f"cpuinfo-{extra or 'avx2'}"
        info.write_text(flags.format(extra), encoding="utf-8")
        assert switch[int8_queries_by_default(info)] == switch[expected], extra
    assert int8_queries_by_default(tmp_path / "no-such-file") is False
    assert proxy.budget is None and documented["proxy.budget"] == "the recall budget"


def _brace_expanded(summary: str) -> set[str]:
    """``db, serve.{host,port}, llm.{a,b}.{x,y}`` → every key it stands for."""
    keys: set[str] = set()
    for item in re.split(r",\s+(?![^{]*\})", summary):
        forms = [""]
        for literal, choices in re.findall(r"([^{]*)(?:\{([^}]*)\})?", item.strip()):
            forms = [f + literal + c for f in forms for c in (choices.split(",") or [""])]
        keys.update(forms)
    return keys


def test_an_unknown_key_is_answered_with_every_key_memoryd_knows() -> None:
    """The refusal of a typo lists the valid keys (compactly): all of them, and no other."""
    assert _brace_expanded(key_summary()) == set(KEYS)
    assert key_summary() in unknown_key_message("serve.prot")


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        yield " ".join((*prefix, name)), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def command_options() -> dict[str, set[str]]:
    """Each command's (and subcommand's) long options, as ``memoryd … --help`` lists them."""
    return {
        name: {
            option
            for param in command.params
            if isinstance(param, click.Option)
            for option in (*param.opts, *param.secondary_opts)
            if option.startswith("--")
        }
        for name, command in _commands(cli_main)
    }


def documented_options(text: str, commands: set[str]) -> dict[str, set[str]]:
    """The options docs/cli.md's table writes in each usage (``kb sync add PATH [--later]``),
    under the longest command name the usage starts with."""
    found: dict[str, set[str]] = {}
    for row in _table(text, "| command | what |"):
        for usage in re.findall(r"`([^`]*)`", row[0]):
            words = usage.split()
            name = next(" ".join(words[:n]) for n in (3, 2, 1) if " ".join(words[:n]) in commands)
            options = re.findall(r"--[a-z][a-z-]*", usage)
            found.setdefault(name, set()).update(options)
    return found


# Every command has these; docs/cli.md says so once, below its table.
COMMON_OPTIONS = {"--json", "--now", "--help"}


def test_cli_md_names_exactly_each_commands_options() -> None:
    real = command_options()
    documented = documented_options((DOCS / "cli.md").read_text(encoding="utf-8"), set(real))
    wrong = {c: sorted(o - real[c]) for c, o in documented.items() if o - real[c]}
    assert wrong == {}, "options docs/cli.md gives that the command does not have"
    left_out = {
        command: sorted(real[command] - COMMON_OPTIONS - documented[command])
        for command in documented
        if real[command] - COMMON_OPTIONS - documented[command]
    }
    assert left_out == {}, "options the command has that docs/cli.md leaves out"


def test_an_option_cli_md_misnames_is_caught() -> None:
    real = command_options()
    text = (DOCS / "cli.md").read_text(encoding="utf-8").replace("[--budget N]", "[--budgt N]", 1)
    documented = documented_options(text, set(real))
    assert "--budgt" in documented["recall"] - real["recall"]
    assert "--budget" in real["recall"] - documented["recall"]


ROOT = DOCS.parent
PAGES = [ROOT / "README.md", ROOT / "SECURITY.md", *sorted(DOCS.glob("*.md"))]


def missing_paths(text: str) -> list[str]:
    """The files a page names by a path with a folder (`kb/pdf/reader.py`,
    `bench/bench_kb.py`) that are neither in the checkout nor under src/memoryd/; a path out
    of the checkout (`../x/y.md`) is missing even where this machine has it: a clone has not."""
    named = re.findall(r"`([\w.-]+(?:/[\w.-]+)+\.(?:py|md|sh|sql|json|toml))`", text)
    return sorted(
        {
            path
            for path in named
            if path.startswith("../")
            or not any((base / path).exists() for base in (ROOT, ROOT / "src" / "memoryd"))
        }
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_file_a_page_names_exists(page: Path) -> None:
    assert missing_paths(page.read_text(encoding="utf-8")) == []


def test_a_file_that_moved_is_caught() -> None:
    assert missing_paths("`kb/pdf/reader.py` and `kb/pdf.py`") == ["kb/pdf.py"]
    # Out of the checkout: not in a fresh clone, whatever this machine holds beside it.
    assert missing_paths("`../main/README.md`") == ["../main/README.md"]


def recall_numbers_stated(policy: RecallPolicy) -> dict[str, str]:
    """The phrases docs/memories.md's "How recall works" writes each of recall's numbers in."""
    return {
        "vector_gate": f"cosine ≥ {policy.vector_gate:.2f}; text",
        "text_min_cosine": f"contradict the meaning (cosine ≥ {policy.text_min_cosine:.2f})",
        "open_score": f"reaches {policy.open_score:g} (`recall.open_score`",
        "fusion": f"1/({policy.rrf_k} + rank) + {policy.fused_cosine_weight:g} × cosine / "
        f"{policy.rrf_k}",
        "recency": f"1 − {policy.recency_weight:g} × (1 −\n   0.5^(age_days / "
        f"{policy.recency_half_life_days:g}))",
        "relative_cut": f"falls below {policy.relative_cut:g} ×",
        "cut_floor_chars": f"at most {policy.cut_floor_chars:,} characters",
        "budget_tokens": f"the budget ({policy.budget_tokens:,} tokens, `--budget`)",
    }


def test_memories_md_states_recalls_numbers_as_the_policy_holds_them() -> None:
    text = (DOCS / "memories.md").read_text(encoding="utf-8")
    stated = recall_numbers_stated(RecallPolicy())
    assert {name: phrase for name, phrase in stated.items() if phrase not in text} == {}


def test_a_recall_number_memories_md_misstates_is_caught() -> None:
    text = (DOCS / "memories.md").read_text(encoding="utf-8").replace("below 0.37 ×", "below 0.5 ×")
    stated = recall_numbers_stated(RecallPolicy())
    assert [name for name, phrase in stated.items() if phrase not in text] == ["relative_cut"]
