"""The page in a real browser (Playwright driving Debian's Chromium; skipped, saying why, where
either is missing): ask and see a cited answer, open its passage and document, document markup
that never runs, upload documents and watch the job finish, remove one, the answer's graph, and
settings without secrets."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")

CHROMIUM = os.environ.get("BIORAG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip(
        "no Chromium for the browser tests: apt-get install chromium (or set BIORAG_CHROMIUM)",
        allow_module_level=True,
    )

CANARY = "s3cret-canary-77"
DOCS = [
    {"id": "1001", "title": "Vitamin D trial",
     "text": "Vitamin D supplementation did not reduce fracture risk in adults. "
             "The trial followed 25,000 adults for five years."},
    {"id": "1002", "title": "Statins",
     "text": "Atorvastatin lowers LDL cholesterol. It reduces cardiovascular events."},
    {"id": "1003", "title": "<b>Metformin</b>",
     "text": "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"> "
             "[click me](javascript:window.__pwned=3) Metformin lowers blood glucose in "
             "type 2 diabetes."},
]  # fmt: skip
# as root, offline: no sandbox, and none of Chromium's background connections
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path, hash_embedder, index_of):
    """The app over a three-document index, served by uvicorn in a thread on loopback."""
    from biorag.config import Settings
    from biorag.kg import Triplet, open_store
    from biorag.runtime import Runtime
    from biorag.serve.app import ServerConfig, create_app

    index = index_of(DOCS, "toy")
    kg = open_store(tmp_path / "kg")
    kg.add_triplets([
        Triplet(subject="Trastuzumab", predicate="treats", object="Breast Neoplasms",
                source_id="12345", model="rule-based"),
        Triplet(subject="Trastuzumab", predicate="targets", object="HER2", source_id="12345"),
        Triplet(subject="HER2", predicate="associated with", object="Breast Neoplasms"),
        Triplet(subject="Paclitaxel", predicate="treats", object="Breast Neoplasms"),
    ])  # fmt: skip
    kg.close()
    settings = Settings(
        home=str(tmp_path / "home"), llm={"base_url": f"http://user:{CANARY}@127.0.0.1:9/v1"}
    )
    rt = Runtime(settings, [index], embedder=hash_embedder)
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    questions = {
        str(1001 + i): {"QUESTION": q, "CONTEXTS": ["A trial."], "LABELS": ["RESULTS"],
                        "MESHES": [], "YEAR": "2020", "LONG_ANSWER": "x", "final_decision": a}
        for i, (q, a) in enumerate([("Does vitamin D reduce fracture risk?", "no"),
                                    ("Does atorvastatin lower LDL cholesterol?", "yes"),
                                    ("Does metformin lower blood glucose?", "yes")])
    }  # fmt: skip
    (datasets / "ori_pqal.json").write_text(json.dumps(questions))
    config = ServerConfig(index_paths=[index], kg=tmp_path / "kg", datasets_dir=datasets)
    yield from _serving(create_app(settings, config, runtime=rt))
    rt.close()


def _serving(app):
    """Serve ``app`` with uvicorn in a thread on loopback; yields its base URL."""
    import uvicorn

    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(30)


SUPPORTED = "Atorvastatin lowers LDL cholesterol [1]."
UNSUPPORTED = "Alopecia responds to daily sunlight in every adolescent [1]."


def _scripted(tmp_path, hash_embedder, index_of, response: str):
    """The app over the same index with a scripted model that answers ``response``; the
    sentences checked by the rules verifier."""
    from biorag.config import Settings
    from biorag.runtime import Runtime
    from biorag.serve.app import ServerConfig, create_app

    index = index_of(DOCS, "toy")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"stage": "answer", "response": response}]))
    settings = Settings.model_validate({
        "home": str(tmp_path / "home"), "answer": {"verifier": "rules"},
        "llm": {"backend": "mock", "mock_script": str(script), "cache": False}})  # fmt: skip
    rt = Runtime(settings, [index], embedder=hash_embedder)
    yield from _serving(create_app(settings, ServerConfig(index_paths=[index]), runtime=rt))
    rt.close()


@pytest.fixture
def scripted_server(tmp_path, hash_embedder, index_of):
    """One sentence its passage states and one it does not."""
    yield from _scripted(tmp_path, hash_embedder, index_of, f"{SUPPORTED} {UNSUPPORTED}")


# half from the statins passage, half from the vitamin D one; it cites all three passages
JOINT = "Atorvastatin lowers LDL cholesterol and the trial followed 25,000 adults [1][2][3]."


@pytest.fixture
def joint_server(tmp_path, hash_embedder, index_of):
    """One sentence only two passages state together."""
    yield from _scripted(tmp_path, hash_embedder, index_of, JOINT)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _page(browser, url):
    # Playwright's string predicates (wait_for_function) are evaluated with eval, which the
    # page's policy forbids; the page under its policy: test_the_page_keeps_working_under_...
    context = browser.new_context(viewport={"width": 1100, "height": 900}, bypass_csp=True)
    pg = context.new_page()
    dialogs: list[str] = []

    def on_dialog(d):
        dialogs.append(d.message)
        d.accept()

    pg.on("dialog", on_dialog)
    pg.goto(url + "/")
    pg.dialogs = dialogs  # type: ignore[attr-defined]
    yield pg
    context.close()


@pytest.fixture
def page(browser, server):
    yield from _page(browser, server)


@pytest.fixture
def scripted_page(browser, scripted_server):
    yield from _page(browser, scripted_server)


@pytest.fixture
def joint_page(browser, joint_server):
    yield from _page(browser, joint_server)


def ask(page, question: str, method: str | None = None) -> None:
    page.click("button[data-view=ask]")
    page.fill("#question", question)
    if method:
        page.select_option("#method", method)
    page.click("#ask button[type=submit]")
    page.wait_for_selector("#answer:not([hidden])", timeout=60_000)


def test_ask_shows_stages_and_a_cited_answer_whose_passage_opens(page):
    ask(page, "Does vitamin D reduce fracture risk?")
    stages = page.inner_text("#stages")
    assert "retrieve ✓" in stages and "answer ✓" in stages
    assert page.inner_text("#status") == "answered"
    page.click("#sentences button.cite >> nth=0")
    shown = page.locator("#evidence li.shown")
    assert shown.count() == 1 and shown.locator("mark").count() == 1
    assert "Vitamin D" in shown.inner_text() and "PubMed" in shown.inner_text()
    href = shown.locator("a").get_attribute("href")
    assert href == "https://pubmed.ncbi.nlm.nih.gov/1001/"
    shown.locator("button", has_text="whole document").click()
    page.wait_for_selector("#docview:not([hidden])")
    assert page.inner_text("#doctitle") == "Vitamin D trial"
    assert "Vitamin D supplementation" in page.inner_text("#doctext mark")


def test_document_markup_is_shown_as_text_and_never_runs(page):
    ask(page, "Does metformin lower blood glucose?")
    evidence = page.inner_text("#evidence")
    assert "<script>window.__pwned = 1</script>" in evidence and "<b>Metformin</b>" in evidence
    assert page.locator("#evidence script, #evidence img, #evidence b").count() == 0
    assert page.locator("#evidence a[href^=javascript]").count() == 0
    item = page.locator("#evidence li", has_text="Metformin lowers")
    item.locator("button", has_text="whole document").click()
    page.wait_for_selector("#docview:not([hidden])")
    assert "onerror" in page.inner_text("#doctext") and page.locator("#doctext img").count() == 0
    assert page.evaluate("window.__pwned") is None and page.dialogs == []


def test_upload_watch_the_job_finish_then_remove_a_document(page, tmp_path):
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "2001", "text": "Semaglutide reduced body weight."}) + "\n")
    page.click("button[data-view=documents]")
    page.wait_for_selector("#doclist tr")
    assert page.locator("#doclist tr").count() == 3
    page.set_input_files("#files", str(new))
    page.click("#upload button[type=submit]")
    page.wait_for_selector("#jobs li.job.done", timeout=60_000)
    assert "1 new, 4 in all" in page.inner_text("#jobs")
    page.wait_for_selector("#doclist tr:has-text('2001')")
    page.locator("#doclist tr", has_text="2001").locator("button.remove").click()
    page.wait_for_function("document.querySelectorAll('#jobs li.job.done').length === 2",
                           timeout=60_000)  # fmt: skip
    assert "1 removed" in page.inner_text("#jobs")
    page.wait_for_function("!document.getElementById('doclist').innerText.includes('2001')")
    assert page.dialogs == ["Remove document 2001 from the index?"]


def test_the_graph_view_draws_the_answers_claim_graph(page):
    ask(page, "Does atorvastatin lower LDL cholesterol?", method="claims")
    assert "extract ✓" in page.inner_text("#stages")
    page.click("button[data-view=graph]")
    page.wait_for_selector("#cy canvas")
    edges = page.evaluate("window.biorag.cy.edges().length")
    assert edges > 0 and page.evaluate("window.biorag.cy.nodes().length") >= 2
    assert "claims" in page.inner_text("#graphnote")
    page.wait_for_selector("#layers:not([hidden])")
    first = page.locator("#summaries li").first
    assert "layers:" in first.inner_text() and "test summary" in first.inner_text()
    first.locator("button", has_text="key claim").click()
    assert page.inner_text("#graphpick").startswith("Claim:")
    assert page.evaluate("window.biorag.cy.edges(':selected').length") == 1
    page.evaluate("window.biorag.cy.edges()[0].emit('tap')")
    assert page.inner_text("#graphpick").startswith("Claim:")
    walk = page.locator("#graphpick button")
    if walk.count():  # the claim's chunk is among the evidence: walk to it
        walk.click()
        page.wait_for_selector("#docview:not([hidden])")
        assert page.locator("#evidence li.shown").count() == 1


def test_the_graph_view_explores_the_knowledge_graph(page):
    page.click("button[data-view=graph]")
    page.wait_for_selector("#explore:not([hidden])")
    page.fill("#entity", "Trastu")
    page.click("#explore button[type=submit]")
    page.wait_for_function("document.getElementById('graphnote').textContent.includes('mean')")
    assert "Did you mean: Trastuzumab?" in page.inner_text("#graphnote")
    page.fill("#entity", "Trastuzumab")
    page.click("#explore button[type=submit]")
    page.wait_for_function(
        "document.getElementById('graphnote').textContent.includes('2 triplets')"
    )
    page.click("#edgebox summary")  # the keyboard way: the edges as a list of buttons
    page.locator("#edgelist button", has_text="Trastuzumab — treats → Breast Neoplasms").click()
    assert page.evaluate("window.biorag.cy.edges(':selected').data('label')") == "treats"
    pick = page.inner_text("#graphpick")
    assert "Trastuzumab — treats → Breast Neoplasms" in pick and "12345" in pick
    assert page.locator("#graphpick a").get_attribute("href").endswith("/12345/")
    # a click on a node walks on: Breast Neoplasms has three triplets around it
    page.evaluate("window.biorag.cy.nodes().filter(n => n.data('label') === 'Breast Neoplasms')"
                  ".emit('tap')")  # fmt: skip
    page.wait_for_function(
        "document.getElementById('graphnote').textContent.includes('3 triplets')"
    )
    assert page.input_value("#entity") == "Breast Neoplasms"


def test_runs_start_finish_open_and_compare(page):
    page.click("button[data-view=runs]")
    for name, method in (("first", "claims"), ("second", "retrieve-read")):
        page.fill("#runname", name)
        page.fill("#rundata", "ori_pqal.json")
        page.fill("#runlimit", "3")
        page.select_option("#runmethods", [method])
        page.click("#newrun button[type=submit]")
        page.wait_for_selector(f"#runlist tr:has-text('{name}'):has-text('done')", timeout=60_000)
    row = page.locator("#runlist tr", has_text="first")
    assert "claims accuracy" in row.inner_text()
    row.locator("button", has_text="open").click()
    page.wait_for_selector("#rundetail:not([hidden])")
    assert page.locator("#runchart .bar").count() == 1
    assert page.locator("#runanswers tr").count() == 3
    answers = page.inner_text("#runanswers")  # the questions and answers, not ids and letters
    assert "Does vitamin D reduce fracture risk?" in answers and "1001" in answers
    gold = page.locator("#runanswers tr", has_text="vitamin D").locator("td").nth(3).inner_text()
    assert gold.endswith(". no"), gold
    page.select_option("#cmpa", "first")
    page.select_option("#cmpb", "second")
    page.click("#compare button[type=submit]")
    page.wait_for_selector("#cmpresult tr:has-text('retrieve-read')")
    table = page.inner_text("#cmpresult")
    assert "first" in table and "second" in table and "accuracy" in table


def test_a_free_answer_is_shown_once_a_choice_with_its_text_and_nothing_is_not_answered(page):
    ask(page, "Does vitamin D reduce fracture risk?", method="claims")
    assert page.inner_text("#status") == "answered"
    sentences = page.inner_text("#sentences")
    assert sentences and page.inner_text("#letter") == ""  # no bold copy above the sentences
    page.fill("#options", "A: yes\nB: no\nC: maybe")
    ask(page, "Does vitamin D reduce fracture risk?", method="retrieve-read")
    assert page.inner_text("#letter") in ("A. yes", "B. no", "C. maybe")
    page.fill("#options", "")
    ask(page, "Does vitamin D reduce fracture risk?", method="closed-book")
    status = page.inner_text("#status")  # no "answered" over an empty answer: the reason
    assert status.startswith("no answer:") and "closed-book" in status
    assert page.locator("#status .warning").count() == 1


def test_documents_are_found_by_id_or_title_words(page):
    page.click("button[data-view=documents]")
    page.wait_for_selector("#doclist tr")
    page.fill("#docq", "statins")
    page.click("#docsearch button[type=submit]")
    page.wait_for_function("document.getElementById('doccount').textContent.includes('of 3')")
    assert page.locator("#doclist tr").count() == 1 and "1002" in page.inner_text("#doclist")
    page.fill("#docq", "1003")
    page.click("#docsearch button[type=submit]")
    page.wait_for_function("document.getElementById('doclist').innerText.includes('1003')")
    assert page.locator("#doclist tr").count() == 1
    page.fill("#docq", "no such words")
    page.click("#docsearch button[type=submit]")
    page.wait_for_function("document.getElementById('doclist').innerText.includes('No document')")
    assert "0 of 3" in page.inner_text("#doccount")


def test_settings_show_the_config_without_secrets(page):
    page.click("button[data-view=settings]")
    page.wait_for_function("document.getElementById('config').textContent.length > 10")
    text = page.inner_text("#config")
    assert '"settings"' in text and CANARY not in text and CANARY not in page.content()


def test_an_unsupported_sentence_is_marked_and_its_passage_says_why(scripted_page):
    page = scripted_page
    ask(page, "Does atorvastatin lower LDL cholesterol?")
    assert "verify ✓" in page.inner_text("#stages")
    flagged = page.locator("#sentences .sentence.not_supported")
    assert flagged.count() == 1 and "Alopecia responds" in flagged.inner_text()
    assert page.locator("#sentences .sentence.supported").count() == 1
    assert "not supported by its sources" in page.inner_text("#sentences .flag")
    assert "1 supported, 1 not supported" in page.inner_text("#verification")
    # the flagged sentence's citation: the passage shown with the verdict on it
    page.locator("#sentences button.cite").nth(1).click()
    shown = page.locator("#evidence li.shown")
    assert "This passage: not supported" in shown.locator(".verdict").inner_text()
    # the supported one's: its deciding span marked as the verifier found it
    page.locator("#sentences button.cite").nth(0).click()
    shown = page.locator("#evidence li.shown")
    assert "Atorvastatin lowers LDL cholesterol" in shown.locator("mark").inner_text()
    assert "This passage: supported" in shown.locator(".verdict").inner_text()


def test_a_sentence_two_passages_support_together_names_them(joint_page):
    page = joint_page
    ask(page, "Does atorvastatin lower LDL cholesterol?")
    sentence = page.locator("#sentences .sentence")
    assert sentence.count() == 1 and sentence.get_attribute("data-support") == "supported"
    joint = page.inner_text("#sentences .flag.joint")
    assert "supported only by [" in joint and "together" in joint, joint
    named = [int(n) for n in re.findall(r"\[(\d+)\]", joint)]
    texts = [page.locator("#evidence > li").nth(n - 1).inner_text() for n in named]
    assert len(named) == 2 and any("Atorvastatin" in t for t in texts), (joint, texts)
    assert any("25,000 adults" in t for t in texts)  # the vitamin D passage, not metformin's
    assert "1 supported" in page.inner_text("#verification")


OTHER_SITE = "http://other-site.test/"


def _offline_context(browser, server, other_site: str = ""):
    """A browser context that reaches only ``server`` (and a page of another origin,
    OTHER_SITE, whose HTML is ``other_site``): every other request is aborted and counted, as
    on a machine without internet; CSP violations are collected too."""
    context = browser.new_context()
    blocked: list[str] = []
    violations: list[str] = []

    def route(r):
        if r.request.url.startswith(server):
            r.continue_()
        elif other_site and r.request.url == OTHER_SITE:
            r.fulfill(status=200, content_type="text/html", body=other_site)
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    pg = context.new_page()
    pg.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else None)
    return context, pg, blocked, violations


def test_docs_and_redoc_work_offline_from_vendored_assets(browser, server):
    context, pg, blocked, violations = _offline_context(browser, server)
    try:
        pg.goto(server + "/docs")
        pg.wait_for_selector('.opblock-summary-path[data-path="/v1/ask"]', timeout=30_000)
        assert pg.locator(".opblock").count() > 10
        assert not violations, violations
        pg.goto(server + "/redoc")
        pg.wait_for_selector('text="/v1/chat/completions"', timeout=30_000)
    finally:
        context.close()
    assert not blocked, blocked
    # ReDoc's footer asks for its maker's logo from a CDN: the policy refuses it, nothing else
    assert all("cdn.redoc.ly" in v and "img-src" in v for v in violations), violations


def test_the_page_keeps_working_under_its_policy_and_no_other_site_can_frame_it(browser, server):
    framer = f'<iframe id="f" src="{server}/"></iframe>'
    context, pg, blocked, violations = _offline_context(browser, server, framer)
    try:
        pg.goto(server + "/")
        ask(pg, "Does atorvastatin lower LDL cholesterol?", "retrieve-read")
        assert "1002" in pg.inner_text("#answer")
        assert not violations, violations
        # a page of another origin framing the server: the frame is refused, left empty
        pg.goto(OTHER_SITE)
        pg.wait_for_timeout(1500)
        (frame,) = [f for f in pg.frames if f != pg.main_frame]
        assert frame.locator("#question").count() == 0
    finally:
        context.close()
    assert not blocked, blocked
