// The biorag page, its graph view: the answer's claim graph, a served knowledge graph and BioStrataKG queries (after page.js, which holds the shared helpers).
// Text from documents, models and runs is set as text, never as markup.
"use strict";

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

