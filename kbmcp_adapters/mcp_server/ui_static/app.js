// kb-mcp's local page: search, read, topics, health and the connection graph.
// Every piece of document data is inserted as text (textContent), never as markup.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const TOKEN_KEY = "kb-mcp-token";

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

// -- the API: the token (when the server wants one) lives in this tab only ----------------
class NeedsToken extends Error {}

let pendingRetry = null;

async function api(path, body) {
  const headers = { "Accept": "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers["Authorization"] = "Bearer " + token;
  const init = { method: body === undefined ? "GET" : "POST", headers, credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  $("busy").hidden = false;
  try {
    const response = await fetch("/ui/api/" + path, init);
    if (response.status === 401) {
      askForToken(token ? "That token was refused." : "");
      throw new NeedsToken("a token is needed");
    }
    const data = await response.json();
    return { ok: response.ok, status: response.status, data };
  } finally {
    $("busy").hidden = true;
  }
}

function askForToken(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  $("token-form").hidden = false;
  $("token-error").hidden = !message;
  $("token-error").textContent = message;
  $("token").focus();
}

function showError(data) {
  const box = $("error");
  if (!data) { box.hidden = true; return; }
  const err = data.error || {};
  box.textContent = (err.code ? err.code + ": " : "") + (err.message || "request failed");
  box.hidden = false;
}

// -- search -------------------------------------------------------------------------------
function words(query) {
  const found = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];
  return [...new Set(found.filter((w) => w.length > 1))].sort((a, b) => b.length - a.length);
}

function escapeRegExp(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

// The text with the server's match spans ([start, end) in code points) wrapped in <mark>.
function highlightedSpans(text, spans) {
  const fragment = document.createDocumentFragment();
  const chars = Array.from(text);
  let last = 0;
  for (const [start, end] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (start < last || end <= start) continue;
    if (start > last) fragment.append(chars.slice(last, start).join(""));
    fragment.append(el("mark", { text: chars.slice(start, end).join("") }));
    last = end;
  }
  if (last < chars.length) fragment.append(chars.slice(last).join(""));
  return fragment;
}

// The text with every query word wrapped in <mark>: built from text nodes only.
function highlighted(text, query, spans) {
  if (Array.isArray(spans) && spans.length) return highlightedSpans(text, spans);
  const fragment = document.createDocumentFragment();
  const list = words(query);
  if (!list.length) { fragment.append(text); return fragment; }
  const pattern = new RegExp("(" + list.map(escapeRegExp).join("|") + ")", "giu");
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) fragment.append(text.slice(last, match.index));
    fragment.append(el("mark", { text: match[0] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) fragment.append(text.slice(last));
  return fragment;
}

function listOf(id) {
  const value = $(id).value.trim();
  return value ? value.split(/[\s,]+/).filter(Boolean) : undefined;
}

function searchArgs() {
  const args = { query: $("q").value, mode: $("mode").value };
  const limit = parseInt($("limit").value, 10);
  if (limit) args.limit = limit;
  const per = parseInt($("chunks_per_document").value, 10);
  if (per) args.chunks_per_document = per;
  for (const id of ["path_globs", "tags_any", "tags_all"]) {
    const items = listOf(id);
    if (items) args[id] = items;
  }
  for (const id of ["date_from", "date_to", "category", "topic"]) {
    const value = $(id).value.trim();
    if (value) args[id] = value;
  }
  return args;
}

function docHash(uri, hit) {
  const params = new URLSearchParams({ uri });
  if (hit && hit.start_line) params.set("line", hit.start_line);
  if (hit && hit.end_line) params.set("end", hit.end_line);
  if (hit && hit.page) params.set("page", hit.page);
  return "#doc?" + params.toString();
}

function encodePath(path) {
  return encodeURIComponent(path).replace(/%2F/g, "/").replace(/[!'()*]/g,
    (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

let searchSeq = 0;

async function runSearch() {
  const query = $("q").value;
  const seq = ++searchSeq;
  if (!query.trim()) {
    $("hits").replaceChildren();
    $("search-status").textContent = "";
    return;
  }
  let reply;
  try { reply = await api("search", searchArgs()); } catch (e) { return; }
  if (seq !== searchSeq) return; // a newer query is on its way
  if (!reply.ok) { showError(reply.data); return; }
  showError(null);
  renderHits(reply.data, query);
}

function renderHits(data, query) {
  const hits = data.results || [];
  const status = hits.length + (hits.length === 1 ? " hit" : " hits") +
    (data.low_confidence ? " — low confidence: nothing matched clearly" : "") +
    (data.notice ? " — " + data.notice : "");
  $("search-status").textContent = status;
  $("hits").dataset.query = query;
  $("hits").replaceChildren(...hits.map((hit) => {
    const where = hit.page !== undefined ? "page " + hit.page
      : "lines " + hit.start_line + "–" + hit.end_line;
    const heading = (hit.heading_path || []).join(" › ") || hit.heading || "";
    const uri = hit.uri || "kb://doc/" + encodePath(hit.path);
    const title = el("a", { href: docHash(uri, hit), text: hit.title || hit.path });
    return el("li", { class: "hit" },
      el("h3", {}, title, " ",
        hit.uri ? null : el("span", { class: "badge off", text: "not offered",
          title: "searchable, but not offered to clients: opening it shows why" })),
      el("div", { class: "where", text: hit.path + " · " + heading + " · " + where +
        " · score " + Number(hit.score).toFixed(4) }),
      el("div", { class: "content" }, highlighted(hit.content || "", query, hit.matches)));
  }));
}

let debounce = null;

function scheduleSearch() {
  clearTimeout(debounce);
  debounce = setTimeout(runSearch, 200);
}

// decodeURIComponent, or null where it would throw URIError (bad percent-encoding).
function decodedOrNull(text) {
  try { return decodeURIComponent(text); } catch (e) { return null; }
}

// -- reading: the kb://doc/ guard chain -----------------------------------------------------
async function openDocument(params) {
  const uri = params.get("uri") || "";
  const first = parseInt(params.get("line") || "0", 10);
  const last = parseInt(params.get("end") || String(first), 10);
  const path = uri.replace(/^kb:\/\/doc\//, "");
  const name = decodedOrNull(path);
  $("doc-meta").textContent = uri;
  $("doc-lines").replaceChildren();
  if (name === null) {  // a hand-made link such as #doc?uri=%E0%A4%A: say so, read nothing
    $("doc-title").textContent = "Not a document link";
    $("doc-refusal").textContent = "Refused: the link's URI is not valid percent-encoding";
    $("doc-refusal").hidden = false;
    $("doc-graph").removeAttribute("href");
    return;
  }
  $("doc-title").textContent = name;
  $("doc-refusal").hidden = true;
  $("doc-graph").setAttribute("href", "#graph?" + new URLSearchParams({ path: name }));
  let reply;
  try { reply = await api("read", { uri }); } catch (e) { return; }
  if (!reply.ok) {
    const err = reply.data.error || {};
    $("doc-refusal").textContent = "Refused: " + (err.reason || err.message || "unknown reason") +
      (err.code === "not_found" ? " (the server answers this URI as “resource not found”)" : "");
    $("doc-refusal").hidden = false;
    return;
  }
  $("doc-meta").textContent = uri + " · " + reply.data.mime_type;
  const lines = reply.data.text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const items = lines.map((line, i) => {
    const n = i + 1;
    return el("li", { class: n >= first && n <= last && first > 0 ? "cited" : "" }, line || " ");
  });
  $("doc-lines").replaceChildren(...items);
  if (first > 0 && items[first - 1]) items[first - 1].scrollIntoView({ block: "center" });
}

// -- topics ---------------------------------------------------------------------------------
async function showTopics() {
  let reply;
  try { reply = await api("topics"); } catch (e) { return; }
  if (!reply.ok) { showError(reply.data); return; }
  const topics = reply.data.topics;
  if (!topics.length) { $("topics").replaceChildren(el("p", { text: "Nothing is offered yet." })); return; }
  $("topics").replaceChildren(...topics.map((t) => el("div", { class: "panel" },
    el("h3", { text: t.title || t.name }),
    el("p", { class: "muted", text: t.uri + " — " + (t.description || "") }),
    el("ul", {}, ...t.documents.map((d) => el("li", {},
      el("a", { href: docHash(d.uri), text: d.title || d.path }), " ",
      el("span", { class: "muted", text: d.path })))))));
}

// -- health: status, doctor, live progress ---------------------------------------------------
let progressTimer = null;

function renderProgress(progress) {
  $("progress").hidden = !progress;
  if (!progress) return false;
  let text = "Index run in progress (started " + (progress.started || "just now") + "): ";
  const step = progress.step || progress.phase;
  if (step === "text" || step === "vectors" || step === "index") {
    text += step === "vectors"
      ? "phase 2 of 2, vectors: " + progress.done + " of " + progress.total + " chunks embedded"
      : "phase 1 of 2, text: " + progress.done + " of " + progress.total + " files written" +
        (progress.path ? " — " + progress.path : "") + " (searchable by keywords as they land)";
    $("progress-bar").value = progress.total ? progress.done / progress.total : 0;
  } else {
    text += progress.phase === "scan" ? "scanning the files…" : "starting…";
    $("progress-bar").removeAttribute("value");
  }
  $("progress-text").textContent = text;
  return true;
}

function pollProgress() {
  clearTimeout(progressTimer);
  progressTimer = setTimeout(async () => {
    let reply;
    try { reply = await api("progress"); } catch (e) { return; }
    if (renderProgress(reply.data.progress)) pollProgress();
    else if (location.hash.startsWith("#health")) showHealth();
  }, 500);
}

async function showHealth() {
  let reply;
  try { reply = await api("health"); } catch (e) { return; }
  if (!reply.ok) {
    $("status").replaceChildren();
    $("findings").replaceChildren();
    $("doctor-summary").textContent = (reply.data.error || {}).message || "health unavailable";
    return;
  }
  const s = reply.data.status;
  const last = s.last_run || {};
  const rows = [
    ["Documents", s.documents], ["Chunks", s.chunks], ["Model", s.model],
    ["Dimension", s.dimension], ["Schema revision", s.schema_revision],
    ["Read-only", s.read_only ? "yes" : "no"],
    ["Last run", last.finished_at ? last.finished_at + " (" + (last.added || 0) + " added, " +
      (last.updated || 0) + " updated, " + (last.deleted || 0) + " deleted, " +
      (last.failed || 0) + " failed)" : "never"],
    ["Live sync", s.watcher && s.watcher.alive ? "watching (last sync " + (s.watcher.last_sync || "—") + ")" : "not watching"],
  ];
  $("status").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v ?? "—") })]));
  const d = reply.data.doctor;
  $("doctor-summary").textContent = d.healthy ? "Healthy: no findings."
    : d.findings.length + (d.findings.length === 1 ? " finding" : " findings") +
      " (integrity check: " + d.store_check + ")";
  $("findings").replaceChildren(...d.findings.map((f) => el("li", { class: "finding", "data-check": f.check },
    el("span", { class: "sev " + f.severity, text: f.severity }),
    el("strong", { text: f.summary }),
    f.samples && f.samples.length ? el("div", { class: "muted", text: "e.g. " + f.samples.join(", ") }) : null,
    el("p", { class: "remedy", text: "Remedy: " + f.remedy }))));
  if (renderProgress(reply.data.progress)) pollProgress();
}

async function rebuild() {
  $("rebuild").disabled = true;
  $("rebuild-result").textContent = "";
  renderProgress({ phase: "start" });
  pollProgress();
  try {
    const reply = await api("rebuild", {});
    $("rebuild-result").textContent = reply.ok
      ? "Done in " + Number(reply.data.seconds).toFixed(1) + " s: " + reply.data.added + " added, " +
        reply.data.updated + " updated, " + reply.data.deleted + " deleted."
      : "Refused: " + reply.data.error.message;
  } catch (e) {
    // the token form is showing
  } finally {
    $("rebuild").disabled = false;
    showHealth();
  }
}

// -- the connection graph ---------------------------------------------------------------------
let view = { x: -400, y: -300, w: 800, h: 600 };

function setView(v) {
  view = v;
  $("graph").setAttribute("viewBox", [v.x, v.y, v.w, v.h].map((n) => n.toFixed(1)).join(" "));
}

async function drawGraph(params) {
  const path = params.get("path") || "";
  const query = params.get("query") || "";
  $("graph-path").value = path;
  $("graph-query").value = path ? "" : query;
  if (!path && !query) { $("graph-status").textContent = "Give a document path or a query."; return; }
  const args = path ? { path } : { query };
  for (const [id, key] of [["graph-depth", "depth"], ["graph-fan", "fan_out"], ["graph-max", "max_nodes"]]) {
    const n = parseInt($(id).value, 10);
    if (!Number.isNaN(n)) args[key] = n;
  }
  const threshold = parseFloat($("graph-threshold").value);
  if (!Number.isNaN(threshold)) args.threshold = threshold;
  let reply;
  try { reply = await api("graph", args); } catch (e) { return; }
  if (!reply.ok) { $("graph-status").textContent = "Refused: " + reply.data.error.message; $("graph").replaceChildren(); return; }
  renderGraph(reply.data);
}

function renderGraph(data) {
  const started = performance.now();
  const svg = $("graph");
  const at = new Map(data.nodes.map((n) => [n.path, n]));
  const edges = svgEl("g", {});
  for (const e of data.edges) {
    const a = at.get(e.source), b = at.get(e.target);
    if (!a || !b) continue;
    const line = svgEl("line", { class: "edge", x1: a.x, y1: a.y, x2: b.x, y2: b.y,
      "stroke-width": (0.5 + 3 * Math.max(0, e.similarity)).toFixed(2) });
    const tip = svgEl("title", {});
    tip.textContent = e.similarity.toFixed(2);
    line.append(tip);
    edges.append(line);
  }
  const nodes = svgEl("g", {});
  for (const n of data.nodes) {
    const g = svgEl("g", { class: "node" + (n.seed ? " seed" : ""), "data-path": n.path });
    const tip = svgEl("title", {});
    tip.textContent = n.path;
    const label = svgEl("text", { x: n.x, y: n.y - 12 });
    label.textContent = n.title.length > 32 ? n.title.slice(0, 31) + "…" : n.title;
    g.append(tip, svgEl("circle", { cx: n.x, cy: n.y, r: n.seed ? 9 : 6 }), label);
    if (n.uri) g.addEventListener("click", () => { location.hash = docHash(n.uri); });
    nodes.append(g);
  }
  svg.replaceChildren(edges, nodes);
  const xs = data.nodes.map((n) => n.x), ys = data.nodes.map((n) => n.y);
  const pad = 80;
  if (xs.length) {
    const x0 = Math.min(...xs) - pad, y0 = Math.min(...ys) - pad;
    setView({ x: x0, y: y0, w: Math.max(...xs) + pad - x0, h: Math.max(...ys) + pad - y0 });
  }
  const cut = Object.entries(data.truncation || {}).map(([k, v]) => k + " " + v).join(", ");
  $("graph-status").textContent = data.nodes.length + " documents, " + data.edges.length + " links" +
    (data.truncated ? " — truncated (" + cut + ")" : "");
  svg.setAttribute("data-render-ms", (performance.now() - started).toFixed(1));
  svg.setAttribute("data-nodes", String(data.nodes.length));
}

function enablePanZoom() {
  const svg = $("graph");
  let drag = null;
  svg.addEventListener("pointerdown", (ev) => {
    if (ev.target.closest && ev.target.closest(".node")) return;
    drag = { x: ev.clientX, y: ev.clientY, view: { ...view } };
    svg.setPointerCapture(ev.pointerId);
  });
  svg.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    const scale = view.w / svg.clientWidth;
    setView({ ...drag.view, x: drag.view.x - (ev.clientX - drag.x) * scale,
      y: drag.view.y - (ev.clientY - drag.y) * scale });
  });
  svg.addEventListener("pointerup", () => { drag = null; });
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const factor = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
    const box = svg.getBoundingClientRect();
    const fx = (ev.clientX - box.left) / box.width, fy = (ev.clientY - box.top) / box.height;
    const w = view.w * factor, h = view.h * factor;
    setView({ x: view.x + (view.w - w) * fx, y: view.y + (view.h - h) * fy, w, h });
  }, { passive: false });
}

// -- views ----------------------------------------------------------------------------------
function route() {
  const [name, query] = (location.hash.slice(1) || "search").split("?");
  const params = new URLSearchParams(query || "");
  const shown = ["search", "doc", "topics", "health", "graph"].includes(name) ? name : "search";
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== "view-" + shown;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.view === shown);
  showError(null);
  if (shown === "doc") openDocument(params);
  else if (shown === "topics") showTopics();
  else if (shown === "health") showHealth();
  else if (shown === "graph" && (params.get("path") || params.get("query"))) drawGraph(params);
  else if (shown === "search") $("q").focus();
}

function start() {
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    $("token-form").hidden = true;
    route();
    if ($("q").value.trim()) runSearch();
  });
  $("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); runSearch(); });
  $("search-form").addEventListener("input", scheduleSearch);
  $("search-form").addEventListener("change", scheduleSearch);
  $("rebuild").addEventListener("click", rebuild);
  $("graph-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const params = new URLSearchParams();
    const path = $("graph-path").value.trim(), query = $("graph-query").value.trim();
    if (path) params.set("path", path); else if (query) params.set("query", query);
    const hash = "#graph?" + params.toString();
    if (location.hash === hash) drawGraph(params); else location.hash = hash;
  });
  enablePanZoom();
  window.addEventListener("hashchange", route);
  route();
}

document.addEventListener("DOMContentLoaded", start);
