"""azjax serve: the JSON API over plain HTTP (Flask's test client, and once the real threaded server), its answers
to bad requests, games kept apart and dropped oldest first, agents searching off the request threads, recorded
games from `azjax eval --record`, clicks mapped to moves, and the command's start and Ctrl-C."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import jax
import pytest

from azjax import cli
from azjax.games import drawing, make
from azjax.serve import GameServer, board, create_app, make_http_server
from azjax.serve import server as server_lib

HUMAN = "human"
WAIT_SECONDS = 120  # a generous bound on a search compiling on a loaded 2-core CPU; not a timing assertion


@pytest.fixture(scope="module")
def served() -> GameServer:
    """One server for the module: random and mcts:200 (only random is asked to search), at most 4 games."""
    return GameServer.from_specs([], max_games=4)


@pytest.fixture
def client(served):
    return create_app(served).test_client()


def new_game(client, players=(HUMAN, HUMAN), game="tic_tac_toe", **options) -> dict:
    response = client.post("/api/games", json={"game": game, "players": list(players), "seed": 0, **options})
    assert response.status_code == 201, response.json
    return response.json


def wait_until(predicate, what: str):
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def settled(client, game_id: str) -> dict:
    """The game's view once no agent is thinking."""
    return wait_until(lambda: (view := client.get(f"/api/games/{game_id}").json)["thinking"] is None and view,
                      "the agent's move")


def assert_refused(response, status: int | None = None) -> str:
    """A 4xx answer with a one-line JSON message (no traceback); returns the message."""
    assert 400 <= response.status_code < 500, (response.status_code, response.data[:300])
    if status is not None:
        assert response.status_code == status, (response.status_code, response.json)
    message = response.json["error"]
    assert isinstance(message, str) and message and "Traceback" not in message and "\n" not in message
    return message


# --------------------------------------------------------------------------------------------------------------
# Bad requests: each a 4xx with a message; the server serves on


def test_every_bad_request_gets_a_4xx_with_a_message_and_the_server_plays_on(client, served, tmp_path):
    playing = new_game(client)["id"]
    watched = new_game(client, ("random", "random"), pace=10.0)["id"]  # agents only: never the person's turn
    over = new_game(client)["id"]
    for action in (0, 3, 1, 4, 2):  # X takes the top row
        client.post(f"/api/games/{over}/moves", json={"action": action})
    post = client.post
    bad = {
        "bad JSON": post("/api/games", data="{not json", content_type="application/json"),
        "a JSON list": post("/api/games", json=["tic_tac_toe"]),
        "no body": post("/api/games"),
        "unknown game": post("/api/games", json={"game": "chess", "players": [HUMAN, "random"]}),
        "game of a wrong type": post("/api/games", json={"game": 3, "players": [HUMAN, "random"]}),
        "no players": post("/api/games", json={"game": "tic_tac_toe"}),
        "one player": post("/api/games", json={"game": "tic_tac_toe", "players": [HUMAN]}),
        "players of a wrong type": post("/api/games", json={"game": "tic_tac_toe", "players": [1, 2]}),
        "unknown agent": post("/api/games", json={"game": "tic_tac_toe", "players": [HUMAN, "mcts:7"]}),
        "a path as agent": post("/api/games", json={"game": "tic_tac_toe", "players": [HUMAN, str(tmp_path)]}),
        "seed of a wrong type": post("/api/games", json={"players": [HUMAN, HUMAN], "seed": "zero"}),
        "negative seed": post("/api/games", json={"players": [HUMAN, HUMAN], "seed": -1}),
        "pace out of range": post("/api/games", json={"players": ["random", "random"], "pace": 1e9}),
        "unknown field": post("/api/games", json={"players": [HUMAN, HUMAN], "colour": "red"}),
        "unknown record": post("/api/games", json={"record": 7, "number": 0}),
        "unknown game id": client.get("/api/games/feedface"),
        "ply not a number": client.get(f"/api/games/{playing}?ply=two"),
        "ply out of range": client.get(f"/api/games/{playing}?ply=5"),
        "move in an unknown game": post("/api/games/feedface/moves", json={"action": 0}),
        "move of no kind": post(f"/api/games/{playing}/moves", json={}),
        "move of two kinds": post(f"/api/games/{playing}/moves", json={"action": 4, "move": "b2"}),
        "action as a string": post(f"/api/games/{playing}/moves", json={"action": "4"}),
        "action as a float": post(f"/api/games/{playing}/moves", json={"action": 4.0}),
        "action as a bool": post(f"/api/games/{playing}/moves", json={"action": True}),
        "action out of range": post(f"/api/games/{playing}/moves", json={"action": 9}),
        "negative action": post(f"/api/games/{playing}/moves", json={"action": -1}),
        "unreadable move": post(f"/api/games/{playing}/moves", json={"move": "zz"}),
        "empty move": post(f"/api/games/{playing}/moves", json={"move": " "}),
        "path not a list": post(f"/api/games/{playing}/moves", json={"path": "b2"}),
        "empty path": post(f"/api/games/{playing}/moves", json={"path": []}),
        "path of numbers": post(f"/api/games/{playing}/moves", json={"path": [4]}),
        "path off the board": post(f"/api/games/{playing}/moves", json={"path": ["z9"]}),
        "not your turn": post(f"/api/games/{watched}/moves", json={"action": 4}),
        "move after the end": post(f"/api/games/{over}/moves", json={"action": 8}),
        "analysis without agent": client.get(f"/api/games/{playing}/analysis"),
        "analysis by an unknown agent": client.get(f"/api/games/{playing}/analysis?agent=perfect"),
        "analysis at a bad ply": client.get(f"/api/games/{playing}/analysis?agent=random&ply=-1"),
        "analysis of a finished game": client.get(f"/api/games/{over}/analysis?agent=random"),
        "record upload without record": post("/api/records", json={"name": "x.json"}),
        "record upload of no record": post("/api/records", json={"record": {"format": "csv"}}),
        "unknown record index": client.get("/api/records/3"),
        "record index not a number": client.get("/api/records/abc"),
        "unknown URL": client.get("/api/nothing"),
        "wrong method": client.put("/api/games"),
        "too large a body": post("/api/records", data=b"[" + b"0," * (5 * 1024 * 1024) + b"0]",
                                 content_type="application/json"),
    }
    for what, response in bad.items():
        try:
            assert_refused(response)
        except AssertionError as error:
            raise AssertionError(f"{what}: {error}") from None
    assert len(bad) >= 20
    assert "not your turn" in bad["not your turn"].json["error"]
    assert "over" in bad["move after the end"].json["error"]
    assert "out of range" in bad["action out of range"].json["error"]
    assert "unknown agent" in bad["a path as agent"].json["error"]
    # Nothing was played by the bad requests, and a new game plays as ever.
    assert client.get(f"/api/games/{playing}").json["num_moves"] == 0
    fresh = new_game(client)["id"]
    after = client.post(f"/api/games/{fresh}/moves", json={"path": ["b2"]})
    assert after.status_code == 200 and [m["move"] for m in after.json["moves"]] == ["b2"]


def test_an_illegal_move_is_refused_with_the_reason_and_changes_nothing(client):
    game_id = new_game(client)["id"]
    assert client.post(f"/api/games/{game_id}/moves", json={"move": "b2"}).status_code == 200
    for body in ({"action": 4}, {"move": "b2"}, {"path": ["b2"]}):
        message = assert_refused(client.post(f"/api/games/{game_id}/moves", json=body), 409)
        assert message == "b2 is not legal here"
    view = client.get(f"/api/games/{game_id}").json
    assert view["num_moves"] == 1 and view["to_move"] == 1 and view["your_turn"]


def test_a_recorded_game_is_not_played_on(client, served):
    record = served.add_record(_record([[4, 0, 8]]), "three.json")
    replay = client.post("/api/games", json={"record": record["index"], "number": 0}).json
    assert replay["kind"] == "replay" and replay["ply"] == 0 and replay["num_moves"] == 3
    assert "recorded game" in assert_refused(client.post(f"/api/games/{replay['id']}/moves", json={"action": 1}), 409)


# --------------------------------------------------------------------------------------------------------------
# Games: independent, bounded, played by agents off the request threads


def test_two_games_are_independent(client):
    first, second = new_game(client)["id"], new_game(client)["id"]
    client.post(f"/api/games/{first}/moves", json={"path": ["a1"]})
    client.post(f"/api/games/{second}/moves", json={"path": ["c3"]})
    client.post(f"/api/games/{second}/moves", json={"path": ["a1"]})  # legal here, though a1 is taken in the first
    one, two = client.get(f"/api/games/{first}").json, client.get(f"/api/games/{second}").json
    assert [m["move"] for m in one["moves"]] == ["a1"] and [m["move"] for m in two["moves"]] == ["c3", "a1"]
    assert one["svg"] != two["svg"] and one["to_move"] == 1 and two["to_move"] == 0


def test_the_oldest_game_is_dropped_beyond_max_games():
    small = GameServer.from_specs([], max_games=2)
    client = create_app(small).test_client()
    ids = [new_game(client)["id"] for _ in range(3)]
    message = assert_refused(client.get(f"/api/games/{ids[0]}"), 410)
    assert "dropped" in message and "2 newest" in message
    assert_refused(client.post(f"/api/games/{ids[0]}/moves", json={"action": 0}), 410)
    assert all(client.get(f"/api/games/{game_id}").status_code == 200 for game_id in ids[1:])
    assert client.delete(f"/api/games/{ids[1]}").status_code == 200
    assert_refused(client.get(f"/api/games/{ids[1]}"), 410)
    small.close()


def test_a_game_against_random_to_the_end(client, served):
    view = new_game(client, (HUMAN, "random"))
    while not view["terminated"]:
        assert view["your_turn"] and view["legal"]
        response = client.post(f"/api/games/{view['id']}/moves", json={"action": view["legal"][0]["action"]})
        assert response.status_code == 200
        view = settled(client, view["id"])
    assert view["result"]["text"] in ("You win!", "random wins.", "Draw.")
    assert [m["player"] for m in view["moves"]] == [t % 2 for t in range(view["num_moves"])]
    # One agent per game name, compiled for a batch of one, whatever the number of games: a second game compiles
    # nothing more. (Not "exactly once": in one loaded run of the whole suite it counted 2 after the first game, which
    # did not recur alone; the cause was not found, possibly two first calls from the server's threads.)
    agent = served.agent("random", "tic_tac_toe")
    assert agent is served.agent("random", "tic_tac_toe")
    cache_size = getattr(agent.analyse, "_cache_size", None)
    if cache_size is not None:
        compiled = cache_size()
        assert compiled >= 1
        view = new_game(client, (HUMAN, "random"))
        while not view["terminated"]:
            client.post(f"/api/games/{view['id']}/moves", json={"action": view["legal"][0]["action"]})
            view = settled(client, view["id"])
        assert cache_size() == compiled


def test_two_agents_play_each_other_to_the_end(client):
    view = new_game(client, ("random", "random"), pace=0)
    view = settled(client, view["id"])
    assert view["kind"] == "watch" and view["terminated"] and not view["your_turn"]
    assert "wins" in view["result"]["text"] or view["result"]["text"] == "Draw."


def test_requests_are_answered_while_an_agent_searches(monkeypatch):
    """The search runs on the agent's thread: a view comes back while it is held, saying the agent thinks."""
    release = threading.Event()
    searched = server_lib.ServedAgent.analysis

    def held(self, *args):
        release.wait(WAIT_SECONDS)
        return searched(self, *args)

    monkeypatch.setattr(server_lib.ServedAgent, "analysis", held)
    held_server = GameServer.from_specs([])
    client = create_app(held_server).test_client()
    view = new_game(client, ("random", HUMAN))
    assert view["thinking"] == "random" and view["num_moves"] == 0
    assert client.get(f"/api/games/{view['id']}").json["thinking"] == "random"
    assert "not your turn" in assert_refused(client.post(f"/api/games/{view['id']}/moves", json={"action": 4}), 409)
    release.set()
    view = settled(client, view["id"])
    assert view["num_moves"] == 1 and view["your_turn"]
    held_server.close()


def test_the_analysis_of_a_position(client):
    game_id = new_game(client)["id"]
    client.post(f"/api/games/{game_id}/moves", json={"path": ["b2"]})
    path = f"/api/games/{game_id}/analysis?agent=random&ply=1"
    analysis = wait_until(lambda: (r := client.get(path)).status_code == 200 and r.json, "the analysis")
    assert analysis["agent"] == "random" and analysis["ply"] == 1 and analysis["num_legal"] == 8
    assert analysis["value"] is None and analysis["network_value"] is None  # no such figures: the page shows "-"
    candidate = analysis["candidates"][0]
    assert candidate["prior"] is None and candidate["visit_share"] is None and candidate["policy"] == 1 / 8
    assert "b2" not in [c["move"] for c in analysis["candidates"]]
    assert analysis["annotated_svg"].startswith("<svg") and 'class="annotation"' in analysis["annotated_svg"]
    assert 'class="last-move"' in analysis["annotated_svg"]  # b2, which led there
    assert client.get(path).json == analysis  # kept


@pytest.fixture(scope="module")
def untrained_agent(tmp_path_factory, tiny_config):
    """A TINY tic-tac-toe network of random parameters, packaged as an agent directory (nothing trained)."""
    from tiny import write_random_agent

    path = tmp_path_factory.mktemp("agent") / "tiny"
    write_random_agent(path, tiny_config)
    return path


def test_a_network_agent_shows_its_visits_values_and_the_networks_prior(untrained_agent):
    spec = f"az:{untrained_agent}:8"
    with_network = GameServer.from_specs([spec])
    client = create_app(with_network).test_client()
    assert client.get("/api/info").json["agents"][0] == {"spec": spec, "game": "tic_tac_toe",
                                                        "about": "the network with search", "excludes": []}
    view = new_game(client, (HUMAN, spec))
    path = f"/api/games/{view['id']}/analysis?agent={spec}"
    analysis = wait_until(lambda: (r := client.get(path)).status_code == 200 and r.json, "the analysis")
    candidates = analysis["candidates"]
    assert len(candidates) == 9 and analysis["num_legal"] == 9
    assert isinstance(analysis["network_value"], float) and isinstance(analysis["value"], float)
    assert analysis["network_outcomes"] is None  # a scalar value head: no draw share to show
    assert sum(c["visits"] for c in candidates) == 8 and candidates[0]["action"] == analysis["action"]
    assert sum(c["visit_share"] for c in candidates) == pytest.approx(1.0)
    assert sum(c["prior"] for c in candidates) == pytest.approx(1.0, abs=1e-5)
    assert [c["visits"] for c in candidates] == sorted((c["visits"] for c in candidates), reverse=True)
    assert "unknown agent" in assert_refused(client.post("/api/games", json={"players": [HUMAN, "az:elsewhere"]}))
    with_network.close()


def test_a_win_draw_loss_network_shows_its_chances_for_the_player_to_move(tmp_path, tiny_config):
    """A network with `--network.value_head wdl`: the agent and the page give its chances of a win, a draw and a
    loss for the player to move, whose win - loss is its value."""
    import dataclasses

    import numpy as np
    from tiny import write_random_agent

    from azjax.agent import load_agent

    game = make("tic_tac_toe")
    config = dataclasses.replace(tiny_config, network=dataclasses.replace(tiny_config.network, value_head="wdl"))
    path = tmp_path / "wdl"
    write_random_agent(path, config)

    agent = load_agent(path)
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(2), 3))
    states = jax.vmap(game.step)(states, jax.numpy.array([0, 4, 8]))  # O to move: the sign is the mover's
    chances = np.asarray(agent.outcome_probabilities(states))
    assert chances.shape == (3, 3) and np.allclose(chances.sum(axis=1), 1.0, atol=1e-6)
    assert chances.std() > 0.01  # not the uniform third each
    np.testing.assert_allclose(chances[:, 0] - chances[:, 2], agent.policy_value(states)[1], atol=1e-5)

    spec = f"greedy:{path}"
    served = GameServer.from_specs([spec])
    client = create_app(served).test_client()
    view = new_game(client, (HUMAN, spec))
    client.post(f"/api/games/{view['id']}/moves", json={"action": 4})
    route = f"/api/games/{view['id']}/analysis?agent={spec}&ply=1"
    analysis = wait_until(lambda: (r := client.get(route)).status_code == 200 and r.json, "the analysis")
    outcomes = analysis["network_outcomes"]
    assert set(outcomes) == {"win", "draw", "loss"} and sum(outcomes.values()) == pytest.approx(1.0, abs=1e-5)
    assert outcomes["win"] - outcomes["loss"] == pytest.approx(analysis["network_value"], abs=1e-5)
    assert outcomes["win"] == pytest.approx(float(chances[1, 0]), abs=1e-5)  # after 4 (b2), as above
    served.close()


def test_a_scalar_value_head_gives_no_draw_share():
    from azjax.agent import load_agent

    agent = load_agent("pretrained:tic_tac_toe")
    with pytest.raises(ValueError, match=r"value head is 'scalar'.*--network.value_head wdl"):
        agent.outcome_probabilities(jax.vmap(agent.game.init)(jax.random.split(jax.random.key(0), 2)))


def test_a_network_of_an_older_observation_is_analysed_on_todays_game():
    """The shipped Connect Four agent reads observation version 1 (the stones); the served game observes version 2:
    the page's network prior and value are computed on the planes the network was trained on."""
    spec = "az:pretrained:connect_four:4"
    server = GameServer.from_specs([spec])
    client = create_app(server).test_client()
    view = new_game(client, (HUMAN, spec), game="connect_four")
    path = f"/api/games/{view['id']}/analysis?agent={spec}"
    answer = wait_until(lambda: (r := client.get(path)).status_code != 202 and r, "the analysis")
    assert answer.status_code == 200, answer.json  # a failed analysis answers 409 with its error
    analysis = answer.json
    assert len(analysis["candidates"]) == 7 and isinstance(analysis["network_value"], float)
    assert sum(c["prior"] for c in analysis["candidates"]) == pytest.approx(1.0, abs=1e-5)
    server.close()


def test_uploaded_records_are_served(client, served):
    uploaded = client.post("/api/records", json={"record": _record([[4, 0], [0]]), "name": "upload.json"})
    assert uploaded.status_code == 201 and uploaded.json["num_games"] == 2 and uploaded.json["name"] == "upload.json"
    assert client.get(f"/api/records/{uploaded.json['index']}").json["games"][1]["length"] == 1
    replay = client.post("/api/games", json={"record": uploaded.json["index"], "number": 0}).json
    assert client.get(f"/api/games/{replay['id']}?ply=2").json["moves"][1]["move"] == "a1"


def test_the_real_server_answers_over_http():
    http = make_http_server(GameServer.from_specs([]), "127.0.0.1", 0)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{http.server_port}"
    try:
        page = urllib.request.urlopen(f"{base}/").read().decode()
        assert "<script src=\"/static/app.js\">" in page
        assert urllib.request.urlopen(f"{base}/static/app.js").status == 200
        request = urllib.request.Request(f"{base}/api/games", data=b"{oops", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        assert refused.value.code == 400 and "JSON object" in json.loads(refused.value.read())["error"]
        body = json.dumps({"game": "connect_four", "players": [HUMAN, HUMAN]}).encode()
        created = json.loads(urllib.request.urlopen(urllib.request.Request(f"{base}/api/games", data=body)).read())
        assert created["game"] == "connect_four" and created["grid"]["columns"] == list("abcdefg")
    finally:
        http.shutdown()
        thread.join()


# --------------------------------------------------------------------------------------------------------------
# Clicks to moves


def test_clicks_map_to_moves_in_every_drawn_game():
    """A square's name from the picture's coordinates; each move's squares from its name."""
    for name, move, targets in (("tic_tac_toe", "b2", ("b2",)), ("connect_four", "d", ("d",)),
                                ("othello6", "c4", ("c4",)), ("brandub", "d2-d3", ("d2", "d3"))):
        game = make(name)
        grid = board.board_grid(drawing.to_svg(game, game.init(jax.random.key(0))))
        assert grid is not None and grid["width"] > 0, name
        assert board.move_targets(move, grid) == targets
    othello = make("othello6")
    grid = board.board_grid(drawing.to_svg(othello, othello.init(jax.random.key(0))))
    assert board.move_targets("pass", grid) is None
    assert board.move_targets("a7:N1", grid) is None and board.move_targets("z1", grid) is None
    assert grid["columns"] == list("abcdef") and grid["rows"] == [str(r) for r in range(1, 7)]
    assert board.on_path(("d",), ["d3"]) and not board.on_path(("d",), ["e3"])
    assert board.on_path(("d2", "d3"), ["d2", "d3"]) and not board.on_path(("d2", "d3"), ["d2"])
    assert board.board_grid("<svg xmlns='http://www.w3.org/2000/svg'><text>X . O</text></svg>") is None
    assert board.board_grid("not svg") is None


def test_a_piece_is_moved_by_its_square_and_its_destination(client):
    view = new_game(client, game="brandub")
    assert view["from_to"]
    move = next(m for m in view["legal"] if m["targets"] and len(m["targets"]) == 2)
    source, destination = move["targets"]
    assert "needs the square it goes to" in assert_refused(
        client.post(f"/api/games/{view['id']}/moves", json={"path": [source]}))
    empty = next(f"{c}{r}" for c in "abcdefg" for r in "1234567"
                 if not any(m["targets"] and m["targets"][0] == f"{c}{r}" for m in view["legal"]))
    assert "no legal move starts" in assert_refused(
        client.post(f"/api/games/{view['id']}/moves", json={"path": [empty]}), 409)
    played = client.post(f"/api/games/{view['id']}/moves", json={"path": [source, destination]})
    assert played.status_code == 200 and played.json["moves"][0]["action"] == move["action"]


# --------------------------------------------------------------------------------------------------------------
# Recorded games: azjax eval --record, opened by the server


def _record(games: list[list[int]], game: str = "tic_tac_toe") -> dict:
    return {"format": "azjax-games", "version": 1, "game": game, "agents": ["a", "b"],
            "games": [{"players": ["a", "b"], "moves": moves, "opening_moves": 0, "outcome": 0.0} for moves in games]}


def test_eval_records_the_games_and_serve_steps_through_them(tmp_path, capsys):
    path = tmp_path / "match.json"
    assert cli.main(["eval", "random", "onestep", "--games", "2", "--record", str(path)]) == 0
    assert f"2 games written to {path}" in capsys.readouterr().out
    document = json.loads(path.read_text())
    assert document["format"] == "azjax-games" and document["game"] == "tic_tac_toe"
    assert document["agents"] == ["random", "onestep"] and len(document["games"]) == 2
    assert {tuple(g["players"]) for g in document["games"]} == {("random", "onestep"), ("onestep", "random")}
    replaying = GameServer.from_specs([], records=[path])
    client = create_app(replaying).test_client()
    assert client.get("/api/info").json["records"][0]["num_games"] == 2
    for number, recorded in enumerate(document["games"]):
        view = client.post("/api/games", json={"record": 0, "number": number}).json
        assert [m["action"] for m in view["moves"]] == recorded["moves"]
        for ply in range(view["num_moves"] + 1):
            step = client.get(f"/api/games/{view['id']}?ply={ply}").json
            assert step["ply"] == ply and step["terminated"] == (ply == len(recorded["moves"]))
        rewards = step["result"]["rewards"]
        assert rewards[0] == recorded["outcome"] or (recorded["outcome"] == 0 and rewards == [0.0, 0.0])
    replaying.close()


def test_records_that_do_not_fit_are_refused(tmp_path, client, served):
    illegal = served.add_record(_record([[4, 4]]), "illegal.json")
    assert "not legal" in assert_refused(client.post("/api/games", json={"record": illegal["index"], "number": 0}), 422)
    assert_refused(client.post("/api/games", json={"record": illegal["index"], "number": 1}), 400)
    assert "does not serve" in assert_refused(client.post("/api/records", json={"record": _record([[0]], "chess")}))
    (tmp_path / "bad.json").write_text("{")
    for path in (tmp_path / "bad.json", tmp_path / "missing.json"):
        assert cli.main(["serve", "--record", str(path)]) == 2


# --------------------------------------------------------------------------------------------------------------
# The command


@pytest.mark.parametrize("arguments, said", [
    (["--max-games", "0"], "--max-games must be >= 1"),
    (["no-such-agent"], "cannot read agent 'no-such-agent'"),
    (["mcts:x"], "not a whole number of simulations"),
    (["--game", "chess"], "chess"),
])
def test_serve_refuses_bad_arguments_in_one_line(arguments, said, capsys):
    assert cli.main(["serve", *arguments]) == 2
    error = capsys.readouterr().err
    assert said in error and "Traceback" not in error


def test_serve_prints_its_address_and_stops_cleanly_on_ctrl_c(tmp_path):
    # Python's own Ctrl-C handler, even where this test runs as a background job (which starts with SIGINT ignored).
    command = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
               "sys.argv = ['azjax', 'serve', '--port', '0']; runpy.run_module('azjax.cli', run_name='__main__')")
    process = subprocess.Popen([sys.executable, "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"), cwd=tmp_path)
    try:
        line = process.stdout.readline()
        assert "http://127.0.0.1:" in line and "Ctrl-C" in line, line + process.stderr.read()
        url = line.split("http://", 1)[1].split("/", 1)[0]
        info = json.loads(urllib.request.urlopen(f"http://{url}/api/info").read())
        assert [agent["spec"] for agent in info["agents"]][-2:] == ["random", "mcts:200"]
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
    assert process.returncode in (0, 130) and "Traceback" not in err, err
    assert "Stopped." in out


def test_serve_reads_only_the_agents_named(tmp_path):
    """An agent the page asks for is one of those served: a run directory is loaded only when named."""
    served = GameServer.from_specs(["random"])
    assert list(served.agents) == ["random", "mcts:200"]
    with pytest.raises(server_lib.ServeError, match="unknown agent"):
        served.agent(str(tmp_path), "tic_tac_toe")
    with pytest.raises(server_lib.ServeError, match="unknown agent"):
        served.agent("pretrained:tic_tac_toe", "tic_tac_toe")


def test_network_agents_are_found_by_their_spec():
    assert server_lib.network_source("az:runs/ttt:64:reuse") == "runs/ttt"
    assert server_lib.network_source("greedy:pretrained:connect_four") == "pretrained:connect_four"
    assert server_lib.network_source("runs/ttt") == "runs/ttt"
    assert server_lib.network_source("az:runs/ttt") == "runs/ttt"
    for spec in ("random", "onestep", "perfect", "mcts:200"):
        assert server_lib.network_source(spec) is None


def test_the_page_is_package_data():
    static = Path(server_lib.__file__).parent / "static"
    assert {"index.html", "app.js", "style.css"} <= {p.name for p in static.iterdir()}
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '"azjax.serve" = ["static/*"]' in pyproject



def test_pig_is_played_by_its_moves_names(client):
    """Pig has no board to click: its moves (roll, hold) are offered by name (the page's buttons) and played by
    name; the picture shows the die; an agent that would look ahead through the dice is refused."""
    view = new_game(client, (HUMAN, "random"), game="pig")
    assert view["grid"] is None and view["your_turn"] and 'class="die" data-face="0"' in view["svg"]
    assert view["legal"] == [{"action": 0, "move": "roll", "targets": None}]  # no hold before the first roll
    moves = f"/api/games/{view['id']}/moves"
    assert "not played by clicking squares" in assert_refused(client.post(moves, json={"path": ["a1"]}), 400)
    assert "hold is not legal here" in assert_refused(client.post(moves, json={"move": "hold"}), 409)
    assert client.post(moves, json={"move": "roll"}).status_code == 200
    view = settled(client, view["id"])
    assert view["moves"][0] == {"action": 0, "move": "roll", "player": 0} and view["your_turn"]
    if view["num_moves"] == 1:  # a 2 to 6: the turn goes on, and holding is legal
        assert [m["move"] for m in view["legal"]] == ["roll", "hold"]
        assert client.post(moves, json={"move": "hold"}).status_code == 200
        view = settled(client, view["id"])
    assert view["num_moves"] >= 2 and view["moves"][-1]["player"] == 1 and view["your_turn"]  # random's turn
    assert {m["move"] for m in view["moves"]} <= {"roll", "hold"}
    assert 1 <= int(view["svg"].split('class="die" data-face="')[1].split('"')[0]) <= 6
    refused = client.post("/api/games", json={"game": "pig", "players": [HUMAN, "mcts:200"]})
    assert "a game with chance" in assert_refused(refused, 400)


# --------------------------------------------------------------------------------------------------------------
# One-player games (puzzles): one seat


def test_the_page_offers_the_puzzles_with_one_seat(client, served):
    """The registered one-player games are offered after the two-player ones (the default game stays first), each
    said to have one seat; UCT plays them (no chance), and `--game sliding_puzzle` makes the puzzle the default."""
    info = served.info()
    assert "sliding_puzzle" in info["games"] and info["games"][0] == "tic_tac_toe"
    assert info["num_players"]["sliding_puzzle"] == 1 and info["num_players"]["connect_four"] == 2
    assert served.agents["mcts:200"].plays("sliding_puzzle") and served.agents["random"].plays("sliding_puzzle")
    puzzle_server = GameServer.from_specs([], game="sliding_puzzle", max_games=1)
    assert puzzle_server.info()["default_game"] == "sliding_puzzle"
    puzzle_server.close()


def test_a_puzzle_has_one_seat_and_a_two_player_game_two(client):
    one = client.post("/api/games", json={"game": "sliding_puzzle", "players": [HUMAN, "random"]})
    assert "one seat" in assert_refused(one, 400)
    two = client.post("/api/games", json={"game": "tic_tac_toe", "players": [HUMAN]})
    assert "two seats" in assert_refused(two, 400)


def test_the_person_solves_a_puzzle_from_the_judges_start_with_hints(client):
    """The start is where the puzzle's yardstick draws them (a uniform solvable board, for the seed); moves have
    no square (the page's buttons) and are played by name or index; any served agent gives a hint."""
    game = make("sliding_puzzle")
    view = new_game(client, (HUMAN,), game="sliding_puzzle")
    start = jax.device_get(game.yardstick.starts(jax.random.key(0)))
    assert view["svg"] == drawing.to_svg(game, start)
    assert view["kind"] == "play" and view["players"] == [HUMAN] and view["your_turn"] and view["to_move"] == 0
    assert view["legal"] and all(m["move"] in ("up", "down", "left", "right") and m["targets"] is None
                                 for m in view["legal"])
    path = f"/api/games/{view['id']}/analysis?agent=random"
    hint = wait_until(lambda: (r := client.get(path)).status_code == 200 and r.json, "the hint")
    assert hint["num_legal"] == len(view["legal"]) and hint["move"] in [m["move"] for m in view["legal"]]
    view = client.post(f"/api/games/{view['id']}/moves", json={"move": view["legal"][0]["move"]}).json
    view = client.post(f"/api/games/{view['id']}/moves", json={"action": view["legal"][-1]["action"]}).json
    assert view["num_moves"] == 2 and [m["player"] for m in view["moves"]] == [0, 0] and view["your_turn"]
    assert not view["terminated"] and view["result"] is None


def test_a_solved_puzzle_says_so_beside_the_fewest_moves(monkeypatch):
    """A start one move from the goal (the yardstick's starts replaced): solved in 1 move, the fewest 1, no
    winner, the return -1."""
    puzzle_server = GameServer.from_specs([], max_games=1)
    served_game = puzzle_server.served_game("sliding_puzzle")
    near = served_game.game.from_ascii("1 2 3\n4 5 6\n7 . 8\nmoves 0 of 40")
    yardstick = dataclasses.replace(served_game.game.yardstick, starts=lambda key: near)
    monkeypatch.setattr(served_game, "game", dataclasses.replace(served_game.game, yardstick=yardstick))
    client = create_app(puzzle_server).test_client()
    view = new_game(client, (HUMAN,), game="sliding_puzzle")
    view = client.post(f"/api/games/{view['id']}/moves", json={"move": "right"}).json
    assert view["terminated"] and not view["your_turn"]
    result = view["result"]
    assert result["text"] == "Solved in 1 move (the fewest: 1)." and result["winner"] is None
    assert result["return"] == -1.0 and result["solved"]
    puzzle_server.close()


def test_an_agent_solves_a_puzzle_to_the_end(client):
    """random as the solver, watched without pauses: its episode ends (solved or out of moves), with no winner."""
    view = settled(client, new_game(client, ("random",), game="sliding_puzzle", pace=0)["id"])
    assert view["kind"] == "watch" and view["terminated"] and not view["your_turn"]
    result = view["result"]
    assert result["winner"] is None and result["return"] == -view["num_moves"]
    assert result["text"].startswith("Solved in " if result["solved"] else "Unsolved after ")
    assert "win" not in result["text"]


def test_uct_is_not_offered_for_a_game_with_chance():
    """UCT's rollouts would look ahead through the dice: the page does not list mcts:N for Pig, and the server
    refuses it there in one line before building anything."""
    served = GameServer.from_specs(["random"])
    info = {agent["spec"]: agent for agent in served.info()["agents"]}
    assert list(info["mcts:200"]["excludes"]) == ["pig"] and not info["random"]["excludes"]
    assert served.agents["mcts:200"].plays("connect_four") and not served.agents["mcts:200"].plays("pig")
    with pytest.raises(server_lib.ServeError, match="'mcts:200' does not play pig, a game with chance"):
        served.agent("mcts:200", "pig")


def test_a_pig_player_named_is_offered_for_pig_and_plays_it():
    """hold:N plays only Pig: named on the command line it is offered for Pig, which it makes the default game."""
    pig_server = GameServer.from_specs(["hold:20"], max_games=2)
    offered = {agent["spec"]: agent for agent in pig_server.info()["agents"]}
    assert offered["hold:20"]["game"] == "pig" and "holds" in offered["hold:20"]["about"]
    assert pig_server.info()["default_game"] == "pig"
    client = create_app(pig_server).test_client()
    view = settled(client, new_game(client, ("hold:20", "random"), game="pig", pace=0)["id"])
    assert view["terminated"] and view["kind"] == "watch" and 'class="die"' in view["svg"]
    assert "not tic_tac_toe" in assert_refused(client.post("/api/games", json={
        "game": "tic_tac_toe", "players": [HUMAN, "hold:20"]}), 400)
    pig_server.close()
