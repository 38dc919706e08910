"""The one bearer check shared by the HTTP API and the MCP endpoint."""

from __future__ import annotations

import pytest

from memoryd.http.auth import MISSING, WRONG, bearer_refusal

TOKEN = "s3cret-token"


@pytest.mark.parametrize(
    "header",
    ["", "Bearer", "Bearer ", "Bearer    ", "Basic czNjcmV0LXRva2Vu", f"Token {TOKEN}", TOKEN],
)
def test_a_header_without_a_bearer_token_is_missing(header: str) -> None:
    assert bearer_refusal(header, TOKEN) == MISSING == 401


@pytest.mark.parametrize("given", ["wrong", TOKEN + "x", TOKEN[:-1], TOKEN.upper()])
def test_another_bearer_token_is_wrong(given: str) -> None:
    assert bearer_refusal(f"Bearer {given}", TOKEN) == WRONG == 403


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER  {TOKEN} "])
def test_the_token_passes_whatever_the_scheme_case_and_spacing(header: str) -> None:
    assert bearer_refusal(header, TOKEN) is None
