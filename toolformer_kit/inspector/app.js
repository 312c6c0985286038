// The inspector page. Every piece of corpus or model text is placed with textContent, never
// innerHTML, so documents are displayed exactly as written and can never run as markup.
"use strict";
// tau === null: each candidate's stored decision, made at its tool's own τf (meta.tau_f); moving
// the slider asks what one τf for every tool would keep.
const state = { tool: "", status: "all", tau: null, candOffset: 0, genOffset: 0, task: "", tauF: {} };
const PAGE = 50;
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
const fmt = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(3));
async function getJSON(path, params) {
  const url = path + "?" + new URLSearchParams(params || {}).toString();
  const res = await fetch(url);
  return res.json();
}

const tauParam = () => (state.tau === null ? "" : state.tau);

async function renderCounts() {
  const counts = await getJSON("/api/counts", { tau_f: tauParam() });
  const body = $("counts").querySelector("tbody");
  body.replaceChildren();
  for (const [tool, c] of Object.entries(counts)) {
    const tr = el("tr");
    tr.append(el("td", tool), el("td", c.candidates, "num"), el("td", c.scored, "num"), el("td", c.kept, "num"));
    tr.dataset.tool = tool;
    body.append(tr);
  }
}

function showDocument(row) {
  const box = $("document");
  box.replaceChildren();
  if (row.before === null) { box.append(el("span", "document text not available in this output", "muted")); return; }
  box.append(el("span", row.before), el("mark", row.call_text, "call"), el("span", row.after));
}

async function loadCandidates() {
  const data = await getJSON("/api/candidates", { tool: state.tool, status: state.status, tau_f: tauParam(),
                                                   offset: state.candOffset, limit: PAGE });
  $("cand-total").textContent = `${data.total} candidate(s)`;
  $("cand-page").textContent = `${data.total ? state.candOffset + 1 : 0}–${Math.min(state.candOffset + PAGE, data.total)}`;
  const body = $("candidates").querySelector("tbody");
  body.replaceChildren();
  for (const row of data.rows) {
    const kept = row.kept;
    const tr = el("tr", undefined, kept ? "kept" : "");
    tr.append(el("td", row.tool), el("td", row.doc_id), el("td", row.input ?? row.sample),
              el("td", row.result ?? (row.error || row.status)), el("td", fmt(row.L_eps), "num"),
              el("td", fmt(row.L_call_noresult), "num"), el("td", fmt(row.L_plus), "num"),
              el("td", fmt(row.score), "num"), el("td", kept ? "yes" : "no"));
    tr.addEventListener("click", () => {
      body.querySelectorAll("tr.selected").forEach((r) => r.classList.remove("selected"));
      tr.classList.add("selected");
      showDocument(row);
    });
    body.append(tr);
  }
  if (data.rows.length) showDocument(data.rows[0]);
}

async function loadGenerations() {
  const data = await getJSON("/api/generations", { task: state.task, offset: state.genOffset, limit: PAGE });
  $("gen-total").textContent = `${data.total} generation(s)`;
  $("gen-page").textContent = `${data.total ? state.genOffset + 1 : 0}–${Math.min(state.genOffset + PAGE, data.total)}`;
  const box = $("generations");
  box.replaceChildren();
  for (const g of data.rows) {
    const div = el("div", undefined, "generation");
    div.append(el("span", g.model, "badge"), el("span", g.setting, "badge"), el("span", g.task, "badge"),
               el("span", g.correct ? "correct" : "wrong", "badge " + (g.correct ? "ok" : "bad")), el("br"));
    div.append(el("span", g.prompt, "prompt"));
    for (const seg of g.segments) div.append(seg.call ? el("mark", seg.text, "call") : el("span", seg.text));
    box.append(div);
  }
}

function fillSelect(select, values, allLabel) {
  select.replaceChildren(el("option", allLabel));
  select.firstChild.value = "";
  for (const v of values) { const o = el("option", v); o.value = v; select.append(o); }
}

function switchTab(name) {
  for (const t of ["candidates", "generations"]) {
    $("view-" + t).hidden = t !== name;
    $("tab-" + t).classList.toggle("active", t === name);
  }
}

async function init() {
  const meta = await getJSON("/api/meta");
  $("sources").textContent = meta.sources.join(" · ");
  fillSelect($("tool"), meta.tools, "all tools");
  fillSelect($("task"), meta.tasks, "all tasks");
  state.tauF = meta.tau_f || {};
  const own = Object.entries(state.tauF).map(([tool, tau]) => `${tool} ${tau}`).join(" · ");
  $("tau-value").textContent = own ? `each tool's own (${own})` : "each tool's own";
  $("tab-candidates").addEventListener("click", () => switchTab("candidates"));
  $("tab-generations").addEventListener("click", () => switchTab("generations"));
  $("tool").addEventListener("change", (e) => {
    state.tool = e.target.value;
    state.candOffset = 0;
    if (state.tau === null && state.tauF[state.tool] !== undefined) $("tau").value = state.tauF[state.tool];
    loadCandidates();
  });
  $("status").addEventListener("change", (e) => { state.status = e.target.value; state.candOffset = 0; loadCandidates(); });
  $("tau").addEventListener("input", (e) => {
    state.tau = parseFloat(e.target.value);
    $("tau-value").textContent = state.tau.toFixed(1);
    renderCounts();
    loadCandidates();
  });
  $("task").addEventListener("change", (e) => { state.task = e.target.value; state.genOffset = 0; loadGenerations(); });
  $("cand-prev").addEventListener("click", () => { state.candOffset = Math.max(0, state.candOffset - PAGE); loadCandidates(); });
  $("cand-next").addEventListener("click", () => { state.candOffset += PAGE; loadCandidates(); });
  $("gen-prev").addEventListener("click", () => { state.genOffset = Math.max(0, state.genOffset - PAGE); loadGenerations(); });
  $("gen-next").addEventListener("click", () => { state.genOffset += PAGE; loadGenerations(); });
  await Promise.all([renderCounts(), loadCandidates(), loadGenerations()]);
  if (!meta.candidates && meta.generations) switchTab("generations");
  document.body.dataset.ready = "1";
}
init();
