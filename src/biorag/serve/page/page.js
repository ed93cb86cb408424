// The biorag page: ask (stages and answer as they come, every sentence's citations opening
// their passage), the answer's graph, documents (upload, jobs, remove) and settings.
// Everything that comes from documents or the model is set as text (textContent, or a
// cytoscape label drawn on a canvas), never as markup: a document holding <script> or a link
// cannot run or navigate here.
"use strict";
const $ = (id) => document.getElementById(id);
const biorag = (window.biorag = { answer: null, cy: null });
$("key").value = sessionStorage.getItem("biorag-key") || "";

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function headers(json) {
  const h = json ? { "Content-Type": "application/json" } : {};
  const key = $("key").value.trim();
  if (key) { h["Authorization"] = "Bearer " + key; sessionStorage.setItem("biorag-key", key); }
  return h;
}

async function call(path, options) {
  const opts = options || {};
  const res = await fetch(path, { ...opts, headers: { ...headers(opts.json), ...(opts.headers || {}) } });
  if (!res.ok) {
    const data = await res.json().catch(() => ({}));
    if (res.status === 401) $("keybox").open = true;
    throw new Error((data.error && data.error.message) || res.statusText);
  }
  return res;
}
const getJSON = async (path) => (await call(path)).json();

// Server-Sent Events over fetch (EventSource cannot POST or send a key).
async function readEvents(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(event, JSON.parse(data));
    }
  }
}

function showError(where, message) {
  where.replaceChildren(el("span", message, "error"));
}

// -- views ------------------------------------------------------------------------------------
function showView(name) {
  for (const tab of document.querySelectorAll(".tab")) {
    if (tab.dataset.view === name) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "view-" + name;
  if (name === "graph") drawGraph();
  if (name === "documents") loadDocuments(true);
  if (name === "settings") loadSettings();
  if (name === "runs") loadRuns();
  history.replaceState(null, "", "#" + name);
}
for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showView(tab.dataset.view));

// -- ask --------------------------------------------------------------------------------------
async function loadMethods() {
  try {
    const data = await getJSON("/v1/methods");
    const select = $("method");
    select.replaceChildren();
    for (const m of data.methods) {
      const o = el("option", m);
      o.value = m; o.selected = m === data.default;
      select.append(o);
    }
    $("runmethods").replaceChildren(...data.methods.map((m) => Object.assign(el("option", m), { value: m })));
  } catch (e) { showError($("status"), "methods: " + e.message); }
}

function parseOptions(text) {
  const options = {};
  for (const line of text.split("\n")) {
    const m = line.match(/^\s*([A-Za-z0-9]{1,3})\s*[:.)]\s*(.+)$/);
    if (m) options[m[1].toUpperCase()] = m[2].trim();
  }
  return options;
}

const words = (text) => new Set((text.toLowerCase().match(/[a-z0-9]{4,}/g) || []));

// The passage's sentence that shares the most words with the answer sentence, marked.
function markedPassage(text, sentence) {
  const out = el("div");
  const parts = text.split(/(?<=[.!?])\s+/);
  const want = words(sentence || "");
  let best = -1, bestScore = 0;
  parts.forEach((p, i) => {
    const score = [...words(p)].filter((w) => want.has(w)).length;
    if (score > bestScore) { best = i; bestScore = score; }
  });
  parts.forEach((p, i) => {
    out.append(i === best ? el("mark", p) : document.createTextNode(p));
    if (i < parts.length - 1) out.append(document.createTextNode(" "));
  });
  return out;
}

// The verifier's deciding span (character offsets into the passage), marked as it is.
function spanPassage(text, span) {
  const out = el("div");
  out.append(document.createTextNode(text.slice(0, span.start)), el("mark", text.slice(span.start, span.end)), document.createTextNode(text.slice(span.end)));
  return out;
}

const VERDICT_TEXT = { supported: "supported", partly_supported: "partly supported", not_supported: "not supported", contradicted: "contradicted" };

function showEvidence(n, sentence, verdict) {
  for (const li of $("evidence").children) {
    const on = li.dataset.n === String(n);
    li.classList.toggle("shown", on);
    const old = li.querySelector(".verdict");
    if (old) old.remove();
    if (on) {
      const text = li.dataset.text, span = verdict && verdict.span;
      // offsets are code points on the server and UTF-16 units here: mark only a span that reads the same
      const good = span && span.end > span.start && text.slice(span.start, span.end) === span.text;
      li.querySelector(".passage").replaceWith(Object.assign(good ? spanPassage(text, span) : markedPassage(text, sentence), { className: "passage" }));
      if (verdict) {
        const v = el("p", "This passage: " + VERDICT_TEXT[verdict.label] + (verdict.reason ? " (" + verdict.reason + ")" : ""), "verdict " + verdict.label);
        li.append(v);
      }
      li.scrollIntoView({ block: "nearest" });
      li.focus();
    }
  }
}

async function openDocument(e) {
  try {
    const doc = await getJSON("/v1/documents/" + encodeURIComponent(e.doc_id || e.source_id));
    $("doctitle").textContent = doc.title || doc.source_id || doc.id;
    $("docmeta").textContent = [doc.corpus, doc.source_id, doc.id].filter(Boolean).join(" · ");
    const text = doc.text || "", start = e.start || 0, end = e.end || 0;
    const box = $("doctext");
    box.replaceChildren();
    if (end > start && end <= text.length) {
      box.append(document.createTextNode(text.slice(0, start)), el("mark", text.slice(start, end)), document.createTextNode(text.slice(end)));
    } else box.textContent = text;
    $("docview").hidden = false;
    const mark = box.querySelector("mark");
    if (mark) mark.scrollIntoView({ block: "center" });
    $("docclose").focus();
  } catch (err) { showError($("status"), "document: " + err.message); }
}
$("docclose").addEventListener("click", () => { $("docview").hidden = true; });

function evidenceItem(e, n) {
  const li = el("li");
  li.dataset.n = String(n); li.dataset.text = e.text || ""; li.tabIndex = -1;
  const where = el("div", [e.corpus, e.title, e.source_id].filter(Boolean).join(" · "), "muted");
  if (/^\d+$/.test(e.source_id || "")) {
    const a = el("a", " PubMed");
    a.href = "https://pubmed.ncbi.nlm.nih.gov/" + e.source_id + "/";
    a.rel = "noopener noreferrer"; a.target = "_blank";
    where.append(a);
  }
  if (e.kind !== "triplet" && (e.doc_id || e.source_id)) {
    const open = el("button", "whole document", "link");
    open.type = "button";
    open.addEventListener("click", () => openDocument(e));
    where.append(document.createTextNode(" "), open);
  }
  const passage = el("div", e.text || "", "passage");
  li.append(where, passage);
  return li;
}

function render(ans) {
  biorag.answer = ans;
  $("answer").hidden = false; $("draft").hidden = true;
  $("letter").textContent = ans.answer ? (ans.answer + (ans.answer_text && ans.answer_text !== ans.answer ? ". " + ans.answer_text : "")) : "";
  const numberOf = new Map();
  $("evidence").replaceChildren(...(ans.evidence || []).map((e, i) => {
    // the id sentences cite it by (methods.base.evidence_key)
    const key = e.chunk_id || (e.kind === "triplet" ? "triplet:" + (e.rank || i + 1) : null);
    if (key && !numberOf.has(key)) numberOf.set(key, i + 1);
    return evidenceItem(e, i + 1);
  }));
  const para = $("sentences");
  para.replaceChildren();
  for (const s of ans.sentences || []) {
    const support = s.support || null, label = support ? support.label : "";
    const sent = el("span", s.text, "sentence" + (label ? " " + label : ""));
    if (label) sent.dataset.support = label;
    para.append(sent);
    if (label && !(s.chunk_ids || []).length) {
      para.append(el("span", " (no source cited)", "flag uncited"));
    } else if (label === "not_supported" || label === "contradicted") {
      const flag = el("span", label === "contradicted" ? " ⚠ contradicted by its sources" : " ⚠ not supported by its sources", "flag " + label);
      para.append(flag);
    }
    para.append(document.createTextNode(" "));
    const verdictOf = new Map(((support && support.verdicts) || []).map((v) => [v.passage_id, v]));
    for (const c of s.chunk_ids || []) {
      const n = numberOf.get(c);
      if (!n) continue;
      const b = el("button", "[" + n + "]", "cite");
      b.type = "button";
      b.setAttribute("aria-label", "show evidence " + n);
      b.addEventListener("click", () => showEvidence(n, s.text, verdictOf.get(c)));
      para.append(b);
    }
    para.append(document.createTextNode(" "));
  }
  const ver = ans.verification;
  $("verification").textContent = ver ? `Sentences checked (${ver.verifier === "llm" ? "by the model" : "by rules, a floor"}): ` + Object.entries(ver.counts || {}).filter(([, n]) => n).map(([k, n]) => `${n} ${VERDICT_TEXT[k] || k}`).join(", ") : "";
  $("notes").textContent = (ans.notes || []).join(" · ");
  const acc = ans.accounting || {}, total = acc.total || {};
  $("accounting").textContent = `LLM calls ${total.calls || 0}, tokens ${(total.prompt_tokens || 0) + (total.completion_tokens || 0)}, ${(acc.wall_s || 0).toFixed(2)} s`;
}

function onStage(ev) {
  const list = $("stages");
  let li = list.querySelector(`li[data-stage="${CSS.escape(ev.stage)}"]`);
  if (!li) { li = el("li"); li.dataset.stage = ev.stage; list.append(li); }
  li.className = ev.status;
  li.textContent = ev.stage + (ev.status === "started" ? " …" : ev.status === "finished" ? ` ✓ ${ev.seconds.toFixed(2)} s` : " failed");
}

$("ask").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("status").textContent = "answering…";
  $("stages").replaceChildren(); $("answer").hidden = true; $("docview").hidden = true;
  $("draft").textContent = ""; $("draft").hidden = false;
  try {
    const res = await call("/v1/ask", { method: "POST", json: true, body: JSON.stringify({
      question: $("question").value, options: parseOptions($("options").value),
      method: $("method").value || undefined, stream: true }) });
    await readEvents(res, (kind, data) => {
      if (kind === "stage") onStage(data);
      else if (kind === "token") $("draft").textContent += data.text;
      else if (kind === "result") { render(data); $("status").textContent = "answered"; }
      else if (kind === "error") showError($("status"), data.message);
    });
  } catch (e) { showError($("status"), e.message); }
});

// -- graph ------------------------------------------------------------------------------------
// CLAIMS: entity nodes, one edge per claim (its predicate), key claims bold, summary roots
// thick. VectorGraphRAG: its ranked triplets. A click walks to the claim, its chunk and document.
function graphElements(ans) {
  const d = ans.details || {}, g = d.graph || {};
  const nodes = [], edges = [];
  if (g.nodes && g.edges) {
    const key = new Set((d.claims_of_interest || []).map((c) => c.id));
    const roots = new Set((d.summaries || []).map((s) => s.root_claim_id));
    const claims = new Map((d.claims || []).map((c) => [c.id, c]));
    for (const n of g.nodes) nodes.push({ data: { id: "n:" + n.id, label: n.name } });
    for (const e of g.edges) {
      edges.push({ data: { id: "e:" + e.claim_id, source: "n:" + e.source, target: "n:" + e.target,
        label: e.predicate, claim: claims.get(e.claim_id) || { text: `${e.subject} ${e.predicate} ${e.object}` },
        key: key.has(e.claim_id) ? 1 : 0, root: roots.has(e.claim_id) ? 1 : 0 } });
    }
  } else {
    const ids = new Map();
    const node = (name) => {
      if (!ids.has(name)) { ids.set(name, "t:" + ids.size); nodes.push({ data: { id: ids.get(name), label: name } }); }
      return ids.get(name);
    };
    (ans.evidence || []).filter((e) => e.kind === "triplet").forEach((e, i) => {
      edges.push({ data: { id: "x:" + i, source: node(e.subject), target: node(e.object), label: e.predicate,
        claim: { text: e.text, source_id: e.source_id }, key: i < 3 ? 1 : 0, root: 0 } });
    });
  }
  return { nodes, edges };
}

function pick(claim) {
  const box = $("graphpick");
  box.replaceChildren(el("strong", "Claim: "), document.createTextNode(claim.text || ""));
  const chunkOf = (biorag.answer.evidence || []).find((e) => e.chunk_id && e.chunk_id === claim.chunk_id);
  if (chunkOf) {
    const walk = el("button", "its passage and document", "link");
    walk.type = "button";
    walk.addEventListener("click", () => { showView("ask"); const n = (biorag.answer.evidence || []).indexOf(chunkOf) + 1; showEvidence(n, claim.text); openDocument(chunkOf); });
    box.append(document.createTextNode(" "), walk);
  } else if (claim.source_id) box.append(el("span", " (from " + claim.source_id + ")", "muted"));
}

function drawGraph() {
  const ans = biorag.answer;
  if (!ans || biorag.drawn === ans) return;  // drawn already, or a KG exploration is shown
  biorag.drawn = ans;
  const els = graphElements(ans);
  $("graphnote").textContent = els.edges.length
    ? `${els.nodes.length} entities, ${els.edges.length} claims or triplets (method ${ans.method}); bold: key claims. Select an edge to see its claim.`
    : `The ${ans.method} method builds no graph for its answer.`;
  drawElements(els, (d) => pick(d.claim));
  showLayers(ans);
}

// CLAIMS: each key claim (its test summary), the sizes of the layers summarized around it, and
// the summary the reader was given; a button selects the claim's edge in the graph.
function showLayers(ans) {
  const d = ans.details || {};
  const summaries = d.summaries || [];
  $("layers").hidden = summaries.length === 0;
  const key = new Map((d.claims_of_interest || []).map((c) => [c.id, c]));
  const claims = new Map((d.claims || []).map((c) => [c.id, c]));
  $("summaries").replaceChildren(...summaries.map((s) => {
    const li = el("li");
    const root = key.get(s.root_claim_id) || claims.get(s.root_claim_id) || { text: s.root_claim_id };
    const show = el("button", "key claim", "link");
    show.type = "button";
    show.addEventListener("click", () => {
      const edge = biorag.cy && biorag.cy.getElementById("e:" + s.root_claim_id);
      if (edge && edge.length) { biorag.cy.elements().unselect(); edge.select(); }
      pick(claims.get(s.root_claim_id) || root);
    });
    li.append(show, document.createTextNode(": " + root.text));
    if (root.test_summary) li.append(el("div", "test summary: " + root.test_summary, "muted"));
    const n = (s.claim_ids || []).length;
    li.append(el("div", `layers: ${(s.layer_sizes || []).join(" → ") || "–"} (claims in each layer; ${n} claim${n === 1 ? "" : "s"} in all)`, "muted"));
    li.append(el("div", s.text));
    return li;
  }));
}

// The served knowledge graphs: an entity's neighbourhood (a click on a node walks on from it,
// on an edge shows its triplet and source), and BioStrataKG's question families.
async function loadGraphs() {
  try {
    const stats = await getJSON("/v1/kg/stats");
    const names = Object.keys(stats);
    $("kgname").replaceChildren(...names.map((n) => Object.assign(el("option", `${n} (${stats[n].entities} entities)`), { value: n })));
    $("explore").hidden = names.length === 0;
    $("strata").hidden = !("strata" in stats);
  } catch (e) { /* no key yet */ }
}

function drawElements(els, onEdge, onNode) {
  if (biorag.cy) biorag.cy.destroy();
  biorag.cy = cytoscape({
    container: $("cy"), elements: els, wheelSensitivity: 0.3,
    layout: { name: els.nodes.length > 80 ? "grid" : "cose", animate: false },
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 10, "background-color": "#0b5cad", width: 14, height: 14, "text-wrap": "ellipsis", "text-max-width": 120 } },
      { selector: "node[center = 1]", style: { "background-color": "#c25e00", width: 22, height: 22, "font-weight": "bold" } },
      { selector: "edge", style: { label: "data(label)", "font-size": 8, width: "mapData(root, 0, 1, 1.5, 4)", "line-color": "#9aa5b1", "target-arrow-shape": "triangle", "target-arrow-color": "#9aa5b1", "curve-style": "bezier", "text-rotation": "autorotate" } },
      { selector: "edge[key = 1]", style: { "line-color": "#c25e00", "target-arrow-color": "#c25e00", "font-weight": "bold" } },
      { selector: ":selected", style: { "line-color": "#f0b400", "background-color": "#f0b400" } },
    ],
  });
  biorag.cy.on("tap", "edge", (evt) => onEdge(evt.target.data()));
  if (onNode) biorag.cy.on("tap", "node", (evt) => onNode(evt.target.data("label")));
  // the same edges as buttons: the canvas cannot be walked by keyboard
  const label = (id) => biorag.cy.getElementById(id).data("label");
  $("edgelist").replaceChildren(...els.edges.slice(0, 500).map((e) => {
    const b = el("button", `${label(e.data.source)} — ${e.data.label} → ${label(e.data.target)}`, "link");
    b.type = "button";
    b.addEventListener("click", () => {
      biorag.cy.elements().unselect();
      biorag.cy.getElementById(e.data.id).select();
      onEdge(e.data);
    });
    const li = el("li"); li.append(b);
    return li;
  }));
}

async function explore(entity) {
  $("entity").value = entity;
  try {
    const hood = await getJSON(`/v1/kg/neighbourhood?direction=both&entity=${encodeURIComponent(entity)}&graph=${encodeURIComponent($("kgname").value || "kg")}`);
    if (!hood.found) {
      $("graphnote").textContent = `No entity "${entity}" in the graph.` + (hood.suggestions.length ? " Did you mean: " + hood.suggestions.join(", ") + "?" : "");
      return;
    }
    const nodes = hood.nodes.map((n) => ({ data: { id: "k:" + n.id, label: n.label, center: n.center ? 1 : 0 } }));
    const edges = hood.edges.map((e, i) => ({ data: { id: "ke:" + i, source: "k:" + e.source, target: "k:" + e.target, label: e.predicate, key: 0, root: 0, triplet: e } }));
    $("graphnote").textContent = `${entity}: ${edges.length} triplets around it. Select a node to walk on, an edge to see its source.`;
    drawElements({ nodes, edges }, (d) => {
      const t = d.triplet, box = $("graphpick");
      box.replaceChildren(el("strong", "Triplet: "), document.createTextNode(`${t.source} — ${t.predicate} → ${t.target}`),
        el("span", ` (from ${t.source_id || "?"}, ${t.model || "?"})`, "muted"));
      if (/^\d+$/.test(t.source_id || "")) {
        const a = el("a", " PubMed");
        a.href = "https://pubmed.ncbi.nlm.nih.gov/" + t.source_id + "/"; a.rel = "noopener noreferrer"; a.target = "_blank";
        box.append(a);
      }
    }, explore);
  } catch (e) { showError($("graphnote"), e.message); }
}
$("explore").addEventListener("submit", (ev) => { ev.preventDefault(); explore($("entity").value.trim()); });

$("strata").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const list = $("sresult");
  try {
    const data = await getJSON(`/v1/strata/${$("squery").value}?name=${encodeURIComponent($("sname").value.trim())}`);
    const r = data.result, rows = [];
    if (data.query === "methods-of") {
      for (const k of ["methods", "datasets"]) rows.push(`${k}: ` + (r[k].map(([m, n]) => `${m} (${n})`).join(", ") || "none"));
    } else {
      for (const x of r) {
        if (data.query === "drugs-for") rows.push(`${x.drug} ${x.relation} (papers: ${x.papers.join(", ")})`);
        else if (data.query === "gene-disease") rows.push(`${x.path.join(" → ")} (papers: ${x.papers.join(", ")})`);
        else if (data.query === "drug-drug") rows.push(`${x.direction === "out" ? x.drug : x.other} ${x.relation} ${x.direction === "out" ? x.other : x.drug} (papers: ${x.papers.join(", ")})`);
        else rows.push(`${x.pid} (${x.year || "-"}) ${x.title}`);
      }
    }
    list.replaceChildren(...(rows.length ? rows : ["no results"]).map((t) => el("li", t)));
  } catch (e) { showError(list, e.message); }
});

// -- documents ----------------------------------------------------------------------------------
let docOffset = 0;
async function loadIndexes() {
  try {
    const ready = await (await fetch("/ready")).json();
    $("index").replaceChildren(...(ready.indexes || []).map((n) => Object.assign(el("option", n), { value: n })));
  } catch (e) { /* the server is starting */ }
}

async function loadDocuments(reset) {
  if (reset) { docOffset = 0; $("doclist").replaceChildren(); }
  try {
    const index = $("index").value;
    const page = await getJSON(`/v1/documents?offset=${docOffset}&limit=50` + (index ? "&index=" + encodeURIComponent(index) : ""));
    $("doccount").textContent = `(${page.total} in ${page.corpus})`;
    for (const d of page.documents) {
      const tr = el("tr");
      const remove = el("button", "remove", "remove");
      remove.type = "button";
      remove.setAttribute("aria-label", "remove document " + (d.source_id || d.id));
      remove.addEventListener("click", () => removeDocument(d));
      const cell = el("td"); cell.append(remove);
      tr.append(el("td", d.source_id), el("td", d.title), el("td", d.state), el("td", String(d.chunks)), cell);
      $("doclist").append(tr);
    }
    docOffset += page.documents.length;
    $("more").hidden = docOffset >= page.total;
  } catch (e) { showError($("docstatus"), e.message); }
  loadJobs();
}
$("more").addEventListener("click", () => loadDocuments(false));
$("index").addEventListener("change", () => loadDocuments(true));

function jobItem(job) {
  let li = $("jobs").querySelector(`li[data-id="${job.id}"]`);
  if (!li) { li = el("li"); li.dataset.id = job.id; $("jobs").prepend(li); }
  const what = job.kind === "add" ? `add ${job.files.length} file(s)` : `remove ${job.keys.join(", ")}`;
  const bar = el("progress");
  bar.max = job.total || 1; bar.value = job.status === "done" ? bar.max : job.done || 0;
  bar.setAttribute("aria-label", "progress of job " + job.id);
  const r = job.report || {};
  const outcome = job.status === "done"
    ? (job.kind === "add" ? `${r.documents_new} new, ${r.documents_total} in all, ${r.skipped || 0} skipped` : `${r.documents_removed} removed`)
    : job.status === "failed" ? job.error : `${job.step || "waiting"} ${job.done}/${job.total ?? "?"}`;
  li.className = "job " + job.status;
  li.replaceChildren(el("span", `${what} → ${job.index}: ${job.status} `), bar, el("span", " " + (outcome || ""), job.status === "failed" ? "error" : "muted"));
}

async function follow(jobId) {
  try {
    const res = await call(`/v1/jobs/${jobId}/events`);
    await readEvents(res, (kind, job) => {
      jobItem(job);
      if (job.status === "done") loadDocuments(true);
    });
  } catch (e) { showError($("docstatus"), e.message); }
}

async function loadJobs() {
  try {
    const { jobs } = await getJSON("/v1/jobs");
    for (const job of jobs.slice(0, 20).reverse()) {
      const known = $("jobs").querySelector(`li[data-id="${job.id}"]`);
      jobItem(job);
      if (!known && (job.status === "queued" || job.status === "running")) follow(job.id);
    }
  } catch (e) { /* shown by the document list */ }
}

$("upload").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const form = new FormData();
  for (const f of $("files").files) form.append("files", f, f.name);
  form.append("format", $("format").value);
  if ($("index").value) form.append("index", $("index").value);
  $("docstatus").textContent = "uploading…";
  try {
    const job = await (await call("/v1/documents", { method: "POST", body: form })).json();
    $("docstatus").textContent = "uploaded; the job runs";
    jobItem(job);
    follow(job.id);
    $("files").value = "";
  } catch (e) { showError($("docstatus"), e.message); }
});

async function removeDocument(d) {
  if (!confirm(`Remove document ${d.source_id || d.id} from the index?`)) return;
  try {
    const index = $("index").value;
    const job = await (await call("/v1/documents/" + encodeURIComponent(d.id) + (index ? "?index=" + encodeURIComponent(index) : ""), { method: "DELETE" })).json();
    jobItem(job);
    follow(job.id);
  } catch (e) { showError($("docstatus"), e.message); }
}

// -- runs -----------------------------------------------------------------------------------------
// The headline score of a method: accuracy where there is one, else the first score.
function headline(scores) {
  if (!scores) return null;
  const key = "accuracy" in scores ? "accuracy" : Object.keys(scores)[0];
  return key === undefined ? null : [key, scores[key]];
}

let following = null;
async function loadRuns() {
  try {
    const { runs } = await getJSON("/v1/runs");
    $("runlist").replaceChildren(...runs.map((r) => {
      const tr = el("tr");
      const scores = Object.entries(r.scores || {}).map(([m, s]) => { const h = headline(s); return h ? `${m} ${h[0]} ${h[1].toFixed(3)}` : m; });
      const status = r.status === "running" ? `running ${r.done || 0}/${r.total ?? "?"}` : r.status + (r.error ? ": " + r.error : "");
      const open = el("button", "open", "link");
      open.type = "button";
      open.addEventListener("click", () => openRun(r.name));
      const cell = el("td"); cell.append(open);
      tr.append(el("td", r.name), el("td", r.dataset || ""), el("td", status), el("td", scores.join("; ") || (r.methods || []).join(", ")), cell);
      return tr;
    }));
    for (const id of ["cmpa", "cmpb"]) {
      const keep = $(id).value;
      $(id).replaceChildren(...runs.map((r) => Object.assign(el("option", r.name), { value: r.name })));
      if (keep) $(id).value = keep;
    }
    if ($("cmpb").options.length > 1 && !$("cmpb").dataset.touched) $("cmpb").selectedIndex = 1;
    const busy = runs.some((r) => r.status === "running" || r.status === "queued");
    clearTimeout(following);
    if (busy && !$("view-runs").hidden) following = setTimeout(loadRuns, 1000);
  } catch (e) { showError($("runstatus"), e.message); }
}
$("cmpb").addEventListener("change", () => { $("cmpb").dataset.touched = "1"; });

async function openRun(name) {
  try {
    const run = await getJSON("/v1/runs/" + encodeURIComponent(name));
    $("rundetail").hidden = false;
    $("runtitle").textContent = `${name}: ${run.dataset || ""} (${run.status})`;
    const chart = $("runchart");
    chart.replaceChildren();
    for (const [method, scores] of Object.entries(run.scores || {})) {
      const h = headline(scores);
      if (!h) continue;
      const row = el("div", undefined, "bar"), fill = el("div", undefined, "fill");
      fill.style.width = Math.max(0, Math.min(1, h[1])) * 100 + "%";
      const track = el("div"); track.append(fill);
      row.append(el("span", `${method} (${h[0]})`), track, el("span", h[1].toFixed(3)));
      chart.append(row);
    }
    const { answers } = await getJSON(`/v1/runs/${encodeURIComponent(name)}/answers?limit=200`);
    $("runanswers").replaceChildren(...answers.map((a) => {
      const tr = el("tr");
      tr.append(el("td", a.question_id), el("td", a.method), el("td", a.error ? "error: " + a.error : (a.prediction ?? "")),
        el("td", Array.isArray(a.gold) ? a.gold.join(", ") : String(a.gold ?? "")), el("td", a.correct === true ? "yes" : a.correct === false ? "no" : "–"));
      return tr;
    }));
  } catch (e) { showError($("runstatus"), e.message); }
}

$("newrun").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const methods = [...$("runmethods").selectedOptions].map((o) => o.value);
  if (!methods.length) { showError($("runstatus"), "select at least one method"); return; }
  try {
    await call("/v1/runs", { method: "POST", json: true, body: JSON.stringify({
      name: $("runname").value.trim(), dataset: $("rundataset").value, data: $("rundata").value.trim(),
      methods, limit: Number($("runlimit").value) || 20 }) });
    $("runstatus").textContent = "started";
    loadRuns();
  } catch (e) { showError($("runstatus"), e.message); }
});

$("compare").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    const cmp = await getJSON(`/v1/runs/compare?a=${encodeURIComponent($("cmpa").value)}&b=${encodeURIComponent($("cmpb").value)}`);
    const rows = [el("tr")];
    rows[0].append(el("th", "method"), el("th", "score"), el("th", cmp.a), el("th", cmp.b));
    for (const [method, sides] of Object.entries(cmp.methods)) {
      const keys = [...new Set([...Object.keys(sides.a || {}), ...Object.keys(sides.b || {})])];
      for (const k of keys) {
        const tr = el("tr");
        const fmt = (s) => (s && k in s ? s[k].toFixed(3) : "–");
        tr.append(el("td", method), el("td", k), el("td", fmt(sides.a)), el("td", fmt(sides.b)));
        rows.push(tr);
      }
    }
    $("cmpresult").replaceChildren(...rows);
  } catch (e) { showError($("runstatus"), e.message); }
});

// -- settings -----------------------------------------------------------------------------------
async function loadSettings() {
  try { $("config").textContent = JSON.stringify(await getJSON("/v1/config"), null, 2); }
  catch (e) { showError($("config"), e.message); }
}

$("key").addEventListener("change", () => { loadMethods(); loadIndexes(); loadGraphs(); });
loadMethods();
loadIndexes();
loadGraphs();
const start = location.hash.slice(1);
if (["ask", "graph", "documents", "runs", "settings"].includes(start)) showView(start);
