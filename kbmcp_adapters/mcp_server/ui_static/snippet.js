// kb-mcp's page: a hit's text as readable Markdown, built from DOM nodes and text only.
// The document's text is never parsed as HTML: each run of it becomes a text node inside an
// element this file chooses (<code>, <pre>, <strong>, <em>, <mark>). Markup characters the
// reader does not need (`#` of a heading, `**`, backticks, fences, a link's target) are left
// out; everything else is shown as written. Offsets are in code points, as the server's
// match spans are.
"use strict";

// The characters from `from` looking for `seq` before `to`; its index or -1.
function findSeq(chars, from, to, seq) {
  const want = Array.from(seq);
  for (let i = from; i + want.length <= to; i++) {
    let ok = true;
    for (let j = 0; j < want.length && ok; j++) ok = chars[i + j] === want[j];
    if (ok) return i;
  }
  return -1;
}

const SPACE = /\s/u;

// The runs ({from, to, kind}) of one line's inline Markdown, [a, b) of chars.
function inlineRuns(chars, a, b, base) {
  const runs = [];
  let i = a, textStart = a;
  const flush = (end) => { if (end > textStart) runs.push({ from: textStart, to: end, kind: base }); };
  while (i < b) {
    const c = chars[i];
    if (c === "`") {
      let n = 1;
      while (i + n < b && chars[i + n] === "`") n++;
      const close = findSeq(chars, i + n, b, "`".repeat(n));
      if (close > i + n) {
        flush(i);
        runs.push({ from: i + n, to: close, kind: "code" });
        i = close + n; textStart = i; continue;
      }
      i += n; continue;
    }
    if ((c === "*" || c === "_") && chars[i + 1] === c && i + 2 < b && !SPACE.test(chars[i + 2])) {
      const close = findSeq(chars, i + 2, b, c + c);
      if (close > i + 2 && !SPACE.test(chars[close - 1])) {
        flush(i);
        runs.push({ from: i + 2, to: close, kind: "strong" });
        i = close + 2; textStart = i; continue;
      }
    }
    if (c === "*" && i + 1 < b && !SPACE.test(chars[i + 1]) && chars[i + 1] !== "*" &&
        (i === a || SPACE.test(chars[i - 1]))) {
      const close = findSeq(chars, i + 1, b, "*");
      if (close > i + 1 && !SPACE.test(chars[close - 1])) {
        flush(i);
        runs.push({ from: i + 1, to: close, kind: "em" });
        i = close + 1; textStart = i; continue;
      }
    }
    const image = c === "!" && chars[i + 1] === "[";
    if ((c === "[" && chars[i + 1] !== "[" && chars[i - 1] !== "[") || image) {
      const open = image ? i + 2 : i + 1;
      const close = findSeq(chars, open, b, "](");
      const end = close < 0 ? -1 : findSeq(chars, close + 2, b, ")");
      if (close > open && end > close && !chars.slice(open, close).includes("\n")) {
        flush(i);  // a link shows its text; its target is a click away in the document
        runs.push({ from: open, to: close, kind: base });
        i = end + 1; textStart = i; continue;
      }
    }
    i++;
  }
  flush(b);
  return runs;
}

// The blocks of a text: {pre: bool, runs: [...]}, newlines kept as text runs.
function markdownBlocks(chars) {
  const blocks = [];
  let inline = { pre: false, runs: [] };
  let fence = null, pre = null;
  let start = 0;
  while (start <= chars.length) {
    let end = start;
    while (end < chars.length && chars[end] !== "\n") end++;
    const line = chars.slice(start, end).join("");
    const fenceMark = line.match(/^\s*(`{3,}|~{3,})/u);
    if (fence === null && fenceMark) {
      fence = fenceMark[1];
      if (inline.runs.length) blocks.push(inline);
      inline = { pre: false, runs: [] };
      pre = { pre: true, runs: [] };
    } else if (fence !== null && line.trim().startsWith(fence)) {
      blocks.push(pre);
      fence = null; pre = null;
    } else if (fence !== null) {
      if (pre.runs.length) pre.runs.push({ newline: true });
      pre.runs.push({ from: start, to: end, kind: "text" });
    } else {
      if (inline.runs.length) inline.runs.push({ newline: true });
      const heading = line.match(/^(#{1,6})\s+/u);
      if (heading) inline.runs.push(...inlineRuns(chars, start + heading[0].length, end, "heading"));
      else inline.runs.push(...inlineRuns(chars, start, end, "text"));
    }
    start = end + 1;
  }
  if (pre && pre.runs.length) blocks.push(pre);  // a fence the chunk cut before its end
  if (inline.runs.length) blocks.push(inline);
  for (const block of blocks) {  // no blank lines at the end of a block
    while (block.runs.length && block.runs[block.runs.length - 1].newline) block.runs.pop();
  }
  return blocks.filter((block) => block.runs.length);
}

// chars [from, to) as text nodes, with the parts inside `spans` wrapped in <mark>.
function markedText(chars, from, to, spans) {
  const fragment = document.createDocumentFragment();
  let at = from;
  for (const [s, e] of spans) {
    const a = Math.max(s, from), b = Math.min(e, to);
    if (b <= a || a < at) continue;
    if (a > at) fragment.append(chars.slice(at, a).join(""));
    const mark = document.createElement("mark");
    mark.textContent = chars.slice(a, b).join("");
    fragment.append(mark);
    at = b;
  }
  if (to > at) fragment.append(chars.slice(at, to).join(""));
  return fragment;
}

const RUN_TAG = { code: "code", strong: "strong", em: "em", heading: "strong" };

// The hit's text, rendered: `spans` are [start, end) code point offsets to mark.
function renderSnippet(text, spans) {
  const chars = Array.from(text);
  const sorted = [...spans].sort((x, y) => x[0] - y[0]);
  const fragment = document.createDocumentFragment();
  for (const block of markdownBlocks(chars)) {
    const holder = block.pre ? document.createElement("pre") : document.createElement("div");
    const inner = block.pre ? document.createElement("code") : holder;
    if (block.pre) holder.append(inner);
    else holder.className = "md";
    for (const run of block.runs) {
      if (run.newline) { inner.append("\n"); continue; }
      const tag = RUN_TAG[run.kind];
      const target = tag ? document.createElement(tag) : null;
      if (target && run.kind === "heading") target.className = "md-heading";
      (target || inner).append(markedText(chars, run.from, run.to, sorted));
      if (target) inner.append(target);
    }
    fragment.append(holder);
  }
  return fragment;
}

// Where the words of a query occur in a text, as code point spans (when the server sent none).
function wordSpans(text, list) {
  if (!list.length) return [];
  const escaped = list.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp("(" + escaped.join("|") + ")", "giu");
  const spans = [];
  for (const match of text.matchAll(pattern)) {
    const start = Array.from(text.slice(0, match.index)).length;
    spans.push([start, start + Array.from(match[0]).length]);
  }
  return spans;
}
