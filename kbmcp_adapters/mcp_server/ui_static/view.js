// kb-mcp's MCP App views (ui://kb-mcp/search.html, reader.html, graph.html): the glue
// between the host that renders them (JSON-RPC over postMessage, the MCP Apps protocol) and
// /ui's own renderers (hits.js, graph.js, snippet.js). Everything a view shows comes through
// the host: the tool result it was opened with, and tools/call of kb-mcp's own tools. The
// view has no network of its own (its Content-Security-Policy has no connect-src).
"use strict";

const VIEW = document.body.dataset.view;
const APP_PROTOCOL = "2026-01-26";
const READ_LINES = 200;   // lines in one range of the reader
const ABOVE_CITED = 10;   // lines the reader shows above a hit's cited ones

// -- the host: requests, replies and its notifications ------------------------------------
const hostLink = { next: 0, pending: new Map() };

function post(message) { window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*"); }

function hostRequest(method, params) {
  const id = ++hostLink.next;
  return new Promise((resolve, reject) => {
    hostLink.pending.set(id, { resolve, reject });
    post({ id, method, params });
  });
}

const HOST_HANDLERS = {
  "ui/notifications/tool-input": (p) => toolInput(p.arguments || {}),
  "ui/notifications/tool-result": (p) => toolResult(p),
  "ui/notifications/tool-cancelled": (p) =>
    showState("The call was cancelled" + (p.reason ? ": " + p.reason : "") + "."),
  "ui/resource-teardown": () => {},
  "ping": () => {},
};

function onHostMessage(ev) {
  if (ev.source !== window.parent) return;
  const m = ev.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.method === undefined) {  // a reply to one of ours
    const waiting = hostLink.pending.get(m.id);
    if (!waiting) return;
    hostLink.pending.delete(m.id);
    if (m.error) waiting.reject(new Error(m.error.message || "the host refused the request"));
    else waiting.resolve(m.result);
    return;
  }
  const handler = HOST_HANDLERS[m.method];
  if (handler) handler(m.params || {});
  if (m.id !== undefined) {
    post(handler ? { id: m.id, result: {} }
      : { id: m.id, error: { code: -32601, message: "Method not found" } });
  }
}

// A tool result as {ok, data} or {ok: false, error: {code, message}} (tools.failure_result).
function outcome(result) {
  if (result.isError) {
    const text = (result.content && result.content[0] && result.content[0].text) || "";
    let error = { code: "error", message: text || "the tool failed" };
    try { error = JSON.parse(text).error || error; } catch (e) { /* plain text: as is */ }
    return { ok: false, error };
  }
  return { ok: true, data: result.structuredContent || {} };
}

async function callTool(name, args) {
  try {
    return outcome(await hostRequest("tools/call", { name, arguments: args }));
  } catch (e) {
    return { ok: false, error: { code: "host_error", message: e.message } };
  }
}

// -- states --------------------------------------------------------------------------------
let input = {};      // the arguments of the call the view was opened with
let backTo = null;   // the view the reader goes back to ("search", "graph" or none)

function showView(name) {
  for (const section of document.querySelectorAll(".view")) {
    section.hidden = section.id !== "view-" + name;
  }
}

function showState(text) {
  $("state").textContent = text;
  $("state").hidden = !text;
}

function showFailure(error) {
  showState("");
  $("error").textContent = (error.code ? error.code + ": " : "") + (error.message || "failed");
  $("error").hidden = false;
}

// The index being built: how far it got, as /ui's health view shows it.
function showIndexing(data) {
  const ix = data.indexing;
  $("progress").hidden = !ix;
  if (!ix) return;
  $("progress-text").textContent = ix.status || "the index is being built";
  const bar = $("progress-bar");
  if (ix.total) { bar.max = ix.total; bar.value = ix.done || 0; } else bar.removeAttribute("value");
}

function toolInput(args) {
  input = args;
  const what = VIEW === "search" ? "Searching for “" + (args.query || "") + "”…"
    : VIEW === "graph" ? "Drawing the graph…" : "Reading " + (args.path || "the document") + "…";
  showState(what);
}

function toolResult(result) {
  const got = outcome(result);
  $("error").hidden = true;
  if (!got.ok) showFailure(got.error);
  else if (VIEW === "search") showHits(got.data, input.query || "");
  else if (VIEW === "graph") showGraph(got.data);
  else showDocument(got.data, input, {});
  markShown();
}

// When the view first showed the result it was opened with (a performance mark, and on the
// body as a time since the epoch, which a host can set beside the time it had the result).
function markShown() {
  if (document.body.dataset.shownAt) return;
  performance.mark("kb-mcp:result-shown");
  document.body.dataset.shownAt = String(performance.timeOrigin + performance.now());
}

// A read-only replica says so, as /ui's health view does: index_status, through the host.
async function showReadOnly() {
  const got = await callTool("index_status", {});
  $("read-only-note").hidden = !(got.ok && got.data.read_only);
  $("read-only-note").dataset.asked = got.ok ? "yes" : "failed";
}

// -- search --------------------------------------------------------------------------------
function showHits(data, query) {
  showState("");
  showView("search");
  showIndexing(data);
  const hits = data.results || [];
  const status = $("search-status");
  status.textContent = hits.length ? hitsStatus(data)
    : data.indexing ? "No hits yet: " + (data.notice || "the index is still being built.")
    : "No hits for “" + query + "”: the knowledge base has nothing on it.";
  status.className = data.low_confidence ? "notice" : "muted";
  $("explain").hidden = !hits.length || Boolean(data.explain);
  $("hits").dataset.query = query;
  const notes = titleNotes(hits);
  $("hits").replaceChildren(...hits.map((hit, i) => {
    const link = el("a", { href: "#", text: hit.title || hit.path });
    link.addEventListener("click", (ev) => { ev.preventDefault(); openHit(hit); });
    return hitItem(hit, query, notes[i], link);
  }));
}

// The same search again with explain: the numbers behind each score, on demand.
async function explainScores() {
  $("explain").disabled = true;
  const got = await callTool("search", { ...input, explain: true });
  $("explain").disabled = false;
  if (!got.ok) { showFailure(got.error); return; }
  showHits(got.data, input.query || "");
}

function openHit(hit) {
  backTo = "search";
  const args = { path: hit.path };
  if (hit.collection) args.collection = hit.collection;
  if (hit.page) {
    args.page = hit.page;
    readRange(args, { find: Array.from(folded(hit.content || "")).slice(0, FIND_CHARS).join("") });
  } else {
    // the lines that answer when the hit has them (answerSpan), else all it cites
    const [first, last] = answerSpan(hit) || [hit.start_line || 0, hit.end_line || hit.start_line || 0];
    args.start_line = Math.max(1, (first || 1) - ABOVE_CITED);
    args.max_lines = READ_LINES;
    readRange(args, { first, last });
  }
}

// -- the reader ----------------------------------------------------------------------------
let reading = null;  // {args, doc}: the range on show

async function readRange(args, cited) {
  showView("doc");
  $("doc-title").textContent = args.path;
  $("doc-meta").textContent = "reading…";
  const got = await callTool("get_document", { ...args, outline: true });
  if (!got.ok) {
    $("doc-lines").replaceChildren();
    $("doc-outline").hidden = true;
    $("doc-meta").textContent = args.path;
    $("doc-refusal").textContent = "Refused: " + got.error.message;
    $("doc-refusal").hidden = false;
    return;
  }
  showDocument(got.data, args, cited);
}

function showDocument(doc, args, cited) {
  showState("");
  showView("doc");
  reading = { args, doc };
  $("doc-refusal").hidden = true;
  $("doc-back").hidden = !backTo;
  $("doc-title").textContent = doc.title || doc.path;
  const start = doc.start_line || 1;
  const lines = (doc.content || "").split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  let [first, last] = [cited.first || 0, cited.last || cited.first || 0];
  if (cited.find) [first, last] = findLines(lines, cited.find).map((n) => n && n + start - 1);
  $("doc-meta").textContent = [doc.path, doc.collection, args.page ? "page " + args.page : "",
    "lines " + start + "–" + (doc.end_line || start + lines.length - 1) +
    (doc.total_lines ? " of " + doc.total_lines : "")].filter(Boolean).join(" · ");
  const items = lines.map((line, i) => el("li",
    { class: first && start + i >= first && start + i <= last ? "cited" : "" }, line || " "));
  $("doc-lines").setAttribute("start", String(start));
  $("doc-lines").replaceChildren(...items);
  $("doc-prev").disabled = start <= 1;
  $("doc-next").disabled = !doc.next_start_line;
  showOutline(doc.outline || []);
  const at = items[first - start];
  if (first && at) at.scrollIntoView({ block: "nearest" });
}

function showOutline(outline) {
  $("doc-outline").hidden = !outline.length;
  $("doc-outline").querySelector("ol").replaceChildren(...outline.map((o) => {
    const go = el("button", { type: "button", text: o.heading });
    go.addEventListener("click", () => readRange(rangeAt(o.start_line), { first: o.start_line }));
    return el("li", { class: "level-" + o.level }, go);
  }));
}

function rangeAt(line) {
  const { page, ...args } = reading.args;
  return { ...args, start_line: Math.max(1, line), max_lines: READ_LINES };
}

// -- the graph -----------------------------------------------------------------------------
let graphCollectionOf = null;

function showGraph(data) {
  showState("");
  showView("graph");
  graphCollectionOf = data.collection || input.collection || null;
  renderGraph(data);
}

// A click on a node (graph.js): the document, in the reader.
function openNode(n) {
  backTo = "graph";
  const args = { path: n.path, start_line: 1, max_lines: READ_LINES };
  if (graphCollectionOf) args.collection = graphCollectionOf;
  readRange(args, {});
}

// -- start ---------------------------------------------------------------------------------
function reportSize() {
  const box = document.documentElement.getBoundingClientRect();
  post({ method: "ui/notifications/size-changed",
    params: { width: Math.ceil(box.width), height: Math.ceil(box.height) } });
}

async function connect() {
  window.addEventListener("message", onHostMessage);
  $("doc-back").addEventListener("click", () => showView(backTo));
  $("explain").addEventListener("click", explainScores);
  $("doc-prev").addEventListener("click", () =>
    readRange(rangeAt(reading.doc.start_line - READ_LINES), {}));
  $("doc-next").addEventListener("click", () =>
    readRange(rangeAt(reading.doc.next_start_line), {}));
  if (VIEW === "graph") enablePanZoom();
  try {
    await hostRequest("ui/initialize", { appInfo: { name: "kb-mcp-" + VIEW, version: "1" },
      appCapabilities: {}, protocolVersion: APP_PROTOCOL });
  } catch (e) {
    showState("The host did not start this view: " + e.message);
    return;
  }
  post({ method: "ui/notifications/initialized", params: {} });
  showReadOnly();
  new ResizeObserver(reportSize).observe(document.documentElement);
}

connect();
