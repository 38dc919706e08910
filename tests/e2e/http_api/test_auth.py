"""The bearer token in front of every route but health (SPEC §7), over a real socket."""

from __future__ import annotations

import os

import pytest

from ..server import HEALTH
from .conftest import ABSENT_ID, Server, http_client


def _routes(server: Server) -> list[tuple[str, str]]:
    spec = server.anon.get("/openapi.json")
    assert spec.status_code == 200
    routes = [
        (method.upper(), path.replace("{memory_id}", ABSENT_ID).replace("{document_id}", "d1"))
        for path, methods in spec.json()["paths"].items()
        for method in methods
        if path != HEALTH
    ]
    return routes


# --------------------------------------------------------------------- auth


def test_health_needs_no_token(server: Server) -> None:
    response = server.anon.get(HEALTH)

    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["version"]


def test_the_token_file_is_readable_by_its_owner_only(server: Server) -> None:
    mode = os.stat(server.home / "token").st_mode & 0o777

    assert mode == 0o600, oct(mode)


def test_every_route_but_health_needs_a_token(server: Server) -> None:
    routes = _routes(server)
    assert len(routes) >= 28, routes
    for method, path in routes:
        response = server.anon.request(method, path)

        assert response.status_code == 401, (method, path, response.status_code, response.text)
        assert set(response.json()) == {"error"}, (method, path, response.text)
        assert "bearer" in response.json()["error"].lower()
        assert response.headers.get("www-authenticate") == "Bearer", (method, path)


def test_every_route_but_health_refuses_a_wrong_token(server: Server) -> None:
    with http_client(server.base_url, server.token + "x") as wrong:
        for method, path in _routes(server):
            response = wrong.request(method, path)

            assert response.status_code == 403, (method, path, response.status_code, response.text)
            assert set(response.json()) == {"error"}, (method, path, response.text)
            assert "www-authenticate" not in response.headers


@pytest.mark.parametrize(
    "header",
    ["Basic dXNlcjpwYXNz", "Bearer", "Token abc"],
    ids=["basic", "bearer-alone", "other-scheme"],
)
def test_a_header_without_a_bearer_token_is_401(server: Server, header: str) -> None:
    response = server.anon.get("/v1/memories", headers={"Authorization": header})

    assert response.status_code == 401, response.text
    assert response.headers.get("www-authenticate") == "Bearer"


def test_the_scheme_is_case_insensitive_and_a_stray_cookie_is_no_login(server: Server) -> None:
    lower = server.anon.get("/v1/memories", headers={"Authorization": f"bearer {server.token}"})
    cookie = server.anon.get("/v1/memories", headers={"Cookie": "memoryd_session=forged"})

    assert lower.status_code == 200, lower.text
    assert cookie.status_code == 401, cookie.text


def test_credentials_are_checked_before_the_body_is_parsed(server: Server) -> None:
    """Without a token, a malformed body must still be a 401 (403 with a wrong one): the
    server should not parse, or judge, anything a stranger sends."""
    json_body = b'{"message": '
    json_type = {"content-type": "application/json"}
    form_type = {"content-type": "multipart/form-data"}
    with http_client(server.base_url, "wrong-token") as wrong:
        statuses = {
            "json, no token": server.anon.post(
                "/v1/recall", content=json_body, headers=json_type
            ).status_code,
            "json, wrong token": wrong.post(
                "/v1/recall", content=json_body, headers=json_type
            ).status_code,
            "upload, no token": server.anon.post(
                "/v1/kb/upload", content=b"garbage", headers=form_type
            ).status_code,
            "upload, wrong token": wrong.post(
                "/v1/kb/upload", content=b"garbage", headers=form_type
            ).status_code,
        }

    assert statuses == {
        "json, no token": 401,
        "json, wrong token": 403,
        "upload, no token": 401,
        "upload, wrong token": 403,
    }
