"""A store built with an OpenAI-compatible endpoint of another dimension (768, the loopback
fake server) works on both backends: memories and documents, recall and search_kb."""

from __future__ import annotations

from pathlib import Path

from memoryd.config.settings import resolve_settings
from memoryd.providers.remote_embedder import EmbedSettings, OpenAICompatibleEmbedder
from memoryd.wiring import open_service
from tests.fake_embeddings import FakeEmbeddingServer


def test_a_768_dimension_store_remembers_recalls_and_searches_documents(
    location: str, tmp_path: Path
) -> None:
    with FakeEmbeddingServer(dimension=768) as fake:
        embedder = OpenAICompatibleEmbedder(
            EmbedSettings(model=fake.model, base_url=fake.base_url, max_retries=0)
        )
        service = open_service(resolve_settings(location, {}), embedder=embedder)
        try:
            assert service.admin.embedding_signature() is not None
            assert service.admin.embedding_signature().dimension == 768  # type: ignore[union-attr]
            service.remember("The owner's kayak is yellow and lives in the boathouse")
            service.remember("The owner's dentist appointment is on Friday")
            block = service.recall("What colour is the owner's kayak?").text
            assert "kayak is yellow" in block
            notes = tmp_path / "tides.md"
            notes.write_text("# Tides\n\nThe spring tide at the harbour peaks at dawn in March.\n")
            document = service.kb.ingest([notes])[0].document
            assert document is not None and document.embedded_chunks == document.chunk_count
            hits = service.kb.search("spring tide harbour dawn").hits
            assert hits and hits[0].document.id == document.id
            nearest = service.store.kb.nearest_chunks(embedder.embed(["spring tide"])[0], 3)
            assert nearest and nearest[0][0].document_id == document.id
        finally:
            service.close()
