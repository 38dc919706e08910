"""The model's knowledge-base tools (search_kb, read_kb) on the good corpus (SPEC §6)."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.service import MemoryService

from .kb_support import Corpus, assert_fenced_once, expected_breadcrumb, squash

# ---------------------------------------------------------------------------------------------
# The model's tools on the corpus


def test_tool_definitions_include_the_kb_tools(service: MemoryService) -> None:
    names = {tool["name"] for tool in service.tool_definitions()}
    assert {"search_kb", "read_kb"} <= names
    openai = {tool["function"]["name"] for tool in service.tool_definitions("openai")}
    assert {"search_kb", "read_kb"} <= openai
    search_kb = next(t for t in service.tool_definitions() if t["name"] == "search_kb")
    # The model cannot choose collections.
    assert "collections" not in search_kb["input_schema"]["properties"]
    assert "pinned_collections" not in search_kb["input_schema"]["properties"]


def test_search_kb_tool_returns_fenced_passages(corpus: Corpus) -> None:
    sample = corpus.samples["markdown"]
    answer = corpus.service.call_tool("search_kb", {"query": sample.key_sentence})
    assert "error" not in answer, answer
    results = answer["results"]
    assert results
    assert results[0]["doc"] == corpus.doc("markdown").id
    assert results[0]["breadcrumb"] == expected_breadcrumb(sample)
    for result in results:
        inner = assert_fenced_once(result["content"])
        assert f'doc="{result["doc"]}"' in result["content"].split("\n")[0]
        assert f'chunk="{result["chunk"]}"' in result["content"].split("\n")[0]
        assert inner.strip()
    assert squash(sample.key_sentence) in squash(results[0]["content"])
    limited = corpus.service.call_tool("search_kb", {"query": sample.key_sentence, "limit": 1})
    assert len(limited["results"]) == 1


def test_read_kb_tool_reads_a_chunk_range(corpus: Corpus) -> None:
    document = corpus.doc("pdf")
    answer = corpus.service.call_tool("read_kb", {"doc": document.id, "chunks": "0-1"})
    assert "error" not in answer, answer
    assert answer["doc"] == document.id
    assert answer["chunks"] == [0, 1]
    assert_fenced_once(answer["content"])
    section = corpus.service.call_tool(
        "read_kb", {"doc": document.id, "section": "Keeper Routines"}
    )
    assert squash(corpus.samples["pdf"].key_sentence) in squash(section["content"])
    # A JSON string works as well as a dict.
    as_json = corpus.service.call_tool("read_kb", f'{{"doc": "{document.id}", "chunks": "2"}}')
    assert as_json["chunks"] == [2, 2]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("search_kb", {"query": ""}),
        ("search_kb", {"query": "   "}),
        ("search_kb", {}),
        ("search_kb", {"query": "lighthouse", "bogus": 1}),
        ("search_kb", {"query": "lighthouse", "collections": ["projects"]}),
        ("search_kb", {"query": "lighthouse", "pinned_collections": ["projects"]}),
        ("search_kb", {"query": "lighthouse", "limit": 0}),
        ("search_kb", {"query": "lighthouse", "limit": "5"}),
        ("search_kb", "{not json"),
        ("read_kb", {"doc": "x", "chunks": "a-b"}),
        ("read_kb", {"doc": "nonexistent"}),
        ("read_kb", {"doc": ""}),
        ("read_kb", {"doc": "x", "page": 3}),
    ],
)
def test_kb_tools_answer_bad_arguments_with_an_error(
    corpus: Corpus, tool: str, arguments: dict[str, Any] | str
) -> None:
    answer = corpus.service.call_tool(tool, arguments)
    assert set(answer) == {"error"}, answer
    assert isinstance(answer["error"], str) and answer["error"]


def test_read_kb_tool_errors_name_the_problem(corpus: Corpus) -> None:
    document = corpus.doc("pdf")
    bad_range = corpus.service.call_tool("read_kb", {"doc": document.id, "chunks": "a-b"})
    assert "a-b" in bad_range["error"]
    out_of_range = corpus.service.call_tool("read_kb", {"doc": document.id, "chunks": "90-99"})
    assert f"0-{document.chunk_count - 1}" in out_of_range["error"]
    bad_section = corpus.service.call_tool("read_kb", {"doc": document.id, "section": "Nowhere"})
    assert "Keeper Routines" in bad_section["error"]
    extra = corpus.service.call_tool("search_kb", {"query": "x", "collections": ["a"]})
    assert "collections" in extra["error"]


def test_an_unknown_document_tells_the_model_where_ids_come_from(service: MemoryService) -> None:
    reply = service.call_tool("read_kb", {"doc": "01NOSUCHDOCUMENT000000000"})

    assert reply["error"].startswith("no document with id '01NOSUCHDOCUMENT000000000'")
    assert "search_kb" in reply["error"]
    assert "memoryd" not in reply["error"]  # no CLI command for a model that cannot run one


def test_a_bad_tool_argument_is_named_in_the_models_words(service: MemoryService) -> None:
    reply = service.call_tool(
        "search_memory", {"query": "lamps", "since": "2026-05-01", "until": "2026-04-01"}
    )

    assert reply["error"] == "since must be earlier than until"
    assert reply["fields"] == ["since", "until"]
