"""The notebook experience in a real browser: JupyterLab on 127.0.0.1 + Debian chromium (Playwright).

Skips with a reason when chromium is absent locally; in CI (``CI=true``) a missing chromium fails.
Screenshots go to test-artifacts/ (worth looking at).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.widgets import browser_support as bs

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
QUESTION = "Which deconvolution methods suit Visium spots?"


@pytest.fixture(scope="module")
def chromium_path() -> str:
    return bs.chromium_or_skip()


@pytest.fixture(scope="module")
def lab(chromium_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    work, data = root / "work", root / "zocrates-home"
    work.mkdir()
    shutil.copy(REPO / "notebooks" / "01-quickstart.ipynb", work / "01-quickstart.ipynb")
    bs.write_notebook(work / "profile.ipynb", ["from zocrates_nb import ProfileEditor\n\nProfileEditor()"])
    server = bs.start_jupyterlab(work, data)
    yield server
    bs.stop_jupyterlab(server)


@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = bs.launch_chromium(playwright, chromium_path)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, lab, artifacts_dir, request):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    yield page
    page.screenshot(path=str(artifacts_dir / f"{request.node.name}-last.png"))  # what it looked like at the end
    page.close()
    lab.shutdown_kernels()


def placeholder_style(page) -> dict:
    return page.evaluate("""() => {
        const style = getComputedStyle(document.querySelector('.zc-profile-editor textarea'), '::placeholder');
        return {opacity: style.opacity, color: style.color};
    }""")


def test_profile_editor_placeholder_limit_and_save(page, lab, artifacts_dir):
    from zocrates_nb.settings.profile import SAMPLE_RESEARCH_PROFILE

    bs.open_notebook(page, lab, "profile.ipynb")
    bs.run_all_cells(page)
    area = page.wait_for_selector(".zc-profile-editor textarea", timeout=120_000)
    assert area.get_attribute("placeholder") == SAMPLE_RESEARCH_PROFILE
    assert area.get_attribute("maxlength") == "1000"
    shown = placeholder_style(page)
    assert shown["opacity"] == "1" and shown["color"] not in ("transparent", "rgba(0, 0, 0, 0)")
    page.screenshot(path=str(artifacts_dir / "profile-placeholder.png"))

    area.click()  # focus: the sample vanishes at once
    hidden = placeholder_style(page)
    assert hidden["opacity"] == "0" and hidden["color"] in ("transparent", "rgba(0, 0, 0, 0)")
    page.click(".zc-profile-title")  # blur while empty: it returns
    assert placeholder_style(page)["opacity"] == "1"

    area.click()
    area.fill("x" * 995)
    page.keyboard.type("abcdefghij")  # real key presses: only five fit
    assert len(area.input_value()) == 1000 and area.input_value().endswith("abcde")
    page.wait_for_function(
        "() => document.querySelector('.zc-profile-counter').textContent.startsWith('1000 / 1000 characters')"
    )
    page.click(".zc-profile-save")
    page.wait_for_selector(".zc-profile-status.zc-profile-ok", timeout=30_000)
    page.screenshot(path=str(artifacts_dir / "profile-saved.png"))

    saved = json.loads((lab.data_dir / "zocrates_config.json").read_text())["user_research_profile"]
    assert saved == "x" * 995 + "abcde"
    status = lab.api("/zocrates/status")
    assert status["profile_configured"] is True and status["profile_chars"] == 1000


def test_quickstart_chat_save_as_note_and_find_it(page, lab, artifacts_dir):
    bs.open_notebook(page, lab, "01-quickstart.ipynb")
    bs.run_all_cells(page)
    page.wait_for_selector(".zc-chat .zc-chat-input input", timeout=600_000)
    bs.wait_kernel_idle(page)
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0
    assert page.locator(".zc-answer").count() >= 1  # the notebook's own answer rendered
    page.locator(".zc-chat").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "quickstart-chat.png"), full_page=False)

    page.click(".zc-chat .zc-chat-input input")
    page.keyboard.type(QUESTION)
    page.click(".zc-chat .zc-chat-send")
    bubble = page.wait_for_selector(".zc-chat .zc-bubble-assistant details.zc-sources", timeout=120_000)
    assert page.locator(".zc-chat .zc-bubble-user").first.inner_text().strip() == QUESTION
    bubble.click()  # open the sources
    assert page.locator(".zc-chat .zc-bubble-assistant .zc-source").count() >= 1
    page.locator(".zc-chat .zc-bubble-assistant").last.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "quickstart-answer.png"))

    option = page.locator(".zc-chat .zc-save-collection select option").nth(1).inner_text()
    page.select_option(".zc-chat .zc-save-collection select", label=option)
    collection = option.replace("\xa0", " ")  # ipywidgets shows spaces as no-break spaces
    page.locator(".zc-chat .zc-save-note").last.click()
    status = page.wait_for_selector(".zc-chat .zc-bubble-assistant .zc-saved-line .zc-saved", timeout=60_000)
    assert f"Saved to collection ‘{collection}’ as ‘{QUESTION}’" in status.inner_text()
    page.screenshot(path=str(artifacts_dir / "quickstart-saved.png"))

    bs.add_and_run_cell(page, f'found = wb.search("{QUESTION}", k=5)\nfound')
    # the notebook's own searches ran before this save, so only the new cell's results can hold it
    page.wait_for_function(
        """(title) => [...document.querySelectorAll('.jp-OutputArea-output .zocrates-search')]
               .some(o => o.textContent.includes(title))""",
        arg=QUESTION,
        timeout=120_000,
    )
    page.locator(".zocrates-search").last.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "quickstart-search.png"))


def test_chat_saves_a_child_note_on_a_paper_found_by_typing(page, lab, artifacts_dir):
    """The destination picker in a real browser: type part of a title, pick the paper, save (issue 9 §5)."""
    bs.open_notebook(page, lab, "01-quickstart.ipynb")
    bs.run_all_cells(page)
    page.wait_for_selector(".zc-chat .zc-chat-input input", timeout=600_000)
    bs.wait_kernel_idle(page)
    page.click(".zc-chat .zc-chat-input input")
    page.keyboard.type(QUESTION)
    page.click(".zc-chat .zc-chat-send")
    page.wait_for_selector(".zc-chat .zc-bubble-assistant details.zc-sources", timeout=120_000)
    page.click(".zc-chat .zc-save-paper-search input")
    page.keyboard.type("seqFISH+")  # part of one demo paper's title
    page.wait_for_function(
        """() => { const s = document.querySelector('.zc-chat .zc-save-parent select');
                   return s && [...s.options].some(o => o.textContent.includes('seqFISH+'))
                          && s.options.length <= 22; }""",
        timeout=60_000,
    )
    label = page.locator(".zc-chat .zc-save-parent select option", has_text="seqFISH+").first.inner_text()
    page.select_option(".zc-chat .zc-save-parent select", label=label)
    page.locator(".zc-chat .zc-save-note").last.click()
    status = page.wait_for_selector(".zc-chat .zc-bubble-assistant .zc-saved-line .zc-saved", timeout=60_000)
    assert "child note" in status.inner_text() and "seqFISH+" in status.inner_text()
    page.screenshot(path=str(artifacts_dir / "picker-child-note.png"))
