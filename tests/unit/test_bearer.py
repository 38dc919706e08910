"""The one bearer check shared by the HTTP API and the MCP endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.config.keys import SettingsError
from memoryd.http.auth import MISSING, TOKEN_FILE, WRONG, bearer_refusal, load_token

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


def test_a_token_file_no_header_can_carry_is_refused_by_name(tmp_path: Path) -> None:
    """An owner who wrote their own token with a letter outside ASCII gets the file named and
    the next step (it was a UnicodeDecodeError at serve's start)."""
    (tmp_path / TOKEN_FILE).write_text("pässwort-token\n", encoding="utf-8")

    with pytest.raises(SettingsError) as caught:
        load_token(tmp_path, {})

    assert str(tmp_path / TOKEN_FILE) in str(caught.value) and "memoryd init" in str(caught.value)
    assert load_token(tmp_path, {"MEMORYD_TOKEN": TOKEN}) == TOKEN
