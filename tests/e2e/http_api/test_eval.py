"""The evaluation set over HTTP and on the web page: cases added through the API and through
the recall playground's "should have been here" / "should not be here" buttons, listed, run
beside candidate settings, and removed; bad input gets a 4xx naming the field."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import unquote

import httpx

from .conftest import ABSENT_ID, Server

QUESTION = "Which bakery sells the cardamom buns in Tavira?"


def test_eval_cases_and_runs_over_the_api_and_the_web_page(server: Server) -> None:
    bakery = server.remember("Padaria Rosa in Tavira sells cardamom buns on Saturdays")
    ferry = server.remember("The Tavira island ferry leaves from the old fish market")

    # The web page: log in, try the question in the playground, mark both results.
    with httpx.Client(base_url=server.base_url, follow_redirects=False) as web:
        login = web.post("/login", data={"token": server.token, "next": "/recall"})
        web.cookies.set("memoryd_session", login.cookies["memoryd_session"])
        playground = web.get("/recall", params={"message": QUESTION}).text
        csrf = re.search(r'name="csrf" value="(\w+)"', playground)
        assert csrf is not None
        assert "should have been here" in playground and "should not be here" in playground
        for memory_id, verdict in ((bakery["id"], "expected"), (ferry["id"], "noise")):
            marked = web.post("/eval/verdict", data={
                "csrf": csrf.group(1), "question": QUESTION, "memory_id": memory_id,
                "verdict": verdict, "back": f"/recall?message={QUESTION}"})  # fmt: skip
            assert marked.status_code == 303
            assert "added to the evaluation set" in unquote(marked.headers["location"])
        forged = web.post(
            "/eval/verdict",
            data={"csrf": "forged", "question": "x", "memory_id": ferry["id"], "verdict": "noise"},
        )
        assert "expired" in forged.headers["location"]
        away = web.post("/eval/verdict", data={"csrf": csrf.group(1), "question": QUESTION,
                                               "memory_id": ferry["id"], "verdict": "noise",
                                               "back": "/\\evil.example/"})  # fmt: skip
        assert away.headers["location"].startswith("/recall?flash=")
        page = unescape(
            web.get(
                "/eval", params={"run": "1", "k": "1", "candidate": "recall.budget_tokens=0"}
            ).text
        )

    cases = server.ok("GET", "/v1/eval/cases")
    case = next(c for c in cases if c["question"] == QUESTION)
    assert (case["expected"], case["noise"]) == ([bakery["id"]], [ferry["id"]])
    assert "Padaria Rosa in Tavira" in page and "recall.budget_tokens=0" in page
    report = page[page.index("<h2>Report</h2>") :]
    assert re.search(r"block recall</td><td[^>]*>1/1</td><td[^>]*>0/1<", report), report
    assert re.search(r"noise in block</td><td[^>]*>1/1</td><td[^>]*>0/1<", report), report

    run = server.ok("POST", "/v1/eval/run",
                    json={"k": 1, "overrides": {"recall.budget_tokens": 0}})  # fmt: skip
    mine = next(c for c in run["baseline"]["cases"] if c["id"] == case["id"])
    candidate = next(c for c in run["candidate"]["cases"] if c["id"] == case["id"])
    assert mine["found_in_top_k"] == [bakery["id"]] and mine["found_in_block"] == [bakery["id"]]
    # The ferry (also in Tavira) is in today's block: the noise the owner marked.
    assert mine["noise_in_block"] == [ferry["id"]]
    assert candidate["found_in_block"] == candidate["noise_in_block"] == []
    assert run["candidate"]["label"] == "recall.budget_tokens=0"
    # Nothing a run recalled counts as retrieved.
    assert server.show(bakery["id"])["retrieval_hits"] == 0

    bad_key = server.http.post("/v1/eval/run", json={"overrides": {"recall.gate": 1}})
    unknown = server.http.post("/v1/eval/cases", json={"question": "q", "expect": [ABSENT_ID]})
    empty = server.http.post("/v1/eval/cases", json={"question": "q"})
    assert bad_key.status_code == 400 and bad_key.json()["fields"] == ["overrides"]
    assert "unknown recall setting 'recall.gate'" in bad_key.json()["error"]
    assert unknown.status_code == 404 and "GET /v1/memories" in unknown.json()["error"]
    assert empty.status_code == 400 and empty.json()["fields"] == ["expect", "noise"]

    removed = server.ok("DELETE", f"/v1/eval/cases/{case['id']}")
    again = server.http.delete(f"/v1/eval/cases/{case['id']}")
    assert removed["id"] == case["id"] and again.status_code == 404
    assert "GET /v1/eval/cases" in again.json()["error"]
