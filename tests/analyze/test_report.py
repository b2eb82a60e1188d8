"""The HTML report in a real headless Chromium: it loads without console errors, draws one node per operator,
shows an operator's details on a click and sorts the table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ALL_MODELS, model_path

from micronn import analyze

EXTRA = sorted((Path(__file__).parents[1] / "models").glob("*.tflite"))
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.fixture(scope="module")
def browser():
    pw = pytest.importorskip("playwright.sync_api", reason="the report test drives Chromium with playwright")
    if CHROMIUM is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium; .ci/run installs it)")
    with pw.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.mark.parametrize("path", [model_path(n) for n in ALL_MODELS] + EXTRA, ids=lambda p: p.stem)
def test_report_opens_without_errors(browser, path: Path, tmp_path: Path) -> None:
    a = analyze.analyze(path)
    page_path = analyze.write_report(a, tmp_path / "report.html")
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: errors.append(f"network request {r.url}") if not r.url.startswith("file:") else None)
    page.goto(page_path.resolve().as_uri())
    assert page.locator(".node.op").count() == len(a.rows)
    last = len(a.rows) - 1
    page.locator(f'.node.op[data-op="{last}"]').click()
    assert page.locator("#details").text_content().startswith(f"operator {last}: {a.rows[last]['op']}")
    page.locator("#layers th").nth(5).click()  # MACs, ascending
    first = int(page.locator("#layers tbody tr").first.get_attribute("data-op"))
    assert a.rows[first]["macs"] == min(r["macs"] for r in a.rows)
    assert errors == []
    page.close()


def test_report_of_a_model_micronn_cannot_run(browser, tmp_path: Path) -> None:
    """An op micronn has no kernel for: the graph and table are still there, the summary says what is missing."""
    from micronn.testing import T, op_model

    path = tmp_path / "custom.tflite"
    path.write_bytes(op_model("MyCustomOp", [T((2, 3), "int8", 0.5, 0)], [T((2, 3), "int8", 0.5, 0)],
                              custom_options=b""))
    a = analyze.analyze(path)
    assert "MyCustomOp" in a.memory["error"] and a.plan is None
    page = browser.new_page()
    page.goto(analyze.write_report(a, tmp_path / "r.html").resolve().as_uri())
    assert page.locator(".node.op").count() == 1 and "MyCustomOp" in page.locator("#summary").text_content()
    page.close()
