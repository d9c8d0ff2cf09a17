"""`azjax serve`: a local web page to play and watch any game against any agent, and to step through recorded
games with an agent's search shown for the position on the board.

    azjax serve                                   # http://127.0.0.1:8000/: any game against random or mcts:200
    azjax serve pretrained:connect_four runs/ttt  # and these agents
    azjax eval random mcts:200 --games 10 --record match.json && azjax serve --record match.json

`server.GameServer` holds the games, agents and records (no HTTP, tested directly); `app.create_app` puts a Flask
app with a JSON API over it, and `app.make_http_server` serves that with werkzeug's threaded server. The page is
plain HTML and JavaScript in static/, with no build step. `board` maps clicks on the drawn board
(`azjax.games.drawing.to_svg`) to moves; `records` reads the files `azjax eval --record` writes.
"""

from azjax.serve.app import create_app, make_http_server
from azjax.serve.records import Record, RecordedGame, RecordError, parse_record, read_record
from azjax.serve.server import HUMAN, GameServer, ServeError

__all__ = [
    "HUMAN",
    "GameServer",
    "Record",
    "RecordError",
    "RecordedGame",
    "ServeError",
    "create_app",
    "make_http_server",
    "parse_record",
    "read_record",
]
