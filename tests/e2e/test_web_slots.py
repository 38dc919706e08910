"""On the owner's page, in headless Chromium: a pending fact placed in another predicate's
slot says so beside what it would replace, and the Split button gives it its own slot."""

from __future__ import annotations

from typing import Any

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from .test_web_page import _row_with, _submit, browser, server  # noqa: F401 - fixtures


def test_the_review_page_shows_the_shared_slot_and_splits_it(
    server: tuple[str, str],  # noqa: F811 - the fixture imported above
    browser: WebDriver,  # noqa: F811
) -> None:
    base, token = server
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        api.post("/v1/memories", json={
            "content": "Owner lives in Lisbon", "subject": "owner", "predicate": "lives in",
            "object": "Lisbon"})  # fmt: skip
        proposed: Any = api.post("/v1/propose", json={"source": "turn", "memories": [
            {"kind": "fact", "content": "The owner's home city is Porto", "subject": "the owner",
             "predicate": "home city", "object": "Porto", "confidence": 0.9,
             "changes_behavior": False}]}).json()  # fmt: skip
    porto = proposed[0]["memory"]
    browser.get(f"{base}/login")
    browser.find_element(By.NAME, "token").send_keys(token)
    _submit(browser, browser.find_element(By.TAG_NAME, "button"))

    row = _row_with(browser, "home city is Porto")
    assert "Treated as the same slot as “lives in” (its own predicate: “home city”)" in row.text
    assert "Why pending: a fact never activates alone; treated as the same slot as 'lives in'" in (
        row.text
    )
    assert "Owner lives in Lisbon" in row.find_element(By.XPATH, "./td[3]").text
    _submit(browser, row.find_element(By.XPATH, ".//button[text()='Split']"))

    assert browser.find_element(By.CLASS_NAME, "flash").text == (
        "split: 'home city' has its own slot again"
    )
    row = _row_with(browser, "home city is Porto")
    assert "treated as the same slot" not in row.text.lower()
    assert "Why pending: a fact never activates alone" in row.text
    assert "nothing: no active fact holds this slot" in row.text
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        shown = api.get(f"/v1/memories/{porto['id']}").json()
    assert (shown["status"], shown["same_slot_as"]) == ("pending", None)
