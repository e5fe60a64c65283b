// Puts the panels on the page, each on its own (one that fails shows a message, the others still
// draw), then checks the page drew what its data promises: never a blank page.
const MOUNTS = [
  ["lines-panel", () => D.lines, Panels.lines], ["scopes-panel", () => D.scopes, Panels.scopes],
  ["timeline-panel", () => D.timeline, Timeline.mount], ["ranks-panel", () => D.ranks, Panels.ranks],
  ["kernels-panel", () => D.kernels, KernelTable.mount], ["roofline-panel", () => (D.roofline || []).length, Roofline.mount],
];

function guarded(what, fn) {
  try { fn(); } catch (err) { window.__showError(`${what}: ${err && err.message ? err.message : err}`); }
}

function mountAll() {
  document.getElementById("title").textContent = D.diff ? `${D.diff.file} minus ${D.diff.other}` : D.title;
  if (D.device) document.getElementById("device").textContent = D.device;
  if (D.diff) guarded("diff legend", () => {
    const legend = el("div", { id: "diff-legend", className: "legend-bar" });
    document.getElementById("diff-slot").append(legend);
    Panels.diffLegend(legend);
  });
  guarded("icicle", Icicle.draw);
  const host = document.getElementById("panels");
  for (const [id, has, mount] of MOUNTS) {
    if (!has()) continue;
    const section = el("section", { id: id, className: "panel" });
    host.append(section);
    guarded(id.replace("-", " "), () => mount(section));
  }
}

let painted = 0;

// What the page drew against what its data promises; a shortfall is shown, not hidden.
function selfCheck() {
  const problems = [];
  painted = Icicle.paintedPixels();  // read once: canvas readbacks are slow
  if (!Icicle.boxes().length || !painted) problems.push("the icicle drew no box");
  for (const id of D.panels || []) {
    if (id === "flame") continue;  // the icicle, checked above
    const node = document.getElementById(id);
    if (!node || !node.childElementCount) problems.push(`the ${id.replace("-", " ")} is missing`);
  }
  if (problems.length) window.__showError(problems.join("; "));
  document.body.dataset.check = window.__errors.length ? "failed" : "ok";
  return problems;
}

mountAll();
const problems = selfCheck();
document.body.dataset.renderMs = performance.now().toFixed(1);

// Test hooks: tests/integration/test_html_report.py opens page.html#selftest in headless Chromium.
window.lepton = { icicle: Icicle, table: KernelTable, roofline: Roofline, timeline: Timeline, fmt: Fmt };
if (location.hash === "#selftest") {
  const q = (new URLSearchParams(location.search)).get("q") || "matmul";
  const boxes = Icicle.boxes();
  const result = {
    nodes: Icicle.nodes, width: Icicle.width(), boxes: boxes.length, distinctBoxes: new Set(boxes).size,
    painted: painted, problems: problems, check: document.body.dataset.check,
    panels: Array.from(document.querySelectorAll("#panels > section, #diff-legend"), (s) => s.id),
    sizes: D.sizes.map((s) => s.label), rootTip: Icicle.tipText(D.tree.parent.indexOf(-1)),
    labels: Icicle.labels().map((l) => ({ text: l.text, fits: Icicle.measure(l.text) <= l.w - 6 + 0.5 })),
    rooflineLabels: Roofline.labelBoxes(), timelineBars: Timeline.bars(), renderMs: +document.body.dataset.renderMs,
    lineRows: document.querySelectorAll("#lines-panel tbody tr").length,
    scopeRows: document.querySelectorAll("#scopes-panel tbody tr").length,
    rankRows: document.querySelectorAll("#ranks-panel tbody tr").length,
    text: (document.getElementById("panels").innerText || "").slice(0, 20000),
    legend: (document.getElementById("diff-legend") || {}).textContent || "",
  };
  result.search = { query: q, hits: Icicle.setQuery(q) };
  Icicle.setQuery("");
  if (D.kernels) {
    result.tableBefore = KernelTable.names();
    result.tableByName = KernelTable.sortBy("name");
    result.tableByTimeAsc = (KernelTable.sortBy("time"), KernelTable.sortBy("time"));
    result.headers = KernelTable.headers();
  }
  result.errors = window.__errors;
  const out = document.getElementById("selftest");
  out.textContent = JSON.stringify(result); out.hidden = false;
}
