"""``memoryd status``: the store, the embedder, the LLM routes, a running server and the
queues at a glance (no model loaded, no network)."""

from __future__ import annotations

from typing import Any

import click

from memoryd.cli.common import db_option_of, now_from, print_json, with_now_json
from memoryd.config.settings import resolve_settings


@click.command()
@with_now_json
def status(ctx: click.Context, now_text: str | None, as_json: bool) -> None:
    """The store (location, backend, size), the embedder, each LLM route and whether it
    answered in the last 24 hours (from the extraction jobs), whether `memoryd serve` runs for
    this home, the memory and job counts and the last consolidation. Fast: it loads no model
    and calls no endpoint (`memoryd doctor` does)."""
    from memoryd.ops.status import gather_status

    report = gather_status(resolve_settings(db_option_of(ctx)), now_from(now_text))
    if as_json:
        print_json(report)
        return
    for line in status_lines(report):
        click.echo(line)


def status_lines(report: dict[str, Any]) -> list[str]:
    """The report as aligned lines of text."""
    settings = report["settings_file"] or "none (defaults; `memoryd config set` creates one)"
    lines = [f"home          {report['home']}", f"settings      {settings}"]
    store = report["store"]
    if store["ok"]:
        size = _size(store.get("size_bytes"))
        lines.append(f"store         {store['location']} ({store['backend']}, {size})")
    else:
        lines.append(f"store         {store['location']} ({store['backend']}): {store['error']}")
    lines.append(f"embedder      {_embedder(report['embedder'])}")
    llm = report["llm"]
    if "error" in llm:
        lines.append(f"llm           broken settings: {llm['error']}")
    else:
        for index, (operation, route) in enumerate(llm.items()):
            label = "llm" if index == 0 else ""
            lines.append(f"{label:<14}{operation:<9}{_route(route)}")
    lines.append(f"server        {_server(report['server'])}")
    if "memories" in report:
        memories = report["memories"]
        lines.append(
            f"memories      {memories['active']} active, {memories['pending']} pending, "
            f"{memories['reconfirm_due']} due for reconfirmation"
        )
        jobs = report["jobs"]
        lines.append(
            "jobs          " + ", ".join(f"{count} {name}" for name, count in jobs.items())
        )
        lines.append(f"consolidated  {report['last_consolidation_at'] or 'never'}")
        for index, source in enumerate(report.get("synced", [])):
            label = "synced" if index == 0 else ""
            lines.append(f"{label:<14}{sync_summary_line(source)}")
    return lines


def sync_summary_line(source: dict[str, Any]) -> str:
    """ "/home/me/notes: 1998 current, 2 skipped; looked 2026-12-02T06:00:00+00:00" """
    files = source["files"]
    counted = ", ".join(f"{count} {state}" for state, count in sorted(files.items())) or "no files"
    looked = source["last_looked_at"] or "not yet"
    error = f"; error: {source['last_error']}" if source["last_error"] else ""
    return f"{source['location']}: {counted}; looked {looked}{error}"


def _size(size: int | None) -> str:
    if size is None:
        return "size unknown"
    if size < 1024:
        return f"{size} bytes"
    scaled = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        scaled /= 1024
        if scaled < 1024 or unit == "TB":
            break
    return f"{scaled:.1f} {unit}"


def _embedder(part: dict[str, Any]) -> str:
    if "error" in part:
        return f"broken settings: {part['error']}"
    where = f" at {part['base_url']}" if part.get("base_url") else " (local)"
    size = f", {part['dimension']} dimensions" if part.get("dimension") else ""
    text = f"{part['model']}{where}{size}"
    if part.get("matches_store") is False:
        text += (
            f"; the store was built with {part['store_model']!r}: set that model back, or "
            "move the store with `memoryd reembed`"
        )
    return text


def _route(route: dict[str, Any]) -> str:
    if not route["on"]:
        return "off (`memoryd config set llm.model NAME` turns it on)"
    where = route["base_url"] or "the provider's endpoint"
    return f"{route['provider']} {route['model']!r} at {where}; {_health(route['health'])}"


def _health(health: dict[str, Any]) -> str:
    recently = health.get("answered_recently")
    if health.get("retrying"):
        tried = f"last tried {health['failing_at']}; " if health.get("failing_at") else ""
        return (
            f"failing: {health['last_error']} ({tried}{health['retrying']} jobs waiting to retry)"
        )
    if recently:
        return f"answered {health['last_answer_at']}"
    if recently is None:
        return "no answer recorded" + (f" ({health['note']})" if health.get("note") else "")
    if health.get("last_failure_at") and (
        not health.get("last_answer_at") or health["last_failure_at"] > health["last_answer_at"]
    ):
        return f"failed {health['last_failure_at']}: {health['last_error']}"
    return f"last answered {health['last_answer_at']} (not in the last 24 hours)"


def _server(server: dict[str, Any]) -> str:
    if server["running"]:
        return f"running: pid {server['pid']} at {server['url']} since {server['started_at']}"
    if server.get("stale"):
        return f"not running (pid {server['pid']} in the record is gone)"
    return "not running"
