// The biorag page, its settings view and its start (loaded last) (after page.js, which holds the shared helpers).
// Text from documents, models and runs is set as text, never as markup.
"use strict";

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
