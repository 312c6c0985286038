"""The inspector: pure API answers, and the real page in headless Chromium (Debian's chromium +
chromium-driver, driven through Selenium with the driver path given, so nothing is downloaded)."""

import json
import os
import shutil
import time
import urllib.request

import pytest

from toolformer_kit.inspector.data import kept_counts, load
from toolformer_kit.inspector.server import api, serve

EVIL = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'


def cand(i, doc, score, tool="Calculator", **kw):
    base = {"doc_id": doc, "tool": tool, "position": 3, "char_offset": 11, "p_i": 0.4,
            "sample": "Calculator(3 * 4)]", "sample_index": i, "status": "ok", "input": "3 * 4",
            "result": "12", "error": None, "score_position": 3, "L_eps": 2.0, "L_call_noresult": 1.9,
            "L_plus": None if score is None else 1.9 - score, "L_minus": 1.9, "score": score, "kept": score is not None and score >= 1.0}
    return base | kw


@pytest.fixture()
def run_dir(tmp_path):
    ann = tmp_path / "annot"
    ann.mkdir()
    rows = [cand(0, "d1", 1.4), cand(1, "d1", 0.6), cand(2, "d2", None, status="unparsable"),
            cand(3, "d2", 2.5, tool="WikiSearch", input="Nile", result="The Nile is a river.")]
    (ann / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (ann / "documents.jsonl").write_text(json.dumps({"id": "d1", "text": "Three dozen 36 eggs " + EVIL}) + "\n" +
                                         json.dumps({"id": "d2", "text": "The Nile flows north."}) + "\n")
    ev = tmp_path / "eval" / "qwen" / "k10" / "svamp"
    ev.mkdir(parents=True)
    (ev / "examples.jsonl").write_text(json.dumps({"id": "e1", "prompt": "Q: 5+3?", "output": " [Calculator(5 + 3) -> 8] 8",
                                                   "correct": True, "calls": []}) + "\n")
    return tmp_path


def test_api_counts_views_and_segments(run_dir):
    data = load([run_dir / "annot", run_dir / "eval"])
    assert api(data, "/api/meta", {})["tools"] == ["Calculator", "WikiSearch"]
    assert kept_counts(data.candidates, 1.0)["Calculator"] == {"candidates": 3, "scored": 2, "kept": 1}
    # the page starts from each candidate's stored decision, made at its tool's own τf
    assert api(data, "/api/counts", {})["Calculator"]["kept"] == 1
    assert api(data, "/api/meta", {})["tau_f"] == {"Calculator": 0.5, "WikiSearch": 1.0}
    assert [r["kept"] for r in api(data, "/api/candidates", {"tool": "Calculator"})["rows"]] == [True, False, False]
    assert [r["kept"] for r in api(data, "/api/candidates", {"tool": "Calculator", "tau_f": "0.5"})["rows"]] == \
        [True, True, False]
    assert api(data, "/api/counts", {"tau_f": "0.5"})["Calculator"]["kept"] == 2
    kept = api(data, "/api/candidates", {"status": "kept", "tau_f": "1.0"})
    assert kept["total"] == 2 and kept["rows"][0]["tool"] == "WikiSearch"  # sorted by score
    row = api(data, "/api/candidates", {"tool": "Calculator", "status": "kept"})["rows"][0]
    assert row["before"] == "Three dozen" and row["call_text"] == " [Calculator(3 * 4) -> 12]"
    gen = api(data, "/api/generations", {})["rows"][0]
    assert [s["call"] for s in gen["segments"]] == [False, True, False]


def test_a_run_folder_opens_its_annotation_and_evaluation(run_dir):
    """`toolformer inspect RUN` on a pipeline or experiment folder (annotate/ and eval/ inside)."""
    (run_dir / "annot").rename(run_dir / "annotate")
    data = load([run_dir])
    assert len(data.candidates) == 4 and len(data.generations) == 1


def test_folder_with_nothing_to_show_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no annotation output"):
        load([tmp_path])


def test_server_binds_loopback_only_and_serves_json(run_dir):
    server = serve(load([run_dir / "annot"]), port=0, background=True)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/candidates?tool=Calculator") as res:
            assert res.headers["Content-Type"].startswith("application/json")
            body = json.loads(res.read())
        assert body["total"] == 3 and EVIL in body["rows"][0]["after"]  # raw text, for textContent
    finally:
        server.shutdown()


def _chrome():
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test: scripts/test.sh installs chromium and chromium-driver")
        pytest.skip("Debian's chromium and chromium-driver are not installed (scripts/test.sh installs them)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--window-size=1280,900"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


# The counts table read in one step inside the page: reading it cell by cell over WebDriver races
# with the page re-rendering it after a τf change (a stale element under load).
COUNTS_JS = ("return Object.fromEntries([...document.querySelectorAll('#counts tbody tr')]"
             ".map(r => [r.cells[0].textContent.trim(), r.cells[3].textContent.trim()]));")


def _counts(driver) -> dict:
    return driver.execute_script(COUNTS_JS)


@pytest.mark.browser
def test_page_in_real_browser_escapes_text_and_recounts(run_dir, tmp_path):
    from selenium.webdriver.common.by import By

    server = serve(load([run_dir / "annot", run_dir / "eval"]), port=0, background=True)
    driver = _chrome()
    try:
        driver.get(f"http://127.0.0.1:{server.server_address[1]}/")
        deadline = time.time() + 20
        while driver.execute_script("return document.body.dataset.ready") != "1":
            assert time.time() < deadline, "page did not finish loading"
            time.sleep(0.1)
        counts = _counts(driver)
        assert counts == {"Calculator": "1", "WikiSearch": "1"}
        # the document holding <script> and an onerror image is shown as text and never runs
        driver.find_elements(By.CSS_SELECTOR, "#candidates tbody tr")[1].click()
        doc = driver.find_element(By.ID, "document")
        assert EVIL in doc.text
        assert driver.title == "toolformer inspect"
        assert not doc.find_elements(By.TAG_NAME, "script") and not doc.find_elements(By.TAG_NAME, "img")
        assert doc.find_element(By.CSS_SELECTOR, "mark.call").text.strip() == "[Calculator(3 * 4) -> 12]"
        # moving τf to 0.5 recounts (on the server, with the filter's rule): both Calculator
        # candidates with a score would be kept
        driver.execute_script("const s=document.getElementById('tau'); s.value='0.5';"
                              "s.dispatchEvent(new Event('input'));")
        deadline = time.time() + 10
        while True:
            counts = _counts(driver)
            if counts.get("Calculator") == "2" or time.time() > deadline:
                break
            time.sleep(0.1)
        assert counts["Calculator"] == "2"
        driver.find_element(By.ID, "tab-generations").click()
        assert driver.find_element(By.CSS_SELECTOR, "#generations mark.call").text == "[Calculator(5 + 3) -> 8]"
        shot = tmp_path / "inspector.png"
        driver.save_screenshot(str(shot))
        _assert_real_screenshot(shot)
    finally:
        driver.quit()
        server.shutdown()


def _assert_real_screenshot(path):
    """A PNG of the page's size with more than a handful of colours (not a blank frame)."""
    import struct
    import zlib

    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])
    assert width >= 800 and height >= 600
    chunks, pos = b"", 8
    while pos < len(raw):
        length = struct.unpack(">I", raw[pos:pos + 4])[0]
        if raw[pos + 4:pos + 8] == b"IDAT":
            chunks += raw[pos + 8:pos + 8 + length]
        pos += 12 + length
    pixels = zlib.decompress(chunks)
    assert len(set(pixels[i:i + 3] for i in range(0, min(len(pixels), 2_000_000), 3))) > 20
