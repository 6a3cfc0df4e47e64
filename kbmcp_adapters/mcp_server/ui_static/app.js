// kb-mcp's local page: search, read, topics, health, routing and the keyboard.
// Every piece of document data is inserted as text (textContent), never as markup; a hit is
// drawn by hits.js (its Markdown by snippet.js), the health view by health.js, the graph by
// graph.js.
"use strict";

const TOKEN_KEY = "kb-mcp-token";

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
function listOf(id) {
  const value = $(id).value.trim();
  return value ? value.split(/[\s,]+/).filter(Boolean) : undefined;
}

// The search form's fields, each a URL parameter of #search?…; hybrid and 5 are the defaults.
const SEARCH_FIELDS = ["q", "mode", "limit", "chunks_per_document", "path_globs", "tags_any",
  "tags_all", "date_from", "date_to", "category", "topic", "collection"];
const FILTER_FIELDS = new Set(SEARCH_FIELDS.slice(4, -1));

// The form as a shareable address: what a reload, a bookmark or a link opens.
function searchHash() {
  const params = new URLSearchParams();
  for (const id of SEARCH_FIELDS) {
    const value = id === "q" ? $(id).value : $(id).value.trim();
    if (value && value !== ($(id).defaultValue || "hybrid")) params.set(id, value);
  }
  const text = params.toString();
  return "#search" + (text ? "?" + text : "");
}

// An address's search into the form; true when it holds a query.
function fillSearch(params) {
  for (const id of SEARCH_FIELDS) {
    const value = params.get(id);
    $(id).value = value !== null ? value
      : (id === "mode" ? "hybrid" : id === "collection" ? "" : $(id).defaultValue);
  }
  if (SEARCH_FIELDS.some((id) => FILTER_FIELDS.has(id) && params.get(id))) {
    $("search-form").querySelector("details").open = true;
  }
  return Boolean($("q").value.trim());
}

function rememberSearch() {
  const hash = searchHash();
  $("doc-back").setAttribute("href", hash);
  if (location.hash.startsWith("#search") || !location.hash) {
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }
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
  if ($("explain").checked) args.explain = true;
  if ($("collection").value) args.collection = $("collection").value;
  return args;
}

// Where a click on a node of the graph goes (graph.js): the document, in the reader.
function openNode(n) { location.hash = docHash(n.uri); }

function docHash(uri, hit) {
  const params = new URLSearchParams({ uri });
  // the lines that answer (answer_lines) when the hit has them, else all it cites
  const span = hit && hit.answer_lines ? hit.answer_lines : [hit && hit.start_line, hit && hit.end_line];
  if (span[0]) params.set("line", span[0]);
  if (span[1]) params.set("end", span[1]);
  if (hit && hit.page) {
    params.set("page", hit.page);
    if (hit.content) params.set("find", Array.from(folded(hit.content)).slice(0, FIND_CHARS).join(""));
  }
  return "#doc?" + params.toString();
}

let searchSeq = 0;

// The arguments of the hits on show: the same search again (a field's change event as
// focus moves to a hit, the way back from a document) keeps them and their selection.
let shownArgs = null;

async function runSearch(force) {
  const query = $("q").value;
  const seq = ++searchSeq;
  rememberSearch();
  if (!query.trim()) {
    $("hits").replaceChildren();
    $("search-status").textContent = "";
    shownArgs = null;
    return;
  }
  const args = searchArgs();
  const key = JSON.stringify(args);
  if (force !== true && key === shownArgs) return;
  let reply;
  try { reply = await api("search", args); } catch (e) { return; }
  if (seq !== searchSeq) return; // a newer query is on its way
  if (!reply.ok) { showError(reply.data); return; }
  showError(null);
  shownArgs = key;
  renderHits(reply.data, query);
}

function renderHits(data, query) {
  const hits = data.results || [];
  $("search-status").textContent = hitsStatus(data);
  $("hits").dataset.query = query;
  const notes = titleNotes(hits);
  $("hits").replaceChildren(...hits.map((hit, i) => {
    const uri = hit.uri || "kb://doc/" + encodePath(hit.path);
    return hitItem(hit, query, notes[i],
      el("a", { href: docHash(uri, hit), text: hit.title || hit.path }));
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
  let first = parseInt(params.get("line") || "0", 10);
  let last = parseInt(params.get("end") || String(first), 10);
  const page = parseInt(params.get("page") || "0", 10);
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
  // kb://doc/{collection}/{path} on a server of several collections
  const head = name.split("/")[0];
  const inCollection = collectionNames.includes(head) && name.length > head.length + 1;
  $("doc-graph").setAttribute("href", "#graph?" + new URLSearchParams(inCollection
    ? { path: name.slice(head.length + 1), collection: head } : { path: name }));
  let reply;
  try { reply = await api("read", { uri }); } catch (e) { return; }
  if (!reply.ok) {
    const err = reply.data.error || {};
    $("doc-refusal").textContent = "Refused: " + (err.reason || err.message || "unknown reason") +
      (err.code === "not_found" ? " (the server answers this URI as “resource not found”)" : "");
    $("doc-refusal").hidden = false;
    return;
  }
  $("doc-meta").textContent = uri + " · " + reply.data.mime_type + (page ? " · page " + page : "");
  const lines = reply.data.text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  if (page && !first) [first, last] = findLines(lines, params.get("find") || "");
  const items = lines.map((line, i) => {
    const n = i + 1;
    return el("li", { class: n >= first && n <= last && first > 0 ? "cited" : "" }, line || " ");
  });
  if (page && first > 0 && items[first - 1]) {
    items[first - 1].prepend(el("span", { class: "page-tag", text: "page " + page }));
  }
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

// -- views ----------------------------------------------------------------------------------
// ``keepForm``: the first view keeps what the person typed while it waited (see startView).
function route(keepForm) {
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
  else if (shown === "search") {
    if (keepForm === true ? $("q").value.trim() : fillSearch(params)) runSearch();
    $("q").focus();
  }
}

// -- the keyboard: / to search, arrows through the hits, Enter opens (a link's own key) ------
function hitLinks() {
  return $("view-search").hidden ? [] : [...document.querySelectorAll("#hits .hit h3 a")];
}

function selectHit(link) {
  for (const item of document.querySelectorAll("#hits .hit")) {
    item.classList.toggle("selected", item.contains(link));
  }
  link.focus();
  link.scrollIntoView({ block: "nearest" });
}

function onKey(ev) {
  if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const typing = ev.target.closest && ev.target.closest("input, textarea, select, [contenteditable]");
  if (ev.key === "/" && !typing) {
    ev.preventDefault();
    if ($("view-search").hidden) location.hash = $("doc-back").getAttribute("href") || "#search";
    $("q").focus();
    $("q").select();
    return;
  }
  if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
  if (typing && ev.target !== $("q")) return;  // a number field's own arrows
  const links = hitLinks();
  if (!links.length) return;
  const at = links.indexOf(document.activeElement);
  ev.preventDefault();
  if (ev.key === "ArrowUp" && at <= 0) {  // above the first hit: back to the query
    for (const item of document.querySelectorAll("#hits .hit")) item.classList.remove("selected");
    $("q").focus();
    return;
  }
  selectHit(links[Math.min(links.length - 1, ev.key === "ArrowDown" ? at + 1 : at - 1)]);
}

// A server of several collections: the picker lists them (all defaults, or one).
let collectionNames = [];

// False when the server wants a token first (the token form is showing).
async function loadCollections() {
  let reply;
  try { reply = await api("collections"); } catch (e) { return false; }
  const found = reply.ok ? reply.data.collections || [] : [];
  if (found.length < 2) return true;
  collectionNames = found.map((c) => c.name);
  const chosen = new URLSearchParams(location.hash.split("?")[1] || "").get("collection") || "";
  $("collection").replaceChildren(el("option", { value: "", text: "all defaults" }),
    ...found.map((c) => el("option", { value: c.name,
      text: c.name + (c.default ? "" : " (not a default)") })));
  $("collection").value = chosen;
  $("collection-row").hidden = false;
  return true;
}

// True once the person has typed into the search form since the page loaded.
let typedSinceLoad = false;

// The view the address names, once the collections are known (the picker, the links). The
// query box has focus from the start: what the person typed while the collections were on
// their way is theirs, never replaced by the address's (empty) query.
function startView() {
  loadCollections().then((ok) => { if (ok) route(typedSinceLoad); });
}

function start() {
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    $("token-form").hidden = true;
    startView();
    if ($("q").value.trim()) runSearch(true);
  });
  $("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); runSearch(true); });
  $("search-form").addEventListener("input", () => { typedSinceLoad = true; scheduleSearch(); });
  $("search-form").addEventListener("change", scheduleSearch);
  $("rebuild").addEventListener("click", rebuild);
  $("graph-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const hash = graphHash();
    if (location.hash === hash) drawGraph(new URLSearchParams(hash.split("?")[1]));
    else location.hash = hash;
  });
  enablePanZoom();
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", route);
  startView();
}

document.addEventListener("DOMContentLoaded", start);
