// kb-mcp's pages (/ui and the MCP App graph view): the connection graph, drawn at the
// coordinates the server laid it out at (kbmcp_core/graph_layout.py, the one force layout
// the tool, the CLI's SVG and these pages share: each connected group by force, the groups
// packed apart so unrelated clusters never tangle); the drawing fits its frame. Nodes are
// coloured by their folder, named in a legend. Labels are shown where they can be read: the seed and the most
// linked documents first, never two overlapping; every other label appears when its node,
// or a neighbour, is pointed at. Titles are inserted as text (textContent), never as markup.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
// Labels shown without pointing: the seeds and this many of the most linked documents.
const GRAPH_LABELS = 16;
const LABEL_CHARS = 28;
const GRAPH_FIELDS = [["graph-depth", "depth"], ["graph-fan", "fan_out"],
  ["graph-max", "max_nodes"], ["graph-threshold", "threshold"]];

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

let view = { x: -400, y: -300, w: 800, h: 600 };

function setView(v) {
  view = v;
  $("graph").setAttribute("viewBox", [v.x, v.y, v.w, v.h].map((n) => n.toFixed(1)).join(" "));
}

// On a server of several collections: the collection the graph is drawn in ("": the default).
let graphCollection = "";

// The graph's URL parameters into the form, and the tool's arguments out of the form.
async function drawGraph(params) {
  const path = params.get("path") || "";
  const query = params.get("query") || "";
  $("graph-path").value = path;
  $("graph-query").value = path ? "" : query;
  for (const [id, key] of GRAPH_FIELDS) if (params.get(key)) $(id).value = params.get(key);
  if (!path && !query) { $("graph-status").textContent = "Give a document path or a query."; return; }
  const args = path ? { path } : { query };
  graphCollection = params.get("collection") || "";
  if (graphCollection) args.collection = graphCollection;
  for (const [id, key] of GRAPH_FIELDS) {
    const n = key === "threshold" ? parseFloat($(id).value) : parseInt($(id).value, 10);
    if (!Number.isNaN(n)) args[key] = n;
  }
  let reply;
  try { reply = await api("graph", args); } catch (e) { return; }
  if (!reply.ok) { $("graph-status").textContent = "Refused: " + reply.data.error.message; $("graph").replaceChildren(); return; }
  renderGraph(reply.data);
}

function graphHash() {
  const params = new URLSearchParams();
  const path = $("graph-path").value.trim(), query = $("graph-query").value.trim();
  if (path) params.set("path", path); else if (query) params.set("query", query);
  if (graphCollection) params.set("collection", graphCollection);
  for (const [id, key] of GRAPH_FIELDS) {
    const value = $(id).value.trim();
    if (value && value !== $(id).defaultValue) params.set(key, value);
  }
  return "#graph?" + params.toString();
}

// What the bounds left out, in words.
function graphSummary(data) {
  const cut = data.truncation || {};
  const bounds = data.bounds || {};
  let text = "Showing " + data.nodes.length + (data.nodes.length === 1 ? " document" : " documents") +
    " and " + data.edges.length + (data.edges.length === 1 ? " link" : " links") + ".";
  if (cut.max_nodes) {
    text += " " + cut.max_nodes + " more related " + (cut.max_nodes === 1 ? "document was" : "documents were") +
      " left out to keep the picture at " + (bounds.max_nodes || data.nodes.length) +
      " documents (raise Max nodes to see them).";
  }
  if (cut.fan_out) {
    text += " " + cut.fan_out + " weaker " + (cut.fan_out === 1 ? "link was" : "links were") +
      " not followed: each document shows only its " + (bounds.fan_out || "") +
      " closest neighbours (raise Fan-out to see more).";
  }
  return text;
}

// -- colours and the legend ------------------------------------------------------------------
const FOLDER_COLOURS = 8;   // the legend's colours; the other folders share the last

// A node's folder: the first folder of its path (a topic group), "(top level)" without one.
function folderGroup(path) {
  const cut = path.indexOf("/");
  return cut < 0 ? "(top level)" : path.slice(0, cut) + "/";
}

// Each folder's colour (most documents first); the legend under the drawing says which.
function folderColours(nodes) {
  const counts = new Map();
  for (const n of nodes) counts.set(folderGroup(n.path), (counts.get(folderGroup(n.path)) || 0) + 1);
  const order = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const colour = new Map(order.map(([folder], i) => [folder, Math.min(i, FOLDER_COLOURS - 1)]));
  const legend = [];
  for (const [folder, count] of order) {
    const c = colour.get(folder);
    const last = legend[legend.length - 1];
    if (c === FOLDER_COLOURS - 1 && last && last.colour === c) {
      last.label = "other folders"; last.count += count;
    } else legend.push({ colour: c, label: folder, count });
  }
  return { of: (path) => colour.get(folderGroup(path)), legend };
}

function showLegend(legend) {
  const items = legend.map((entry) => el("li", {},
    el("span", { class: "swatch c" + entry.colour }), entry.label + " (" + entry.count + ")"));
  items.push(el("li", {}, el("span", { class: "swatch seed" }), "where the graph starts"),
    el("li", { class: "muted", text: "a thicker line: more alike" }));
  $("graph-legend").replaceChildren(...items);
}

function boxesOverlap(a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function renderGraph(data) {
  const started = performance.now();
  const svg = $("graph");
  const colours = folderColours(data.nodes);
  showLegend(colours.legend);
  const at = new Map(data.nodes.map((n) => [n.path, n]));
  const degree = new Map(data.nodes.map((n) => [n.path, 0]));
  const near = new Map(data.nodes.map((n) => [n.path, []]));
  const lines = new Map(data.nodes.map((n) => [n.path, []]));
  const edges = svgEl("g", {});
  for (const e of data.edges) {
    const a = at.get(e.source), b = at.get(e.target);
    if (!a || !b) continue;
    degree.set(a.path, degree.get(a.path) + 1);
    degree.set(b.path, degree.get(b.path) + 1);
    near.get(a.path).push(b.path);
    near.get(b.path).push(a.path);
    const line = svgEl("line", { class: "edge", x1: a.x, y1: a.y, x2: b.x, y2: b.y,
      "stroke-width": (0.5 + 3 * Math.max(0, e.similarity)).toFixed(2) });
    const tip = svgEl("title", {});
    tip.textContent = e.similarity.toFixed(2);
    line.append(tip);
    lines.get(a.path).push(line);
    lines.get(b.path).push(line);
    edges.append(line);
  }
  // fit the view first: labels are sized to read at about 12 px on screen
  const xs = data.nodes.map((n) => n.x), ys = data.nodes.map((n) => n.y);
  const pad = 80;
  if (xs.length) {
    const x0 = Math.min(...xs) - pad, y0 = Math.min(...ys) - pad;
    setView({ x: x0, y: y0, w: Math.max(...xs) + pad - x0, h: Math.max(...ys) + pad - y0 });
  }
  const box = svg.getBoundingClientRect();
  const scale = box.width ? Math.max(view.w / box.width, view.h / box.height) : 1;
  const radius = Math.max(6, 6 * scale);
  const nodes = svgEl("g", {});
  const groups = new Map();
  for (const n of data.nodes) {
    const g = svgEl("g", { class: "node c" + colours.of(n.path) + (n.seed ? " seed" : ""),
      "data-path": n.path });
    const tip = svgEl("title", {});
    tip.textContent = n.title + " — " + n.path;
    const label = svgEl("text", { x: n.x, y: n.y - radius * 1.6, "font-size": (12 * scale).toFixed(1) });
    label.textContent = n.title.length > LABEL_CHARS ? n.title.slice(0, LABEL_CHARS - 1) + "…" : n.title;
    g.append(tip, svgEl("circle", { cx: n.x, cy: n.y, r: (n.seed ? 1.5 : 1) * radius }), label);
    if (n.uri) g.addEventListener("click", () => openNode(n));  // the page's own (app.js, view.js)
    g.addEventListener("pointerenter", () => {
      for (const p of [n.path, ...near.get(n.path)]) groups.get(p).classList.add("lit");
      for (const line of lines.get(n.path)) line.classList.add("lit");
    });
    g.addEventListener("pointerleave", () => {
      for (const other of svg.querySelectorAll(".lit")) other.classList.remove("lit");
    });
    groups.set(n.path, g);
    nodes.append(g);
  }
  svg.replaceChildren(edges, nodes);
  // labels by priority: seeds, then the most linked; one that would overlap a shown one waits
  const order = [...data.nodes].sort((a, b) => (b.seed - a.seed) ||
    (degree.get(b.path) - degree.get(a.path)) || a.path.localeCompare(b.path));
  const shown = [];
  const room = GRAPH_LABELS + data.nodes.filter((m) => m.seed).length;
  const below = radius * 3.2 + 10 * scale;  // from above the node to below it
  for (const n of order) {
    const label = groups.get(n.path).querySelector("text");
    let placed = false;
    for (const shift of shown.length < room ? [0, below] : []) {  // above, else below
      label.setAttribute("y", n.y - radius * 1.6 + shift);
      const box = label.getBBox(), gap = 3 * scale;  // a little air around each label
      const bbox = { x: box.x - gap, y: box.y - gap, width: box.width + 2 * gap,
        height: box.height + 2 * gap };
      if (!shown.some((other) => boxesOverlap(other, bbox))) {
        shown.push(bbox);
        placed = true;
        break;
      }
    }
    if (!placed) {
      label.setAttribute("y", n.y - radius * 1.6);
      label.classList.add("quiet");
    }
  }
  $("graph-status").textContent = graphSummary(data);
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
