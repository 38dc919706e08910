"""``POST /v1/import-chats``: an export uploaded as a form is read and counted; a bad file and
an import without a model are refused with what is wrong (this server has no LLM)."""

from __future__ import annotations

from tests.chat_exports import as_zip, claude_turns

from .conftest import Server


def test_an_uploaded_export_is_counted_and_a_bad_one_refused(server: Server) -> None:
    export = as_zip([claude_turns("http-c1", "Plans", [
        ("human", "I start at the new job in March", "2025-01-10T09:00:00Z"),
        ("assistant", "Congratulations!", "2025-01-10T09:00:02Z"),
    ])])  # fmt: skip
    upload = {"file": ("data-export.zip", export, "application/zip")}

    dry = server.ok("POST", "/v1/import-chats", files=upload, data={"dry_run": "true"})
    off = server.http.post("/v1/import-chats", files=upload)
    bad = server.http.post("/v1/import-chats", files={"file": ("c.json", b'{"not": "a list"}')})

    assert (dry["format"], dry["turns_queued"], dry["dry_run"]) == ("claude", 1, True)
    assert dry["first_at"] == "2025-01-10T09:00:00+00:00"
    assert off.status_code == 400
    assert off.json()["error"].startswith("extraction is off: no LLM is configured")
    assert bad.status_code == 400
    assert bad.json()["error"].startswith("unknown format: the file holds a JSON dict")
