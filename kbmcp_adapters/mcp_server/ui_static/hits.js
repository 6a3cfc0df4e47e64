// kb-mcp's pages: a search hit as a person reads it, shared by /ui (app.js) and the MCP App
// views (view.js). Every piece of document data is inserted as text (textContent), never as
// markup; a hit's Markdown is rendered by snippet.js. A hit shows its cited lines (around the
// line matching the most of the query) with the rest of its passage folded; titles that
// collide carry their folder.
"use strict";

const $ = (id) => document.getElementById(id);

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

function words(query) {
  const found = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];
  return [...new Set(found.filter((w) => w.length > 1))].sort((a, b) => b.length - a.length);
}


// A hit's explain (kbmcp_core/explain.py) as lines: the two legs' parts add up to its score.
function explainLines(why) {
  const f = why.fusion;
  const leg = (name, value) => {
    const found = why[name];
    const seen = found ? "#" + found.rank + " " + Number(found[value]).toFixed(4) : "not found";
    return name + " " + seen + " × " + Number(f[name + "_weight"]).toFixed(4) + " = " +
      Number(f[name + "_part"]).toFixed(4);
  };
  const lines = [leg("lexical", "score"), leg("vector", "similarity"),
    "score = " + Number(f.lexical_part + f.vector_part).toFixed(4) + " (" + f.method + ")"];
  if (why.rerank) {
    const r = why.rerank;
    lines.push("rerank: probability " + Number(r.probability).toFixed(3) + ", logit " +
      Number(r.logit).toFixed(2) + ", trust " + Number(r.trust).toFixed(2) +
      ", fused rank " + r.fused_rank);
  }
  return lines;
}

function explainDetails(why) {
  return el("details", { class: "explain" }, el("summary", { text: "why this score" }),
    ...explainLines(why).map((line) => el("div", { text: line })));
}

// What the query's syntax applied and, with explain, what each filter removed.
function searchNotes(data) {
  const notes = [];
  const q = data.query_applied;
  if (q && q.phrases.length) notes.push("phrases: " + q.phrases.map((p) => '"' + p + '"').join(" "));
  if (q && q.excluded.length) notes.push("excluded: " + q.excluded.join(", "));
  const x = data.explain;
  if (x) {
    for (const f of x.filters) notes.push(f.filter + " removed " + f.removed_documents + " documents");
    notes.push("searched " + x.searched_documents + " of " + x.documents + " documents");
  }
  return notes.length ? " — " + notes.join("; ") : "";
}

// Characters of a PDF hit's text the reader looks for to find the hit on its page.
const FIND_CHARS = 80;

function folded(text) { return text.replace(/\s+/gu, " ").trim(); }

function encodePath(path) {
  return encodeURIComponent(path).replace(/%2F/g, "/").replace(/[!'()*]/g,
    (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

// The first and last line (1-based) holding `find` with white space folded; [0, 0] if none.
// A PDF's text has no line numbers of its own: a hit names its page and its text.
function findLines(lines, find) {
  const needle = folded(find);
  if (!needle) return [0, 0];
  let joined = "";
  const startOf = [];
  for (const line of lines) {  // blank lines fold away, as in the hit's text
    startOf.push(joined.length);
    const text = folded(line);
    if (text) joined += text + " ";
  }
  const at = joined.indexOf(needle);
  if (at < 0) return [0, 0];
  const lineAt = (offset) => {
    let i = 0;
    while (i + 1 < startOf.length && startOf[i + 1] <= offset) i++;
    return i + 1;
  };
  return [lineAt(at), lineAt(at + needle.length - 1)];
}


// The marks of a hit's text: the server's spans ([start, end) in code points) or, from an
// older server, the query's words.
function hitMarks(text, query, spans) {
  return Array.isArray(spans) && spans.length ? spans : wordSpans(text, words(query));
}

// Lines of a hit shown at once: the rest of its passage is folded (a click unfolds it).
const SHOWN_LINES = 6;

// The lines of a text, as [start, end) code point offsets.
function lineRanges(chars) {
  const ranges = [];
  let start = 0;
  for (let i = 0; i <= chars.length; i++) {
    if (i === chars.length || chars[i] === "\n") { ranges.push([start, i]); start = i + 1; }
  }
  return ranges;
}

// The lines of its chunk a hit says answer (`answer_lines`), when they are fewer than the
// chunk's own; null otherwise (an older server, or the whole chunk answers).
function answerSpan(hit) {
  const span = hit.answer_lines;
  if (!Array.isArray(span) || span.length !== 2 || !hit.start_line) return null;
  return span[0] !== hit.start_line || span[1] !== hit.end_line ? span : null;
}

// The [first, last) lines to show: from the line above the line that matches the most of the
// query's words (a heading often names it), inside the answering lines [lo, hi) when the hit
// has them, at most SHOWN_LINES, blank lines at the edges left in the folds.
function citedWindow(chars, lines, marks, lo = 0, hi = lines.length) {
  if (lines.length <= SHOWN_LINES) return [0, lines.length];
  const terms = lines.map(() => new Set());
  for (const [s, e] of marks) {
    const at = lines.findIndex(([, end]) => s <= end);
    if (at >= lo && at < hi) terms[at].add(chars.slice(s, e).join("").toLowerCase());
  }
  let best = lo > 0 ? Math.min(lo + 1, lines.length - 1) : -1;
  terms.forEach((found, i) => { if (found.size && (best < 0 || found.size > terms[best].size)) best = i; });
  const blank = (i) => !chars.slice(lines[i][0], lines[i][1]).join("").trim();
  let first = Math.max(0, best - 1);
  while (first < lines.length - 1 && blank(first)) first++;
  let last = Math.min(lines.length, first + SHOWN_LINES);
  while (last > first + 1 && blank(last - 1)) last--;
  return [first, last];
}

function foldOf(chars, lines, from, to, marks, where) {
  const count = lines.slice(from, to).filter(([s, e]) => chars.slice(s, e).join("").trim()).length;
  if (!count) return null;
  const a = lines[from][0], b = lines[to - 1][1];
  const shifted = marks.map(([s, e]) => [s - a, e - a]);
  return el("details", { class: "fold" },
    el("summary", { text: count + (count === 1 ? " more line " : " more lines ") + where }),
    el("div", {}, renderSnippet(chars.slice(a, b).join(""), shifted)));
}

// The hit's text as rendered Markdown, its matches marked, its cited lines shown and the
// lines around them folded.
function hitContent(text, query, spans, hit) {
  const marks = hitMarks(text, query, spans);
  const chars = Array.from(text);
  const lines = lineRanges(chars);
  // the answering lines as lines of this text (its first line is the hit's start_line)
  const span = hit ? answerSpan(hit) : null;
  const lo = span ? Math.max(0, Math.min(lines.length - 1, span[0] - hit.start_line)) : 0;
  const hi = span ? Math.max(lo + 1, Math.min(lines.length, span[1] - hit.start_line + 1)) : lines.length;
  const [first, last] = citedWindow(chars, lines, marks, lo, hi);
  if (first === 0 && last === lines.length) return renderSnippet(text, marks);
  const a = lines[first][0], b = lines[last - 1][1];
  const fragment = document.createDocumentFragment();
  const above = first > 0 ? foldOf(chars, lines, 0, first, marks, "above") : null;
  if (above) fragment.append(above);
  fragment.append(el("div", { class: "cited" },
    renderSnippet(chars.slice(a, b).join(""), marks.map(([s, e]) => [s - a, e - a]))));
  const below = last < lines.length ? foldOf(chars, lines, last, lines.length, marks, "below") : null;
  if (below) fragment.append(below);
  return fragment;
}

function folderOf(path) {
  const cut = path.lastIndexOf("/");
  return cut < 0 ? "(top level)" : path.slice(0, cut + 1);
}

// What each hit's title needs beside it to tell it from another hit titled alike: its folder
// (its whole path when the folder is the same too), or "" when its title is its own.
function titleNotes(hits) {
  const byTitle = new Map();
  for (const hit of hits) {
    const key = (hit.title || hit.path).toLowerCase();
    if (!byTitle.has(key)) byTitle.set(key, new Set());
    byTitle.get(key).add((hit.collection ? hit.collection + ":" : "") + hit.path);
  }
  return hits.map((hit) => {
    const alike = [...byTitle.get((hit.title || hit.path).toLowerCase())];
    if (alike.length < 2) return "";
    const folders = alike.map((p) => folderOf(p.slice(p.indexOf(":") + 1)));
    const folder = folderOf(hit.path);
    return folders.filter((f) => f === folder).length > 1 ? hit.path : folder;
  });
}

// The line under a hit's title: path, heading trail, lines or page, score.
function hitPlace(hit) {
  const span = answerSpan(hit);
  const where = hit.page !== undefined && hit.page !== null ? "page " + hit.page
    : span ? "lines " + span[0] + "–" + span[1] + " of " + hit.start_line + "–" + hit.end_line
      : hit.start_line ? "lines " + hit.start_line + "–" + hit.end_line : "";
  const heading = (hit.heading_path || []).join(" › ") || hit.heading || "";
  // (a PDF page without an outline is its heading: "Page 3" once is enough)
  return [hit.path, heading.toLowerCase() === where ? "" : heading, where,
    "score " + Number(hit.score).toFixed(4)].filter(Boolean).join(" · ");
}

// One hit as a list item; `link` is its title, made by the page (where a click goes).
function hitItem(hit, query, note, link) {
  return el("li", { class: "hit" },
    el("h3", {}, link, " ",
      note ? el("span", { class: "folder", text: note, title: "another hit has this title" }) : null,
      note ? " " : null,
      ...(hit.collection ? [el("span", { class: "badge collection", text: hit.collection,
        title: "the collection this hit comes from" }), " "] : []),
      hit.uri ? null : el("span", { class: "badge off", text: "not offered",
        title: "searchable, but not offered to clients: opening it shows why" })),
    el("div", { class: "where", text: hitPlace(hit) }),
    el("div", { class: "content" }, hitContent(hit.content || "", query, hit.matches, hit)),
    hit.explain ? explainDetails(hit.explain) : null);
}

// The line above the hits: how many, low confidence, the server's notice, the query's syntax.
function hitsStatus(data) {
  const hits = data.results || [];
  return hits.length + (hits.length === 1 ? " hit" : " hits") +
    (data.low_confidence ? " — low confidence: nothing matched clearly" : "") +
    (data.notice ? " — " + data.notice : "") + searchNotes(data);
}
