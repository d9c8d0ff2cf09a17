"""The README's and the docs' facts that the code decides, read from the code: a sentence that drifts from it fails
here; and the README's shape: its two commands first, short, its links to pages that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from azjax import evaluation, presets

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def page(name: str) -> str:
    """A docs page's text, `name` relative to docs/."""
    return (DOCS / name).read_text()


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_derived_cpu_preset_is_as_the_docs_say():
    small = presets.derived_preset("tic_tac_toe")  # 9 cells, 9 actions
    large = presets.derived_preset("gomoku")  # 225 cells
    net = small.network
    sentence = (f"a {net.num_blocks} x {net.num_channels} network, {small.search.num_simulations} simulations "
                f"({large.search.num_simulations} on boards of more than 64 cells, as pgx:go_9x9), "
                f"{small.selfplay.num_games} games")
    guide = flat(page("guides/your-own-game.md"))
    assert sentence in guide
    assert small.selfplay.num_steps == 32 and "of 32 moves on the CPU" in guide


def test_the_go_example_is_a_board_of_more_than_64_cells():
    pytest.importorskip("pgx")
    assert presets.derived_preset("pgx:go_9x9").search.num_simulations == 32


def test_the_default_evaluation_is_as_the_docs_say():
    guide = flat(page("guides/training.md"))
    assert f"`mcts:100` for games shorter than {evaluation.UCT_MAX_LENGTH} moves" in guide
    for name in ("brandub", "gomoku", "othello"):  # "UCT's random rollouts cost seconds a move in" them
        assert "mcts:100" not in evaluation.default_opponents(name)
    assert f"`--eval-games` games ({evaluation.EVAL_GAMES})" in guide


# "`examples/NAME.py` ... [~]N lines", in one sentence: a line count the README or the docs give of an example.
LINE_COUNT = re.compile(r"examples/(\w+\.py)`?\)?[^.]*?(~|about )?(\d+) lines")
ROUNDED = 25  # "~150 lines" is rounded to the nearest 50: within 25 lines of the file's


def test_no_line_count_of_an_example_is_wrong():
    """Line counts of the examples drift (examples/hex5.py was written as 160 lines when it was 159); where the
    README or the docs give one, it is true: exactly, or within ROUNDED lines where it says ~N or about N."""
    texts = [README, *(path.read_text() for path in sorted(DOCS.rglob("*.md")))]
    said = LINE_COUNT.findall(flat("\n".join(texts)))
    assert said, "no line count of an example found: is LINE_COUNT still the sentences' form?"
    wrong = {}
    for name, about, count in said:
        lines = len((ROOT / "examples" / name).read_text().splitlines())
        if abs(lines - int(count)) > (ROUNDED if about else 0):
            wrong[name] = f"{about}{count} lines said, {lines} there"
    assert not wrong, wrong
    assert LINE_COUNT.findall("`examples/hex5.py` is 160 lines long") == [("hex5.py", "", "160")]


def test_the_docs_show_the_shipped_agents_as_their_cards_say(load_experiment):
    """The table of docs/guides/pretrained.md is `python experiments/tools/pretrain.py --table`: the cards' figures."""
    with load_experiment("pretrain") as script:
        table = script.table()
    assert len(table.splitlines()) >= 7 and table in page("guides/pretrained.md")  # a row per agent: 5 at least


def test_the_readme_opens_with_its_two_commands():
    """The main job with no arguments, then the test command that CI runs, as the first lines after the title."""
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert README.startswith("# azjax\n\n```bash\n")  # nothing before them but the title
    assert first_block[0].startswith("pip install -e . && azjax train ")
    assert first_block[1].startswith('pip install -e ".[dev]" && pytest -n auto --dist loadfile ')
    assert len(first_block) == 2


def test_the_readme_is_short_and_its_links_lead_to_files_that_exist():
    assert len(README.splitlines()) <= 170
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/results/") for link in local)  # the headline results link their pages
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(link.removeprefix("docs/") in nav for link in local if link.endswith(".md"))  # pages of the site
