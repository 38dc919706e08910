"""Synced folders on the documents page, in headless Chromium: the owner adds a folder, sees
each file's state and why a file is skipped, sees a deleted note leave on its own, looks again
now, and stops syncing."""

from __future__ import annotations

import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from .test_web_page import _submit, browser, server  # noqa: F401 - the page's fixtures


def _states(driver: WebDriver) -> dict[str, str]:
    rows = driver.find_elements(By.XPATH, "//tr[td[@data-label='state']]")
    return {
        row.find_element(By.XPATH, "td[@data-label='file']").text: row.find_element(
            By.XPATH, "td[@data-label='state']"
        ).text
        for row in rows
    }


def test_the_owner_syncs_a_folder_from_the_documents_page(
    server: tuple[str, str],  # noqa: F811 - the fixture
    browser: WebDriver,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    base, token = server
    folder = tmp_path / "field-notes"
    folder.mkdir()
    (folder / "otters.md").write_text("# Otters\n\nOtters fish below the Tua weir at dawn.\n")
    (folder / "heron.md").write_text("# Heron\n\nA grey heron nests in the alder grove.\n")
    (folder / "recording.wav").write_bytes(b"RIFF")
    browser.get(f"{base}/login?next=/documents")
    browser.find_element(By.NAME, "token").send_keys(token)
    _submit(browser, browser.find_element(By.TAG_NAME, "button"))

    browser.find_element(By.NAME, "location").send_keys(str(folder))
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Sync']"))
    assert f"syncing {folder}" in browser.find_element(By.CLASS_NAME, "flash").text
    assert str(folder) in browser.find_element(By.CLASS_NAME, "synced").text
    states = _states(browser)
    assert states["recording.wav"] == "skipped"
    assert (
        "not a type memoryd reads (.wav)"
        in browser.find_element(By.XPATH, "//tr[td[.='recording.wav']]").text
    )
    assert states["otters.md"] in {"current", "embedding 0/1"}
    assert "Otters" in browser.find_element(By.TAG_NAME, "body").text  # listed as a document

    # Deleted on disk: the server notices by itself.
    (folder / "heron.md").unlink()
    deadline = time.monotonic() + 30
    while "heron.md" in _states(browser) and time.monotonic() < deadline:
        time.sleep(0.3)
        browser.get(base + "/documents")
    assert "heron.md" not in _states(browser)

    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Look now']"))
    assert "looked at it now" in browser.find_element(By.CLASS_NAME, "flash").text
    _submit(browser, browser.find_element(By.XPATH, "//button[text()='Stop syncing']"))
    assert "no longer synced" in browser.find_element(By.CLASS_NAME, "flash").text
    assert browser.find_elements(By.CLASS_NAME, "synced") == []
