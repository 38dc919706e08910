"""URLs ingested into the knowledge base (SPEC §6) from a local HTTP server: web documents,
retries after 2, 10 and 30 minutes, cancelling and hard failures.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memoryd.errors import InvalidInputError
from memoryd.jobs.model import JobStatus
from memoryd.kb.model import DocumentStatus, SourceType
from memoryd.kb.service import JOB_KIND
from memoryd.service import MemoryService
from tests.kb_corpus import AD_SENTENCE, filler_paragraph

from .kb_support import NOW, Corpus, chunk_texts, expected_breadcrumb, hit_with, only_ok, squash

# ---------------------------------------------------------------------------------------------
# URLs over a local HTTP server


@dataclass
class Reply:
    status: int
    content_type: str = "text/html; charset=utf-8"
    body: bytes = b""
    declare_length: bool = True


class Site:
    """Routes of the local server: each path answers its replies in order, the last repeats."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.routes: dict[str, list[Reply]] = {}
        self.hits: dict[str, int] = {}
        self.lock = threading.Lock()

    def url(self, path: str) -> str:
        return self.base + path

    def next_reply(self, path: str) -> Reply:
        with self.lock:
            self.hits[path] = self.hits.get(path, 0) + 1
            replies = self.routes.get(path)
            if not replies:
                return Reply(404, "text/plain", b"not found")
            return replies.pop(0) if len(replies) > 1 else replies[0]


class _Handler(BaseHTTPRequestHandler):
    site: Site

    def do_GET(self) -> None:
        reply = self.site.next_reply(self.path)
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            if reply.declare_length:
                self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (a body over the limit)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[Site]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    site = Site(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = type("Handler", (_Handler,), {"site": site})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def closed_port_url(path: str = "/gone/report") -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}{path}"


def kb_jobs(service: MemoryService) -> list[Any]:
    return [job for job in service.store.jobs.recent(10) if job.kind == JOB_KIND]


def test_urls_ingest_as_web_documents(service: MemoryService, corpus: Corpus, site: Site) -> None:
    html, pdf = corpus.samples["html"], corpus.samples["pdf"]
    site.routes["/news/harbour-patrols"] = [Reply(200, "text/html", html.path.read_bytes())]
    site.routes["/reports/lighthouses"] = [Reply(200, "application/pdf", pdf.path.read_bytes())]
    urls = [site.url("/news/harbour-patrols"), site.url("/reports/lighthouses")]
    results = service.kb.ingest(urls, source_type=SourceType.WEB, now=NOW)
    assert [r.outcome for r in results] == ["ok", "ok"], [r.reason for r in results]
    for url, sample, result in zip(urls, (html, pdf), results, strict=True):
        document = only_ok(result)
        assert document.source_uri == url
        assert document.source_type is SourceType.WEB
        assert service.kb.get(document.id).source_type is SourceType.WEB
        assert document.title == sample.title
        hit = hit_with(service.kb.search(sample.key_sentence).hits[:3], sample.key_sentence)
        assert hit is not None and hit.document.id == document.id
        assert hit.chunk.breadcrumb == expected_breadcrumb(sample)
        assert hit.ranked.weight == pytest.approx(0.6)
        assert f'source="{url}"' in hit.fenced.split("\n")[0]
    page = only_ok(results[0])
    assert squash(AD_SENTENCE) not in squash("\n".join(chunk_texts(service, page.id)))
    assert kb_jobs(service) == []


def test_an_unreachable_url_is_retried_after_2_10_and_30_minutes_then_fails(
    service: MemoryService,
) -> None:
    url = closed_port_url()
    result = service.kb.ingest([url], source_type=SourceType.WEB, now=NOW)[0]
    assert result.outcome == "queued", result.reason
    assert result.document is not None
    doc_id = result.document.id
    queued = service.kb.get(doc_id)
    assert queued.status is DocumentStatus.QUEUED
    assert queued.source_uri == url
    assert queued.chunk_count == 0
    [job] = kb_jobs(service)
    assert job.status is JobStatus.QUEUED
    assert job.next_attempt_at == NOW + timedelta(minutes=2)
    assert job.payload["source"] == url

    # Nothing is due before +2 min.
    assert service.kb.run_retries(now=NOW + timedelta(minutes=1, seconds=59)) == []
    assert service.store.jobs.get(job.id).attempts == 0  # type: ignore[union-attr]

    first_try = NOW + timedelta(minutes=2)
    [retry] = service.kb.run_retries(now=first_try)
    assert retry.outcome == "queued"
    job_now = service.store.jobs.get(job.id)
    assert job_now is not None
    assert job_now.status is JobStatus.QUEUED
    assert job_now.attempts == 1
    assert job_now.next_attempt_at == first_try + timedelta(minutes=10)
    assert service.kb.get(doc_id).status is DocumentStatus.QUEUED

    assert service.kb.run_retries(now=first_try + timedelta(minutes=9)) == []
    second_try = first_try + timedelta(minutes=10)
    [retry] = service.kb.run_retries(now=second_try)
    assert retry.outcome == "queued"
    job_now = service.store.jobs.get(job.id)
    assert job_now is not None
    assert job_now.attempts == 2
    assert job_now.next_attempt_at == second_try + timedelta(minutes=30)

    assert service.kb.run_retries(now=second_try + timedelta(minutes=29)) == []
    third_try = second_try + timedelta(minutes=30)
    [last] = service.kb.run_retries(now=third_try)
    assert last.outcome == "failed"
    document = service.kb.get(doc_id)
    assert document.status is DocumentStatus.FAILED
    assert document.error
    assert document.chunk_count == 0
    job_now = service.store.jobs.get(job.id)
    assert job_now is not None
    assert job_now.status is JobStatus.FAILED
    assert job_now.last_error
    # Given up: nothing runs again, however late.
    assert service.kb.run_retries(now=third_try + timedelta(days=1)) == []
    assert [d.id for d in service.kb.list_documents()] == [doc_id]


def test_a_transient_server_error_is_retried_until_the_page_loads(
    service: MemoryService, corpus: Corpus, site: Site
) -> None:
    html = corpus.samples["html"]
    site.routes["/flaky"] = [
        Reply(503, "text/plain", b"try later"),
        Reply(200, "text/html", html.path.read_bytes()),
    ]
    url = site.url("/flaky")
    result = service.kb.ingest([url], collection="news", source_type=SourceType.WEB, now=NOW)[0]
    assert result.outcome == "queued", result.reason
    assert result.reason is not None and "503" in result.reason
    assert result.document is not None
    doc_id = result.document.id
    assert service.kb.run_retries(now=NOW + timedelta(minutes=1)) == []
    assert site.hits["/flaky"] == 1

    [retry] = service.kb.run_retries(now=NOW + timedelta(minutes=2))
    assert retry.outcome == "ok", retry.reason
    document = service.kb.get(doc_id)
    assert document.status is DocumentStatus.READY
    assert (document.collection, document.source_type) == ("news", SourceType.WEB)
    assert document.chunk_count > 0
    [job] = kb_jobs(service)
    assert job.status is JobStatus.DONE
    hit = hit_with(service.kb.search(html.key_sentence).hits[:3], html.key_sentence)
    assert hit is not None and hit.document.id == doc_id
    assert service.kb.run_retries(now=NOW + timedelta(hours=2)) == []


def test_deleting_a_queued_document_cancels_its_retry(
    service: MemoryService, corpus: Corpus, site: Site
) -> None:
    # Deleting the document must also cancel its queued kb_ingest job, or the retry would
    # write the deleted document back.
    html = corpus.samples["html"]
    site.routes["/flaky"] = [
        Reply(503, "text/plain", b"try later"),
        Reply(200, "text/html", html.path.read_bytes()),
    ]
    result = service.kb.ingest([site.url("/flaky")], now=NOW)[0]
    assert result.outcome == "queued"
    assert result.document is not None
    service.kb.delete(result.document.id)
    assert service.kb.list_documents() == []

    for minutes in (2, 12, 42):
        service.kb.run_retries(now=NOW + timedelta(minutes=minutes))
    assert service.kb.list_documents() == [], "the deleted document came back"
    assert service.store.kb.chunk_count() == 0
    assert all(
        h.document.source_uri != site.url("/flaky")
        for h in service.kb.search(html.key_sentence).hits
    )


def test_a_missing_page_fails_at_once(service: MemoryService, site: Site) -> None:
    url = site.url("/no/such/page")
    result = service.kb.ingest([url], now=NOW)[0]
    assert result.outcome == "failed"
    assert result.reason is not None and "404" in result.reason
    # A retry cannot fix a missing page: reported, and no document left to delete by hand.
    assert result.document is None
    assert service.kb.list_documents() == []
    assert kb_jobs(service) == []
    assert service.kb.run_retries(now=NOW + timedelta(hours=1)) == []


def test_a_retry_that_meets_a_missing_page_fails_the_document_and_says_why(
    service: MemoryService, site: Site
) -> None:
    # The first answer (503) may pass, so a document waits for the retry; the retry then meets
    # a 404, which no retry fixes: the document stays, failed, so the owner learns why.
    site.routes["/moved"] = [Reply(503, "text/plain", b"busy"), Reply(404, "text/plain", b"")]
    queued = service.kb.ingest([site.url("/moved")], now=NOW)[0]
    assert queued.outcome == "queued" and queued.document is not None

    [retry] = service.kb.run_retries(now=NOW + timedelta(minutes=2))

    assert retry.outcome == "failed"
    document = service.kb.get(queued.document.id)
    assert document.status is DocumentStatus.FAILED
    assert document.error is not None and "404" in document.error
    assert [job.status for job in kb_jobs(service)] == [JobStatus.FAILED]
    with pytest.raises(InvalidInputError, match="failed"):
        service.kb.read(document.id)


@pytest.mark.parametrize("declare_length", [True, False])
def test_a_page_over_the_size_limit_fails(
    service: MemoryService, site: Site, declare_length: bool
) -> None:
    service.kb.limits = dataclasses.replace(service.kb.limits, max_bytes=1_000_000)
    body = (filler_paragraph(800, 200) + "\n").encode() * 1200
    assert len(body) > 1_000_000
    site.routes["/big.txt"] = [Reply(200, "text/plain", body, declare_length)]
    result = service.kb.ingest([site.url("/big.txt")], now=NOW)[0]
    assert result.outcome == "failed"
    assert result.reason is not None and "limit" in result.reason, result.reason
    assert result.document is None
    assert service.kb.list_documents() == []
    assert service.store.kb.chunk_count() == 0
    assert kb_jobs(service) == []
