"""The owner's web page driven in Debian's headless Chromium (SPEC §7): log in, confirm a
pending memory, reject another, edit an active fact and see its chain, upload a document and
find it with search, run a recall; on a 390 px phone screen, see why each memory is pending and
what it would replace, confirm several at once, and use every page without sideways scrolling.

``MEMORYD_SCREENSHOTS=DIR`` keeps a screenshot of each main page there (the README's come from
``MEMORYD_SCREENSHOTS=docs/screenshots``).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from memoryd.memory.model import Importance, Kind, Source

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


PHONE_WIDTH = 390


def _phone(driver: WebDriver) -> None:
    """Lay pages out as a 390 px wide phone does (the window itself cannot be that narrow)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": PHONE_WIDTH, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )


def _fits_the_phone(driver: WebDriver) -> None:
    """Nothing on the page sticks out sideways, and no value shows as a Python repr."""
    width = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE_WIDTH, f"{driver.current_url} is {width} px wide"
    text = driver.find_element(By.TAG_NAME, "body").text
    assert "{'" not in text and "['" not in text, text


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
        forged_bulk = web.post(
            "/review", data={"csrf": "forged", "action": "confirm", "ids": [pending["id"]]}
        )
        assert forged_bulk.status_code == 303 and "expired" in forged_bulk.headers["location"]
        anonymous = httpx.post(
            f"{base}/memories/{pending['id']}/confirm", data={"csrf": ""}, follow_redirects=False
        )
        assert anonymous.status_code == 303 and "/login" in anonymous.headers["location"]
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
            assert api.get(f"/v1/memories/{pending['id']}").json()["status"] == "pending"

        # With the session's token: nothing ticked is an error; an unknown id is reported
        # beside the one that was rejected.
        match = re.search(r'name="csrf" value="(\w+)"', web.get("/").text)
        assert match is not None
        csrf = match.group(1)
        empty = web.post("/review", data={"csrf": csrf, "action": "reject"})
        assert "tick the memories to reject first" in unquote(empty.headers["location"])
        mixed = web.post(
            "/review",
            data={"csrf": csrf, "action": "reject", "ids": [pending["id"], "01NOSUCHMEMORY"]},
        )
        assert unquote(mixed.headers["location"]) == "/?flash=rejected 1 of 2"
        page = web.get("/").text
        assert "<li>rejected: Reply only in haiku</li>" in page
        assert "<li>not rejected: 01NOSUCHMEMORY: " in page
        assert "<li>" not in web.get("/").text, "a report is shown once"
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        assert api.get(f"/v1/memories/{pending['id']}").json()["status"] == "rejected"


def test_on_a_phone_the_owner_sees_why_each_memory_waits_and_reviews_several_at_once(
    server: tuple[str, str], browser: WebDriver, tmp_path: Path
) -> None:
    base, token = server
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        lisbon = api.post("/v1/memories", json={
            "content": "Owner lives in Lisbon, in the Alfama district", "subject": "owner",
            "predicate": "lives in", "object": "Lisbon"}).json()["memory"]  # fmt: skip
        porto, french, sardines = (r["memory"] for r in api.post("/v1/propose", json={
            "source": "turn", "memories": [
                {"kind": "fact", "content": "Owner lives in Porto, near the Ribeira",
                 "subject": "owner", "predicate": "lives in", "object": "Porto",
                 "confidence": 0.9, "changes_behavior": False, "entities": ["Porto"]},
                {"kind": "lesson", "content": "Always answer in French", "confidence": 0.9,
                 "changes_behavior": True, "importance": "high"},
                {"kind": "event", "content": "Ate grilled sardines at the harbour",
                 "confidence": 0.4, "changes_behavior": False, "occurred_at": "2026-06-13"},
            ]}).json())  # fmt: skip
        document = tmp_path / "ferry-timetable-and-harbour-notes-for-the-summer-season.md"
        document.write_text("# Ferry Timetable\n\nThe Cacilhas ferry leaves every 20 minutes.\n")
        with document.open("rb") as upload:
            assert api.post("/v1/kb/upload", files={"file": upload}).json()["outcome"] == "ok"
    _phone(browser)
    browser.get(f"{base}/login")
    _fits_the_phone(browser)
    browser.find_element(By.NAME, "token").send_keys(token)
    _submit(browser, browser.find_element(By.TAG_NAME, "button"))

    # Each pending memory says why it waits; the fact says which active fact it would replace.
    assert "3 pending" in browser.page_source
    porto_row = _row_with(browser, "Owner lives in Porto")
    assert "Why pending: a fact never activates alone" in porto_row.text
    replaces = porto_row.find_element(By.XPATH, "./td[@data-label='would replace']")
    assert "Owner lives in Lisbon, in the Alfama district" in replaces.text
    french_row = _row_with(browser, "Always answer in French")
    assert "a lesson never activates alone; marked changes_behavior" in french_row.text
    assert "only a fact replaces another" in french_row.text
    assert "confidence 0.40 is below 0.80" in _row_with(browser, "grilled sardines").text
    _fits_the_phone(browser)
    _shot(browser, "review-phone")

    # Tick two and confirm them in one go: the page says what happened to each.
    for row in (porto_row, french_row):
        row.find_element(By.NAME, "ids").click()
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Confirm selected']"))
    assert browser.find_element(By.CLASS_NAME, "flash").text == "confirmed 2 of 2"
    report = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "ul.report li")]
    assert report == [
        "confirmed: Owner lives in Porto, near the Ribeira "
        "(replaces Owner lives in Lisbon, in the Alfama district)",
        "confirmed: Always answer in French",
    ]
    assert "1 pending" in browser.page_source

    # One that changed meanwhile is reported, not silently skipped, and nothing else moves.
    browser.find_element(By.ID, "pick-all").click()
    assert _row_with(browser, "grilled sardines").find_element(By.NAME, "ids").is_selected()
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        assert api.post(f"/v1/memories/{sardines['id']}/archive").status_code == 200
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Reject selected']"))
    assert browser.find_element(By.CLASS_NAME, "flash").text == "rejected 0 of 1"
    [failed] = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "ul.report li")]
    assert failed.startswith("not rejected: Ate grilled sardines at the harbour: ")
    assert "archived" in failed
    assert "Nothing to review" in browser.page_source
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        statuses = {
            m["id"]: m["status"] for m in (api.get(f"/v1/memories/{x['id']}").json()
            for x in (lisbon, porto, french, sardines))
        }  # fmt: skip
    assert statuses == {
        lisbon["id"]: "archived", porto["id"]: "active", french["id"]: "active",
        sardines["id"]: "archived",
    }  # fmt: skip

    # Every main page fits the phone; the filters are labelled; entities read as words.
    browser.get(base + "/memories?q=where+do+I+live")
    assert "found by vector #1" in browser.page_source
    for name in ("kind", "status"):
        select = browser.find_element(By.XPATH, f"//label[contains(., {name!r})]/select")
        assert select.get_attribute("name") == name and select.is_displayed()
    _fits_the_phone(browser)
    browser.get(f"{base}/memories/{porto['id']}")
    assert "Porto" in browser.find_element(By.XPATH, "//tr[th='entities']/td").text
    _fits_the_phone(browser)
    for path in ("/memories", "/reconfirm", "/documents?q=ferry"):
        browser.get(base + path)
        _fits_the_phone(browser)

    # The recall playground explains in words and is a preview: nothing is stamped.
    browser.get(base + "/recall?message=Where+do+I+live%3F")
    assert "Owner lives in Porto" in browser.find_element(By.TAG_NAME, "pre").text
    ranks = browser.find_element(By.XPATH, "//tr[td[contains(., 'Porto')]]/td[5]").text
    assert re.fullmatch(r"[a-z]+ #\d+(, [a-z]+ #\d+)*", ranks), ranks
    _fits_the_phone(browser)
    _shot(browser, "recall-phone")

    # "Should have been here" makes the answer an evaluation case; its run shows on a phone.
    keep = _row_with(browser, "Owner lives in Porto").find_element(
        By.XPATH, ".//button[text()='should have been here']"
    )
    _submit(browser, keep)
    assert "added to the evaluation set" in browser.find_element(By.CLASS_NAME, "flash").text
    browser.get(base + "/eval?run=1&k=1")
    assert "Where do I live?" in _row_with(browser, "Owner lives in Porto").text
    assert browser.find_element(By.CSS_SELECTOR, ".eval-report").text.count("1/1") == 2
    _fits_the_phone(browser)
    _shot(browser, "eval-phone")
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        shown = api.get(f"/v1/memories/{porto['id']}").json()
        [case] = api.get("/v1/eval/cases").json()
    assert (shown["retrieval_hits"], shown["last_retrieved_at"]) == (0, None)
    assert case["expected"] == [porto["id"]]

    # Forget: the list comes first, on the phone too; only the confirm button erases.
    browser.get(base + "/forget")
    browser.find_element(By.NAME, "text").send_keys("Ribeira")
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='List what would be erased']"))
    assert "Would erase: forget entity 'Ribeira': 1 memory, 0 chunks<" in browser.page_source
    assert porto["id"] in _row_with(browser, "Owner lives in Porto").text
    _fits_the_phone(browser)
    _shot(browser, "forget-phone")
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        assert api.get(f"/v1/memories/{porto['id']}").json()["content"], "listed, not erased"
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Erase all of this']"))
    flash = browser.find_element(By.CLASS_NAME, "flash").text
    assert flash == "erased: forget entity 'Ribeira': 1 memory, 0 chunks"
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        gone = api.get(f"/v1/memories/{porto['id']}").json()
    assert (gone["content"], gone["purged"]) == ("", True)
