"""Images through the ``caption`` LLM route (SPEC §6): a vision model's transcription and
caption become the image's text; when the route fails, local OCR reads it instead."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.providers.llm import Gateway, Provider, Route
from memoryd.service import MemoryService
from tests.fake_llm import FakeLLMServer, Reply
from tests.fake_llm import Status as HttpStatus
from tests.kb_corpus import text_image

SENTENCE = "Walruses gather on Svalbard ice in June"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


@pytest.fixture
def captioned(service: MemoryService, server: FakeLLMServer) -> MemoryService:
    route = Route("caption", Provider.OPENAI, "fake-vision", base_url=server.sdk_base_url,
                  api_key="test-key", timeout=5.0, max_retries=0)  # fmt: skip
    service.use_gateway(Gateway({"caption": route}))
    return service


def test_a_configured_vision_route_captions_the_image(
    captioned: MemoryService, server: FakeLLMServer, tmp_path: Path
) -> None:
    server.script(Reply("A penguin colony on a pebble beach.\nImage: a poster of penguins."))
    result = captioned.kb.ingest_bytes(text_image(SENTENCE), "poster.png")

    assert result.outcome == "ok", result.reason
    chunks = captioned.store.kb.chunks(result.document.id if result.document else "")
    assert "penguin colony on a pebble beach" in chunks[0].text
    request = server.requests[-1].body
    assert request["model"] == "fake-vision"
    parts = request["messages"][-1]["content"]
    image = [p for p in parts if p.get("type") == "image_url"]
    assert image and image[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert any("Transcribe" in p.get("text", "") for p in parts if p.get("type") == "text")
    assert captioned.kb.search("penguin colony pebble beach").hits


def test_when_the_route_fails_local_ocr_reads_the_image(
    captioned: MemoryService, server: FakeLLMServer
) -> None:
    server.script(HttpStatus(500))
    result = captioned.kb.ingest_bytes(text_image(SENTENCE), "poster.png")

    assert result.outcome == "ok", result.reason
    hits = captioned.kb.search("walruses on Svalbard ice").hits
    assert hits and "Svalbard" in hits[0].chunk.text
    assert json.dumps(server.requests[-1].body).count('"type": "image_url"') == 1
