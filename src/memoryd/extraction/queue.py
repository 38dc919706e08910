"""The extraction queue: triggers (a turn, a compaction, a finished mission) queue a job; a job
run asks the ``extract`` route for proposals and hands them to the promotion policy."""

from __future__ import annotations

import logging
import secrets as secrets_module
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.clock import from_db, to_db
from memoryd.errors import InvalidInputError, InvalidOperationError, StoreUnavailableError
from memoryd.extraction.extractor import (
    BACKLOG_TRIGGERS,
    LIVE_TRIGGERS,
    TRIGGERS,
    Extractor,
    MissionDigest,
    date_events,
    echoes_goal,
    load_prompt,
    parse_local_instant,
    render_known_predicates,
    render_mission,
    render_turn,
    render_turns,
    repeats_secret,
    span_line,
    when_line,
)
from memoryd.jobs.cut_off import CutOffClaims
from memoryd.jobs.model import Job, JobStatus
from memoryd.memory.model import Proposal, Provenance
from memoryd.memory.promotion_policy import Outcome
from memoryd.memory.slot_vocabulary import known_predicates
from memoryd.memory.writes import Propose
from memoryd.providers.llm import LLMConfigError, LLMUnavailableError, off_notice
from memoryd.results import JobReport, Observation, WriteResult
from memoryd.trust.credential_screening import (
    find_sensitive,
    redact_credentials,
    secret_fingerprints,
)

if TYPE_CHECKING:
    from datetime import tzinfo

    from memoryd.clock import Clock
    from memoryd.ids import IdGenerator
    from memoryd.jobs.model import RetryPolicy
    from memoryd.memory.promotion_policy import PromotionPolicy
    from memoryd.providers.llm import Gateway
    from memoryd.storage.protocols import Store

log = logging.getLogger("memoryd")


class ExtractionQueue:
    """Queues triggers as persisted jobs and runs them; ``on_enqueue`` wakes the worker."""

    def __init__(
        self,
        *,
        store: Store,
        gateway: Gateway,
        policy: PromotionPolicy,
        retry_policy: RetryPolicy,
        clock: Clock,
        zone: tzinfo,
        ids: IdGenerator,
        propose: Propose,
        on_enqueue: Callable[[], None],
    ) -> None:
        self.store, self.gateway, self.clock, self.zone, self.ids = store, gateway, clock, zone, ids
        self.policy, self.retry_policy = policy, retry_policy
        self.propose, self.on_enqueue = propose, on_enqueue
        self._cut_off = CutOffClaims("extraction")

    def observe_turn(
        self,
        user_message: str,
        summary: str | None = None,
        *,
        at: datetime | None = None,
        now: datetime | None = None,
        tainted_by: str | None = None,
    ) -> Observation:
        """Fire-and-forget: queue the turn for extraction and return at once. The queue is
        persisted, so a crash loses no turn; the worker extracts it in the background.
        ``at`` is when the turn happened (naive: the owner's local time; default now): the
        model reads "yesterday" against it, and an event it leaves undated gets its date.
        ``tainted_by`` says why the turn is suspect (the model read tool output in it); then
        nothing extracted from it activates alone."""
        job = self.turn_job(user_message, summary, at=at, now=now)
        if tainted_by:
            job.payload["tainted_by"] = tainted_by
        if not self.gateway.configured("extract"):
            return Observation(False, None, off_notice("extraction"))
        with self.store.transaction():
            self.store.jobs.enqueue(job)
        self.on_enqueue()
        return Observation(True, job.id)

    def turn_job(
        self,
        user_message: str,
        summary: str | None,
        *,
        at: datetime | None,
        now: datetime | None,
        kind: str = "turn",
    ) -> Job:
        """The queued job for one turn (credentials redacted, their fingerprints kept), for
        the caller to enqueue in its own transaction; ids made in order sort in order.
        ``kind`` ``imported_turn`` queues it behind every live trigger."""
        return self.job_of(kind, self.turn_payload(user_message, summary, at=at, now=now), now)

    def turn_payload(
        self, user_message: str, summary: str | None, *, at: datetime | None, now: datetime | None
    ) -> dict[str, Any]:
        """A turn's job payload (JSON: credentials redacted, their fingerprints kept), made
        apart from its job when the job's id is made later (an import, oldest first)."""
        if not user_message.strip():
            raise InvalidInputError("the owner's message is empty; nothing to observe")
        return {
            "user": redact_credentials(user_message),
            "summary": redact_credentials(summary or ""),
            "at": to_db(self._instant(at, now, "the turn's time")),
            **_secret_payload(user_message + "\n" + (summary or "")),
        }

    def before_compaction(
        self, turns: Sequence[Mapping[str, Any]], *, now: datetime | None = None
    ) -> Observation:
        """Queue the turns about to be summarised away for extraction: ``{"role",
        "content"}`` each, with an optional ``"at"`` (ISO text or datetime; without an offset
        the owner's local time; default now)."""
        if not turns:
            raise InvalidInputError("no turns given; nothing to extract before compaction")
        cleaned = [
            {
                "role": str(t.get("role", "user")),
                "content": redact_credentials(str(t.get("content", ""))),
                "at": to_db(self._instant(t.get("at"), now, f'turn {index}\'s "at"')),
            }
            for index, t in enumerate(turns)
        ]
        texts = "\n".join(str(t.get("content", "")) for t in turns)
        payload = {"turns": cleaned, **_secret_payload(texts)}
        return self._enqueue("compaction", payload, now)

    def mission_finished(
        self, digest: MissionDigest, *, now: datetime | None = None
    ) -> Observation:
        """Queue a finished mission's digest for the stricter, discoveries-only extraction
        (dated by ``digest.finished_at``, default now)."""
        if not digest.outcome.strip():
            raise InvalidInputError("the mission digest has no outcome text")
        payload = {
            "title": redact_credentials(digest.title),
            "goal": redact_credentials(digest.goal),
            "outcome": redact_credentials(digest.outcome),
            "finished_at": to_db(self._instant(digest.finished_at, now, "finished_at")),
            **_secret_payload("\n".join([digest.title, digest.goal, digest.outcome])),
        }
        return self._enqueue("mission", payload, now)

    def _instant(self, value: object, now: datetime | None, what: str) -> datetime:
        """When a turn happened: ``value`` (an aware or owner-local datetime, or ISO text
        without an offset read as the owner's local time), else the time it is queued."""
        if value is None or value == "":
            return now or self.clock()
        if isinstance(value, str):
            return parse_local_instant(value, self.zone, what=what)
        if isinstance(value, datetime):
            aware = value if value.tzinfo is not None else value.replace(tzinfo=self.zone)
            return parse_local_instant(aware.isoformat(), self.zone, what=what)
        raise InvalidInputError(f"{what} must be an ISO-8601 time, got {type(value).__name__}")

    def run_jobs(
        self, *, limit: int | None = None, now: datetime | None = None, job_id: str | None = None
    ) -> list[JobReport]:
        """Run due extraction jobs (or just ``job_id``) until none is due or ``limit`` ran."""
        store = self.store
        reports: list[JobReport] = []
        self._cut_off.release(store, now or self.clock())
        while limit is None or len(reports) < limit:
            at = now or self.clock()
            job: Job | None = None
            try:
                with store.transaction():
                    if job_id is not None:
                        job = store.jobs.get(job_id)
                        if job is None:
                            raise InvalidInputError(f"no job with id {job_id!r}")
                        if job.status in (JobStatus.DONE, JobStatus.FAILED):
                            return [JobReport(job, ())]
                        job = store.jobs.claim_one(job_id, at)
                    else:
                        lease = self.retry_policy.lease_seconds
                        job = store.jobs.claim(LIVE_TRIGGERS, at, lease) or store.jobs.claim(
                            BACKLOG_TRIGGERS, at, lease
                        )
                if job is None:
                    break
                reports.append(self._run(job, at))
            except StoreUnavailableError:
                self._cut_off.note(job, at)
                raise
            if job_id is not None:
                break
        return reports

    def job(self, job_id: str) -> Job:
        """One job, or a clear error."""
        found = self.store.jobs.get(job_id)
        if found is None:
            raise InvalidInputError(f"no job with id {job_id!r}")
        return found

    def retry(self, job_id: str, now: datetime | None) -> Job:
        """Queue a failed (or waiting) job again, due now, with its attempts counted afresh;
        a clear error when it is running, done, or failed without the content to run again."""
        store = self.store
        at = now or self.clock()
        with store.transaction():
            job = self.job(job_id)
            if job.status is JobStatus.FAILED and not job.payload:
                raise InvalidOperationError(
                    f"job {job_id} failed for good ({job.last_error}) and kept nothing to run "
                    "again; only jobs that failed because an endpoint was away, or whose answer "
                    "was cut at its token limit, can be retried"
                )
            if not store.jobs.requeue(job.id, at):
                raise InvalidOperationError(
                    f"job {job_id} is {job.status.value}; only a failed or waiting job can be "
                    "retried"
                )
            return self.job(job.id)

    def _enqueue(self, kind: str, payload: dict[str, Any], now: datetime | None) -> Observation:
        if not self.gateway.configured("extract"):
            return Observation(False, None, off_notice("extraction"))
        job = self.job_of(kind, payload, now)
        with self.store.transaction():
            self.store.jobs.enqueue(job)
        self.on_enqueue()
        return Observation(True, job.id)

    def job_of(self, kind: str, payload: dict[str, Any], now: datetime | None) -> Job:
        """A queued job of ``kind`` over ``payload``; ids made in order sort in order."""
        at = now or self.clock()
        return Job(
            id=self.ids.new_id(at),
            kind=kind,
            payload=payload,
            status=JobStatus.QUEUED,
            attempts=0,
            next_attempt_at=at,
            created_at=at,
        )

    def _run(self, job: Job, at: datetime) -> JobReport:
        store = self.store
        prompt_name, source = TRIGGERS[job.kind]
        prompt = load_prompt(prompt_name)
        conversation, written, digest = self._conversation(job)
        # The model reuses the predicates each subject already has (one slot per meaning).
        vocabulary = render_known_predicates(known_predicates(store, conversation))
        try:
            extraction = Extractor(self.gateway).extract(prompt, conversation + vocabulary)
        except (LLMUnavailableError, LLMConfigError) as error:
            # Both pass: a server comes back, a missing key gets set. The error stays visible.
            retry_at = self.retry_policy.next_attempt(job.attempts, at)
            with store.transaction():
                if retry_at is None:
                    # Kept for `memoryd jobs retry` once the endpoint is back.
                    store.jobs.fail(job.id, str(error), at, keep_payload=True)
                else:
                    store.jobs.retry(job.id, str(error), retry_at)
            log.warning("extraction job %s: %s (attempt %d)", job.id, error, job.attempts)
            return JobReport(self.job(job.id), ())
        day = written.astimezone(self.zone).date()
        proposals: tuple[Proposal, ...] = date_events(extraction.proposals, day)
        echoed = 0
        if digest is not None:
            kept = tuple(p for p in proposals if not echoes_goal(p, digest))
            echoed = len(proposals) - len(kept)
            proposals = kept
        secrets = frozenset(job.payload.get("secrets", ()))
        salt = str(job.payload.get("salt", ""))
        leaked = [p for p in proposals if repeats_secret(p, secrets, salt)]
        proposals = tuple(p for p in proposals if p not in leaked)
        marker = find_sensitive(conversation, self.policy.sensitive_phrases)
        taint = f"contained the instruction or secret marker {marker!r}" if marker else None
        taint = taint or job.payload.get("tainted_by")
        with store.transaction():
            results = [
                WriteResult(
                    Outcome.DROPPED,
                    "repeats a secret removed from the conversation",
                    "secret-echo",
                    None,
                )
                for _ in leaked
            ]
            made_by = Provenance(
                source, f"job:{job.id}", extraction.model, extraction.prompt_version
            )
            results += self.propose(proposals, made_by, at, taint)
            if extraction.error is not None:
                # A broken answer is quoted in the error: keep no secret it may repeat. One cut
                # at the token cap keeps its input, for a retry once the limit is raised.
                said = redact_credentials(extraction.error)
                store.jobs.fail(job.id, said, at, keep_payload=extraction.cut_off)
            else:
                summary = Counter(r.outcome.value for r in results)
                store.jobs.finish(
                    job.id,
                    {
                        "outcomes": dict(summary),
                        "echoes_dropped": echoed,
                        "attempts": extraction.attempts,
                        "structured": extraction.structured,
                    },
                    at,
                )
        return JobReport(self.job(job.id), tuple(results))

    def _conversation(self, job: Job) -> tuple[str, datetime, MissionDigest | None]:
        """The job's extraction input with the trusted line saying when it was written, that
        time (undated events happened on its day) and, for a mission, its digest. Jobs queued
        before turns carried their time use the time they were queued."""
        zone = self.zone
        payload = job.payload

        def stamp(key: str) -> datetime:
            return from_db(payload.get(key)) or job.created_at

        if job.kind in ("turn", "imported_turn"):
            written = stamp("at")
            body = render_turn(payload["user"], payload.get("summary"))
            return when_line("The turn happened", written, zone) + "\n" + body, written, None
        if job.kind == "compaction":
            turns = [
                {**turn, "at": from_db(turn.get("at")) or job.created_at}
                for turn in payload["turns"]
            ]
            times = [turn["at"] for turn in turns]
            written = max(times)
            head = span_line(min(times), written, zone)
            return head + "\n" + render_turns(turns, zone), written, None
        written = stamp("finished_at")
        digest = MissionDigest(payload["title"], payload.get("goal", ""), payload["outcome"])
        head = when_line("The mission finished", written, zone)
        return head + "\n" + render_mission(digest), written, digest


def _secret_payload(text: str) -> dict[str, Any]:
    """Fingerprints of the secrets removed from a queued conversation, with their salt."""
    salt = secrets_module.token_hex(8)
    return {"salt": salt, "secrets": secret_fingerprints(text, salt)}
