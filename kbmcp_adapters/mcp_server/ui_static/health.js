// kb-mcp's page: the health view (status, doctor's findings, a running index run's progress)
// and the button that updates the index, which a read-only replica does not offer.
"use strict";

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
  if (!reply.ok) {  // no index yet, most often: building one is the way out
    $("rebuild-row").hidden = false;
    $("read-only-note").hidden = true;
    $("status").replaceChildren();
    $("findings").replaceChildren();
    $("doctor-summary").textContent = (reply.data.error || {}).message || "health unavailable";
    return;
  }
  const s = reply.data.status;
  const last = s.last_run || {};
  $("rebuild-row").hidden = Boolean(s.read_only);  // a replica's index is the writer's to update
  $("read-only-note").hidden = !s.read_only;
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
  const each = reply.data.collections || [];
  $("collections-health").hidden = each.length === 0;
  $("collections-table").tBodies[0].replaceChildren(...each.map((c) => el("tr", { "data-collection": c.name },
    el("td", { text: c.name }), el("td", { text: String(c.documents) }),
    el("td", { text: c.last_run && c.last_run.finished_at ? c.last_run.finished_at
      : c.indexing ? c.indexing.status : c.indexed ? "never" : "no index yet" }),
    el("td", { text: c.watcher && c.watcher.alive ? "watching" : "not watching" }),
    el("td", { text: !c.indexed ? "—" : c.healthy ? "healthy" : "findings below" }))));
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
    // a run still going on after the call's wait (or another's run) answers its state
    $("rebuild-result").textContent = !reply.ok ? "Refused: " + reply.data.error.message
      : reply.data.state !== "finished" ? "Still running (" + reply.data.message + ")."
      : "Done in " + Number(reply.data.seconds).toFixed(1) + " s: " + reply.data.added + " added, " +
        reply.data.updated + " updated, " + reply.data.deleted + " deleted.";
  } catch (e) {
    // the token form is showing
  } finally {
    $("rebuild").disabled = false;
    showHealth();
  }
}
