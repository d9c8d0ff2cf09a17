"""What `azjax serve` serves, without the HTTP: the games and agents offered, live games in a bounded table,
agents searching on their own threads, recorded games opened to step through.

    server = GameServer.from_specs(["pretrained:connect_four"], records=["match.json"])
    game = server.create_game({"game": "tic_tac_toe", "players": ["human", "mcts:200"]})
    server.move(game["id"], {"path": ["b2"]})          # the person's click on b2; mcts:200 answers on its thread
    server.view(game["id"])                            # the board (SVG), the moves, whose turn, "thinking"

Every method takes and returns JSON-ready values and raises `ServeError` (an HTTP status, 4xx, and a one-line
message) for a request it cannot serve; `azjax.serve.app` maps them to HTTP.

Agents. The page picks among the served agents only: those named on the command line, plus `random` and
`mcts:200` (and the shipped agents when none is named); a browser never names a path. Each agent is built once per
game (`agent_specs.make_bot`) and its `analyse` jitted once, for a batch of one position, and reused for every game.
Each has one worker thread that runs its searches one at a time, so requests never wait on a search: the page
polls while the agent is "thinking". An agent with tree reuse searches each position anew here. For agents with
a network the page also shows the network's own prior and value of the position.

Games. Each game has an id; `max_games` live at once, the oldest dropped first (a request for it then gets 410).
A game is a person against an agent, two agents ("watch", a move every `pace` seconds), two people, or a recorded
game ("replay", stepped through and analysed but not played on). A one-player game (a puzzle) has one seat: the
person solves it (any agent's analysis as a hint) or an agent does (watched, a move every `pace` seconds); it starts
where the game's `yardstick` draws its starts (else `init`), and its result says whether it was solved and in how
many moves (beside the fewest, where the yardstick knows them).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import queue
import random
import secrets
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax import agent_specs, bots, perfect, pretrained
from azjax import games as games_lib
from azjax.games import Game, State, drawing
from azjax.serve import board
from azjax.serve.records import Record, RecordError, parse_record, read_record
from azjax.text import counted

HUMAN = "human"  # a seat played by the person at the page
"""The seat name of the person at the page (in place of an agent spec)."""
ALWAYS_OFFERED = ("random", "mcts:200")
DEFAULT_GAME = "tic_tac_toe"
MAX_GAMES = 32  # live games kept; the oldest is dropped beyond
MAX_DROPPED_REMEMBERED = 4096  # dropped games' ids remembered, to answer 410 rather than 404
MAX_UPLOADED_RECORDS = 16  # records sent by pages; the oldest upload is forgotten beyond
MAX_CANDIDATES = 10  # candidate moves listed in an analysis
MAX_ANALYSES_PER_GAME = 64  # analyses kept per game (each holds a picture); the oldest finished ones go first
MAX_ANNOTATIONS = 6  # candidate moves marked on the board
MAX_PACE_SECONDS = 10.0
DEFAULT_PACE_SECONDS = 0.5  # between an agent's move and the next agent's in a game between agents


class ServeError(Exception):
    """A request that cannot be served: `status` (4xx) and a one-line `message` for the page."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# --------------------------------------------------------------------------------------------------------------
# Games offered


@dataclasses.dataclass(eq=False)
class ServedGame:
    """A game the page offers, made once: its jitted step and what the page needs to click moves."""

    name: str  # as `games.make` takes it
    game: Game
    step: Callable[[State, Any], State]  # jitted, unbatched
    start: State  # the start position, on the host
    move_names: list[str]  # per action
    targets: list[board.Targets | None]  # per action: the squares it is clicked on (see `board`)
    grid: board.Grid | None  # where the squares are in the pictures
    from_to: bool  # some move takes two clicks (from, to)

    @classmethod
    def make(cls, name: str) -> ServedGame:
        game = games_lib.make(name)
        start = jax.device_get(game.init(jax.random.key(0)))
        grid = board.board_grid(drawing.to_svg(game, start))
        move_names = [game.action_to_string(action) for action in range(game.num_actions)]
        targets = [board.move_targets(move, grid) for move in move_names]
        return cls(name=name, game=game, step=jax.jit(game.step), start=start, move_names=move_names,
                   targets=targets, grid=grid, from_to=any(t is not None and len(t) > 1 for t in targets))

    def play(self, state: State, action: int) -> State:
        return jax.device_get(self.step(state, np.int32(action)))


# --------------------------------------------------------------------------------------------------------------
# Agents


class _Worker:
    """One daemon thread running jobs in order (an agent's searches), so that they never hold up a request and
    never keep the process alive."""

    def __init__(self, name: str):
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        threading.Thread(target=self._run, name=f"azjax-serve {name}", daemon=True).start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def stop(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()  # jobs catch their own errors (`GameServer._run_analysis`)


NetworkEvaluator = Callable[[State], tuple[jax.Array, jax.Array, jax.Array | None]]
"""A network on a batch of states [B]: masked logits [B, A], the value [B] (a puzzle's: the return to come, in the
game's units) and, for a network with a win/draw/loss value head, those chances [B, 3] (else None), all for the
player to move."""


@dataclasses.dataclass(eq=False)
class ServedAgent:
    """An agent ready for one game: its bot with `analyse` jitted for one position, the network's own prior and
    value where it has a network, and its worker thread."""

    spec: str
    game: ServedGame
    analyse: Callable[[jax.Array, State], bots.Analysis]  # jitted, states [1]
    evaluate: NetworkEvaluator | None  # jitted network: logits [1, A], value [1], win/draw/loss [1, 3] or None
    worker: _Worker

    def analysis(self, key: jax.Array, state: State, last_move: int | None = None) -> dict:
        """The agent's analysis of one position (see `describe_analysis`; `last_move` led there): runs the search,
        on this thread."""
        batch = jax.tree.map(lambda x: jnp.asarray(x)[None], state)
        with perfect.solve_timeouts_raised():
            analysis = jax.device_get(self.analyse(key, batch))
            network = None if self.evaluate is None else jax.device_get(self.evaluate(batch))
        # UCT reports its visits as its policy (the root's visit shares), with no counts.
        return describe_analysis(self.game, state, analysis, network, last_move=last_move,
                                 policy_is_visits=self.spec.startswith("mcts:"))


def network_source(spec: str) -> str | None:
    """The run directory, export or shipped agent whose network the agent `spec` plays; None for an agent without
    one (random, mcts:N, hold:N, ...). Reads nothing."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "greedy":
        return rest
    if kind == "az":
        for suffix in agent_specs.TREE_SUFFIXES:
            rest = rest.removesuffix(suffix)
        head, _, tail = rest.rpartition(":")
        return head if head and tail.isdecimal() else rest
    if spec in ("random", "onestep", "perfect") or kind in ("mcts", "hold"):
        return None
    return spec


def _network_evaluator(spec: str) -> NetworkEvaluator | None:
    """The jitted network of an agent with one (`NetworkEvaluator`), else None; it observes the states as the
    network was trained to read them (its game's observation version, which may be older than the served
    game's)."""
    from azjax.agent import load_agent
    from azjax.networks import apply_with_outcomes
    from azjax.search import masked_logits

    source = network_source(spec)
    if source is None:
        return None
    shipped = agent_specs.shipped_game(source)
    agent = load_agent(pretrained.PREFIX + shipped if shipped is not None else source)

    def evaluate(states: State) -> tuple[jax.Array, jax.Array, jax.Array | None]:  # one pass of the network
        logits, value, outcomes = apply_with_outcomes(agent.network, agent.variables,
                                                      jax.vmap(agent.game.observe)(states))
        if agent.game.num_players == 1:  # a puzzle's value in its own units, the return to come, as its search's
            value = games_lib.value_to_return(agent.game.return_bounds, value, agent.game.return_scaling)
        return masked_logits(logits, states.legal_action_mask), value, outcomes

    return jax.jit(evaluate)


@dataclasses.dataclass(frozen=True)
class OfferedAgent:
    """An agent the page may choose."""

    spec: str
    game: str | None  # the one game it plays (a network's), None for any game
    about: str  # a few words for the page
    excludes: tuple[str, ...] = ()  # games it cannot play where `game` is None (UCT's rollouts: games with chance)

    def plays(self, game: str) -> bool:
        return (self.game is None or self.game == game) and game not in self.excludes


def _baseline_game(spec: str) -> str | None:
    """The one game an agent without a network plays, where it plays only one: Pig for hold:N."""
    return "pig" if spec.strip().partition(":")[0] == "hold" else None


def _about(spec: str) -> str:
    kind, _, rest = spec.partition(":")
    if kind == "hold":
        return f"rolls until the turn's total reaches {rest}, then holds (pig)"
    if spec == "random":
        return "uniformly random legal moves"
    if spec == "onestep":
        return "wins in one, blocks a loss in one, else random"
    if spec == "perfect":
        return "perfect play from an exact solution (small games)"
    if kind == "mcts":
        simulations = counted(int(rest), "simulation") if rest.isdecimal() else f"{rest} simulations"  # unchecked yet
        return f"Monte-Carlo tree search, {simulations} with random rollouts, no network"
    if kind == "greedy":
        return "the network's top move, no search"
    return "the network with search"


# --------------------------------------------------------------------------------------------------------------
# Live games


@dataclasses.dataclass(eq=False)
class _Session:
    """One game on the page (see the module docstring)."""

    id: str
    game: ServedGame
    players: tuple[str, ...]  # per seat (one in a one-player game): HUMAN or an agent's spec
    key: jax.Array
    pace: float
    states: list[State]  # on the host; states[t] after t moves
    moves: list[int]
    fewest_moves: int | None = None  # a puzzle's fewest moves from its start, where its yardstick knows them
    record: dict | None = None  # a replay: {"name", "number", "outcome"} of the recorded game
    thinking: str | None = None  # the agent searching (or about to search) the move at the current position
    error: str | None = None  # why the game cannot go on (an agent failed)
    analyses: dict = dataclasses.field(default_factory=dict)  # (ply, spec) -> an analysis, None while it runs, or
    #   an error message (str)
    timer: threading.Timer | None = None
    dropped: bool = False

    @property
    def kind(self) -> str:
        if self.record is not None:
            return "replay"
        return "watch" if HUMAN not in self.players else "play"

    @property
    def state(self) -> State:
        return self.states[-1]


class GameServer:
    """The games, agents and records behind `azjax serve` (see the module docstring). Thread-safe."""

    def __init__(
        self,
        agents: Sequence[OfferedAgent],
        game_names: Sequence[str],
        *,
        default_game: str = DEFAULT_GAME,
        records: Sequence[Record] = (),
        max_games: int = MAX_GAMES,
        num_simulations: int | None = None,
        policy: str | None = None,
    ):
        if max_games < 1:
            raise ValueError(f"max_games must be >= 1, got {max_games}")
        self.agents = {agent.spec: agent for agent in agents}
        self.game_names = list(dict.fromkeys([default_game, *game_names]))
        self.num_players = {name: games_lib.make(name).num_players for name in self.game_names}
        self.default_game = default_game
        self.records: list[Record] = list(records)
        self._num_fixed_records = len(self.records)
        self.max_games = max_games
        self._num_simulations, self._policy = num_simulations, policy  # trained agents' search
        self._lock = threading.RLock()  # held briefly: never while an agent searches or loads
        self._build_lock = threading.Lock()
        self._games: dict[str, ServedGame] = {}
        self._built: dict[tuple[str, str], ServedAgent] = {}
        self._sessions: collections.OrderedDict[str, _Session] = collections.OrderedDict()
        self._dropped: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._closed = False

    @classmethod
    def from_specs(
        cls,
        specs: Sequence[str],
        *,
        game: str | None = None,
        records: Sequence[str | Path] = (),
        max_games: int = MAX_GAMES,
        num_simulations: int | None = None,
        policy: str | None = None,
    ) -> GameServer:
        """The server of `azjax serve AGENT ... [--game GAME] [--record PATH ...]`: the agents named (each
        checked now, networks loaded now), `random` and `mcts:200`, and the shipped agents when none is named; every
        registered game, and the games of the agents and records; `game` first (default: the first network's game,
        else tic_tac_toe).

        Raises:
          SpecError: an agent that cannot be read or loaded. GameNotFoundError: an unknown `game`.
          RecordError: a record that cannot be read, or whose game is not served.
        """
        # A game's name is offered as the shipped agent it loads (pretrained:GAME).
        named = list(dict.fromkeys(agent_specs.bot_name(spec) for spec in specs if spec.strip()))
        offered = list(named)
        if not named:
            offered += [pretrained.PREFIX + name for name in pretrained.names()]
        offered += [spec for spec in ALWAYS_OFFERED if spec not in offered]
        agents = [OfferedAgent(spec, agent_specs.game_of_spec(spec) or _baseline_game(spec), _about(spec))
                  for spec in offered]
        if game is not None:
            game = games_lib.canonical(game)
            games_lib.check_known(game)
        network_games = [agent.game for agent in agents if agent.game is not None and agent.spec in named]
        default = game or next(iter(network_games), DEFAULT_GAME)
        loaded = [read_record(path) for path in records]
        known = {*games_lib.names(), default, *network_games}
        for record in loaded:
            if record.game not in known:
                raise RecordError(f"the record {record.name} is of {record.game}, which this server does not serve: "
                                  f"give --game {record.game}")
            if games_lib.make(record.game).num_players != 2:
                raise RecordError(f"the record {record.name} is of {record.game}, a one-player game: records hold "
                                  "games of two players")
        game_names = [*_offered_game_names(), *network_games, *(record.game for record in loaded)]
        chance_games = tuple(name for name in dict.fromkeys(game_names) if games_lib.make(name).num_chance_outcomes)
        agents = [dataclasses.replace(agent, excludes=chance_games) if agent.spec.partition(":")[0] == "mcts"
                  else agent for agent in agents]
        server = cls(agents, game_names, default_game=default, records=loaded, max_games=max_games,
                     num_simulations=num_simulations, policy=policy)
        for agent in agents:  # a syntax error or a missing run directory stops the command now, in one line
            if agent.spec in named:
                if agent.game is not None:
                    server.agent(agent.spec, agent.game)
                else:
                    agent_specs.make_bot(agent.spec, server.served_game(DEFAULT_GAME).game)
        return server

    # ----------------------------------------------------------------------------------------------------------
    # What is served

    def info(self) -> dict:
        with self._lock:
            records = [dict(record.summary(), index=i) for i, record in enumerate(self.records)]
        return {
            "games": self.game_names,
            "default_game": self.default_game,
            "num_players": self.num_players,  # per game: 1 (a puzzle: one seat) or 2
            "agents": [dataclasses.asdict(agent) for agent in self.agents.values()],
            "records": records,
            "max_games": self.max_games,
            "human": HUMAN,
        }

    def served_game(self, name: Any) -> ServedGame:
        if not isinstance(name, str) or name not in self.game_names:
            raise ServeError(400, f"unknown game {name!r}: this server plays {', '.join(self.game_names)}")
        with self._lock:
            served = self._games.get(name)
            if served is None:
                served = self._games[name] = ServedGame.make(name)
            return served

    def agent(self, spec: Any, game: str) -> ServedAgent:
        """The served agent `spec` ready for `game`, built and its worker started at the first call."""
        offered = self.agents.get(spec) if isinstance(spec, str) else None
        if offered is None:
            raise ServeError(400, f"unknown agent {spec!r}: this server offers {', '.join(self.agents)}")
        if not offered.plays(game):
            if game in offered.excludes:
                raise ServeError(400, f"agent {spec!r} does not play {game}, a game with chance: choose another agent")
            raise ServeError(400, f"agent {spec!r} plays {offered.game}, not {game}")
        served_game = self.served_game(game)
        with self._build_lock:  # not the server's lock: other requests go on while an agent loads
            built = self._built.get((spec, game))
            if built is None:
                try:
                    bot = agent_specs.make_bot(spec, served_game.game, num_simulations=self._num_simulations,
                                         policy=self._policy)
                except agent_specs.SpecError as error:
                    raise ServeError(400, str(error)) from None
                built = ServedAgent(spec=spec, game=served_game, analyse=jax.jit(bot.analyse),
                                    evaluate=_network_evaluator(spec),
                                    worker=_Worker(f"{spec} ({game})"))
                self._built[(spec, game)] = built
            return built

    def record(self, index: Any) -> dict:
        found = self._record(index)
        return dict(found.summary(), index=index, games=[
            {"number": number, "players": list(game.players), "outcome": game.outcome, "length": len(game.moves)}
            for number, game in enumerate(found.games)
        ])

    def _record(self, index: Any) -> Record:
        with self._lock:
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.records):
                raise ServeError(404, f"no record {index!r}: the records are numbered 0 to {len(self.records) - 1}"
                                 if self.records else f"no record {index!r}: this server has no records")
            return self.records[index]

    def add_record(self, document: Any, name: Any = None) -> dict:
        """A record sent by a page (its JSON document), served from now on; the oldest upload is forgotten beyond
        `MAX_UPLOADED_RECORDS`."""
        if name is not None and not isinstance(name, str):
            raise ServeError(400, "\"name\" must be a string")
        try:
            record = parse_record(document, name=(name or "uploaded record")[:80])
        except RecordError as error:
            raise ServeError(400, f"not a record: {error}") from None
        if record.game not in self.game_names:
            raise ServeError(400, f"the record is of {record.game}, which this server does not serve")
        if self.num_players[record.game] != 2:
            raise ServeError(400, f"the record is of {record.game}, a one-player game: records hold games of two "
                             "players")
        with self._lock:
            if len(self.records) - self._num_fixed_records >= MAX_UPLOADED_RECORDS:
                del self.records[self._num_fixed_records]
            self.records.append(record)
            index = len(self.records) - 1
        return self.record(index)

    # ----------------------------------------------------------------------------------------------------------
    # Games

    def create_game(self, body: dict) -> dict:
        """A new game from a request: {"game": name, "players": [seat 0, seat 1] (HUMAN or an agent's spec; one
        seat in a one-player game), "seed": int (optional), "pace": seconds between agents' moves (optional)}; or a
        replay: {"record": index, "number": the game's number in the record}. Returns its view."""
        _check_keys(body, {"game", "players", "seed", "pace", "record", "number"})
        if "record" in body:
            return self._open_record(body)
        served = self.served_game(body.get("game", self.default_game))
        players = body.get("players")
        num_seats = served.game.num_players
        if not isinstance(players, list) or len(players) != num_seats or not all(isinstance(p, str) for p in players):
            example = f"[{HUMAN!r}, \"mcts:200\"]" if num_seats == 2 else f"[{HUMAN!r}] or [\"random\"]"
            seats = "two seats, each" if num_seats == 2 else "one seat,"
            raise ServeError(400, f"\"players\" must be a list of {seats} {HUMAN!r} or an agent, for {served.name}: "
                             f"e.g. {example}")
        for player in players:
            if player != HUMAN:
                self.agent(player, served.name)
        seed = body.get("seed")
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
            raise ServeError(400, "\"seed\" must be a whole number in [0, 2^31)")
        pace = body.get("pace", DEFAULT_PACE_SECONDS)
        if not isinstance(pace, (int, float)) or isinstance(pace, bool) or not 0 <= pace <= MAX_PACE_SECONDS:
            raise ServeError(400, f"\"pace\" must be a number of seconds in [0, {MAX_PACE_SECONDS:g}]")
        key = jax.random.key(seed)
        start, fewest = _start(served.game, key)
        session = _Session(id=secrets.token_hex(8), game=served, players=tuple(players), key=key,
                           pace=float(pace), states=[start], moves=[], fewest_moves=fewest)
        with self._lock:
            self._add(session)
            self._schedule(session, immediately=True)
            return self._view(session, None)

    def _open_record(self, body: dict) -> dict:
        record = self._record(body.get("record"))
        number = body.get("number", 0)
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number < len(record.games):
            raise ServeError(400, f"\"number\" must be a game of the record, 0 to {len(record.games) - 1}")
        recorded = record.games[number]
        served = self.served_game(record.game)
        states = [served.start]
        for ply, action in enumerate(recorded.moves):
            state = states[-1]
            if bool(state.terminated) or not 0 <= action < served.game.num_actions \
                    or not bool(state.legal_action_mask[action]):
                raise ServeError(422, f"game {number} of {record.name} does not fit {record.game}: its move {ply + 1} "
                                 f"({action}) is not legal there")
            states.append(served.play(state, action))
        session = _Session(id=secrets.token_hex(8), game=served, players=recorded.players,
                           key=jax.random.key(number), pace=0.0, states=states, moves=list(recorded.moves),
                           record={"name": record.name, "number": number, "outcome": recorded.outcome,
                                   "opening_moves": recorded.opening_moves})
        with self._lock:
            self._add(session)
            return self._view(session, 0)

    def _add(self, session: _Session) -> None:
        if self._closed:
            raise ServeError(503, "the server is stopping")
        while len(self._sessions) >= self.max_games:
            _, oldest = self._sessions.popitem(last=False)
            self._drop(oldest)
        self._sessions[session.id] = session

    def _drop(self, session: _Session) -> None:
        session.dropped = True
        if session.timer is not None:
            session.timer.cancel()
        self._dropped[session.id] = None
        while len(self._dropped) > MAX_DROPPED_REMEMBERED:
            self._dropped.popitem(last=False)

    def _session(self, game_id: str) -> _Session:
        session = self._sessions.get(game_id)
        if session is not None:
            return session
        if game_id in self._dropped:
            raise ServeError(410, f"game {game_id} was dropped: the server keeps the {self.max_games} newest games; "
                             "start a new one")
        raise ServeError(404, f"no game {game_id!r} (the server may have restarted): start a new one")

    def end_game(self, game_id: str) -> dict:
        with self._lock:
            session = self._session(game_id)
            del self._sessions[game_id]
            self._drop(session)
        return {"id": game_id, "ended": True}

    def view(self, game_id: str, ply: Any = None) -> dict:
        """The game at move `ply` (default: its current position; a replay's start): the board and what the page
        shows (see `_view`)."""
        with self._lock:
            return self._view(self._session(game_id), ply)

    def move(self, game_id: str, body: dict) -> dict:
        """Plays the person's move: {"action": index}, {"move": its name, e.g. "b2"} or {"path": the squares
        clicked, e.g. ["d2", "d3"]}. Returns the game's view; the agent to move next starts thinking."""
        _check_keys(body, {"action", "move", "path"})
        given = [name for name in ("action", "move", "path") if name in body]
        if len(given) != 1:
            raise ServeError(400, "give the move as one of \"action\" (its index), \"move\" (its name, e.g. \"b2\") "
                             "or \"path\" (the squares clicked, e.g. [\"b2\"])")
        with self._lock:
            session = self._session(game_id)
            served = session.game
            if session.record is not None:
                raise ServeError(409, "this is a recorded game: it is stepped through, not played; start a new game")
            state = session.state
            if bool(state.terminated):
                raise ServeError(409, f"the game is over ({_result(session, len(session.moves))['text']}): start a "
                                 "new one")
            mover = session.players[int(state.current_player)]
            if mover != HUMAN:
                raise ServeError(409, f"it is not your turn: {mover} is to move"
                                 + (" (thinking...)" if session.thinking else ""))
            action = _action_of(served, state, body)
            session.states.append(served.play(state, action))
            session.moves.append(action)
            self._schedule(session, immediately=True)
            return self._view(session, None)

    def analysis(self, game_id: str, ply: Any, spec: Any) -> tuple[int, dict]:
        """(200, the analysis) of the game's position after `ply` moves (default: the current one) by the agent
        `spec`, or (202, {"pending": True}) while it runs (started by the first request)."""
        with self._lock:
            game = self._session(game_id).game.name
        agent = self.agent(spec, game)  # built outside the lock: loading a network or solving a game takes a while
        with self._lock:
            session = self._session(game_id)
            ply = _ply(session, ply)
            state = session.states[ply]
            if bool(state.terminated):
                raise ServeError(409, "the game is over in this position: there is nothing to analyse")
            cache_key = (ply, agent.spec)
            if cache_key not in session.analyses:
                session.analyses[cache_key] = None
                agent.worker.submit(functools.partial(self._run_analysis, session, ply, agent, None))
            found = session.analyses[cache_key]
        if found is None:
            return 202, {"pending": True, "agent": agent.spec, "ply": ply}
        if isinstance(found, str):
            raise ServeError(409, found)
        return 200, found

    # ----------------------------------------------------------------------------------------------------------
    # Agents' moves

    def _schedule(self, session: _Session, *, immediately: bool) -> None:
        """Starts the search of the agent to move, if an agent is to move (lock held)."""
        state = session.state
        if session.record is not None or session.dropped or bool(state.terminated) or session.error:
            session.thinking = None
            return
        mover = session.players[int(state.current_player)]
        if mover == HUMAN:
            session.thinking = None
            return
        # Built when the game was created (`create_game`), so no wait for the build lock here.
        agent = self._built.get((mover, session.game.name)) or self.agent(mover, session.game.name)
        session.thinking = mover
        ply = len(session.moves)
        job = functools.partial(self._run_analysis, session, ply, agent, self._play_agent_move)
        if immediately or session.pace <= 0:
            agent.worker.submit(job)
        else:
            session.timer = threading.Timer(session.pace, agent.worker.submit, args=(job,))
            session.timer.daemon = True
            session.timer.start()

    def _run_analysis(self, session: _Session, ply: int, agent: ServedAgent,
                      then: Callable[[_Session, int, dict], None] | None) -> None:
        """An agent's analysis of the position after `ply` moves (on its worker thread), kept for the page; then
        `then` (playing its move) with the lock held."""
        with self._lock:
            if session.dropped or self._closed:
                return
            found = session.analyses.get((ply, agent.spec))
            state = session.states[ply]
            last_move = session.moves[ply - 1] if ply else None
        if not isinstance(found, dict):
            try:
                found = agent.analysis(jax.random.fold_in(session.key, ply), state, last_move)
            except Exception as error:  # noqa: BLE001 - any failure of a search is shown on the page, not raised
                message = f"{agent.spec} failed: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
                print(f"azjax serve: {message}", file=sys.stderr)
                with self._lock:
                    session.analyses[(ply, agent.spec)] = message
                    if then is not None:
                        session.error, session.thinking = message, None
                return
            found = dict(found, agent=agent.spec, ply=ply)
        with self._lock:
            session.analyses[(ply, agent.spec)] = found
            finished = [key for key, kept in session.analyses.items() if kept is not None]
            for key in finished[: max(len(session.analyses) - MAX_ANALYSES_PER_GAME, 0)]:
                del session.analyses[key]
            if then is not None:
                then(session, ply, found)

    def _play_agent_move(self, session: _Session, ply: int, analysis: dict) -> None:
        if session.dropped or len(session.moves) != ply:
            return  # the game went on without this search (it cannot, but a stale job must not move)
        session.states.append(session.game.play(session.state, analysis["action"]))
        session.moves.append(analysis["action"])
        self._schedule(session, immediately=False)

    def close(self) -> None:
        """Stops the agents' workers and timers; later requests to create games get 503."""
        with self._lock:
            self._closed = True
            for session in self._sessions.values():
                if session.timer is not None:
                    session.timer.cancel()
        with self._build_lock:
            for agent in self._built.values():
                agent.worker.stop()

    # ----------------------------------------------------------------------------------------------------------
    # Views

    def _view(self, session: _Session, ply: Any) -> dict:
        """What the page shows of a game at move `ply` (lock held)."""
        served = session.game
        ply = _ply(session, ply)
        state = session.states[ply]
        current = ply == len(session.moves)
        last = session.moves[ply - 1] if ply else None
        terminated = bool(state.terminated)
        mover = None if terminated else int(state.current_player)
        your_turn = (current and mover is not None and session.players[mover] == HUMAN and session.record is None)
        legal: list[dict[str, Any]] = []
        if your_turn:
            for a in np.flatnonzero(np.asarray(state.legal_action_mask)):
                targets = served.targets[a]
                legal.append({"action": int(a), "move": served.move_names[a],
                              "targets": None if targets is None else list(targets)})
        return {
            "id": session.id,
            "game": served.name,
            "kind": session.kind,
            "players": list(session.players),
            "ply": ply,
            "num_moves": len(session.moves),
            "moves": [{"action": a, "move": served.move_names[a], "player": int(session.states[t].current_player)}
                      for t, a in enumerate(session.moves)],
            "to_move": mover,
            "terminated": terminated,
            "result": _result(session, ply) if terminated else None,
            "your_turn": your_turn,
            "legal": legal,
            "svg": drawing.to_svg(served.game, state, last_move=last),
            "grid": served.grid,
            "from_to": served.from_to,
            "thinking": session.thinking,  # at the game's current position, whichever move is shown
            "error": session.error,
            "record": session.record,
        }


def _check_keys(body: dict, allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ServeError(400, f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
                         f"expected {', '.join(sorted(allowed))}")


def _ply(session: _Session, ply: Any) -> int:
    """`ply` checked against the game: 0 to the number of moves; None: the current position (a replay's start)."""
    if ply is None:
        return 0 if session.record is not None else len(session.moves)
    if isinstance(ply, str):
        try:
            ply = int(ply)
        except ValueError:
            raise ServeError(400, f"ply must be a whole number of moves, got {ply!r}") from None
    if not isinstance(ply, int) or isinstance(ply, bool) or not 0 <= ply <= len(session.moves):
        raise ServeError(400, f"ply must be 0 to {len(session.moves)} (the moves played), got {ply!r}")
    return ply


def _action_of(served: ServedGame, state: State, body: dict) -> int:
    """The legal action a move request names, or ServeError saying why there is none."""
    legal = np.asarray(state.legal_action_mask)
    num_actions = served.game.num_actions
    if "action" in body:
        action = body["action"]
        if not isinstance(action, int) or isinstance(action, bool):
            raise ServeError(400, f"\"action\" must be a whole number, got {action!r}")
        if not 0 <= action < num_actions:
            raise ServeError(400, f"action {action} is out of range: {served.name} has actions 0 to {num_actions - 1}")
    elif "move" in body:
        text = body["move"]
        if not isinstance(text, str) or not text.strip():
            raise ServeError(400, f"\"move\" must be a move's name, e.g. {served.move_names[int(np.argmax(legal))]!r}")
        try:
            action = int(served.game.string_to_action(text))
        except (ValueError, TypeError, IndexError, KeyError) as error:
            raise ServeError(400, f"not a move: {error}") from None
        if not 0 <= action < num_actions:
            raise ServeError(400, f"not a move: {text!r} is outside the board")
    else:
        action = _action_on_path(served, legal, body["path"])
    if not legal[action]:
        raise ServeError(409, f"{served.move_names[action]} is not legal here")
    return action


def _action_on_path(served: ServedGame, legal: np.ndarray, path: Any) -> int:
    """The action clicked along `path` (squares): the legal one if there is one, else an illegal one (the caller
    says it is illegal), else ServeError."""
    if not isinstance(path, list) or not 1 <= len(path) <= 2 or not all(isinstance(s, str) for s in path):
        raise ServeError(400, "\"path\" must be the one or two squares clicked, e.g. [\"b2\"] or [\"d2\", \"d3\"]")
    if served.grid is None:
        raise ServeError(400, f"{served.name} is not played by clicking squares: give the move's name")
    matching = [a for a, targets in enumerate(served.targets) if board.on_path(targets, path)]
    for action in matching:
        if legal[action]:
            return action
    if matching:
        return matching[0]
    if served.from_to and len(path) == 1:
        if any(legal[a] and targets is not None and len(targets) == 2 and board.on_path(targets[:1], path)
               for a, targets in enumerate(served.targets)):
            raise ServeError(400, f"a move from {path[0]} needs the square it goes to as well")
        raise ServeError(409, f"no legal move starts on {path[0]}: click a piece that can move, then where it goes")
    raise ServeError(409, f"no move of {served.name} is played {'from ' if len(path) > 1 else 'on '}"
                     f"{' to '.join(path)}")


def _start(game: Game, key: jax.Array) -> tuple[State, int | None]:
    """A new game's start (on the host): a puzzle's where its yardstick draws them, else `init`'s; and, where the
    yardstick knows them, the fewest moves that solve it (else None)."""
    yardstick = game.yardstick
    start = jax.device_get(game.judged_init(key))
    if yardstick is None or yardstick.fewest_moves is None:
        return start, None
    return start, int(yardstick.fewest_moves(jax.tree.map(lambda x: np.asarray(x)[None], start))[0])


def _result(session: _Session, ply: int) -> dict:
    """The result of a game finished after `ply` moves: who won, and a line saying so from the page's side (a
    puzzle's: solved or not, its return)."""
    state = session.states[ply]
    if session.game.game.num_players == 1:
        return _puzzle_result(session, ply)
    rewards = np.asarray(state.rewards, dtype=float)
    winner = int(np.argmax(rewards)) if rewards.max() > 0 else None
    players = session.players
    if winner is None:
        text = "Draw."
    elif session.kind == "play" and players.count(HUMAN) == 1:
        text = "You win!" if players[winner] == HUMAN else f"{players[winner]} wins."
    else:
        text = f"{players[winner]} (player {winner}, moving {'first' if winner == 0 else 'second'}) wins."
    return {"winner": winner, "rewards": [float(r) for r in rewards], "text": text}


def _puzzle_result(session: _Session, ply: int) -> dict:
    """The result of a one-player game finished after `ply` moves: no winner; solved (by the yardstick, else a
    return above the lowest) and in how many moves, beside the fewest where they are known; the return (player 0's
    rewards summed)."""
    game, state = session.game.game, session.states[ply]
    total = float(sum(float(np.asarray(s.rewards)[0]) for s in session.states[1:ply + 1]))
    if game.yardstick is not None:
        solved = bool(game.yardstick.is_solved(state))
    else:
        solved = total > game.return_bounds[0]
    if solved:
        fewest = "" if session.fewest_moves is None else f" (the fewest: {session.fewest_moves})"
        text = f"Solved in {counted(ply, 'move')}{fewest}."
    else:
        text = f"Unsolved after {counted(ply, 'move')}."
    return {"winner": None, "rewards": [float(r) for r in np.asarray(state.rewards)], "text": text, "return": total,
            "solved": solved, "fewest_moves": session.fewest_moves}


def _number(value: Any) -> float | None:
    """A float for JSON: None where it is NaN or infinite (JSON has neither)."""
    value = float(value)
    return value if math.isfinite(value) else None


def describe_analysis(served: ServedGame, state: State, analysis: bots.Analysis,
                      network: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None, *,
                      last_move: int | None = None,
                      policy_is_visits: bool = False) -> dict:
    """An agent's analysis of one position (batch element 0) as the page shows it: the move it plays, its value of
    the position and the network's (None where it has none), and its candidate moves, the most searched first
    (else the most likely under its policy): each with its share of the visits, its value, the network's prior
    and the agent's policy, None where the agent has no such figure (`policy_is_visits`: the policy is the
    search's visit shares, without counts, as UCT's is). Values are for the player to move, and so are the
    network's chances of a win, a draw and a loss (`network_outcomes`, where its value head gives them:
    `network`'s third element [1, 3]; else None). `annotated_svg` is the board (`last_move` marked) with the
    candidates' shares on their squares."""
    legal = np.asarray(state.legal_action_mask)
    policy = np.asarray(analysis.policy[0], dtype=float)
    action_values = np.asarray(analysis.action_values[0], dtype=float)
    visits = None if analysis.visits is None else np.asarray(analysis.visits[0], dtype=float)
    prior = network_value = network_outcomes = None
    if network is not None:
        logits, value, outcomes = network
        if outcomes is not None:
            network_outcomes = dict(zip(("win", "draw", "loss"), map(float, np.asarray(outcomes[0])), strict=True))
        masked = np.where(legal, np.asarray(logits[0], dtype=float), -np.inf)
        prior = np.exp(masked - masked.max())
        prior /= prior.sum()
        network_value = _number(value[0])
    total_visits = float(visits.sum()) if visits is not None else 0.0
    shares = visits / total_visits if visits is not None and total_visits > 0 else policy if policy_is_visits else None
    order = sorted(np.flatnonzero(legal), key=lambda a: (
        -(shares[a] if shares is not None else 0.0), -policy[a], -(prior[a] if prior is not None else 0.0), a))
    candidates: list[dict[str, Any]] = []
    for a in order[:MAX_CANDIDATES]:
        candidates.append({
            "action": int(a),
            "move": served.move_names[a],
            "visits": None if visits is None else int(visits[a]),
            "visit_share": None if shares is None else _number(shares[a]),
            "value": _number(action_values[a]),
            "prior": None if prior is None else float(prior[a]),
            "policy": _number(policy[a]),
        })
    action = int(analysis.action[0])
    annotations = {}
    for candidate in candidates[:MAX_ANNOTATIONS]:
        share = candidate["visit_share"] if candidate["visit_share"] is not None else candidate["policy"]
        if share:
            annotations[int(candidate["action"])] = f"{share:.0%}"
    return {
        "action": action,
        "move": served.move_names[action],
        "value": _number(analysis.value[0]),
        "network_value": network_value,
        "network_outcomes": network_outcomes,
        "num_legal": int(legal.sum()),
        "candidates": candidates,
        "annotated_svg": drawing.to_svg(served.game, state, last_move=last_move, annotations=annotations),
    }


def _offered_game_names() -> list[str]:
    """The registered games the page offers: all of them, the two-player games first, then the puzzles."""
    names = games_lib.names()
    return sorted(names, key=lambda name: games_lib.make(name).num_players != 2)
