"""azjax serve's page in a real browser: headless Chromium driven by Selenium plays tic-tac-toe by clicks against
random, makes an illegal click, watches random against mcts:8, steps through a recorded game and saves a screenshot.

Needs Debian's `chromium` and `chromium-driver` (.ci/run installs them where they are missing); skipped without
them. Selenium is pointed at /usr/bin/chromedriver, so it never downloads a driver.

    AZJAX_SERVE_SCREENSHOT=docs/serve.png pytest tests/test_serve_browser.py -k screenshot   # the README's picture
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from azjax.serve import GameServer, make_http_server

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT_SECONDS = 180  # for a search compiling on a loaded 2-core CPU; a bound on waiting, not a timing assertion
RESULTS = ("You win!", "random wins.", "Draw.")
SCREENSHOT_ENV = "AZJAX_SERVE_SCREENSHOT"
RECORDED = [0, 3, 1, 4, 2]  # X: a1 b1 c1, the top row; O: a2 b2


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def wdl_agent(tmp_path_factory, tiny_config) -> str:
    """A tiny network with a win/draw/loss value head (random parameters), as the agent greedy:PATH."""
    import dataclasses

    from tiny import write_random_agent

    path = tmp_path_factory.mktemp("agents") / "wdl"
    write_random_agent(path, dataclasses.replace(
        tiny_config, network=dataclasses.replace(tiny_config.network, value_head="wdl")))
    return f"greedy:{path}"


@pytest.fixture(scope="module")
def url(tmp_path_factory, wdl_agent):
    record = tmp_path_factory.mktemp("records") / "match.json"
    record.write_text(json.dumps({
        "format": "azjax-games", "version": 1, "game": "tic_tac_toe", "agents": ["random", "onestep"],
        "games": [{"players": ["onestep", "random"], "moves": RECORDED, "opening_moves": 0, "outcome": 1.0}],
    }))
    agents = ["random", "mcts:8", "pretrained:tic_tac_toe", wdl_agent]  # a shipped network with its search; a
    #   network with a win/draw/loss head
    if os.environ.get(SCREENSHOT_ENV):
        agents.append("pretrained:connect_four")
    http = make_http_server(GameServer.from_specs(agents, records=[record]), "127.0.0.1", 0)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_port}/"
    http.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def driver():
    chromium = _chromium()
    if chromium is None or not CHROMEDRIVER.is_file():
        pytest.skip("needs chromium and /usr/bin/chromedriver (apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1200,860", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    try:
        browser = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    except WebDriverException as error:
        pytest.skip(f"chromium did not start: {str(error).splitlines()[0]}")
    yield browser
    browser.quit()


def wait(driver, condition, what: str):
    try:
        return WebDriverWait(driver, WAIT_SECONDS, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: condition(d))
    except Exception as error:
        raise AssertionError(f"gave up waiting for {what}; the page said: status "
                             f"{text(driver, 'status')!r}, message {text(driver, 'message')!r}") from error


def text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text.strip()


def square(driver, name: str):
    return driver.find_element(By.CSS_SELECTOR, f'#board rect[data-square="{name}"]')


def click(driver, css: str, what: str) -> None:
    """Clicks the element `css` selects; again if the page redrew it between finding and clicking."""

    def clicked(d) -> bool:
        d.find_element(By.CSS_SELECTOR, css).click()
        return True

    wait(driver, clicked, what)


def num_moves(driver) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, "#moves li"))


def open_page(driver, url: str) -> None:
    driver.get(url)
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#board rect[data-square]"), "the board")
    wait(driver, lambda d: text(d, "ply-label") == f"move 0 of {len(RECORDED)}", "the record, shown first")


def new_game_against(driver, agent: str, game: str = "tic_tac_toe") -> None:
    driver.find_element(By.CSS_SELECTOR, '.tab[data-mode="play"]').click()
    Select(driver.find_element(By.ID, "game")).select_by_value(game)
    Select(driver.find_element(By.ID, "agent")).select_by_value(agent)
    Select(driver.find_element(By.ID, "side")).select_by_value("0")
    before = game_id(driver)
    driver.find_element(By.ID, "new-game").click()
    wait(driver, lambda d: game_id(d) != before and text(d, "status") == "Your move." and num_moves(d) == 0,
         "a new game")
    assert driver.find_element(By.ID, "board").get_attribute("data-game") == game


def game_id(driver) -> str | None:
    return driver.find_element(By.ID, "board").get_attribute("data-game-id")


def your_move_or_end(driver) -> bool:
    return text(driver, "status") == "Your move." or text(driver, "status") in RESULTS


def test_play_the_shipped_agent_by_clicks_and_read_its_search(driver, url):
    """The issue's bar: a full game by clicks against a shipped network agent, its per-move figures shown."""
    open_page(driver, url)
    new_game_against(driver, "pretrained:tic_tac_toe")
    ended = ("You win!", "pretrained:tic_tac_toe wins.", "Draw.")
    while text(driver, "status") not in ended:
        before = num_moves(driver)
        click(driver, "#board rect.square.playable", "a free square")
        wait(driver, lambda d, before=before: num_moves(d) > before and (
            text(d, "status") == "Your move." or text(d, "status") in ended), "the agent's answer")
    assert text(driver, "status") in ("pretrained:tic_tac_toe wins.", "Draw.")  # it plays perfectly
    driver.find_element(By.ID, "first").click()
    wait(driver, lambda d: text(d, "ply-label").startswith("move 0 of"), "the start")
    Select(driver.find_element(By.ID, "analyst")).select_by_value("pretrained:tic_tac_toe")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#candidates tbody tr"), "the agent's analysis")
    cells = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#candidates tbody tr:first-child td")]
    assert len(cells) == 5 and "%" in cells[1] and cells[3].endswith("%"), cells  # visits, prior


def test_play_a_game_by_clicks_against_random_and_see_the_result(driver, url):
    open_page(driver, url)
    new_game_against(driver, "random")
    while text(driver, "status") not in RESULTS:
        before = num_moves(driver)
        click(driver, "#board rect.square.playable", "a free square")
        wait(driver, lambda d, before=before: num_moves(d) > before and your_move_or_end(d), "random's answer")
    assert text(driver, "status") in RESULTS
    assert not text(driver, "message")
    assert driver.find_element(By.ID, "status").get_attribute("class") == "result"
    # Stepping back shows an earlier position, with the search of the agent chosen for it.
    driver.find_element(By.ID, "first").click()
    wait(driver, lambda d: text(d, "ply-label").startswith("move 0 of"), "the start")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#candidates tbody tr"), "the analysis")
    cells = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#candidates tbody tr:first-child td")]
    assert len(cells) == 5 and cells[1] == "-" and cells[3] == "-"  # random has no visits and no prior


def test_an_illegal_click_shows_the_servers_message(driver, url):
    open_page(driver, url)
    new_game_against(driver, "random")
    click(driver, '#board rect[data-square="b2"]', "b2")
    wait(driver, lambda d: num_moves(d) == 2 and your_move_or_end(d), "random's answer")
    click(driver, '#board rect[data-square="b2"]', "b2 again")
    wait(driver, lambda d: text(d, "message"), "a message")
    assert text(driver, "message") == "b2 is not legal here"
    assert num_moves(driver) == 2


def test_watch_random_against_mcts_to_the_end(driver, url):
    open_page(driver, url)
    driver.find_element(By.CSS_SELECTOR, '.tab[data-mode="watch"]').click()
    Select(driver.find_element(By.ID, "game")).select_by_value("tic_tac_toe")
    Select(driver.find_element(By.ID, "watch-0")).select_by_value("random")
    Select(driver.find_element(By.ID, "watch-1")).select_by_value("mcts:8")
    Select(driver.find_element(By.ID, "pace")).select_by_value("0")
    driver.find_element(By.ID, "start-watch").click()
    wait(driver, lambda d: " wins." in text(d, "status") or text(d, "status") == "Draw.", "the end of the game")
    assert num_moves(driver) >= 5
    assert not driver.find_elements(By.CSS_SELECTOR, "#board rect.square.playable")  # nobody clicks for agents


def test_a_win_draw_loss_network_shows_its_chances(driver, url, wdl_agent):
    open_page(driver, url)
    new_game_against(driver, "random")
    Select(driver.find_element(By.ID, "analyst")).select_by_value(wdl_agent)
    summary = "#analysis .summary"
    wait(driver, lambda d: "draw" in "".join(e.text for e in d.find_elements(By.CSS_SELECTOR, summary)),
         "the network's chances")
    shown = driver.find_element(By.CSS_SELECTOR, summary).text
    assert re.search(r"the network's value [+-]?\d\.\d\d \(win [\d.]+% · draw [\d.]+% · loss [\d.]+%\)$", shown), shown
    Select(driver.find_element(By.ID, "analyst")).select_by_value("pretrained:tic_tac_toe")  # a scalar head
    wait(driver, lambda d: "pretrained:tic_tac_toe plays" in d.find_element(By.CSS_SELECTOR, summary).text,
         "the shipped agent's analysis")
    assert "draw" not in driver.find_element(By.CSS_SELECTOR, summary).text


def test_open_a_recorded_game_and_step_through_it(driver, url):
    open_page(driver, url)
    driver.find_element(By.CSS_SELECTOR, '.tab[data-mode="replay"]').click()
    wait(driver, lambda d: Select(d.find_element(By.ID, "record-game")).options, "the record's games")
    before = game_id(driver)
    driver.find_element(By.ID, "open-record").click()
    wait(driver, lambda d: game_id(d) != before and text(d, "ply-label") == f"move 0 of {len(RECORDED)}",
         "the recorded game")
    assert num_moves(driver) == len(RECORDED)
    for ply in range(1, len(RECORDED) + 1):
        driver.find_element(By.ID, "next").click()
        wait(driver, lambda d, ply=ply: text(d, "ply-label") == f"move {ply} of {len(RECORDED)}", f"move {ply}")
    assert "onestep (player 0, moving first) wins." in text(driver, "status")
    assert driver.find_element(By.ID, "next").get_attribute("disabled")
    click(driver, '#board rect[data-square="a1"]', "a1")
    wait(driver, lambda d: "recorded game" in text(d, "message"), "the page's message")


def test_open_a_record_from_a_file(driver, url, tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({
        "format": "azjax-games", "version": 1, "game": "tic_tac_toe", "agents": ["a", "b"],
        "games": [{"players": ["a", "b"], "moves": [4], "outcome": 0.0}],
    }))
    open_page(driver, url)
    driver.find_element(By.CSS_SELECTOR, '.tab[data-mode="replay"]').click()
    driver.find_element(By.ID, "upload").send_keys(str(path))
    wait(driver, lambda d: "mine.json: 1 games of tic_tac_toe" in text(d, "message"), "the upload")
    wait(driver, lambda d: len(Select(d.find_element(By.ID, "record-game")).options) == 1, "its games")
    driver.find_element(By.ID, "open-record").click()
    wait(driver, lambda d: text(d, "ply-label") == "move 0 of 1", "the uploaded game")
    path.write_text("{not json")
    driver.find_element(By.ID, "upload").send_keys(str(path))
    wait(driver, lambda d: "is not JSON" in text(d, "message"), "the page's message")


def test_screenshot(driver, url, tmp_path):
    """A picture of the page in play: tic-tac-toe against random, mcts:8's search shown; with
    AZJAX_SERVE_SCREENSHOT=PATH instead the README's, at PATH: Connect Four against its shipped agent, whose search
    is shown."""
    readme = os.environ.get(SCREENSHOT_ENV)
    game, agent, analyst, clicks = (("connect_four", "pretrained:connect_four", "pretrained:connect_four",
                                     ("d1", "c1", "d2")) if readme
                                    else ("tic_tac_toe", "random", "mcts:8", ("b2", "a1")))
    open_page(driver, url)
    new_game_against(driver, agent, game)
    for name in clicks:
        if your_move_or_end(driver) and text(driver, "status") not in RESULTS:
            before = num_moves(driver)
            if "playable" in (square(driver, name).get_attribute("class") or ""):
                click(driver, f'#board rect[data-square="{name}"]', name)
                wait(driver, lambda d, before=before: num_moves(d) > before and your_move_or_end(d), "an answer")
    Select(driver.find_element(By.ID, "analyst")).select_by_value(analyst)
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#candidates tbody tr"), f"{analyst}'s analysis")
    ActionChains(driver).move_to_element(driver.find_element(By.TAG_NAME, "h1")).perform()  # no hover highlight
    path = Path(readme or tmp_path / "serve.png")
    path.parent.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
