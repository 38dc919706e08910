"""The web page's recall playground (a preview: nothing it shows counts as retrieved), the
owner's evaluation set it feeds, and forget (the list first, then a button that erases it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from memoryd.errors import InvalidInputError
from memoryd.evaluation.policy import parse_overrides
from memoryd.http.depends import Service
from memoryd.http.eval_html import eval_html
from memoryd.http.web_recall_html import VERDICTS, forget_html, recall_html
from memoryd.http.web_review_routes import label
from memoryd.http.web_session import (
    FormSession,
    Session,
    act,
    attempt,
    csrf_of,
    flash_redirect,
    local_path,
    page,
)

if TYPE_CHECKING:
    from memoryd.evaluation.run import EvalRun
    from memoryd.memory.forget_policy import ForgetResult
    from memoryd.results import RecallResult

router = APIRouter(include_in_schema=False)


@router.get("/recall")
def recall_page(
    request: Request, service: Service, session: Session, message: str = "", budget: str = "1500"
) -> HTMLResponse:
    """Try a message: the block recall would give, each memory with a verdict button."""

    def preview() -> RecallResult:
        # A preview: trying a message here must not count as a retrieval.
        chosen = _whole(budget, "the token budget must be a whole number of tokens")
        return service.retrieval.recall(message, budget=chosen, stamp=False)

    result, error = attempt(preview) if message.strip() else (None, None)
    body = recall_html(message, budget, result, error, csrf_of(request, session))
    return page(request, "Recall", body, session)


@router.post("/eval/verdict")
def eval_verdict(
    session: FormSession,
    service: Service,
    question: str = Form(""),
    memory_id: str = Form(""),
    verdict: str = Form(""),
    back: str = Form("/recall"),
) -> Response:
    """A recall result judged expected or noise joins the evaluation set."""
    chosen = {"expected": ([memory_id], []), "noise": ([], [memory_id])}.get(verdict)
    if chosen is None:
        return flash_redirect(local_path(back), f"error: unknown verdict {verdict!r}")
    expected, noise = chosen
    return act(
        local_path(back),
        lambda: service.eval_add(question, expected=expected, noise=noise),
        f"added to the evaluation set as {VERDICTS[verdict]!r}",
    )


@router.post("/eval/cases")
def eval_add(
    session: FormSession,
    service: Service,
    question: str = Form(""),
    expect: str = Form(""),
    noise: str = Form(""),
) -> Response:
    """A case written by hand (ids or unique prefixes, by spaces or commas)."""
    return act(
        "/eval",
        lambda: service.eval_add(
            question, expected=expect.replace(",", " ").split(),
            noise=noise.replace(",", " ").split(),
        ),
        "case added",
    )  # fmt: skip


@router.post("/eval/{case_id}/remove")
def eval_remove(session: FormSession, service: Service, case_id: str) -> Response:
    """Drop a case."""
    return act("/eval", lambda: service.eval_remove(case_id), "case removed")


@router.get("/eval")
def eval_page(
    request: Request,
    service: Service,
    session: Session,
    run: str = "",
    k: str = "5",
    candidate: str = "",
) -> Response:
    """The evaluation set, and with ``run`` its scores (beside a candidate's)."""
    cases = service.eval_cases()
    ids = sorted({i for case in cases for i in (*case.expected, *case.noise)})
    labels = {i: label(service, i) for i in ids}

    def score() -> EvalRun:
        pairs = [p for p in candidate.replace(";", ",").split(",") if p.strip()]
        return service.eval_run(k=_whole(k, "k must be a whole number"),
                                overrides=parse_overrides(pairs))  # fmt: skip

    report, error = attempt(score) if run else (None, None)
    body = eval_html(cases, labels, csrf_of(request, session), run=report, k=k,
                     candidate=candidate, error=error)  # fmt: skip
    return page(request, "Evaluation", body, session)


@router.get("/forget")
def forget_page(
    request: Request, service: Service, session: Session, by: str = "entity", text: str = ""
) -> HTMLResponse:
    """What forget would erase (nothing changes until the button)."""

    def listed() -> ForgetResult:
        entity, query = _forget_request(by, text)
        return service.memories.forget(entity=entity, query=query, dry_run=True)

    plan, error = attempt(listed) if text.strip() else (None, None)
    body = forget_html(by, text, plan, error, csrf_of(request, session))
    return page(request, "Forget", body, session)


@router.post("/forget")
def forget_confirmed(
    session: FormSession,
    service: Service,
    by: str = Form(""),
    text: str = Form(""),
) -> Response:
    """Erase what the list showed."""

    def erase() -> ForgetResult:
        entity, query = _forget_request(by, text)
        return service.memories.forget(entity=entity, query=query)

    return act("/forget", erase, lambda erased: "erased: " + erased.summary)


def _whole(text: str, refusal: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidInputError(f"{refusal}, not {text!r}") from None


def _forget_request(by: str, text: str) -> tuple[str | None, str | None]:
    """(entity, query) from the form's choice and text."""
    if by not in ("entity", "query"):
        raise InvalidInputError(f"forget by 'entity' or 'query', not {by!r}")
    return (text, None) if by == "entity" else (None, text)
