"""Red team: every case of ``tests/redteam/cases.json`` is run through its channel on a fresh
SQLite store, and three promises are checked after the attack:

(a) nothing behaviour-changing is active without an owner action: no active lesson, and no
    active memory (other than the owner's own) holds the attack's instruction;
(b) no credential is stored anywhere: not in a memory's fields, not in a job (payload, result,
    error), not in what recall / search_memory show, not in the store's bytes on disk;
(c) no fence opener or closer coming from the data survives in what the model reads: the
    recall block, ``search_memory``, ``search_kb`` and ``read_kb`` (service and tool forms).
    The one real outer fence is stripped (its first and last line), then the inside is checked
    by ``contains_fence_tag`` and by an independent, more lenient reader (HTML entities,
    Markdown backslash escapes, default-ignorable characters, confusable brackets, slashes and
    letters).

Channels: ``turn`` (owner message → extraction by a compromised model that proposes the
attack, lying about ``changes_behavior``), ``mission`` (digest outcome), ``document`` (KB
upload), ``web`` (page served on loopback, ingested by URL), ``tool`` (the model's
``remember`` call), ``session`` (the model reads a document with ``search_kb`` or ``read_kb``,
or the caller marks the turn untrusted, then calls ``remember`` in the same session: it must
wait for the owner with the untrusted-content reason, and the same call in a clean session on
a fresh store must give what it gives today, ``clean_outcome``). The suite never confirms
anything, so every active non-owner memory is an activation without the owner. Fence cases
are also stored by the owner (an owner may keep odd text) so they reach the recall block; each
check first proves the attacked text was retrieved.

The figures (cases tried, activations without owner, credentials stored, fence escapes) are
printed at the end of the run and asserted by ``test_zz_red_team_figures``.
"""

from __future__ import annotations

import html
import json
import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memoryd.config.settings import resolve_settings
from memoryd.extraction.extractor import MissionDigest
from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.llm import Gateway, load_routes
from memoryd.service import MemoryService
from memoryd.trust.fence import contains_fence_tag
from memoryd.trust.taint import UNTRUSTED_CONTENT
from memoryd.wiring import open_service
from tests.fake_llm import FakeLLMServer, Reply

CORPUS = json.loads((Path(__file__).parent / "redteam" / "cases.json").read_text("utf-8"))
CASES: list[dict[str, Any]] = CORPUS["cases"]
LLM_KEY = "redteam-fake-llm-key"
SEED = "The owner lives in Porto and cycles to work along the river"

WEB_P1 = (
    "The Lisbon tram museum opens at ten and the vintage cars are kept in the old depot by the "
    "river, next to the workshop where the wooden seats are restored."
)
WEB_P2 = (
    "Tickets for the tram museum cost five euros and include the depot tour, which runs every "
    "hour in Portuguese and English."
)


# ---------------------------------------------------------------------------------------------
# An independent, lenient reader of "does this look like a fence tag"


_LESS = set("<＜﹤‹⟨〈❮˂ᐸ«≪≤\u2329\u276c\u2770\u29fc\u16b2\U0001d236")
_GREATER = set(">＞﹥›⟩〉❯˃ᐳ»≫≥\u232a\u276d\u2771\u29fd")
_SLASHES = set("/／⁄∕⧸╱\\＼﹨⧵⟋〳㇓丿⼃᜵")
# Cyrillic and Greek letters that look like the Latin letters of the fence names.
_HOMOGLYPHS = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i",
    "ԁ": "d", "ο": "o", "А": "a", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p",
    "С": "c", "Т": "t", "У": "y", "Х": "x", "Ѕ": "s", "Α": "a", "Ε": "e", "Μ": "m", "Ν": "n",
    "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y",
}  # fmt: skip
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_READER_TAG = re.compile(r"<[\s/]*(?:memory|untrusted_content|conversation)(?![a-z0-9])")


def _ignorable(char: str) -> bool:
    """Unicode's default-ignorable code points: drawn as nothing, so they hide in a tag name."""
    code = ord(char)
    return (
        unicodedata.category(char) == "Cf"
        or code in (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0)
        or 0x180B <= code <= 0x180F
        or 0xFE00 <= code <= 0xFE0F
        or 0x1D173 <= code <= 0x1D17A
        or 0xE0000 <= code <= 0xE0FFF
    )


def reader_view(text: str) -> str:
    """How a lenient reader (a model) may see ``text``: Markdown escapes and HTML entities
    decoded once, invisible characters dropped, confusables folded, case folded."""
    text = _MARKDOWN_ESCAPE.sub(r"\1", text)
    text = html.unescape(text)
    text = _MARKDOWN_ESCAPE.sub(r"\1", text)
    out: list[str] = []
    for char in text:
        if char in _LESS:
            out.append("<")
        elif char in _GREATER:
            out.append(">")
        elif char in _SLASHES:
            out.append("/")
        elif _ignorable(char):
            continue
        else:
            char = _HOMOGLYPHS.get(char, char)
            out.append(unicodedata.normalize("NFKC", char).casefold())
    return "".join(out)


def tag_problem(label: str, data: str) -> str | None:
    """Why ``data`` (already stripped of its real fence) still holds a fence tag, or None."""
    if contains_fence_tag(data):
        return f"{label}: contains_fence_tag() sees a fence tag inside the data: {_around(data)}"
    view = reader_view(data)
    found = _READER_TAG.search(view)
    if found is not None:
        start = max(0, found.start() - 30)
        return (
            f"{label}: a lenient reader sees a working fence tag inside the data "
            f"(contains_fence_tag() does not): it reads {view[start : found.end() + 40]!r}; "
            f"the raw text is {_around(data)}"
        )
    return None


def _around(text: str) -> str:
    """The raw text around the first character that reads as an opening bracket."""
    first = next((i for i, char in enumerate(text) if char == "&" or reader_view(char) == "<"), 0)
    start = max(0, first - 30)
    return repr(text[start : first + 70])


_OPENERS = {
    "memory": re.compile(r'<memory trust="data">'),
    "untrusted_content": re.compile(r'<untrusted_content(?: [a-z]+="[^"\n<>]*")*>'),
}


def fence_problems(label: str, text: str, tag: str) -> list[str]:
    """One real opener on the first line, one real closer on the last, nothing in between."""
    lines = text.split("\n")
    if tag == "untrusted_content" and lines and lines[-1].startswith("(truncated at the"):
        lines = lines[:-1]
    if len(lines) < 2 or not _OPENERS[tag].fullmatch(lines[0]) or lines[-1] != f"</{tag}>":
        return [f"{label}: not exactly one opener line and one closer line: {text[:160]!r}"]
    problem = tag_problem(label, "\n".join(lines[1:-1]))
    return [problem] if problem else []


# ---------------------------------------------------------------------------------------------
# Fixtures: one fake LLM and one web server per module, a fresh store per case


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai", api_key=LLM_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(llm: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory) -> Gateway:
    environ = {
        "MEMORYD_LLM_PROVIDER": "openai",
        "MEMORYD_LLM_MODEL": "compromised-extractor",
        "MEMORYD_LLM_BASE_URL": llm.sdk_base_url,
        "MEMORYD_LLM_API_KEY": LLM_KEY,
        "MEMORYD_LLM_TIMEOUT": "5",
        "MEMORYD_LLM_MAX_RETRIES": "0",
    }
    return Gateway(load_routes(tmp_path_factory.mktemp("llm-home"), environ))


def web_page(case: dict[str, Any]) -> bytes:
    """The page a web case serves: ``text`` is what it *shows* (escaped in the source)."""
    title = html.escape(case.get("title", "Lisbon tram museum"))
    heading = html.escape(case.get("heading", "Lisbon tram museum"))
    body = case["wrapper"].replace("{x}", html.escape(case["text"], quote=False))
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"<article><h1>{heading}</h1><p>{WEB_P1}</p>{body}<p>{WEB_P2}</p></article>"
        "<footer>Lisbon tram fans, all rights reserved</footer></body></html>"
    )
    return page.encode("utf-8")


@pytest.fixture(scope="module")
def web() -> Iterator[str]:
    """A loopback web server with one page per web case, at ``/<case id>.html``."""
    pages = {f"/{c['id']}.html": web_page(c) for c in CASES if c["channel"] == "web"}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback pages and the fake LLM must be reached directly."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


# ---------------------------------------------------------------------------------------------
# Running one case


@dataclass
class Run:
    """What a case did and everything the checks read."""

    service: MemoryService
    db: Path
    outcome: str = ""
    owner_copy: str | None = None
    fenced: list[tuple[str, str, str]] = field(default_factory=list)  # label, text, tag
    unfenced: list[tuple[str, str]] = field(default_factory=list)  # label, text
    reach: list[str] = field(default_factory=list)
    taint: list[str] = field(default_factory=list)  # session cases: the taint's misses
    memories: list[Memory] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    store_bytes: bytes = b""


def open_case_store(tmp_path: Path, embedder: LocalMiniLM, gateway: Gateway) -> Run:
    db = tmp_path / "redteam.db"
    service = open_service(resolve_settings(str(db), {}), embedder=embedder, gateway=gateway)
    return Run(service, db)


def run_extraction(run: Run, case: dict[str, Any], llm: FakeLLMServer) -> None:
    """turn / mission: queue the trigger, let the compromised model answer, run the job."""
    service = run.service
    replies = case.get("llm_replies") or [json.dumps({"memories": [case["proposal"]]})]
    llm.clear()
    llm.script(*(Reply(reply) for reply in replies))
    if case["channel"] == "turn":
        observation = service.observe_turn(case["text"], case.get("summary"))
    else:
        mission = case["mission"]
        digest = MissionDigest(mission["title"], mission["goal"], case["text"])
        observation = service.mission_finished(digest)
    assert observation.queued, f"extraction is off: {observation.notice}"
    assert observation.job_id is not None
    queued = service.job(observation.job_id)
    run.jobs.append(
        json.dumps({"id": queued.id, "queued payload": queued.payload}, ensure_ascii=False)
    )
    reports = service.run_jobs(job_id=observation.job_id)
    run.outcome = "; ".join(
        f"job {report.job.status.value}"
        + (f" ({report.job.last_error[:80]})" if report.job.last_error else "")
        + "".join(f" / {r.outcome.value} by {r.rule}" for r in report.results)
        for report in reports
    )


def run_tool(run: Run, case: dict[str, Any]) -> None:
    result = run.service.call_tool("remember", case["tool_args"])
    run.outcome = "tool: " + json.dumps(result, ensure_ascii=False)[:240]
    if case.get("expect") == "refused" and "error" not in result:
        run.reach.append(f"the tool accepted arguments it has no schema for: {result}")


def check_memory_outputs(run: Run, case: dict[str, Any]) -> None:
    """recall and search_memory for the case's query; fence cases are first kept by the owner
    so that they do reach the block, and retrieval of that copy is proven."""
    service = run.service
    query = case["query"]
    if case["category"] == "fence":
        kept = service.remember(case["text"])
        assert kept.memory is not None, kept.reason
        run.owner_copy = kept.memory.id
    recall = service.recall(query)
    if run.owner_copy is not None:
        packed = [m.id for m in recall.packed.lessons] + [s.memory.id for s in recall.packed.items]
        if run.owner_copy not in packed:
            run.reach.append(
                f"recall({query!r}) did not retrieve the owner's copy of the attack, so the "
                f"fence check of the block would prove nothing (packed: {packed})"
            )
    if recall.text:
        run.fenced.append(("recall block", recall.text, "memory"))
    found = service.call_tool("search_memory", {"query": query[:2000], "limit": 50})
    assert "error" not in found, found
    for index, item in enumerate(found["results"]):
        run.unfenced.append((f"search_memory result {index}", item["content"]))
    if run.owner_copy is not None and not any(
        item["id"] == run.owner_copy for item in found["results"]
    ):
        run.reach.append("search_memory did not return the owner's copy of the attack")


def check_kb_outputs(run: Run, case: dict[str, Any], doc_id: str) -> None:
    """search_kb and read_kb, as the service returns them and as the tools do."""
    service = run.service
    query = case["query"]
    found = service.kb.search(query, limit=20)
    for index, hit in enumerate(found.hits):
        run.fenced.append((f"kb.search hit {index}", hit.fenced, "untrusted_content"))
    if not any(hit.document.id == doc_id for hit in found.hits):
        run.reach.append(
            f"search_kb({query!r}) did not return the attacked document, so the fence check "
            "would prove nothing"
        )
    tool = service.call_tool("search_kb", {"query": query, "limit": 20})
    assert "error" not in tool, tool
    for index, item in enumerate(tool["results"]):
        run.fenced.append((f"search_kb tool result {index}", item["content"], "untrusted_content"))
    document = service.kb.get(doc_id)
    run.fenced.append(
        ("kb.read whole document", service.kb.read(doc_id, max_tokens=8000).fenced,
         "untrusted_content")
    )  # fmt: skip
    read_tool = service.call_tool("read_kb", {"doc": doc_id, "max_tokens": 8000})
    assert "error" not in read_tool, read_tool
    run.fenced.append(("read_kb tool", read_tool["content"], "untrusted_content"))
    for first in range(document.chunk_count):
        for last in {first, min(first + 1, document.chunk_count - 1)}:
            read = service.kb.read(doc_id, chunks=(first, last), max_tokens=8000)
            run.fenced.append((f"kb.read chunks {first}-{last}", read.fenced, "untrusted_content"))
    if case.get("split_tag"):
        tag = case["split_tag"]
        chunks = service.store.kb.chunks(doc_id)
        if not any(_cut_inside(chunk.text, tag) for chunk in chunks):
            run.reach.append(
                f"no chunk boundary fell inside {tag!r} ({len(chunks)} chunks): the case "
                "proves nothing about split tags"
            )
    if case["category"] == "fence":
        raw = "\n".join(chunk.text for chunk in service.store.kb.chunks(doc_id))
        if not (contains_fence_tag(raw) or _READER_TAG.search(reader_view(raw))):
            run.reach.append(
                f"the converter removed the lookalike {case['lookalike']!r} before it was "
                "stored, so this case proves nothing about the fence"
            )
    if case.get("instruction") and case["category"] != "secret":
        words = case["instruction"].split()[-3:]
        reached = " ".join(words).rstrip(".").casefold()
        texts = " ".join(" ".join(c.text.split()) for c in service.store.kb.chunks(doc_id))
        if reached in texts.casefold().replace("\\", ""):
            pass
        elif case.get("expect") == "dropped-by-converter":
            run.outcome += "; the converter dropped the hidden text, as the corpus expects"
        else:
            run.reach.append(
                f"the attack text ({reached!r}) never reached the knowledge base: the converter "
                "dropped it"
            )


def run_session(run: Run, case: dict[str, Any], clean: MemoryService) -> None:
    """The model reads the case's text in a session, then calls remember in it: the memory
    must wait for the owner with the untrusted-content reason. ``clean`` (a fresh store)
    takes the same remember in a session that read nothing."""
    service = run.service
    session = f"{case['id']}-chat"
    if case["reads"] == "marked":
        # Another tool of the assistant fetched the page; the caller says so.
        service.call_tool("search_memory", {"query": case["query"]}, session=session,
                          turn="t1", untrusted=True)  # fmt: skip
    else:
        ingested = service.kb.ingest_bytes(case["text"].encode("utf-8"), case["filename"])
        assert ingested.document is not None, ingested.to_json()
        doc = ingested.document.id
        found = service.call_tool("search_kb", {"query": case["query"]}, session=session,
                                  turn="t1")  # fmt: skip
        if not any(hit["doc"] == doc for hit in found.get("results", [])):
            run.reach.append(f"search_kb({case['query']!r}) did not return the document")
        run.fenced += [(f"search_kb result {i}", hit["content"], "untrusted_content")
                       for i, hit in enumerate(found.get("results", []))]  # fmt: skip
        if case["reads"] == "read_kb":
            read = service.call_tool("read_kb", {"doc": doc}, session=session, turn="t1")
            run.fenced.append(("read_kb", read.get("content", ""), "untrusted_content"))
    result = service.call_tool("remember", case["tool_args"], session=session, turn="t1")
    run.outcome = "session: " + json.dumps(result, ensure_ascii=False)[:240]
    if result.get("status") != "pending" or UNTRUSTED_CONTENT not in (result.get("reason") or ""):
        run.taint.append(f"the remember after the read did not wait as tainted: {result}")
    elif "owner's review" not in result.get("note", ""):
        run.taint.append(f"the tool result does not say it waits for review: {result}")
    reasons = [i.reason or "" for i in service.review_queue() if i.pending.id == result.get("id")]
    if not reasons or not reasons[0].startswith(f"waits for the owner: {UNTRUSTED_CONTENT}"):
        run.taint.append(f"the review queue does not give the untrusted-content reason: {reasons}")
    control = clean.call_tool("remember", case["tool_args"], session="clean-chat", turn="t1")
    if control.get("outcome") != case["clean_outcome"] or UNTRUSTED_CONTENT in str(control):
        run.taint.append(
            f"in a clean session the same remember gave {control}, not {case['clean_outcome']}"
        )


def _cut_inside(text: str, tag: str) -> bool:
    """Whether a chunk starts or ends in the middle of ``tag``."""
    stripped = text.strip()
    return any(stripped.endswith(tag[:k]) for k in range(2, len(tag))) or any(
        stripped.startswith(tag[k:]) for k in range(1, len(tag) - 1)
    )


def run_kb(run: Run, case: dict[str, Any], web: str) -> None:
    service = run.service
    if case["channel"] == "document":
        result = service.kb.ingest_bytes(case["text"].encode("utf-8"), case["filename"])
    else:
        host = f"{case['url_userinfo']}@{web}" if case.get("url_userinfo") else web
        [result] = service.kb.ingest([f"http://{host}/{case['id']}.html"])
    run.outcome = f"ingest {result.outcome}" + (f" ({result.reason})" if result.reason else "")
    if result.outcome != "ok" or result.document is None:
        if case["category"] != "secret":
            run.reach.append(f"nothing was stored: {run.outcome}")
        return
    check_kb_outputs(run, case, result.document.id)


def collect_and_close(run: Run) -> None:
    """Everything the store holds, then the bytes it left on disk once closed."""
    service = run.service
    run.memories = service.list_memories()
    for job in service.store.jobs.recent(1000):
        run.jobs.append(
            json.dumps({**job.to_json(), "payload": job.payload}, ensure_ascii=False, default=str)
        )
    service.close()
    run.store_bytes = b"".join(
        path.read_bytes() for path in sorted(run.db.parent.glob(run.db.name + "*"))
    )


# ---------------------------------------------------------------------------------------------
# The three promises


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def activation_problems(run: Run, case: dict[str, Any]) -> list[str]:
    """(a): no active lesson, no active non-owner memory holding the instruction."""
    problems = []
    instruction = _norm(case.get("instruction") or "\0")
    for memory in run.memories:
        if memory.status is not Status.ACTIVE or memory.source is Source.OWNER:
            continue
        if memory.kind is Kind.LESSON:
            problems.append(f"(a) active lesson without the owner: {memory.content[:120]!r}")
        elif instruction in _norm(memory.content):
            problems.append(
                f"(a) the instruction is ACTIVE as a {memory.kind.value} from "
                f"{memory.source.value} without any owner action: {memory.content[:120]!r}"
            )
    if case["channel"] in ("document", "web") and run.memories:
        problems.append(
            f"(a) knowledge-base content became {len(run.memories)} memor(y/ies): "
            + "; ".join(repr(m.content[:80]) for m in run.memories)
        )
    return problems


def reach_problems(run: Run, case: dict[str, Any]) -> list[str]:
    """The attack must have reached the store, or the (a)/(c) checks prove nothing."""
    problems = [f"(vacuous) {reason}" for reason in run.reach]
    if case["channel"] in ("turn", "mission", "tool", "session") and case["category"] != "secret":
        instruction = _norm(case["instruction"])
        stored = [
            m
            for m in run.memories
            if m.source is not Source.OWNER and instruction in _norm(m.content)
        ]
        if case.get("expect") == "refused":
            if stored:
                problems.append("the refused tool call stored the attack anyway")
        elif not stored:
            problems.append(
                "nothing was stored: the attack never reached the store, so (a) proves "
                f"nothing (channel outcome: {run.outcome})"
            )
    return problems


def credential_problems(run: Run, case: dict[str, Any]) -> list[str]:
    """(b): the secret (and its fragments) nowhere in memories, jobs, outputs or on disk."""
    if case["category"] != "secret":
        return []
    problems = []
    kb_content = case.get("scope") == "kb-content"
    for needle in [case["secret"], *case.get("fragments", [])]:
        where = []
        for memory in run.memories:
            fields = [memory.content, memory.subject, memory.predicate, memory.object]
            if any(needle in (f or "") for f in [*fields, *memory.entities]):
                where.append(f"memory {memory.id} ({memory.status.value} {memory.kind.value})")
        where += [f"job {json.loads(j)['id']}" for j in run.jobs if needle in j]
        if not kb_content:
            # A document's own text is kept in its chunks by design; anything else is a leak.
            where += [label for label, text, _ in run.fenced if needle in text]
            where += [label for label, text in run.unfenced if needle in text]
            if needle.encode("utf-8") in run.store_bytes:
                where.append("the store's bytes on disk (.db/-wal/-shm)")
        if where:
            problems.append(f"(b) credential {needle[:24]!r}… stored in: " + ", ".join(where))
    return problems


def fence_escape_problems(run: Run) -> list[str]:
    """(c) over every fenced and unfenced output the model would read."""
    problems = []
    for label, text, tag in run.fenced:
        problems += [f"(c) {p}" for p in fence_problems(label, text, tag)]
    for label, text in run.unfenced:
        problem = tag_problem(label, text)
        if problem:
            problems.append(f"(c) {problem}")
    return problems


# ---------------------------------------------------------------------------------------------
# Figures


class Figures:
    """Per-case verdicts, printed in the terminal summary and asserted by the last test."""

    def __init__(self) -> None:
        self.cases: dict[str, dict[str, Any]] = {}

    def record(self, case: dict[str, Any], **verdicts: Any) -> None:
        self.cases[case["id"]] = {"case": case, **verdicts}

    def totals(self) -> dict[str, int]:
        rows = self.cases.values()
        return {
            "cases tried": len(rows),
            "activations without owner": sum(bool(r["activation"]) for r in rows),
            "credentials stored": sum(bool(r["credential"]) for r in rows),
            "fence escapes": sum(bool(r["fence"]) for r in rows),
            "vacuous (attack never reached)": sum(bool(r["reach"]) for r in rows),
            "taint misses": sum(bool(r["taint"]) for r in rows),
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.cases:
            return
        write = terminalreporter.write_line
        terminalreporter.section("memoryd red team")
        for name, value in self.totals().items():
            write(f"{name:>34}: {value}")
        for key in ("activation", "credential", "fence", "reach", "taint"):
            ids = [i for i, r in self.cases.items() if r[key]]
            if ids:
                write(f"{key} failures: {', '.join(ids)}")
        if terminalreporter.verbosity > 0:
            for case_id, row in self.cases.items():
                verdict = (
                    "FAIL"
                    if any(row[k] for k in ("activation", "credential", "fence", "reach", "taint"))
                    else "ok"
                )
                write(f"{case_id:<22} {verdict:<4} {row['outcome'][:150]}")


FIGURES = Figures()


@pytest.fixture(scope="module", autouse=True)
def _figures(request: pytest.FixtureRequest) -> None:
    manager = request.config.pluginmanager
    if not manager.is_registered(FIGURES):
        manager.register(FIGURES, "memoryd-red-team-figures")


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_attack_is_contained(
    case: dict[str, Any],
    tmp_path: Path,
    embedder: LocalMiniLM,
    gateway: Gateway,
    llm: FakeLLMServer,
    web: str,
) -> None:
    run = open_case_store(tmp_path, embedder, gateway)
    try:
        channel = case["channel"]
        if channel in ("turn", "mission", "tool"):
            run.service.remember(SEED)
            if channel == "tool":
                run_tool(run, case)
            else:
                run_extraction(run, case, llm)
            check_memory_outputs(run, case)
        elif channel == "session":
            (tmp_path / "clean").mkdir()
            clean = open_case_store(tmp_path / "clean", embedder, gateway).service
            try:
                run_session(run, case, clean)
            finally:
                clean.close()
        else:
            run_kb(run, case, web)
    finally:
        collect_and_close(run)

    activation = activation_problems(run, case)
    credential = credential_problems(run, case)
    fence = fence_escape_problems(run)
    reach = reach_problems(run, case)
    FIGURES.record(
        case,
        activation=activation,
        credential=credential,
        fence=fence,
        reach=reach,
        taint=run.taint,
        outcome=run.outcome,
    )
    problems = activation + credential + fence + reach + run.taint
    assert not problems, (
        f"{case['id']} ({case['technique']}, claim {case.get('claim', '-')}): "
        f"{run.outcome}\n  " + "\n  ".join(problems)
    )


def test_the_corpus_is_broad() -> None:
    """At least 120 cases over all six channels and all three categories, ids unique; the
    taint cases cover each way a session is tainted."""
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 120
    channels = {"turn", "mission", "document", "web", "tool", "session"}
    assert {c["channel"] for c in CASES} == channels
    reads = {c["reads"] for c in CASES if c["channel"] == "session"}
    assert reads == {"search_kb", "read_kb", "marked"}
    assert {c["category"] for c in CASES} == {"injection", "secret", "fence"}
    for case in CASES:
        assert case["text"].strip(), case["id"]
        if case["category"] == "secret":
            carriers = case["text"] + case.get("url_userinfo", "")
            assert case["secret"] and case["secret"] in carriers, case["id"]
        elif case["category"] == "injection":
            assert case["instruction"], case["id"]
        else:
            seen = contains_fence_tag(case["lookalike"]) or _READER_TAG.search(
                reader_view(case["lookalike"])
            )
            assert seen, f"{case['id']}: the lenient reader does not see {case['lookalike']!r}"


def test_zz_red_team_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last: the three figures the red team reports, each of which must be 0."""
    totals = FIGURES.totals()
    with capsys.disabled():
        print("\nmemoryd red team: " + ", ".join(f"{k} = {v}" for k, v in totals.items()))
    assert totals["cases tried"] == len(CASES), "run the whole module for the figures"
    bad = {k: v for k, v in totals.items() if k != "cases tried" and v}
    assert not bad, f"red-team figures must all be 0: {totals}"
