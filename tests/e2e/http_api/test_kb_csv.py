"""A CSV export uploaded over HTTP (SPEC §7), as a browser sends it from the web page: its
declared type decides when its name has no extension, and its rows are found by search."""

from __future__ import annotations

from .conftest import Server

EXPORT = (
    "Month\tCategory\tBudget\tSpent\n"
    "2026-01\tHeating oil for the Alpine cabin\t400\t372\n"
    "2026-02\tHeating oil for the Alpine cabin\t400\t415\n"
    "2026-02\tSnow chains and winter tyres\t250\t238\n"
)


def test_a_tsv_uploaded_as_text_tab_separated_values_is_a_searchable_table(
    server: Server,
) -> None:
    response = server.http.post(
        "/v1/kb/upload",
        files={"file": ("cabin-budget", EXPORT.encode(), "text/tab-separated-values")},
    )
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["outcome"] == "ok", result
    document = server.embedded(result["document"])
    assert (document["title"], document["document_type"]) == ("cabin-budget", "csv")

    found = server.ok("POST", "/v1/kb/search", json={"query": "Alpine cabin heating oil spent"})
    top = found["results"][0]
    assert top["doc"] == document["id"]
    assert "| 2026-02 | Heating oil for the Alpine cabin | 400 | 415 |" in top["content"]
    server.ok("DELETE", f"/v1/kb/documents/{document['id']}")
