"""Whether the model endpoints answer, judged from what is recorded (pure): the ``extract``
route from the job table, the embeddings endpoint from what the embedder saw last. Read by
``memoryd status`` and by the web page's status line."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from memoryd.jobs.model import Job, JobStatus

RECENT = timedelta(hours=24)
# How far back the job table is read for the routes' last answers.
JOBS_READ = 500
EXTRACTION_KINDS = frozenset({"turn", "compaction", "mission", "imported_turn"})


def extraction_health(jobs: Sequence[Job], now: datetime) -> dict[str, Any]:
    """Whether the ``extract`` route answered recently, from the newest jobs: its last answer
    (a finished job), its last failure (a job given up on), and how many jobs are being
    retried because it failed. ``answered_recently`` is None when nothing is recorded."""
    extraction = [job for job in jobs if job.kind in EXTRACTION_KINDS]
    done = [job.finished_at for job in extraction if job.status is JobStatus.DONE]
    last_answer = max((at for at in done if at is not None), default=None)
    retrying = [j for j in extraction if j.status is JobStatus.QUEUED and j.last_error]
    tried = [job.claimed_at for job in retrying if job.claimed_at is not None]
    failed = [j for j in extraction if j.status is JobStatus.FAILED and j.finished_at]
    last_failure = max(failed, key=lambda job: job.finished_at or now, default=None)
    newest_error = retrying[0] if retrying else last_failure
    if retrying:
        recently: bool | None = False
    elif last_answer is None:
        recently = False if last_failure is not None else None
    else:
        recently = now - last_answer <= RECENT and (
            last_failure is None or (last_failure.finished_at or now) < last_answer
        )
    return {
        "answered_recently": recently,
        "last_answer_at": last_answer.isoformat() if last_answer else None,
        "last_failure_at": (
            last_failure.finished_at.isoformat()
            if last_failure is not None and last_failure.finished_at
            else None
        ),
        "retrying": len(retrying),
        # When a job now waiting to retry last failed (the route's latest failure).
        "failing_at": max(tried).isoformat() if tried else None,
        "last_error": newest_error.last_error if newest_error is not None else None,
    }


def failing_notices(
    extract: tuple[str, str | None] | None,
    health: dict[str, Any],
    embeddings: tuple[str, str | None, datetime, str] | None,
) -> list[str]:
    """What the web page says about failing endpoints: the ``extract`` route (its model and
    base URL) when jobs wait to retry because of it or it last failed for good, with
    :func:`extraction_health`'s verdict; the embeddings endpoint (model, base URL, failing
    since, why) while it fails."""
    notices: list[str] = []
    if extract is not None and health.get("answered_recently") is False and health["last_error"]:
        model, base_url = extract
        where = f"{model} @ " + (base_url or "the provider's endpoint")
        if health["retrying"]:
            tried = f" (last tried {health['failing_at']})" if health.get("failing_at") else ""
            notices.append(
                f"extraction route {where} failing{tried}: "
                f"{health['last_error']}; {health['retrying']} jobs wait to retry"
            )
        elif health["last_failure_at"]:
            notices.append(
                f"extraction route {where} failed {health['last_failure_at']} and was given up "
                f"on: {health['last_error']}"
            )
    if embeddings is not None:
        model, base_url, since, reason = embeddings
        notices.append(
            f"embeddings endpoint {model} @ {base_url or 'the default URL'} failing since "
            f"{since.isoformat(timespec='seconds')}: {reason}"
        )
    return notices
