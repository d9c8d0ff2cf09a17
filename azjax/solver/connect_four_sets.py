"""Connect Four's labelled positions: six sets of solved positions reached by uniformly random play.

Stratified as Pascal Pons's benchmark sets, by the stones played (begin <= 14, middle 15-28, end > 28) and by
the stones still to be played under perfect play (easy < 14, medium 14-27, hard >= 28): begin-easy,
begin-medium, begin-hard, middle-easy, middle-medium and end-easy (the other three cannot occur). Each set holds
1000 distinct positions. A position is made by drawing its number of stones uniformly from its stage's range
(begin from 10: a position with fewer stones takes seconds to minutes to label) and playing that many
uniformly random legal moves from the empty board, starting over when a move would end the game.

Files (azjax/solver/data/connect_four/<stratum>.txt), one position a line, after a header of `#` lines:

    4453657 -3 -=---+-

the moves from the empty board as Pons writes them (columns 1-7), the exact score of the position for the
player to move (Pons's convention: see `azjax.solver.connect_four`), and each column's outcome for the player to
move: `+` win, `=` draw, `-` loss, `.` full.

Regenerate them, byte for byte, with the command in `REGENERATE` (about 12 minutes on 2 CPU cores).

Pascal Pons's own six sets (the published benchmark, 1000 positions each; AlphaZero.jl reports its agents' mistake
rates on them) are labelled the same way into azjax/solver/data/connect_four/pons/ by `PONS_LABEL`, from a folder
holding his files Test_L1_R1 ... Test_L3_R1 (`PONS_FILES`). His begin sets hold positions of 1-13 stones;
labelling a move needs the outcome of the position after it, a search of seconds at 5 stones and of hours at 2.
So the labelling runs in the background, a set's positions from the most stones to the fewest; the outcomes of
positions with fewer than `LEAF_STONES` stones are worked out from their children's (`_Outcomes`), searches of
at most minutes that positions and mirror images share, and it resumes where it stopped: each set's `.partial`
file keeps the positions labelled, its `.values` file every outcome found. A set's `.txt` is written once all of
its positions are labelled, and `positions.load("connect_four", "pons")` judges on the sets written so far. This
module reads and writes the sets; azjax/solver/positions.py, which imports it, makes labelled positions of them.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import pathlib
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from azjax.solver import connect_four as c4

DATA_DIR = pathlib.Path(__file__).parent / "data" / "connect_four"
FORMAT = "azjax connect_four positions 1"
REGENERATE = "python -m azjax.solver.connect_four_sets"
PONS_DIR = DATA_DIR / "pons"
PONS_LABEL = f"{REGENERATE} --pons DIR"
PONS_SOURCE = ("Pascal Pons's benchmark (http://blog.gamesolver.org/solving-connect-four/02-test-protocol/), as "
               "kept in AlphaZero.jl's games/connect-four/benchmark")
# His file of each stratum: L1/L2/L3 begin/middle/end, R1/R2/R3 easy/medium/hard (the same bounds as STAGES and
# DIFFICULTIES, but for begin, which he draws from 0 stones on).
PONS_FILES = {"begin-easy": "Test_L1_R1", "begin-medium": "Test_L1_R2", "begin-hard": "Test_L1_R3",
              "middle-easy": "Test_L2_R1", "middle-medium": "Test_L2_R2", "end-easy": "Test_L3_R1"}
STAGES = {"begin": (10, 14), "middle": (15, 28), "end": (29, 41)}  # stones played, inclusive
DIFFICULTIES = {"easy": (0, 13), "medium": (14, 27), "hard": (28, 42)}  # stones left under perfect play
STRATA = ("begin-easy", "begin-medium", "begin-hard", "middle-easy", "middle-medium", "end-easy")
_OUTCOME_CHARS = {1: "+", 0: "=", -1: "-", c4.ILLEGAL: "."}
_OUTCOME_OF = {char: value for value, char in _OUTCOME_CHARS.items()}


def difficulty(score: int, num_moves: int) -> str:
    """The difficulty class of a position from its exact score and its number of stones."""
    left = c4.moves_left(score, num_moves)
    return next(name for name, (low, high) in DIFFICULTIES.items() if low <= left <= high)


# --------------------------------------------------------------------------------------------------------------
# Generation.

_solver: c4.Solver | None = None  # one per worker process


def _worker_solver() -> c4.Solver:
    global _solver
    if _solver is None:
        _solver = c4.Solver()
    return _solver


def _score(moves: tuple[int, ...]) -> int:
    return _worker_solver().solve(moves)


def _outcomes(moves: tuple[int, ...]) -> np.ndarray:
    return _worker_solver().move_scores(moves, weak=True)


def random_position(rng: np.random.Generator, num_moves: int) -> tuple[int, ...]:
    """`num_moves` uniformly random legal moves from the empty board, none of which ends the game (a game that
    ends, or fills the board, before is started over)."""
    while True:
        moves: list[int] = []
        position, mask = 0, 0
        for _ in range(num_moves):
            playable = c4.playable_columns(mask)
            if not playable:
                break
            column = playable[int(rng.integers(len(playable)))]
            if c4.wins(position, mask, column):
                break
            position, mask = c4.play(position, mask, column)
            moves.append(column)
        else:
            return tuple(moves)


def _print_now(text: str) -> None:
    print(text, flush=True)


def generate(*, seed: int = 0, per_stratum: int = 1000, processes: int | None = None,
             chunk: int = 256, log: Callable[[str], None] | None = None
             ) -> dict[str, list[tuple[tuple[int, ...], int, np.ndarray | None]]]:
    """The labelled sets: {stratum: [(moves, score, outcomes int8 [7]), ...]}, `per_stratum` each.

    Deterministic in `seed` whatever the number of processes and the `chunk` size: each stage draws its
    candidates in order from its own generator, solves them in parallel, and keeps them in order while their
    stratum has room and the position is new. So the first k positions of each set do not depend on
    `per_stratum` either.
    """
    # (moves, exact score, per-move outcomes: None until labelled below)
    kept: dict[str, list[tuple[tuple[int, ...], int, np.ndarray | None]]] = {name: [] for name in STRATA}
    seen: set[tuple[int, int]] = set()
    context = multiprocessing.get_context("spawn")  # no fork of a process that may hold JAX's threads
    with concurrent.futures.ProcessPoolExecutor(processes or os.cpu_count(), mp_context=context) as pool:
        for stage_index, (stage, (low, high)) in enumerate(STAGES.items()):
            rng = np.random.default_rng([seed, stage_index])
            names = [name for name in STRATA if name.startswith(stage + "-")]
            start = time.perf_counter()
            while any(len(kept[name]) < per_stratum for name in names):
                candidates = [random_position(rng, int(rng.integers(low, high + 1))) for _ in range(chunk)]
                scores = list(pool.map(_score, candidates))
                accepted = []
                for moves, score in zip(candidates, scores, strict=True):
                    name = f"{stage}-{difficulty(score, len(moves))}"
                    position, mask, _ = c4.encode_moves(moves)
                    if name in kept and len(kept[name]) < per_stratum and (position, mask) not in seen:
                        seen.add((position, mask))
                        kept[name].append((moves, score, None))
                        accepted.append((name, len(kept[name]) - 1, moves))
                for (name, index, _), outcomes in zip(accepted, pool.map(_outcomes, [m for *_, m in accepted]),
                                                      strict=True):
                    moves, score, _ = kept[name][index]
                    kept[name][index] = (moves, score, outcomes)
                (log or _print_now)(f"{stage}: " + ", ".join(f"{name} {len(kept[name])}" for name in names)
                    + f" ({time.perf_counter() - start:.0f} s)")
    return kept


def moves_text(moves: Sequence[int]) -> str:
    """Moves (columns 0-6) as Pons's set files write them: one digit per move, columns 1-7."""
    return "".join(str(m + 1) for m in moves)


def parse_moves(text: str) -> tuple[int, ...]:
    """The moves (columns 0-6) of a set file's digits (columns 1-7); `moves_text`'s inverse."""
    return tuple(int(c) - 1 for c in text)


def _line(moves: tuple[int, ...], score: int, outcomes: np.ndarray) -> str:
    """One position as a set file's line: moves (columns 1-7), exact score, each column's outcome."""
    return f"{moves_text(moves)} {score} {''.join(_OUTCOME_CHARS[int(o)] for o in outcomes)}"


def _write_set(path: pathlib.Path, description: str, generated_by: str, lines: list[str]) -> None:
    header = [
        f"# {FORMAT}",
        f"# stratum {description}",
        f"# positions {len(lines)}",
        f"# generated by: {generated_by}",
        "# moves (columns 1-7) | exact score for the player to move | outcome per column (+ win, = draw, - loss,"
        " . full)",
    ]
    path.write_text("\n".join(header + lines) + "\n")


def write(sets: dict[str, list[tuple[tuple[int, ...], int, np.ndarray | None]]], directory: pathlib.Path, *,
          seed: int) -> None:
    """Writes one file per stratum (format in the module docstring)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in sets.items():
        stage, level = name.split("-")
        if any(outcomes is None for *_, outcomes in rows):
            raise ValueError(f"{name}: every position needs its per-move outcomes before it is written")
        description = (f"{name}: {STAGES[stage][0]}-{STAGES[stage][1]} stones played, "
                       f"{DIFFICULTIES[level][0]}-{DIFFICULTIES[level][1]} left under perfect play")
        _write_set(directory / f"{name}.txt", description, f"{REGENERATE} --seed {seed} --per-stratum {len(rows)}",
                   [_line(moves, score, outcomes) for moves, score, outcomes in rows if outcomes is not None])


# --------------------------------------------------------------------------------------------------------------
# Pascal Pons's sets.


def read_pons(path: pathlib.Path) -> list[tuple[tuple[int, ...], int]]:
    """One of Pons's files: each line `moves score` (columns 1-7, his exact score for the player to move).

    Raises:
      ValueError: the file is missing or a line is not `moves score`; the message names the file and line.
    """
    if not path.is_file():
        raise ValueError(f"{path}: no such file; --pons takes the folder of Pascal Pons's files "
                         f"{', '.join(PONS_FILES.values())}")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if not (len(fields) == 2 and fields[0].isdigit() and set(fields[0]) <= set("1234567")
                and fields[1].lstrip("-").isdigit()):
            raise ValueError(f"{path}, line {number}: not 'moves score': {line!r}")
        rows.append((parse_moves(fields[0]), int(fields[1])))
    return rows


def _check_pons(path: pathlib.Path, moves: tuple[int, ...], score: int, outcomes: np.ndarray) -> None:
    if int(outcomes.max()) != int(np.sign(score)):
        raise ValueError(f"{path}: position {moves_text(moves)} has Pons's score {score} but its "
                         f"moves' outcomes are {outcomes.tolist()} (the best of them is the position's outcome)")


def _solve_outcomes(group: list[tuple[int, ...]]) -> list[tuple[tuple[int, ...], int]]:
    """Outcomes of positions one after another in one process: siblings share most of their search tree, which
    the solver's transposition table keeps between them (about 3x faster than siblings apart)."""
    return [(moves, _worker_solver().solve_outcome(moves)) for moves in group]


def _children(moves: tuple[int, ...]) -> list[tuple[int, tuple[int, ...] | None]]:
    """(column, the position after it, or None where the column wins at once) for each playable column."""
    position, mask, _ = c4.encode_moves(moves)
    return [(column, None if c4.wins(position, mask, column) else (*moves, column))
            for column in c4.playable_columns(mask)]


def _key(moves: tuple[int, ...]) -> tuple[int, int]:
    """One key for a position and its mirror image (whose outcome is the same)."""
    position, mask, _ = c4.encode_moves(moves)
    mirrored, mirrored_mask, _ = c4.encode_moves(tuple(c4.WIDTH - 1 - m for m in moves))
    return min((position, mask), (mirrored, mirrored_mask))


class _Outcomes:
    """Outcomes, for the player to move, of the positions met while labelling one set, a position and its mirror
    image as one. Each one solved or worked out is appended at once to a `.values` file beside the set's
    `.partial`, so a stopped labelling loses no solve and the next starts from them (a line it was cut off while
    writing, without its newline, is dropped: that one position is solved again).

    Labels need every move's outcome, i.e. the outcome of the position after each move. A position with
    `leaf_stones` stones or more is solved directly (one search); one with fewer gets its outcome from its
    children's, the best of their negations, so that the few opening positions of Pons's begin sets (1-4 stones:
    a direct search of hours, which could not resume) break into many searches of minutes, shared between the
    positions, and their mirror images, that lead to the same ones."""

    def __init__(self, path: pathlib.Path, leaf_stones: int):
        self.path, self.leaf_stones = path, leaf_stones
        self.known: dict[tuple[int, int], int] = {}
        if path.is_file():
            text = path.read_text()
            if text and not text.endswith("\n"):  # a labelling stopped while writing: drop its unfinished line
                text = text[:text.rfind("\n") + 1]
                path.write_text(text)
            for number, line in enumerate(text.splitlines(), start=1):
                fields = line.split()
                if not (len(fields) == 2 and set(fields[0]) <= set("1234567") and fields[1] in ("+", "=", "-")):
                    raise ValueError(f"{path}, line {number}: not 'moves outcome' (+, = or -): {line!r}; delete "
                                     "the file to solve its positions again")
                self.known[_key(parse_moves(fields[0]))] = _OUTCOME_OF[fields[1]]

    def put(self, moves: tuple[int, ...], outcome: int, *, keep: bool = True) -> None:
        self.known[_key(moves)] = outcome
        if keep:
            with self.path.open("a") as file:
                file.write(f"{moves_text(moves)} {_OUTCOME_CHARS[outcome]}\n")

    def learn(self, moves: tuple[int, ...], outcomes: np.ndarray) -> None:
        """What a labelled position tells: its own outcome and its children's (not written: its label is)."""
        self.put(moves, int(outcomes.max()), keep=False)
        for column, child in _children(moves):
            if child is not None:
                self.put(child, -int(outcomes[column]), keep=False)

    def label(self, moves: tuple[int, ...]) -> np.ndarray:
        """Each column's outcome for the mover (int8 [7], ILLEGAL where full), from the children's, all known."""
        outcomes = np.full(c4.WIDTH, c4.ILLEGAL, np.int8)
        for column, child in _children(moves):
            outcomes[column] = 1 if child is None else -self.known[_key(child)]
        return outcomes

    def ensure(self, positions: list[tuple[int, ...]], pool: concurrent.futures.Executor,
               say: Callable[[str], None], name: str) -> None:
        """Makes the outcomes of `positions` (all with the same number of stones) known."""
        missing: dict[tuple[int, int], tuple[int, ...]] = {}  # in the order given: siblings together
        for moves in positions:
            if _key(moves) not in self.known:
                missing.setdefault(_key(moves), moves)
        if not missing:
            return
        stones = len(next(iter(missing.values())))
        if stones < self.leaf_stones:
            self.ensure([child for moves in missing.values() for _, child in _children(moves) if child is not None],
                        pool, say, name)
            for moves in missing.values():
                self.put(moves, int(self.label(moves).max()))
            return
        say(f"{name}: solving {len(missing)} positions of {stones} stones")
        start = time.perf_counter()
        groups: dict[tuple[int, ...], list[tuple[int, ...]]] = {}  # by the position before the last move
        for moves in missing.values():
            groups.setdefault(moves[:-1], []).append(moves)
        futures = [pool.submit(_solve_outcomes, group) for group in groups.values()]
        solved = 0
        for count, future in enumerate(concurrent.futures.as_completed(futures), start=1):
            for moves, outcome in future.result():
                self.put(moves, outcome)
            solved += len(future.result())
            if count % 20 == 0 and count < len(futures):
                say(f"{name}: {solved} of {len(missing)} positions of {stones} stones solved "
                    f"({time.perf_counter() - start:.0f} s)")


LEAF_STONES = 4  # label_pons: positions with fewer stones get their outcome from their children's


def label_pons(source: pathlib.Path, out: pathlib.Path = PONS_DIR, *, processes: int = 1,
               strata: tuple[str, ...] = STRATA, log: Callable[[str], None] | None = None,
               leaf_stones: int = LEAF_STONES) -> dict[str, bool]:
    """Labels Pons's sets from the folder `source` into `out`, resuming from each set's `.partial` file (the
    positions labelled) and `.values` file (the outcomes solved); returns {stratum: whether its `.txt` is
    written}. The sets go from the cheapest (end-easy) to the dearest, and each set's positions from the most
    stones to the fewest: those of one number of stones are labelled together, once the outcomes of every
    position one move on are known (solved in parallel, or for fewer than `leaf_stones` stones worked out from
    theirs: `_Outcomes`).

    Each position's outcome under his score (its sign) must be the best of its moves' outcomes by azjax's solver:
    an independent check of that solver on 6000 positions (a mismatch raises ValueError naming the position).
    """
    say = log or _print_now
    out.mkdir(parents=True, exist_ok=True)
    order = sorted(strata, key=lambda name: -min(len(moves) for moves, _ in read_pons(source / PONS_FILES[name])))
    done = {}
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=context) as pool:
        for name in order:
            rows = read_pons(source / PONS_FILES[name])
            final, partial, kept = (out / f"{name}{suffix}" for suffix in (".txt", ".partial", ".values"))
            if final.is_file():
                done[name] = True
                continue
            labelled: dict[int, np.ndarray] = {}
            if partial.is_file():
                for line in partial.read_text().splitlines():
                    kept_index, kept_outcomes = line.split()
                    labelled[int(kept_index)] = np.array([_OUTCOME_OF[c] for c in kept_outcomes], np.int8)
            values = _Outcomes(kept, leaf_stones)
            for index, outcomes in labelled.items():
                values.learn(rows[index][0], outcomes)
            todo = [i for i in range(len(rows)) if i not in labelled]
            start = time.perf_counter()
            say(f"{name} ({PONS_FILES[name]}): {len(labelled)} of {len(rows)} labelled before, {len(todo)} to go")
            with partial.open("a") as progress:
                for stones in sorted({len(rows[i][0]) for i in todo}, reverse=True):
                    level = [i for i in todo if len(rows[i][0]) == stones]
                    values.ensure([child for i in level for _, child in _children(rows[i][0]) if child is not None],
                                  pool, say, name)
                    for index in level:
                        moves, score = rows[index]
                        outcomes = values.label(moves)
                        _check_pons(source / PONS_FILES[name], moves, score, outcomes)
                        labelled[index] = outcomes
                        values.learn(moves, outcomes)
                        progress.write(f"{index} {''.join(_OUTCOME_CHARS[int(o)] for o in outcomes)}\n")
                    progress.flush()
                    say(f"{name}: {len(labelled)} of {len(rows)} (those of {stones} stones done; "
                        f"{time.perf_counter() - start:.0f} s)")
            for index, (moves, score) in enumerate(rows):  # the kept ones too
                _check_pons(source / PONS_FILES[name], moves, score, labelled[index])
            lines = [_line(moves, score, labelled[i]) for i, (moves, score) in enumerate(rows)]
            _write_set(final, f"{name}: {PONS_SOURCE}, file {PONS_FILES[name]}", f"{PONS_LABEL}", lines)
            partial.unlink()
            kept.unlink(missing_ok=True)
            done[name] = True
    return {name: done.get(name, False) for name in strata}


# --------------------------------------------------------------------------------------------------------------
# Loading.


def read(path: pathlib.Path) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """One set file: the move lists, exact scores int8 [N] and outcomes int8 [N, 7] (+1, 0, -1, and the
    solver's `connect_four.ILLEGAL` for a full column).

    Raises:
      ValueError: the file is missing, from another format, truncated or malformed; the message names the file
        and the command that regenerates it.
    """
    def fail(problem: str) -> ValueError:
        return ValueError(f"{path}: {problem}. Regenerate the Connect Four position sets with `{REGENERATE}` "
                          "(or reinstall azjax)")

    if not path.is_file():
        raise fail("the file is missing")
    lines = path.read_text().splitlines()
    header = [line for line in lines if line.startswith("#")]
    body = [line for line in lines if line and not line.startswith("#")]
    if not header or header[0] != f"# {FORMAT}":
        raise fail(f"not a file of format {FORMAT!r} (first line {header[0] if header else lines[:1]!r})")
    declared = next((line.split()[-1] for line in header if line.startswith("# positions ")), None)
    if declared is None or not declared.isdigit() or int(declared) != len(body):
        raise fail(f"the header declares {declared} positions but the file holds {len(body)}: it is truncated")
    moves, scores, outcomes = [], [], []
    for number, line in enumerate(body, start=len(header) + 1):
        fields = line.split()
        valid = (len(fields) == 3 and fields[0].isdigit() and set(fields[0]) <= set("1234567")
                 and fields[1].lstrip("-").isdigit() and len(fields[2]) == c4.WIDTH
                 and set(fields[2]) <= set(_OUTCOME_OF))
        if not valid:
            raise fail(f"line {number} is not 'moves score outcomes': {line!r}")
        moves.append(list(parse_moves(fields[0])))
        scores.append(int(fields[1]))
        outcomes.append([_OUTCOME_OF[c] for c in fields[2]])
    return moves, np.array(scores, np.int8), np.array(outcomes, np.int8).reshape(-1, c4.WIDTH)


def read_sets(directory: pathlib.Path = DATA_DIR, strata: tuple[str, ...] = STRATA
              ) -> tuple[list[list[int]], np.ndarray, np.ndarray, np.ndarray]:
    """The sets `strata` (default all six) of `directory`, in order: every position's moves, its score int8 [N],
    its columns' outcomes int8 [N, 7] (`connect_four.ILLEGAL` for a full column) and its set's index int32 [N]
    (`positions.load("connect_four")` turns them into labelled positions)."""
    all_moves, scores, outcomes, stratum = [], [], [], []
    for index, name in enumerate(strata):
        moves, set_scores, set_outcomes = read(directory / f"{name}.txt")
        all_moves += moves
        scores.append(set_scores)
        outcomes.append(set_outcomes)
        stratum.append(np.full(len(moves), index, np.int32))
    return all_moves, np.concatenate(scores), np.concatenate(outcomes), np.concatenate(stratum)


def pons_strata(directory: pathlib.Path = PONS_DIR) -> tuple[str, ...]:
    """Pons's sets labelled so far (their `.txt` written), in STRATA's order."""
    return tuple(name for name in STRATA if (directory / f"{name}.txt").is_file())


def main(argv: list[str] | None = None) -> int:
    """The command line; returns its exit status (2 when --pons's files are missing or unreadable)."""
    parser = argparse.ArgumentParser(description="Regenerate Connect Four's labelled position sets, or label "
                                     "Pascal Pons's (--pons).")
    parser.add_argument("--seed", type=int, default=0, help="the random play's seed (default 0, the shipped sets)")
    parser.add_argument("--per-stratum", type=int, default=1000, help="positions per set (default 1000)")
    parser.add_argument("--processes", type=int, default=None, help="solver processes (default: one per core)")
    parser.add_argument("--out", type=pathlib.Path, help=f"directory (default {DATA_DIR}; with --pons {PONS_DIR})")
    parser.add_argument("--pons", type=pathlib.Path, metavar="DIR", help="label Pascal Pons's sets from DIR (his "
                        f"files {', '.join(PONS_FILES.values())}), resuming where an earlier labelling stopped")
    parser.add_argument("--strata", nargs="+", choices=STRATA, default=list(STRATA), help="with --pons: these sets")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.pons is not None:
        try:
            done = label_pons(args.pons, args.out or PONS_DIR, processes=args.processes or 1,
                              strata=tuple(args.strata))
        except ValueError as error:  # a missing or malformed file of his, or a score the solver contradicts
            print(f"{parser.prog}: error: {error}", file=sys.stderr)
            return 2
        print(f"labelled: {', '.join(name for name, ok in done.items() if ok) or 'none'} "
              f"({time.perf_counter() - start:.0f} s)")
        return 0
    sets = generate(seed=args.seed, per_stratum=args.per_stratum, processes=args.processes)
    write(sets, args.out or DATA_DIR, seed=args.seed)
    print(f"wrote {sum(len(rows) for rows in sets.values())} positions to {args.out or DATA_DIR} "
          f"in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
