"""The trace page in a real browser: headless Chromium driven by selenium (08 D70, D71).

The page server runs on the test's event loop (asyncio or trio) while the browser session runs
in a worker thread. The browser is the system's (Debian's ``chromium`` and
``chromium-driver``, which ``.ci/run`` installs); selenium is pointed at the system
``chromedriver`` because its own driver manager cannot download anything here, and the
browser's background networking is off, so every request stays on loopback. Without the
browser, its driver or selenium the test skips, saying which is missing.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
import pytest
from tracesample import (
    ANSWER,
    CALL_ARGUMENTS,
    QUESTION,
    SAMPLE_ID,
    THINKING,
    TOOL_RESULT,
    write_sample,
)

from mmsp_io.traces import TracePage

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # the tests may run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
    "--window-size=1200,1000",
)
WAIT_SECONDS = 10

pytestmark = [
    pytest.mark.anyio,
    # One test worker runs the module: its tests share one browser (``browser``).
    pytest.mark.xdist_group("browser"),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no browser at {CHROMIUM} (Debian: apt-get "
                       "install chromium chromium-driver; .ci/run installs it)"),
    pytest.mark.skipif(not CHROMEDRIVER.exists(), reason=f"no driver at {CHROMEDRIVER} (Debian: "
                       "apt-get install chromium-driver; .ci/run installs it)"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module, with a fresh profile, logging console messages."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                    "(it is in the test extra: pip install -e '.[test]')")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="trace-page-browser-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver: Any, css: str, count: int = 1) -> list[Any]:
    """Wait until ``count`` elements match ``css``; return them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d: Any) -> list[Any] | Literal[False]:
        elements = d.find_elements(By.CSS_SELECTOR, css)
        return elements if len(elements) >= count else False

    elements: list[Any] = WebDriverWait(driver, WAIT_SECONDS).until(found)
    return elements


def one(element: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return element.find_element(By.CSS_SELECTOR, css)


def every(element: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    found: list[Any] = element.find_elements(By.CSS_SELECTOR, css)
    return found


def decoded_size(driver: Any, image: Any) -> tuple[int, int]:
    """The pixel size the browser decoded ``image`` to (0 x 0 for a broken image)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT_SECONDS).until(
        lambda d: d.execute_script("return arguments[0].complete", image))
    width, height = driver.execute_script(
        "return [arguments[0].naturalWidth, arguments[0].naturalHeight]", image)
    return int(width), int(height)


def read_the_trace(driver: Any, url: str, stored: dict[str, Any]) -> list[str]:
    """Open the list, click into the sample trace, check what it shows (blocking); return the
    errors the console showed on the way (a script or image the page's policy refused shows
    there)."""
    severe_messages(driver)  # what an earlier test left in the console
    driver.get(url + "/")
    link = wait_for(driver, "a.trace-link")[0]
    assert link.text == SAMPLE_ID
    assert one(driver, "main").text.splitlines()[-1].startswith(SAMPLE_ID)  # the row, last
    link.click()
    messages = wait_for(driver, "section.message", 4)
    assert driver.current_url == url + "/trace/agents/weather%20run.1"
    assert len(messages) == 4
    question, call, result, answer = messages

    # The user's text, as text (markup in it is not markup), and the image inline.
    assert one(question, "h2").text.lower().endswith("user")
    assert one(question, ".text").text == QUESTION
    assert every(question, ".text b") == []
    assert decoded_size(driver, one(question, "img.inline")) == (40, 40)

    # Thinking collapsed until opened; the tool call with its arguments; the turn's usage.
    thinking = one(call, "details.thinking")
    assert thinking.get_attribute("open") is None
    assert not one(thinking, ".thinking-text").is_displayed()
    one(thinking, "summary").click()
    assert one(thinking, ".thinking-text").is_displayed()
    assert one(thinking, ".thinking-text").text == THINKING
    assert one(call, ".tool-name").text == "get_weather"
    assert one(call, ".tool-id").text == "call_1"
    assert json.loads(one(call, "pre.arguments").text) == CALL_ARGUMENTS
    turn = one(call, "footer.turn").text
    for shown in ("prompt tokens: 31", "thoughts tokens: 12", "response tokens: 9",
                  "total: 52", "finish reason: tool_call"):
        assert shown in turn
    assert "cached" not in turn  # not reported: not shown as a number

    # The tool's result, named after its call, with its image.
    assert "Tool result of get_weather" in one(result, ".tool-result").text
    assert one(result, ".tool-result .text").text == TOOL_RESULT
    assert decoded_size(driver, one(result, ".tool-result img.inline")) == (48, 32)
    assert every(result, "footer.turn") == []

    # The answer, the generated image inline, the last turn's usage and finish reason.
    assert one(answer, ".text").text == ANSWER
    assert decoded_size(driver, one(answer, ".inline-data img.inline")) == (48, 32)
    turn = one(answer, "footer.turn").text
    for shown in ("cached tokens: 16", "prompt tokens: 30", "response tokens: 17",
                  "total: 63", "finish reason: stop"):
        assert shown in turn

    # The configuration is there, collapsed; the raw JSON is one click away.
    assert one(driver, "details.config").get_attribute("open") is None
    errors = severe_messages(driver)
    raw = one(driver, "a.raw-json")
    assert raw.get_attribute("href") == url + "/raw/agents/weather%20run.1.json"
    raw.click()
    wait_for(driver, "body pre")
    assert json.loads(driver.execute_script("return document.body.innerText")) == stored
    return errors


def severe_messages(driver: Any) -> list[str]:
    """The console's errors since the last call."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE"]


async def test_a_trace_read_in_the_browser(browser: Any, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    json_file, _ = write_sample(root)
    stored = json.loads(json_file.read_text(encoding="utf-8"))
    async with TracePage(root).running() as server:
        errors = await anyio.to_thread.run_sync(read_the_trace, browser, server.url, stored)
    assert errors == []


def show_a_missing_trace(driver: Any, url: str) -> str:
    driver.get(url + "/trace/missing")
    message: str = wait_for(driver, "main .error")[0].text
    return message


async def test_a_missing_trace_is_said_so_on_the_page(browser: Any, tmp_path: Path) -> None:
    async with TracePage(tmp_path).running() as server:
        shown = await anyio.to_thread.run_sync(show_a_missing_trace, browser, server.url)
    assert shown == "No trace file missing.json."


def show_a_failed_turn(driver: Any, url: str) -> dict[str, str]:
    driver.get(url + "/trace/failed")
    wait_for(driver, ".failure")
    shown = {css: one(driver, css).text for css in (
        ".timeline .outcome", ".timeline .first-event", ".timeline .duration",
        ".timeline .attempts", ".failure h2", ".failure .error-message", ".system-prompt .text",
        ".partial-item")}
    shown["attempt-list"] = " | ".join(e.text for e in every(driver, ".attempt-list li"))
    shown["fields"] = one(driver, ".failure .error-fields").text
    return shown


async def test_a_failed_turn_shows_its_timeline_error_and_system_prompt(
    browser: Any, tmp_path: Path,
) -> None:
    error = {"type": "StreamTimeoutError", "message": "no byte for 30 s <i>idle</i>",
             "client": "openai-chat", "timeout": "idle"}
    document = {
        "history": [{"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}],
        "config": {"model": "gpt-test", "system_prompt": "Be *brief* <b>always</b>"},
        "timestamp": "2026-12-04T01:00:00+00:00",
        "outcome": "error", "error": error,
        "partial": [{"type": "text.delta", "text": "Hel"}],
        "attempts": [{"started_s": 0.0, "error": None}], "first_event_s": 0.25,
        "duration_s": 30.5,
    }
    (tmp_path / "failed.json").write_text(json.dumps(document))
    async with TracePage(tmp_path).running() as server:
        shown = await anyio.to_thread.run_sync(show_a_failed_turn, browser, server.url)
    assert shown == {
        ".timeline .outcome": "error", ".timeline .first-event": "0.250 s",
        ".timeline .duration": "30.5 s", ".timeline .attempts": "1",
        ".failure h2": "ERROR · STREAMTIMEOUTERROR",  # the heading's style: upper case
        ".failure .error-message": "no byte for 30 s <i>idle</i>",
        ".system-prompt .text": "Be *brief* <b>always</b>",  # as written, never markup
        ".partial-item": "text.delta: Hel",
        "attempt-list": "at 0.000 s: streamed",
        "fields": json.dumps(error, indent=2),
    }
