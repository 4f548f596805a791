"""The memory explorer in a real browser: Debian's headless Chromium driven by Selenium over
the bundled sample conversation, the app served by uvicorn on a free loopback port.

Screenshots of each page go to ``tests/artifacts/ui/`` (the README's come from there)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import pytest
from langchain_core.messages import HumanMessage
from starlette.testclient import TestClient

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.threads.transfer import import_lines, split_lines
from langchain_mastra_memory.tokens.counting import TokenCounter
from langchain_mastra_memory.ui import create_app

pytestmark = pytest.mark.browser
SHOTS = Path(__file__).parent / "artifacts" / "ui"
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "city": {"type": "string"}},
          "additionalProperties": False}  # fmt: skip


def sample_memory(path: Path) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(path),
        options={"semantic_recall": True, "working_memory": {"enabled": True, "schema": SCHEMA}},
    )
    text = resources.files("langchain_mastra_memory.data").joinpath("sample_conversation.jsonl")
    import_lines(memory, split_lines(text.read_text()))
    memory.update_working_memory({"name": "Alice", "city": "Lisbon"}, resource_id="alice")
    key = "thread:dog-care"  # an Observer's group over the thread's first ten messages
    first = memory.get_messages(thread_id="dog-care")[:10]
    assert memory.storage.claim_observation(key, owner="test", seconds=60)
    memory.storage.commit_observation(
        key, owner="test", resource_id="alice", current_task="Plan Biscuit's meals",
        text="Date: 2026-05-04\n- [high] (09:03) User's dog Biscuit is a four-year-old beagle",
        message_ids=[m.id for m in first], token_count=20.0,
    )  # fmt: skip
    assert memory.flush(120)
    return memory


def local(app) -> TestClient:
    """A client that reaches the explorer as the browser on this machine does (Host 127.0.0.1)."""
    return TestClient(app, base_url="http://127.0.0.1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(app) -> Iterator[str]:
    """`app` served by uvicorn on a free loopback port (its base URL), stopped afterwards."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Memory]]:
    memory = sample_memory(tmp_path_factory.mktemp("ui") / "memory.db")
    with serving(create_app(memory, write=True)) as base:
        yield base, memory


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    assert binary and driver_path, (
        "the UI tests need Debian's chromium and chromium-driver: `make setup` installs them "
        "(apt-get install chromium chromium-driver)"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--disable-gpu"):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()


def visit(browser, url: str, shot: str | None = None) -> str:
    """Load a page; no console error allowed; a screenshot when named."""
    browser.get(url)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    if shot:
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SHOTS / f"{shot}.png"))
    return browser.page_source


def wait_for(browser, element_id: str):
    """The element once the page that has it is loaded (a form post loads a new page)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    located = expected_conditions.presence_of_element_located(("id", element_id))
    return WebDriverWait(browser, 10).until(located)


def test_every_page_loads_without_console_errors(served, browser) -> None:
    base, _memory = served
    front = visit(browser, base + "/", "resources")
    assert "alice" in front
    cells = browser.find_elements("css selector", "#resources tr")[1].find_elements(
        "tag name", "td"
    )
    assert cells[0].text == "alice" and cells[1].text == "6" and cells[2].text == "336"
    page = visit(browser, base + "/r/alice", "threads")
    assert "Planning a weekend in Porto" in page and "Catching up" in page
    page = visit(browser, base + "/r/alice/t/dog-care", "thread")
    assert "My dog Biscuit is a four-year-old beagle" in page
    assert "embedded" in page and "<svg" in page
    page = visit(browser, base + "/r/alice/t/dog-care/observations", "observations")
    assert "four-year-old beagle" in page and "covers 10 messages" in page and "in the log" in page
    assert "observed" in visit(browser, base + "/r/alice/t/dog-care")
    visit(browser, base + "/r/alice/working-memory", "working-memory")
    searched = visit(browser, base + "/r/alice?q=porto")
    assert "Planning a weekend in Porto" in searched and "Catching up" not in searched


def test_load_more_as_you_scroll(served, browser) -> None:
    base, memory = served
    visit(browser, base + "/r/alice/t/career")
    total = len(memory.get_messages(thread_id="career"))
    assert total > 50
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    for _ in range(50):  # the sentinel loads the next page by itself
        shown = len(browser.find_elements("css selector", "#messages .msg"))
        if shown == total:
            break
        time.sleep(0.1)
    assert shown == total


def test_the_working_memory_edit_round_trips_and_an_invalid_one_is_refused(served, browser) -> None:
    base, memory = served
    visit(browser, base + "/r/alice/working-memory")
    box = browser.find_element("id", "wm-input")
    box.clear()
    box.send_keys('{"city": "Porto"}')
    browser.find_element("css selector", "#wm-form button").click()
    assert "Saved." in wait_for(browser, "wm-saved").text
    assert memory.get_working_memory(resource_id="alice") == {"name": "Alice", "city": "Porto"}
    box = browser.find_element("id", "wm-input")
    box.clear()
    box.send_keys('{"city": 42}')
    browser.find_element("css selector", "#wm-form button").click()
    assert "Refused" in wait_for(browser, "wm-error").text
    browser.get_log("browser")  # the refusal's 400, expected: not an error of the next page
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "working-memory-refused.png"))
    assert memory.get_working_memory(resource_id="alice") == {"name": "Alice", "city": "Porto"}


def test_the_recall_playground_finds_the_planted_fact(served, browser) -> None:
    base, _ = served
    visit(browser, base + "/r/alice/recall?q=what+is+my+dog+called&mode=hybrid", "recall")
    assert "Hits by day" in browser.page_source and "2026-05-04" in browser.page_source
    rows = browser.find_elements("css selector", "#hits tr.hit")
    planted = [r for r in rows if "My dog Biscuit is a four-year-old beagle" in r.text]
    assert planted, [r.text for r in rows]  # the sample also holds the question itself
    cells = planted[0].find_elements("tag name", "td")
    assert int(cells[0].text) <= 5  # among the first hits
    assert float(cells[2].text) > 0 and cells[3].text != "–"  # fused score and cosine shown
    assert cells[5].text == "Biscuit's diet and walks\n2026-05-04 09:03"  # its thread and date


def test_the_context_preview_totals_what_memory_context_returns(served, browser) -> None:
    base, memory = served
    question = "Where should I walk Biscuit in Lisbon?"
    visit(browser, base + f"/r/alice/t/recall-check/context?q={question}", "context")
    shown = float(browser.find_element("id", "total-tokens").text)
    sent = memory.context(
        [HumanMessage(question, id="preview-turn")], thread_id="recall-check", resource_id="alice"
    )
    assert shown == round(TokenCounter().count_all(sent))
    parts = {e.get_attribute("data-part") for e in browser.find_elements("css selector", ".part")}
    assert {"Working memory", "History", "Current turn"} <= parts


def test_a_crafted_url_never_shows_another_resources_data(served) -> None:
    _, memory = served
    memory.create_thread(thread_id="bobs", resource_id="bob", title="Bob's secret kq7731")
    memory.save_messages([HumanMessage("bob's code kq7731")], thread_id="bobs", resource_id="bob")
    client = local(create_app(memory))
    for url in ("/r/alice/t/bobs", "/r/alice/t/bobs/messages?page=0", "/r/alice/t/bobs/context",
                "/r/alice/t/bobs/observations", "/r/alice/working-memory?thread=bobs"):  # fmt: skip
        answer = client.get(url)
        assert answer.status_code == 404 and "kq7731" not in answer.text, url
    for url in ("/r/alice", "/r/alice?q=secret", "/r/alice/recall?q=bob%27s+code&mode=keyword"):
        answer = client.get(url)
        assert answer.status_code == 200 and "kq7731" not in answer.text, url


def test_read_only_and_the_token(served) -> None:
    _, memory = served
    read_only = local(create_app(memory))
    before = memory.get_working_memory(resource_id="alice")
    assert read_only.post("/r/alice/working-memory", data={"memory": "{}"}).status_code == 403
    assert memory.get_working_memory(resource_id="alice") == before
    gated = local(create_app(memory, token="s3cret"))
    assert gated.get("/").status_code == 401
    assert gated.get("/?token=wrong").status_code == 401
    assert gated.get("/?token=s3cret").status_code == 200
    assert gated.get("/r/alice").status_code == 200  # the cookie it set


def test_the_command_refuses_another_address_without_a_token(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from langchain_mastra_memory.cli import app

    db = tmp_path / "memory.db"
    SQLiteStorage(db).close()
    result = CliRunner().invoke(app, ["ui", "--db", str(db), "--host", "0.0.0.0", "--no-token"])
    assert result.exit_code == 2 and "without a token" in result.output


def test_every_page_serves_on_each_backend_and_stays_scoped(storage) -> None:
    """The same pages over SQLite (file, in memory) and PostgreSQL, without a browser."""
    memory = Memory(storage=storage, options={"semantic_recall": {"mode": "keyword"},
                                              "working_memory": {"enabled": True}})  # fmt: skip
    text = resources.files("langchain_mastra_memory.data").joinpath("sample_conversation.jsonl")
    import_lines(memory, split_lines(text.read_text()))
    memory.create_thread(thread_id="bobs", resource_id="bob", title="kq7731")
    client = local(create_app(memory))
    for url in ("/", "/r/alice", "/r/alice?q=porto", "/r/alice/t/dog-care",
                "/r/alice/t/career/messages?page=1", "/r/alice/recall?q=dog&mode=keyword",
                "/r/alice/t/dog-care/context?q=hi", "/r/alice/t/dog-care/observations",
                "/r/alice/working-memory?thread=dog-care"):  # fmt: skip
        answer = client.get(url)
        assert answer.status_code == 200 and "kq7731" not in answer.text, url
    assert client.get("/r/alice/t/bobs").status_code == 404
    assert client.get("/r/bob/t/dog-care").status_code == 404
    assert "Biscuit" in client.get("/r/alice/recall?q=Biscuit&mode=keyword").text


def raw_request(base: str, method: str, path: str, headers: dict[str, str], body: str = ""):
    """One HTTP request to the live server, headers exactly as given (as curl sends them)."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(base)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    connection.putrequest(method, path, skip_host=True)
    for name, value in {"Host": where.netloc, **headers}.items():
        connection.putheader(name, value)
    if body:
        connection.putheader("Content-Type", "application/x-www-form-urlencoded")
        connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body.encode() if body else None)
    answer = connection.getresponse()
    return answer.status, answer.read().decode()


def test_another_web_page_can_neither_change_nor_read_memory(served) -> None:
    """The attacks of issue 33 on the live --write explorer (no token): a cross-site form post
    (CSRF) and a DNS-rebinding read are refused, and nothing changes."""
    base, memory = served
    before = memory.get_working_memory(resource_id="alice", thread_id="dog-care")
    forged = "memory=%23+pwned"
    path = "/r/alice/working-memory?thread=dog-care"
    for headers in (
        {"Origin": "http://evil.example"},
        {"Referer": "http://evil.example/page"},
        {"Origin": "null"},  # a sandboxed frame or a data: URL
        {"Sec-Fetch-Site": "cross-site"},
        {},  # no origin at all, and no CSRF token
        {"Origin": base},  # same origin, but no CSRF token: the form was not ours
    ):
        status, text = raw_request(base, "POST", path, headers, forged)
        assert status == 403, (headers, status, text)
    port = base.rsplit(":", 1)[1]
    status, text = raw_request(
        base, "GET", "/r/alice/t/dog-care", {"Host": f"rebind.evil.example:{port}"}
    )
    assert status == 400 and "Biscuit" not in text
    status, text = raw_request(base, "GET", "/", {"Host": f"evil.example:{port}"})
    assert status == 400 and "alice" not in text
    assert memory.get_working_memory(resource_id="alice", thread_id="dog-care") == before
    # the explorer's own page, with its own form, still saves
    status, page = raw_request(base, "GET", path, {})
    assert status == 200
    token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    status, _ = raw_request(base, "POST", path, {"Origin": base},
                            f"csrf_token={token}&memory=%7B%22city%22%3A+%22Braga%22%7D")  # fmt: skip
    assert status == 200
    assert memory.get_working_memory(resource_id="alice", thread_id="dog-care")["city"] == "Braga"
    memory.update_working_memory(before or {}, resource_id="alice", thread_id="dog-care")


def test_hosts_and_tokens(served) -> None:
    _, memory = served
    assert local(create_app(memory)).get("/").status_code == 200
    for host in ("localhost", "127.0.0.1:8765", "[::1]:8765"):
        answer = local(create_app(memory)).get("/", headers={"Host": host})
        assert answer.status_code == 200, host
    proxied = TestClient(create_app(memory, hosts=["memory.example.org"]),
                         base_url="http://memory.example.org")  # fmt: skip
    assert proxied.get("/").status_code == 200
    assert TestClient(create_app(memory)).get("/").status_code == 400  # Host: testserver
    shown = local(create_app(memory)).get("/").text  # which stores are in use, on every page
    assert "SQLiteStorage" in shown and "vectors: ChromaVectorStore" in shown
    gated = local(create_app(memory, token="s3cret"))
    assert gated.get("/", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert gated.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert gated.get("/", headers={"Host": "evil.example"}).status_code == 400


ODD_IDS = [("org/alice?x#y%z é", "th/1?a#b%c"), ("org/bob", "bobs/secret")]


def test_every_id_opens_and_every_link_the_explorer_prints_works(tmp_path: Path) -> None:
    """Ids are any string: one holding ``/``, ``?``, ``#``, ``%`` or non-ASCII opens on every
    page of the live server, every link the explorer prints for it leads to a page, and a
    crafted path still never crosses resources."""
    import re

    memory = Memory(
        storage=SQLiteStorage(tmp_path / "memory.db"),
        options={"semantic_recall": {"mode": "keyword"}, "working_memory": {"enabled": True}},
    )
    for resource, thread in ODD_IDS:
        memory.create_thread(thread_id=thread, resource_id=resource, title=f"title {thread}")
        memory.save_messages([HumanMessage(f"hello from {thread}")], thread_id=thread,
                             resource_id=resource)  # fmt: skip
    with serving(create_app(memory)) as base:
        seen: set[str] = set()
        todo = ["/"]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            status, body = raw_request(base, "GET", path, {})
            assert status == 200, (path, status, body[:300])
            todo += [link.replace("&amp;", "&") for link in re.findall(r'href="(/[^"#]*)', body)]
        for _resource, thread in ODD_IDS:
            pages = [p for p in seen if quote(thread, safe="") in p]
            assert len(pages) >= 4, (thread, sorted(seen))  # thread, context, log, messages
        alice, bobs = quote(ODD_IDS[0][0], safe=""), quote(ODD_IDS[1][1], safe="")
        status, body = raw_request(base, "GET", f"/r/{alice}/t/{bobs}", {})
        assert status == 404 and "hello from" not in body


@pytest.mark.parametrize(
    "page", ["10" * 15, "1" + "0" * 30, "-1" + "0" * 30, "9.5", "1e9", "0x10", ""]
)
def test_an_out_of_range_page_gets_the_last_page_never_a_500(tmp_path: Path, page: str) -> None:
    """A page number a URL can carry beyond any real one (10^30), negative, or malformed: the
    last page (or the first), on a thread whose id holds markup, never a 5xx."""
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"))
    thread = '<b onclick="x()">t</b>'
    memory.create_thread(thread_id=thread, resource_id="alice", title="marked")
    from langchain_mastra_memory.ui.views import MESSAGES_PER_PAGE

    count = MESSAGES_PER_PAGE + 3  # two pages
    memory.save_messages([HumanMessage(f"message {i}.") for i in range(count)], thread_id=thread,
                         resource_id="alice")  # fmt: skip
    client = local(create_app(memory))
    for url in (f"/r/alice/t/{quote(thread, safe='')}/messages?page={page}",
                f"/r/alice?page={page}", f"/?page={page}"):  # fmt: skip
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.status_code, answer.text[:200])
        assert "<b onclick" not in answer.text
    shown = client.get(f"/r/alice/t/{quote(thread, safe='')}/messages?page={page}").text
    huge = page.isdigit() and len(page) > 10
    assert (f"message {count - 1}." in shown) == huge  # past the end: the last page
    assert ("message 0." in shown) != huge  # malformed, negative or empty: the first


def test_the_library_refuses_a_page_no_database_can_reach() -> None:
    from langchain_mastra_memory import ConfigurationError

    memory = Memory(storage=SQLiteStorage(":memory:"))
    memory.create_thread(thread_id="t", resource_id="alice")
    for call in (lambda: memory.page_messages("t", page=10**30),
                 lambda: memory.page_threads(resource_id="alice", page=10**30),
                 lambda: memory.search_messages("x", resource_id="alice", page=10**30)):  # fmt: skip
        with pytest.raises(ConfigurationError, match="page must be an int"):
            call()


def test_every_page_says_the_retention_and_what_waits_for_a_prune(tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    plain = Memory(storage=SQLiteStorage(tmp_path / "plain.db"))
    assert "retention: none (nothing is pruned)" in local(create_app(plain)).get("/").text
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "kept.db"),
        options={"retention": {"messages": "90d", "checkpoints": {"keep": 20}}},
    )
    memory.create_thread(thread_id="t1", resource_id="alice")
    memory.save_messages([HumanMessage("old", id="o1"), HumanMessage("new", id="n1")],
                         thread_id="t1", resource_id="alice")  # fmt: skip
    old = memory.storage._time(datetime.now(timezone.utc) - timedelta(days=200))
    with memory.storage._transaction(write=True) as conn:
        conn.execute("UPDATE memory_messages SET created_at = ? WHERE id = 'o1'", (old,))
    line = "retention: messages 90d, checkpoints: newest 20 kept; 1 message past their age"
    assert line in local(create_app(memory)).get("/r/alice").text
    memory.prune()
    shown = local(create_app(memory)).get("/").text
    assert "retention: messages 90d" in shown and "past their age" not in shown
