"""The HTTP side of `azjax serve`: a Flask app over a `GameServer`, served by werkzeug's threaded WSGI server.

    GET    /                                   the page (static/index.html, app.js, style.css)
    GET    /api/info                           the games, agents and records served
    POST   /api/games                          a new game: {"game", "players": [seat 0, seat 1], "seed"?, "pace"?}
                                               or a recorded one: {"record": index, "number": game}
    GET    /api/games/<id>?ply=N               the game at move N (default: now): board SVG, moves, whose turn, ...
    POST   /api/games/<id>/moves               the person's move: {"action"} | {"move": "b2"} | {"path": ["b2"]}
    GET    /api/games/<id>/analysis?agent=A&ply=N   agent A's search of that position: 200, or 202 while it runs
    DELETE /api/games/<id>                     ends the game
    GET    /api/records, /api/records/<index>  the records served, one record's games
    POST   /api/records                        serves a record sent by the page: {"record": its JSON, "name"?}

Every answer is JSON; a request that cannot be served gets a 4xx and {"error": one line}, never a traceback.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from azjax.serve.server import GameServer, ServeError

MAX_REQUEST_BYTES = 8 * 1024 * 1024  # an uploaded record at most


def create_app(server: GameServer) -> Flask:
    """The Flask app serving `server`'s games and the page."""
    app = Flask(__name__, static_folder="static", static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    app.json.sort_keys = False  # type: ignore[attr-defined]  # the default provider has it

    @app.errorhandler(ServeError)
    def refused(error: ServeError) -> tuple[Response, int]:
        return jsonify(error=error.message), error.status

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> tuple[Response, int]:
        return jsonify(error=f"{error.name}: {error.description}"), error.code or 500

    @app.errorhandler(Exception)
    def failed(error: Exception) -> tuple[Response, int]:
        traceback.print_exception(error, file=sys.stderr)  # a bug: the log has it, the page a line
        return jsonify(error=f"internal error: {type(error).__name__}: {error}"), 500

    @app.get("/")
    def page() -> Response:
        return app.send_static_file("index.html")

    @app.get("/api/info")
    def info() -> Response:
        return jsonify(server.info())

    @app.post("/api/games")
    def create_game() -> tuple[Response, int]:
        return jsonify(server.create_game(_body())), 201

    @app.get("/api/games/<game_id>")
    def view(game_id: str) -> Response:
        return jsonify(server.view(game_id, request.args.get("ply")))

    @app.delete("/api/games/<game_id>")
    def end_game(game_id: str) -> Response:
        return jsonify(server.end_game(game_id))

    @app.post("/api/games/<game_id>/moves")
    def move(game_id: str) -> Response:
        return jsonify(server.move(game_id, _body()))

    @app.get("/api/games/<game_id>/analysis")
    def analysis(game_id: str) -> tuple[Response, int]:
        if "agent" not in request.args:
            raise ServeError(400, "give the agent to analyse with: ?agent=NAME")
        status, found = server.analysis(game_id, request.args.get("ply"), request.args["agent"])
        return jsonify(found), status

    @app.get("/api/records")
    def records() -> Response:
        return jsonify(server.info()["records"])

    @app.get("/api/records/<index>")
    def record(index: str) -> Response:
        return jsonify(server.record(int(index) if index.isdecimal() else index))

    @app.post("/api/records")
    def add_record() -> tuple[Response, int]:
        body = _body()
        if "record" not in body:
            raise ServeError(400, "give the record as {\"record\": the JSON that azjax eval --record wrote}")
        return jsonify(server.add_record(body["record"], body.get("name"))), 201

    return app


def _body() -> dict[str, Any]:
    """The request's JSON object, or ServeError."""
    body = request.get_json(force=True, silent=True)
    if not isinstance(body, dict):
        raise ServeError(400, "the request's body must be a JSON object")
    return body


class _QuietHandler(WSGIRequestHandler):
    """Logs no line per request: the page polls several times a second. Errors are still logged."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


def make_http_server(server: GameServer, host: str = "127.0.0.1", port: int = 8000) -> BaseWSGIServer:
    """A threaded WSGI server of `create_app(server)`, listening (port 0: a free port, in `.server_port`); call
    its `serve_forever()`, and `shutdown()` from another thread to stop it.

    Raises:
      OSError: the address cannot be bound (e.g. the port is in use).
    """
    return make_server(host, port, create_app(server), threaded=True, request_handler=_QuietHandler)
