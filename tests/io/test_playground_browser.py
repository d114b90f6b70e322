"""The playground and its trace page in a real browser: headless Chromium driven by selenium
(07 §8, 08 D71, D78), as ``test_traces_browser`` drives the trace page (its browser fixture and
helpers are shared; without the browser, its driver or selenium these tests skip, saying
which is missing).

The playground runs on the test's event loop (asyncio or trio) with its in-process simulator;
the browser session runs in a worker thread. Every wait is explicit and bounded
(``WAIT_SECONDS``); nothing is timed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from test_traces_browser import browser, every, one, severe_messages, wait_for
from test_traces_browser import pytestmark as browser_marks

from mmsp_io.playground import Playground
from mmsp_io.simulator import Reply

# anyio, the skips without a browser or its driver, and the browser's one test worker.
pytestmark = browser_marks
__all__ = ["browser"]  # the shared fixture, used by name

TOOLS = [{
    "name": "get_weather",
    "description": "The weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "result": "18 degrees C, light rain",
}]
#: The demo model's answer once it has the tool's result.
FOUND = f"Here is what I found: {TOOLS[0]['result']}"
#: Markup and markdown a model may answer: the markdown becomes elements, the markup text.
HOSTILE = ("**bold** and `code` <img src=x onerror=\"window.__xss = 1\"> "
           "[site](https://example.com/) [bad](javascript:window.__xss=2)\n\n- one\n- two")


def chat(driver: Any, message: str) -> Any:
    """Type ``message`` and send it; the new turn's element."""
    turns = len(every(driver, "article.turn"))
    box = one(driver, "#message")
    box.clear()
    box.send_keys(message)
    one(driver, "#send").click()
    return wait_for(driver, "article.turn", turns + 1)[-1]


def finished(driver: Any, turn: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(lambda _: "finished" in turn.get_attribute("class"))


def ask_with_a_tool(driver: Any, url: str) -> str:
    """Send a message with a tool; check the answer's thinking, call, result, answer, usage
    and finish reasons, and that a reload shows it again; return its trace link."""
    severe_messages(driver)
    driver.get(url + "/")
    wait_for(driver, "#model option")
    driver.execute_script("arguments[0].value = arguments[1]", one(driver, "#tools"),
                          json.dumps(TOOLS))
    turn = chat(driver, "What is the weather in Paris?")
    finished(driver, turn)
    assert one(turn, ".thinking-text").text.startswith("The user asks")
    assert one(turn, ".tool-call .tool-name").text == "get_weather"
    assert json.loads(one(turn, ".tool-call .arguments").text) == {"city": "Paris"}
    assert one(turn, ".tool-result .text").text == TOOLS[0]["result"]
    assert one(turn, ".assistant .markdown").text == FOUND
    assert [e.text for e in every(turn, ".finish-reason")] == ["finish reason: tool_call",
                                                               "finish reason: stop"]
    assert "prompt tokens:" in one(turn, ".turn-usage").text
    assert one(driver, "#status").text == "Done."
    link: str = one(turn, "a.trace-link").get_attribute("href")

    driver.refresh()  # the session's conversation is shown again
    answer = wait_for(driver, "article.turn .assistant .markdown")[0]
    turn = answer.find_element("xpath", "ancestor::article")
    assert one(turn, ".message.user .text").text == "What is the weather in Paris?"
    assert one(turn, ".tool-call .tool-name").text == "get_weather"
    assert one(turn, ".tool-result .text").text == TOOLS[0]["result"]
    assert one(turn, ".assistant .markdown").text == FOUND
    assert [e.text for e in every(turn, ".finish-reason")] == ["finish reason: tool_call",
                                                               "finish reason: stop"]
    assert severe_messages(driver) == []
    return link


def read_its_trace_and_search(driver: Any, url: str, link: str) -> None:
    """Open the turn's trace: the whole turn and its timeline; then search the list."""
    driver.get(link)
    messages = wait_for(driver, "section.message", 4)
    assert [one(m, "h2").text.split(" · ")[-1].lower() for m in messages] == [
        "user", "assistant", "user", "assistant"]
    assert one(driver, ".timeline .attempts").text == "1"
    assert one(driver, ".timeline .duration").text.endswith(" s")
    assert one(driver, ".timeline .outcome").text == "ok"

    driver.get(url + "/tracer/")
    rows = wait_for(driver, "table.traces tbody tr", 2)  # the turn's two calls
    assert all(one(row, "td.model").text == "sim-model" for row in rows)
    assert all(one(row, "td.outcome").text == "ok" for row in rows)
    search = one(driver, "#search")
    search.send_keys("light rain")  # the tool's result: in the second call's trace only
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(
        lambda d: len(every(d, "table.traces tbody tr")) == 1)
    assert "q=light+rain" in driver.current_url
    search.send_keys(" nowhere-at-all")
    assert wait_for(driver, "#results .note")[0].text == "No trace matches the search."


def stop_a_slow_answer(driver: Any, url: str) -> None:
    """Send a message the simulator answers slowly; stop it once text streamed in."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url + "/")
    wait_for(driver, "#model option")
    turn = chat(driver, "Tell me a long story")
    WebDriverWait(driver, 10).until(lambda _: every(turn, ".text.streaming")
                                    and one(turn, ".text.streaming").text)
    assert one(driver, "#send").get_attribute("disabled") is not None
    one(driver, "#stop").click()
    finished(driver, turn)
    assert one(turn, ".error-type").text == "AbortedError"
    assert one(turn, ".text.streaming").text.startswith("slow slow")  # what came, kept
    assert every(turn, ".finish-reason") == []
    assert every(turn, "a.trace-link") == []  # an aborted call writes no trace
    assert one(driver, "#status").text == "Stopped."
    assert one(driver, "#send").get_attribute("disabled") is None


def hostile_answer_is_text(driver: Any, url: str) -> str:
    """Ask for the hostile answer; it shows as markdown elements and text, never markup."""
    driver.get(url + "/")
    wait_for(driver, "#model option")
    turn = chat(driver, "Say something tricky")
    finished(driver, turn)
    check_hostile(driver, one(turn, ".assistant .markdown"))
    link: str = one(turn, "a.trace-link").get_attribute("href")
    return link


def check_hostile(driver: Any, text: Any) -> None:
    assert one(text, "strong").text == "bold"
    assert one(text, "code").text == "code"
    assert '<img src=x onerror="window.__xss = 1">' in text.text
    links = every(text, "a")
    assert [a.get_attribute("href") for a in links] == ["https://example.com/"]
    assert "[bad](javascript:window.__xss=2)" in text.text
    assert [li.text for li in every(text, "li")] == ["one", "two"]
    assert every(driver, "img") == []  # no element was made of the markup
    assert driver.execute_script("return window.__xss") is None


def hostile_trace_is_text(driver: Any, link: str) -> None:
    driver.get(link)
    answer = wait_for(driver, "section.message", 2)[-1]
    check_hostile(driver, one(answer, ".markdown"))


async def test_chat_trace_search_and_stop_in_the_browser(browser: Any, tmp_path: Path) -> None:
    playground = Playground(tmp_path)
    async with playground.running() as server:
        link = await anyio.to_thread.run_sync(ask_with_a_tool, browser, server.url)
        assert link.startswith(server.url + "/tracer/trace/playground/")
        await anyio.to_thread.run_sync(read_its_trace_and_search, browser, server.url, link)
        assert playground.simulator is not None
        playground.simulator.script.append(Reply.text("slow " * 400, delay=0.05))
        await anyio.to_thread.run_sync(stop_a_slow_answer, browser, server.url)
    assert playground.simulator is None  # stopped with the playground


async def test_markup_in_an_answer_and_its_trace_is_never_html(
    browser: Any, tmp_path: Path,
) -> None:
    playground = Playground(tmp_path)
    async with playground.running() as server:
        assert playground.simulator is not None
        playground.simulator.script.append(Reply.text(HOSTILE))
        link = await anyio.to_thread.run_sync(hostile_answer_is_text, browser, server.url)
        await anyio.to_thread.run_sync(hostile_trace_is_text, browser, link)
