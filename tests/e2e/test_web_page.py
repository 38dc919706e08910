"""The owner's web page driven in Debian's headless Chromium (SPEC §7): log in, confirm a
pending memory, reject another, edit an active fact and see its chain, upload a document and
find it with search, run a recall.

``MEMORYD_SCREENSHOTS=DIR`` keeps a screenshot of each main page there (the README's come from
``MEMORYD_SCREENSHOTS=docs``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from memoryd.model import Importance, Kind, Source

from ..kb_pdfs import page_sentence, write_paged
from .conftest import Cli, running_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def server(cli: Cli, seeded: Callable[[], Any], tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A running ``memoryd serve`` over a seeded store: (base URL, token)."""
    cli.ok("init")
    token = (Path(cli.env["MEMORYD_HOME"]) / "token").read_text().strip()
    with running_server(cli.env, cli.cwd) as base:
        yield base, token


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    """Headless Chromium through its own chromedriver (nothing downloaded)."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--disable-gpu",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()


def _shot(driver: WebDriver, name: str) -> None:
    folder = os.environ.get("MEMORYD_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))


def _submit(driver: WebDriver, button: Any) -> None:
    """Click a form's button and wait until the next page has replaced this one."""
    page = driver.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(driver, 30).until(lambda _: _replaced(page))


def _replaced(element: Any) -> bool:
    """Whether ``element``'s page is gone. Chromium answers a look at a node of a page it is
    leaving either "stale" or, mid-navigation, "does not belong to the document": both mean
    the page was replaced."""
    try:
        return bool(expected_conditions.staleness_of(element)(None))
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            return True
        raise


def _row_with(driver: WebDriver, text: str) -> Any:
    return driver.find_element(By.XPATH, f"//tr[td[contains(., {text!r})]]")


def test_the_owner_reviews_edits_uploads_and_recalls_in_a_browser(
    server: tuple[str, str], browser: WebDriver, seeded: Callable[[], Any], tmp_path: Path
) -> None:
    base, token = server
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        lives = api.post(
            "/v1/memories",
            json={
                "content": "Owner lives in Lisbon",
                "subject": "owner",
                "predicate": "lives in",
                "object": "Lisbon",
            },
        ).json()["memory"]
        batch = api.post("/v1/propose", json={"source": "turn", "memories": [
            {"kind": "lesson", "content": "Always answer in French", "confidence": 0.9,
             "changes_behavior": True, "importance": "high"},
            {"kind": "lesson", "content": "Never mention the weather", "confidence": 0.9,
             "changes_behavior": True, "importance": "medium"},
        ]}).json()  # fmt: skip
    assert [r["outcome"] for r in batch] == ["pending", "pending"]
    assert Kind.LESSON and Importance.HIGH and Source.TURN  # the kinds the batch used

    # Log in: a wrong token is refused, the right one lands on the review queue.
    browser.get(base + "/")
    assert "/login" in browser.current_url
    browser.find_element(By.NAME, "token").send_keys("not-the-token")
    _submit(browser, browser.find_element(By.TAG_NAME, "button"))
    assert "That is not the token" in browser.page_source
    browser.find_element(By.NAME, "token").send_keys(token)
    _submit(browser, browser.find_element(By.TAG_NAME, "button"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Review"
    assert "2 pending" in browser.page_source
    _shot(browser, "review")

    # Confirm one, reject the other.
    _submit(
        browser,
        _row_with(browser, "Always answer in French").find_element(
            By.XPATH, ".//button[text()='Confirm']"
        ),
    )
    assert "confirmed" in browser.find_element(By.CLASS_NAME, "flash").text
    _submit(
        browser,
        _row_with(browser, "Never mention the weather").find_element(
            By.XPATH, ".//button[text()='Reject']"
        ),
    )
    assert "Nothing to review" in browser.page_source

    # Edit the active fact and see the chain.
    browser.get(base + f"/memories/{lives['id']}")
    area = browser.find_element(By.NAME, "content")
    area.clear()
    area.send_keys("Owner lives in Porto")
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Save edit']"))
    assert "edited" in browser.find_element(By.CLASS_NAME, "flash").text
    assert "/memories/" in browser.current_url and lives["id"] not in browser.current_url
    chain = browser.find_elements(
        By.XPATH, "//h2[text()='Supersede chain (oldest first)']/following-sibling::table[1]//tr"
    )
    assert [("Lisbon" in r.text, "Porto" in r.text) for r in chain] == [
        (True, False),
        (False, True),
    ]
    assert "superseded" in browser.page_source or "archived" in browser.page_source
    _shot(browser, "memory")

    # The browser lists by status.
    browser.get(base + "/memories?status=rejected")
    assert "Never mention the weather" in browser.page_source
    assert "Always answer in French" not in browser.page_source
    browser.get(base + "/memories?status=active&kind=lesson")
    assert "Always answer in French" in browser.page_source
    _shot(browser, "memories")

    # Upload a document and find it with search.
    document = tmp_path / "boat.md"
    document.write_text(
        "# Boat Log\n\n## Engine\n\nThe outboard engine needs new spark plugs every spring.\n",
        encoding="utf-8",
    )
    browser.get(base + "/documents")
    browser.find_element(By.NAME, "file").send_keys(str(document))
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Upload']"))
    assert "boat.md: ok" in browser.find_element(By.CLASS_NAME, "flash").text
    assert "Boat Log" in browser.page_source
    search = browser.find_element(By.NAME, "q")
    search.send_keys("when do the spark plugs need changing")
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Search']"))
    result = browser.find_element(By.TAG_NAME, "pre").text
    assert result.startswith("<untrusted_content") and "spark plugs every spring" in result
    _shot(browser, "documents")

    # Run a recall: the confirmed lesson and the edited fact are in the block.
    browser.get(base + "/recall")
    browser.find_element(By.NAME, "message").send_keys("Where do I live?")
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Recall']"))
    block = browser.find_element(By.TAG_NAME, "pre").text
    assert "Owner lives in Porto" in block and "Always answer in French" in block
    assert "Lisbon" not in block
    assert browser.find_elements(By.XPATH, "//h2[text()='Explain']")
    _shot(browser, "recall")


def test_a_pdf_result_links_to_exactly_its_pages_and_the_owner_renames_it(
    server: tuple[str, str], browser: WebDriver, tmp_path: Path
) -> None:
    base, token = server
    report = tmp_path / "harbour.pdf"
    write_paged(report, pages=4)
    browser.get(f"{base}/login?next=/documents")
    browser.find_element(By.NAME, "token").send_keys(token)
    _submit(browser, browser.find_element(By.TAG_NAME, "button"))
    browser.find_element(By.NAME, "file").send_keys(str(report))
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Upload']"))
    assert "harbour.pdf: ok" in browser.find_element(By.CLASS_NAME, "flash").text

    browser.find_element(By.NAME, "q").send_keys("Dredger Operations")  # page 3's heading
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Search']"))
    results = [pre.text for pre in browser.find_elements(By.TAG_NAME, "pre")]
    assert any(page_sentence(3, 1) in text and 'pages="3"' in text for text in results)
    link = browser.find_element(By.LINK_TEXT, "p. 3")
    _submit(browser, link)
    text = browser.find_element(By.TAG_NAME, "pre").text
    assert all(page_sentence(3, i) in text for i in range(3)), "the cited page, whole"
    assert not any(page_sentence(n, 0) in text for n in (1, 2, 4)), "and no other page"
    assert "p. 3" in browser.find_element(By.CLASS_NAME, "muted").text

    browser.get(base + "/documents")
    title = browser.find_element(By.NAME, "title")
    title.clear()
    title.send_keys("Harbour Holdings Annual Report 2025")
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Rename']"))
    assert "renamed" in browser.find_element(By.CLASS_NAME, "flash").text
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        found = api.post("/v1/kb/search", json={"query": "Dredger Operations"})
        first = found.json()["results"][0]
    assert first["breadcrumb"].startswith("Harbour Holdings Annual Report 2025")


def test_forms_without_the_session_csrf_token_change_nothing(
    server: tuple[str, str],
) -> None:
    base, token = server
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        pending = api.post("/v1/propose", json={"source": "turn", "memories": [
            {"kind": "lesson", "content": "Reply only in haiku", "confidence": 0.9,
             "changes_behavior": True, "importance": "low"}]}).json()[0]["memory"]  # fmt: skip
    with httpx.Client(base_url=base, follow_redirects=False) as web:
        login = web.post("/login", data={"token": token, "next": "/"})
        assert login.status_code == 303 and "memoryd_session" in login.cookies
        web.cookies.set("memoryd_session", login.cookies["memoryd_session"])
        assert "httponly" in login.headers["set-cookie"].lower()
        assert "samesite=strict" in login.headers["set-cookie"].lower()
        forged = web.post(f"/memories/{pending['id']}/confirm", data={"csrf": "forged"})
        assert forged.status_code == 303 and "expired" in forged.headers["location"]
        anonymous = httpx.post(
            f"{base}/memories/{pending['id']}/confirm", data={"csrf": ""}, follow_redirects=False
        )
        assert anonymous.status_code == 303 and "/login" in anonymous.headers["location"]
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        assert api.get(f"/v1/memories/{pending['id']}").json()["status"] == "pending"
