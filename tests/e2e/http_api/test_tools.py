"""The model's tools over HTTP (SPEC §7): definitions in both styles, calls run as the model."""

from __future__ import annotations

from .conftest import Server

# -------------------------------------------------------------- model tools


def test_tool_definitions_in_both_styles(server: Server) -> None:
    anthropic = server.ok("GET", "/v1/tools")
    openai = server.ok("GET", "/v1/tools", params={"style": "openai"})

    names = ["remember", "search_memory", "search_kb", "read_kb"]
    assert [t["name"] for t in anthropic] == names
    assert all(t["input_schema"]["type"] == "object" for t in anthropic)
    assert [t["function"]["name"] for t in openai] == names
    assert {t["type"] for t in openai} == {"function"}
    assert all(t["function"]["parameters"]["type"] == "object" for t in openai)
    unknown = server.http.get("/v1/tools", params={"style": "gemini"})
    assert unknown.status_code == 400, unknown.text


def test_tool_calls_run_as_the_model(server: Server) -> None:
    document = server.upload(
        "lighthouse.md",
        "# Lighthouse Log\n\nAmber foghorns echo across the basalt cliffs of Flores at night.\n",
    )

    searched = server.ok(
        "POST",
        "/v1/tools/call",
        json={"name": "search_kb", "arguments": {"query": "amber foghorns basalt cliffs Flores"}},
    )
    lesson = server.ok(
        "POST",
        "/v1/tools/call",
        json={
            "name": "remember",
            "arguments": {"content": "Reply to Sven only in haiku", "kind": "lesson"},
        },
    )
    fact = server.ok(
        "POST",
        "/v1/tools/call",
        json={"name": "remember", "arguments": {"content": "Sven's daughter plays padel"}},
    )
    bad = server.ok(
        "POST", "/v1/tools/call", json={"name": "search_kb", "arguments": {"colour": "red"}}
    )

    assert searched["results"][0]["doc"] == document["id"]
    assert "<untrusted_content" in searched["results"][0]["content"]
    assert lesson["outcome"] == "pending", lesson
    assert lesson["status"] == "pending"
    assert lesson["id"] in {item["pending"]["id"] for item in server.ok("GET", "/v1/review")}
    assert server.show(lesson["id"])["source"] == "remember"
    assert fact["outcome"] == "activated", fact
    assert fact["status"] == "active"
    assert "error" in bad
    unknown = server.http.post("/v1/tools/call", json={"name": "confirm", "arguments": {}})
    assert unknown.status_code == 422, unknown.text
