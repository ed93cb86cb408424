// The biorag page: the shared helpers, the views, and ask (stages and answer as they come,
// every sentence's citations opening their passage). graph.js, documents.js, runs.js and
// main.js (loaded after this, in that order) hold the other views and the start.
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

// The short answer shown above the sentences: the chosen option (letter and text) or the
// exact answer (yes/no, factoid candidates, list items). A free-text answer has none: its
// sentences are the answer, shown once.
function shortAnswer(ans) {
  const options = ans.question_options || {};
  if (ans.answer && ans.answer in options) return ans.answer + ". " + options[ans.answer];
  const exact = Array.isArray(ans.exact) ? ans.exact.join("; ") : ans.exact;
  if (exact) return exact;
  if (!(ans.sentences || []).length && ans.answer && ans.answer.length <= 20) {
    // an option letter with no options given back, or a one-word answer
    return ans.answer + (ans.answer_text && ans.answer_text !== ans.answer ? ". " + ans.answer_text : "");
  }
  return "";
}

// What the status line says of an answer: "answered" only over something to read.
function outcome(ans) {
  const said = (ans.sentences || []).length || shortAnswer(ans) || (ans.answer || "").trim();
  if (!said) return "no answer: " + ((ans.notes || [])[0] || "the method said nothing");
  return ans.parse_failed ? "answered, but the model's reply could not be read as an answer; shown as it came" : "answered";
}

function render(ans) {
  biorag.answer = ans;
  $("answer").hidden = false; $("draft").hidden = true;
  $("letter").textContent = shortAnswer(ans);
  const numberOf = new Map();
  $("evidence").replaceChildren(...(ans.evidence || []).map((e, i) => {
    // the id sentences cite it by (methods.base.evidence_key)
    const key = e.chunk_id || (e.kind === "triplet" ? "triplet:" + (e.rank || i + 1) : null);
    if (key && !numberOf.has(key)) numberOf.set(key, i + 1);
    return evidenceItem(e, i + 1);
  }));
  const para = $("sentences");
  para.replaceChildren();
  if (!(ans.sentences || []).length && !shortAnswer(ans) && ans.answer) para.append(el("span", ans.answer, "sentence"));
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
    if (support && support.joint && support.joint.label === label) {
      // no passage says it alone: name the ones that do together
      const ns = support.joint.passage_ids.map((c) => numberOf.get(c)).filter(Boolean);
      para.append(el("span", ` (${VERDICT_TEXT[label]} only by ${ns.map((n) => "[" + n + "]").join(" and ")} together)`, "flag joint"));
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
    const asked = { question: $("question").value, options: parseOptions($("options").value),
      method: $("method").value || undefined, stream: true };
    const res = await call("/v1/ask", { method: "POST", json: true, body: JSON.stringify(asked) });
    await readEvents(res, (kind, data) => {
      if (kind === "stage") onStage(data);
      else if (kind === "token") $("draft").textContent += data.text;
      else if (kind === "result") {
        data.question_options = asked.options;
        render(data);
        const said = outcome(data);
        $("status").replaceChildren(said === "answered" ? document.createTextNode(said) : el("span", said, "warning"));
      }
      else if (kind === "error") showError($("status"), data.message);
    });
  } catch (e) { showError($("status"), e.message); }
});

