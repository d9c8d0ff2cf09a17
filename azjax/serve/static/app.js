// The page of `azjax serve`: plain JavaScript over the JSON API of azjax/serve/app.py. The server owns every
// game; this page shows one (its board as the server's SVG), sends the person's clicks as moves, polls while an
// agent thinks, and asks an agent for its search of the position on the board.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const POLL_MS = 250;
const BOARD_MAX_PX = 460;

const page = {
  info: null,        // GET /api/info
  mode: "play",      // play | watch | replay
  view: null,        // the game shown (GET /api/games/<id>)
  follow: true,      // show the game's latest position (else page.view.ply, chosen with the buttons)
  selected: null,    // the square of the piece picked (games whose moves go from a square to another)
  pollTimer: null,
  analysisKey: null, // "<id>|<ply>|<agent>" of the analysis shown or asked for
  analysis: null,    // that analysis, once it came
  analysisTimer: null,
  requests: 0,       // a view older than the newest request is not shown
  analystFor: null,  // the game whose agent the analyst select was set to
  shownPicture: null, // the SVG on the board, and its clickable squares' state
  shownSquares: null,
};

const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch (error) {
    return { ok: false, status: 0, data: { error: "the server does not answer: is azjax serve still running?" } };
  }
  let data;
  try {
    data = await response.json();
  } catch (error) {
    data = { error: `the server sent no JSON (HTTP ${response.status})` };
  }
  return { ok: response.ok, status: response.status, data };
}

function showMessage(text, kind = "error") {
  const box = $("message");
  box.textContent = text || "";
  box.className = text ? kind : "";
}

function option(value, text) {
  const element = document.createElement("option");
  element.value = value;
  element.textContent = text;
  return element;
}

function signed(value) {
  if (value === null || value === undefined) return "-";
  const rounded = Math.round(100 * value) / 100;  // no "-0.00"
  return (rounded > 0 ? "+" : "") + (rounded === 0 ? 0 : rounded).toFixed(2);
}

function percent(value) {
  return value === null || value === undefined ? "-" : `${(100 * value).toFixed(value < 0.1 ? 1 : 0)}%`;
}

// ---------------------------------------------------------------------------------------------------------------
// Choices: game, agents, records

function agentsFor(game) {
  return page.info.agents.filter((agent) => (agent.game === null || agent.game === game)
    && !agent.excludes.includes(game));
}

function isPuzzle(game) {
  return page.info.num_players[game] === 1;  // one seat: the person solves it, or an agent does
}

function fillAgentSelect(select, game, preferred, withYou = false) {
  const before = select.value;
  const choices = agentsFor(game).map((agent) => {
    const element = option(agent.spec, agent.spec);
    element.title = agent.about;
    return element;
  });
  if (withYou) choices.unshift(option(page.info.human, "You"));
  select.replaceChildren(...choices);
  const specs = choices.map((choice) => choice.value);
  select.value = specs.includes(before) ? before : (specs.includes(preferred) ? preferred : specs[0]);
}

function strongestAgent(game) {
  const specs = agentsFor(game).map((agent) => agent.spec);
  return specs.find((spec) => spec !== "random") || specs[0];
}

function fillAgents() {
  const game = $("game").value;
  const puzzle = isPuzzle(game);
  fillAgentSelect($("agent"), game, strongestAgent(game), puzzle);
  if (puzzle) $("agent").value = page.info.human;  // a puzzle chosen: you solve it, unless you pick an agent
  fillAgentSelect($("watch-0"), game, puzzle ? strongestAgent(game) : "random");
  fillAgentSelect($("watch-1"), game, strongestAgent(game));
  $("agent-label").textContent = puzzle ? "Solved by" : "Agent";
  $("watch-0-label").textContent = puzzle ? "Solved by" : "First";
  $("side-label").hidden = $("watch-1-label").hidden = puzzle;
}

function fillAnalysts(view) {
  const agents = view.players.filter((player) => player !== page.info.human);
  const select = $("analyst");
  const before = select.value;
  fillAgentSelect(select, view.game, agents[agents.length - 1] || strongestAgent(view.game));
  if (view.id !== page.analystFor) {  // a new game: its agent analyses, until the person picks another
    page.analystFor = view.id;
    const preferred = agents[agents.length - 1];
    if (preferred && agentsFor(view.game).some((agent) => agent.spec === preferred)) select.value = preferred;
  } else if (before) {
    select.value = before;
  }
}

function fillRecords(selected) {
  const select = $("record");
  select.replaceChildren(...page.info.records.map((record) =>
    option(record.index, `${record.name} (${record.game}, ${record.num_games} games)`)));
  if (!page.info.records.length) select.append(option("", "no records (azjax serve --record PATH)"));
  if (selected !== undefined) select.value = selected;
  loadRecordGames();
}

async function loadRecordGames() {
  const index = $("record").value;
  const select = $("record-game");
  select.replaceChildren();
  if (index === "") return;
  const { ok, data } = await api("GET", `/api/records/${index}`);
  if (!ok) return showMessage(data.error);
  for (const game of data.games) {
    const result = game.outcome > 0 ? `${game.players[0]} won` : game.outcome < 0 ? `${game.players[1]} won` : "draw";
    select.append(option(game.number,
      `${game.number}: ${game.players[0]} vs ${game.players[1]}, ${result}, ${game.length} moves`));
  }
}

function setMode(mode) {
  page.mode = mode;
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.mode === mode);
  for (const name of ["play", "watch", "replay"]) $(`${name}-controls`).hidden = name !== mode;
  $("game-label").hidden = mode === "replay";
}

// ---------------------------------------------------------------------------------------------------------------
// Games

async function startGame(body) {
  showMessage("");
  page.selected = null;
  ++page.requests;  // the shown game's views still on their way are not shown
  const { ok, data } = await api("POST", "/api/games", body);
  if (!ok) return showMessage(data.error);
  page.follow = data.kind !== "replay";
  setView(data);
}

function newGame() {
  const game = $("game").value;
  if (isPuzzle(game)) return startGame({ game, players: [$("agent").value] });
  let side = $("side").value;
  if (side === "random") side = String(Math.floor(2 * Math.random()));
  const players = side === "0" ? [page.info.human, $("agent").value] : [$("agent").value, page.info.human];
  return startGame({ game, players });
}

function watchGame() {
  const game = $("game").value;
  const players = isPuzzle(game) ? [$("watch-0").value] : [$("watch-0").value, $("watch-1").value];
  return startGame({ game, players, pace: Number($("pace").value) });
}

function openRecord() {
  if ($("record").value === "" || $("record-game").value === "") return showMessage("Choose a record and a game.");
  return startGame({ record: Number($("record").value), number: Number($("record-game").value) });
}

async function refresh() {
  const view = page.view;
  if (!view) return;
  const request = ++page.requests;
  const query = page.follow ? "" : `?ply=${view.ply}`;
  const { ok, status, data } = await api("GET", `/api/games/${view.id}${query}`);
  if (request !== page.requests) return;  // a newer request was sent meanwhile
  if (!ok) {
    clearTimeout(page.pollTimer);
    return showMessage(status === 410 || status === 404 ? `${data.error}` : data.error);
  }
  setView(data);
}

async function goTo(ply) {
  const view = page.view;
  if (!view) return;
  ply = Math.max(0, Math.min(view.num_moves, ply));
  page.follow = view.kind !== "replay" && ply === view.num_moves;
  page.selected = null;
  view.ply = ply;
  await refresh();
}

function setView(view) {
  page.view = view;
  clearTimeout(page.pollTimer);
  if (view.thinking) page.pollTimer = setTimeout(refresh, POLL_MS);
  fillAnalysts(view);
  render();
  if ($("auto-analyse").checked) requestAnalysis(false);
}

async function play(body) {
  const view = page.view;
  const request = ++page.requests;
  const { ok, data } = await api("POST", `/api/games/${view.id}/moves`, body);
  if (request !== page.requests) return;
  if (!ok) {
    render();
    return showMessage(data.error);
  }
  showMessage("");
  page.follow = true;
  setView(data);
}

function onSquare(square) {
  const view = page.view;
  if (!view) return;
  if (view.kind === "replay") return showMessage("A recorded game: step through it with the buttons below.", "note");
  if (view.ply !== view.num_moves) {
    return showMessage("This is an earlier position: press >| to go back to the game.", "note");
  }
  if (view.from_to && view.your_turn) {
    const from = page.selected;
    const startsHere = view.legal.some((move) => move.targets && move.targets.length === 2 && move.targets[0] === square);
    if (from === null) {
      if (startsHere) {
        page.selected = square;
        showMessage("");
        return render();
      }
      return play({ path: [square] });
    }
    if (square === from) {
      page.selected = null;
      return render();
    }
    const reaches = view.legal.some((move) => move.targets && move.targets.length === 2 && move.targets[0] === from &&
      move.targets[1] === square);
    if (!reaches && startsHere) {
      page.selected = square;
      return render();
    }
    page.selected = null;
    return play({ path: [from, square] });
  }
  return play({ path: [square] });
}

// ---------------------------------------------------------------------------------------------------------------
// Drawing

function statusText(view) {
  if (view.error) return view.error;
  const shown = view.ply === view.num_moves;
  if (view.kind === "replay") {
    const record = view.record;
    return `${record.name}, game ${record.number}: ${view.players[0]} vs ${view.players[1]}` +
      (view.terminated ? ` - ${view.result.text}` : "");
  }
  if (!shown) {
    return `Move ${view.ply} of ${view.num_moves}` + (view.thinking ? ` (${view.thinking} is thinking...)` : "");
  }
  if (view.terminated) return view.result.text;
  if (view.thinking) return `${view.thinking} is thinking...`;
  if (view.your_turn) return view.kind === "play" && view.players.includes(page.info.human) ? "Your move." : "";
  return "";
}

function render() {
  const view = page.view;
  if (!view) return;
  const status = $("status");
  status.textContent = statusText(view);
  status.className = view.error ? "error" : view.terminated && view.ply === view.num_moves ? "result" : view.thinking ? "thinking" : "";

  const annotated = $("annotate").checked && page.analysis && page.analysisKey === analysisKey();
  const picture = annotated ? page.analysis.annotated_svg : view.svg;
  const squares = JSON.stringify([page.selected, view.legal.map((move) => move.targets)]);
  if (picture !== page.shownPicture || squares !== page.shownSquares) {  // redrawn only when it changed
    page.shownPicture = picture;
    page.shownSquares = squares;
    $("board").innerHTML = picture;
    const svg = $("board").querySelector("svg");
    if (svg) {
      // Small boards drawn twice their size, large ones as wide as the column allows.
      const width = Number(svg.getAttribute("width")) || 300;
      svg.style.width = `${Math.min(BOARD_MAX_PX, 2 * width)}px`;
      if (view.grid) addSquares(svg, view);
    }
  }
  $("board").dataset.gameId = view.id;
  $("board").dataset.game = view.game;

  const others = $("other-moves");
  others.replaceChildren();
  for (const move of view.legal) {
    if (move.targets) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "move-button";
    button.textContent = move.move;
    button.addEventListener("click", () => play({ action: move.action }));
    others.append(button);
  }
  $("type-move").hidden = !view.your_turn;

  $("ply-label").textContent = `move ${view.ply} of ${view.num_moves}`;
  $("first").disabled = $("prev").disabled = view.ply === 0;
  $("next").disabled = $("last").disabled = view.ply === view.num_moves;
  const list = $("moves");
  list.replaceChildren(...view.moves.map((move, t) => {
    const item = document.createElement("li");
    item.textContent = move.move;
    item.title = `${view.players[move.player]} (player ${move.player})`;
    item.className = `p${move.player}` + (t + 1 === view.ply ? " current" : "");
    item.addEventListener("click", () => goTo(t + 1));
    return item;
  }));
}

function addSquares(svg, view) {
  const grid = view.grid;
  const width = grid.width / grid.columns.length;
  const height = grid.height / grid.rows.length;
  const playable = new Set();
  const destinations = new Set();
  for (const move of view.legal) {
    if (!move.targets) continue;
    if (page.selected === null) playable.add(move.targets[0]);
    else if (move.targets[0] === page.selected) destinations.add(move.targets[1]);
  }
  const layer = document.createElementNS(SVG_NS, "g");
  layer.setAttribute("class", "squares");
  grid.rows.forEach((row, r) => grid.columns.forEach((column, c) => {
    const square = column + row;
    const rect = document.createElementNS(SVG_NS, "rect");
    rect.setAttribute("x", grid.x + c * width);
    rect.setAttribute("y", grid.y + r * height);
    rect.setAttribute("width", width);
    rect.setAttribute("height", height);
    rect.dataset.square = square;
    const classes = ["square"];
    if (playable.has(square) || playable.has(column)) classes.push("playable");
    if (square === page.selected) classes.push("selected");
    if (destinations.has(square)) classes.push("destination");
    rect.setAttribute("class", classes.join(" "));
    layer.append(rect);
  }));
  layer.addEventListener("click", (event) => {
    const target = event.target.closest("[data-square]");
    if (target) onSquare(target.dataset.square);
  });
  svg.append(layer);
}

// ---------------------------------------------------------------------------------------------------------------
// The agent's search of the position on the board

function analysisKey() {
  const view = page.view;
  return view ? `${view.id}|${view.ply}|${$("analyst").value}` : null;
}

async function requestAnalysis(asked) {
  const view = page.view;
  const key = analysisKey();
  if (!view || !$("analyst").value) return;
  if (key === page.analysisKey && (page.analysis || page.analysisTimer)) return;
  clearTimeout(page.analysisTimer);
  page.analysisTimer = null;
  page.analysisKey = key;
  page.analysis = null;
  if (view.terminated && view.ply === view.num_moves) {
    return showAnalysisNote(asked ? "The game is over: there is nothing to analyse." : "");
  }
  await fetchAnalysis(key, view, $("analyst").value);
}

async function fetchAnalysis(key, view, agent) {
  const path = `/api/games/${view.id}/analysis?agent=${encodeURIComponent(agent)}&ply=${view.ply}`;
  const { ok, status, data } = await api("GET", path);
  if (key !== page.analysisKey) return;
  if (status === 202) {
    showAnalysisNote(`${agent} is thinking...`, "thinking");
    page.analysisTimer = setTimeout(() => fetchAnalysis(key, view, agent), POLL_MS);
    return;
  }
  page.analysisTimer = null;
  if (!ok) return showAnalysisNote(data.error, "error");
  page.analysis = data;
  showAnalysis(data);
  if ($("annotate").checked) render();
}

function showAnalysisNote(text, kind = "quiet") {
  const box = $("analysis");
  box.replaceChildren();
  if (!text) return;
  const note = document.createElement("p");
  note.className = kind;
  note.textContent = text;
  box.append(note);
}

function showAnalysis(analysis) {
  const box = $("analysis");
  box.replaceChildren();
  const summary = document.createElement("p");
  summary.className = "summary";
  const parts = [
    [`${analysis.agent} plays `, analysis.move],
    [" · its value ", signed(analysis.value)],
    [" · the network's value ", signed(analysis.network_value)],
  ];
  const outcomes = analysis.network_outcomes;  // a win/draw/loss value head's chances, for the player to move
  if (outcomes) {
    parts.push([" (win ", percent(outcomes.win)], [" · draw ", percent(outcomes.draw)],
               [" · loss ", percent(outcomes.loss)]);
  }
  for (const [label, value] of parts) {
    summary.append(document.createTextNode(label));
    const strong = document.createElement("b");
    strong.textContent = value;
    summary.append(strong);
  }
  if (outcomes) summary.append(document.createTextNode(")"));
  box.append(summary);
  const table = document.createElement("table");
  table.id = "candidates";
  const head = table.createTHead().insertRow();
  for (const title of ["move", "visits", "value", "prior", "policy"]) {
    const cell = document.createElement("th");
    cell.textContent = title;
    head.append(cell);
  }
  const body = table.createTBody();
  for (const candidate of analysis.candidates) {
    const row = body.insertRow();
    if (candidate.action === analysis.action) row.className = "chosen";
    const visits = candidate.visit_share === null ? "-" :
      percent(candidate.visit_share) + (candidate.visits === null ? "" : ` (${candidate.visits})`);
    for (const text of [candidate.move, visits, signed(candidate.value), percent(candidate.prior),
      percent(candidate.policy)]) {
      row.insertCell().textContent = text;
    }
  }
  box.append(table);
  if (analysis.num_legal > analysis.candidates.length) {
    const more = document.createElement("p");
    more.className = "quiet";
    more.textContent = `The first ${analysis.candidates.length} of ${analysis.num_legal} legal moves.`;
    box.append(more);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Start

async function uploadRecord(file) {
  let record;
  try {
    record = JSON.parse(await file.text());
  } catch (error) {
    return showMessage(`${file.name} is not JSON: ${error.message}`);
  }
  const { ok, data } = await api("POST", "/api/records", { record, name: file.name });
  if (!ok) return showMessage(data.error);
  const info = await api("GET", "/api/info");
  if (info.ok) page.info = info.data;
  fillRecords(data.index);
  showMessage(`${file.name}: ${data.num_games} games of ${data.game}. Choose one and press Open.`, "note");
}

async function start() {
  const { ok, data } = await api("GET", "/api/info");
  if (!ok) return showMessage(data.error);
  page.info = data;
  $("game").replaceChildren(...data.games.map((game) => option(game, game)));
  $("game").value = data.default_game;
  fillAgents();
  fillRecords();
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => setMode(tab.dataset.mode));
  $("game").addEventListener("change", fillAgents);
  $("new-game").addEventListener("click", newGame);
  $("start-watch").addEventListener("click", watchGame);
  $("open-record").addEventListener("click", openRecord);
  $("record").addEventListener("change", loadRecordGames);
  $("upload").addEventListener("change", (event) => {
    const file = event.target.files[0];
    event.target.value = "";  // so that choosing the same file again reads it again
    if (file) uploadRecord(file);
  });
  $("first").addEventListener("click", () => goTo(0));
  $("prev").addEventListener("click", () => goTo(page.view.ply - 1));
  $("next").addEventListener("click", () => goTo(page.view.ply + 1));
  $("last").addEventListener("click", () => goTo(page.view.num_moves));
  $("analyse").addEventListener("click", () => requestAnalysis(true));
  $("analyst").addEventListener("change", () => requestAnalysis(true));
  $("auto-analyse").addEventListener("change", () => $("auto-analyse").checked && requestAnalysis(false));
  $("annotate").addEventListener("change", render);
  $("type-move").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("move-input").value.trim();
    if (text) play({ move: text }).then(() => { $("move-input").value = ""; });
  });
  document.addEventListener("keydown", (event) => {
    if (!page.view || event.target.tagName === "INPUT" || event.target.tagName === "SELECT") return;
    const moves = { ArrowLeft: page.view.ply - 1, ArrowRight: page.view.ply + 1, Home: 0, End: page.view.num_moves };
    if (event.key in moves) goTo(moves[event.key]);
  });
  if (data.records.length) {  // azjax serve --record PATH: its first game, to step through
    setMode("replay");
    await startGame({ record: 0, number: 0 });
  } else {
    await newGame();
  }
}

start();
