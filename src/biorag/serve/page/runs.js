// The biorag page, its runs view: start evaluation runs, follow them, read their answers and compare two (after page.js, which holds the shared helpers).
// Text from documents, models and runs is set as text, never as markup.
"use strict";

// -- runs -----------------------------------------------------------------------------------------
// The headline score of a method: accuracy where there is one, else the first score.
function headline(scores) {
  if (!scores) return null;
  const key = "accuracy" in scores ? "accuracy" : Object.keys(scores)[0];
  return key === undefined ? null : [key, scores[key]];
}

// An answer or gold as a reader wants it: an option letter with its text ("A. yes"), list
// items or synonyms joined, a free answer as its text.
function answerText(row, value) {
  const options = row.options || {};
  const one = (v) => (Array.isArray(v) ? v.map(one).join(" / ") : typeof v === "string" && v in options ? `${v}. ${options[v]}` : String(v ?? ""));
  return Array.isArray(value) ? value.map(one).join("; ") : one(value);
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
      const question = el("td", a.question || a.question_id);
      if (a.question) question.append(el("div", a.question_id, "muted"));
      tr.append(question, el("td", a.method), el("td", a.error ? "error: " + a.error : answerText(a, a.prediction) || a.answer_text || "(no answer)"),
        el("td", answerText(a, a.gold)), el("td", a.correct === true ? "yes" : a.correct === false ? "no" : "–"));
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

