// The biorag page, its documents view: search, upload, jobs and removal (after page.js, which holds the shared helpers).
// Text from documents, models and runs is set as text, never as markup.
"use strict";

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
    const q = $("docq").value.trim();
    const page = await getJSON(`/v1/documents?offset=${docOffset}&limit=50` + (index ? "&index=" + encodeURIComponent(index) : "") + (q ? "&q=" + encodeURIComponent(q) : ""));
    const shown = q ? page.matching : page.total;
    $("doccount").textContent = q ? `(${shown} of ${page.total} in ${page.corpus} hold "${q}")` : `(${page.total} in ${page.corpus})`;
    if (reset && q && !shown) {
      const tr = el("tr", undefined, "empty");
      tr.append(Object.assign(el("td", `No document's source id, id or title holds "${q}".`), { colSpan: 5 }));
      $("doclist").append(tr);
    }
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
    $("more").hidden = docOffset >= shown;
  } catch (e) { showError($("docstatus"), e.message); }
  loadJobs();
}
$("more").addEventListener("click", () => loadDocuments(false));
$("docsearch").addEventListener("submit", (ev) => { ev.preventDefault(); loadDocuments(true); });
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

