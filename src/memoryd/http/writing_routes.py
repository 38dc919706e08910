"""Writing in: proposals, and the triggers that queue conversation for extraction (a turn,
a compaction, a finished mission, an uploaded chat export)."""

from __future__ import annotations

from fastapi import APIRouter, File, Form, UploadFile

from memoryd.extraction.chat_import import ChatImportJson
from memoryd.extraction.extractor import MissionDigest
from memoryd.http import response_models as out
from memoryd.http import schemas as s
from memoryd.http.depends import Service, local_instant
from memoryd.http.limits import IMPORT_CHATS_PATH
from memoryd.memory.model import Source
from memoryd.results import ObservationJson, WriteJson

router = APIRouter(tags=["writing"])


@router.post("/v1/propose", response_model=out.list_of(out.WriteOut))
def propose(service: Service, body: s.ProposeRequest) -> list[WriteJson]:
    """A batch under the proposal contract; the promotion policy decides each item."""
    results = service.memories.propose(
        {"memories": body.memories}, source=Source(body.source), source_ref=body.source_ref
    )
    return [r.to_json() for r in results]


@router.post("/v1/observe", response_model=out.ObservationOut)
def observe(service: Service, body: s.ObserveRequest) -> ObservationJson:
    """After a turn: queue it for background extraction."""
    at = local_instant(body.at, service.zone, "at")
    return service.jobs.observe_turn(body.user, body.summary, at=at).to_json()


@router.post("/v1/compaction", response_model=out.ObservationOut)
def compaction(service: Service, body: s.CompactionRequest) -> ObservationJson:
    """Before the conversation is compacted: queue the turns for extraction."""
    turns = [{"role": t.role, "content": t.content, "at": t.at} for t in body.turns]
    return service.jobs.before_compaction(turns).to_json()


@router.post("/v1/mission", response_model=out.ObservationOut)
def mission(service: Service, body: s.MissionRequest) -> ObservationJson:
    """A finished mission's digest: queue it for extraction."""
    finished_at = local_instant(body.finished_at, service.zone, "finished_at")
    digest = MissionDigest(body.title, body.goal, body.outcome, finished_at)
    return service.jobs.mission_finished(digest).to_json()


@router.post(IMPORT_CHATS_PATH, response_model=out.ChatImportOut)
def import_chats(
    service: Service,
    file: UploadFile = File(...),  # noqa: B008 - FastAPI's declaration style
    format: str = Form("auto"),
    dry_run: bool = Form(False),
) -> ChatImportJson:
    """Upload a ChatGPT or Claude export (multipart form: file — its conversations.json or
    the .zip —, format chatgpt | claude | auto, dry_run): its new turns are queued for
    extraction, each dated by the original message. The upload is read from where it was
    spooled (disk, past 1 MB), a conversation at a time."""
    report = service.jobs.import_chat_stream(file.file, format=format, dry_run=dry_run)
    return report.to_json()
