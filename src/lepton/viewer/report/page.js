"use strict";
// Lepton's HTML report: icicle (canvas), kernel table, roofline (SVG). Data: the JSON block
// written by lepton.viewer.report. No library, no network.
(function () {
const D = JSON.parse(document.getElementById("data").textContent);
const T = D.tree, N = T.parent.length, ROW = 18, MIN_BOX_PX = 0.5, MAX_ROWS = 80, TABLE_ROWS = 1000;
const diff = D.diff || null;
const name = (i) => T.names[T.name[i]];

// -- the tree: children sorted by name, as lepton-view draws them ------------------------------
const kids = new Array(N), depth = new Int32Array(N), roots = [];
for (let i = 0; i < N; i++) kids[i] = [];
for (let i = 0; i < N; i++) {
  const p = T.parent[i];
  if (p >= 0) { kids[p].push(i); depth[i] = depth[p] + 1; } else roots.push(i);
}
const byName = (a, b) => { const x = name(a), y = name(b); return x < y ? -1 : x > y ? 1 : 0; };
for (let i = 0; i < N; i++) if (kids[i].length > 1) kids[i].sort(byName);
roots.sort(byName);

const state = { metric: Object.keys(T.metrics)[0], zoom: -1, query: "", sortKey: "time", asc: false, filter: "" };
let boxes = [], rows = [], matcher = null;

function size(i) {  // a box's value: the metric, or with -diff the larger of both sides
  const a = T.metrics[state.metric][i] || 0;
  if (!diff) return a;
  return Math.max(a, diff.b[state.metric][i] || 0);
}

// -- icicle layout: a box per node at least MIN_BOX_PX wide, subtrees of narrower ones skipped ----
function layout(width) {
  boxes = []; rows = [];
  const top = state.zoom >= 0 ? [state.zoom] : roots;
  const total = top.reduce((s, i) => s + size(i), 0) || 1;
  const stack = [];
  let x = 0;
  for (const r of top) { const w = size(r) / total * width; stack.push([r, x, w, 0]); x += w; }
  while (stack.length) {
    const [i, x0, w, row] = stack.pop();
    if (w < MIN_BOX_PX || row >= MAX_ROWS) continue;
    const box = { i: i, x: x0, w: w, row: row };
    boxes.push(box);
    (rows[row] || (rows[row] = [])).push(box);
    const v = size(i);
    if (!v) continue;
    let cx = x0;
    for (const c of kids[i]) { const cw = size(c) / v * w; stack.push([c, cx, cw, row + 1]); cx += cw; }
  }
  for (const r of rows) if (r) r.sort((a, b) => a.x - b.x);
}

function color(i, hit) {
  if (matcher && !hit) return "#e4e6eb";
  if (matcher && hit) return "#f5a623";
  if (diff) {
    const a = T.metrics[state.metric][i], b = diff.b[state.metric][i];
    if (a == null) return "#7fbf7f";  // only in the other profile
    if (b == null) return "#e06666";  // only in this one
    const r = Math.max(-1, Math.min(1, (a - b) / Math.max(b, 1e-30)));
    return r >= 0 ? `hsl(0, ${25 + 60 * r}%, ${78 - 22 * r}%)` : `hsl(130, ${25 - 50 * r}%, ${78 + 18 * r}%)`;
  }
  let h = 0; const s = name(i);
  for (let k = 0; k < s.length; k++) h = (h * 31 + s.charCodeAt(k)) | 0;
  return T.kernel[i] ? `hsl(${20 + (h & 31)}, 85%, ${60 + ((h >> 5) & 7)}%)` : `hsl(${200 + (h & 31)}, 45%, ${72 + ((h >> 5) & 7)}%)`;
}

const canvas = document.getElementById("flame"), ctx = canvas.getContext("2d");
function draw() {
  const width = canvas.parentElement.clientWidth || 1200;
  layout(width);
  const height = Math.max(rows.length, 1) * ROW;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = width * ratio; canvas.height = height * ratio; canvas.style.height = height + "px";
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
  const charWidth = ctx.measureText("abcdefghij").width / 10;
  let hits = 0, hitValue = 0;
  for (const b of boxes) {
    const hit = matcher ? matcher(name(b.i)) : false;
    if (hit) { hits++; }
    ctx.fillStyle = color(b.i, hit);
    ctx.fillRect(b.x, b.row * ROW, Math.max(b.w - 0.5, 0.5), ROW - 1);
    if (b.w > 24) {
      const room = Math.floor((b.w - 6) / charWidth), s = name(b.i);
      ctx.fillStyle = "#1d2330";
      ctx.fillText(s.length > room ? s.slice(0, Math.max(room - 1, 0)) + "…" : s, b.x + 3, b.row * ROW + ROW / 2);
    }
  }
  if (matcher) for (let i = 0; i < N; i++) if (matcher(name(i)) && !(T.parent[i] >= 0 && matcher(name(T.parent[i])))) hitValue += T.metrics[state.metric][i] || 0;
  const total = roots.reduce((s, i) => s + (T.metrics[state.metric][i] || 0), 0);
  document.getElementById("info").textContent = `${N.toLocaleString()} nodes, ${boxes.length.toLocaleString()} drawn` +
    (matcher ? `; ${hits} matching boxes (${(100 * hitValue / (total || 1)).toFixed(1)}% of ${state.metric})` : "");
  api.lastHits = hits;
}

function boxAt(x, y) {
  const r = rows[Math.floor(y / ROW)];
  if (!r) return null;
  let lo = 0, hi = r.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1, b = r[mid];
    if (x < b.x) hi = mid - 1; else if (x >= b.x + b.w) lo = mid + 1; else return b;
  }
  return null;
}

const fmt = (v) => v == null ? "–" : Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0) ? v.toExponential(3) : v.toFixed(3);
const tip = document.getElementById("tip");
canvas.addEventListener("mousemove", (e) => {
  const b = boxAt(e.offsetX, e.offsetY);
  if (!b) { tip.hidden = true; return; }
  const a = T.metrics[state.metric][b.i];
  const total = roots.reduce((s, i) => s + (T.metrics[state.metric][i] || 0), 0) || 1;
  let text = `${name(b.i)}\n${state.metric}: ${fmt(a)} (${(100 * (a || 0) / total).toFixed(2)}%)`;
  if (diff) { const o = diff.b[state.metric][b.i]; text += `\n${diff.other}: ${fmt(o)}  Δ ${fmt((a || 0) - (o || 0))}`; }
  tip.textContent = text; tip.hidden = false;
  tip.style.left = Math.min(e.offsetX + 12, canvas.clientWidth - 300) + "px"; tip.style.top = (e.offsetY + 14) + "px";
});
canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
canvas.addEventListener("click", (e) => {
  const b = boxAt(e.offsetX, e.offsetY);
  if (!b) return;
  state.zoom = b.row === 0 && state.zoom >= 0 ? T.parent[state.zoom] : b.i;
  draw();
});
document.getElementById("reset").addEventListener("click", () => { state.zoom = -1; draw(); });

function setQuery(q) {
  state.query = q;
  if (!q) matcher = null;
  else if (q.length > 2 && q[0] === "/" && q[q.length - 1] === "/") {
    try { const re = new RegExp(q.slice(1, -1), "i"); matcher = (s) => re.test(s); } catch (err) { matcher = () => false; }
  } else { const low = q.toLowerCase(); matcher = (s) => s.toLowerCase().includes(low); }
  draw();
}
let searchTimer = 0;
document.getElementById("search").addEventListener("input", (e) => {
  clearTimeout(searchTimer); searchTimer = setTimeout(() => setQuery(e.target.value), 120);
});
const select = document.getElementById("metric");
for (const m of Object.keys(T.metrics)) { const o = document.createElement("option"); o.value = o.textContent = m; select.appendChild(o); }
select.addEventListener("change", () => { state.metric = select.value; draw(); });

// -- kernel table ----------------------------------------------------------------------------------
const K = D.kernels, others = D.otherKernels ? new Map(D.otherKernels.rows.map((r) => [r.name, r])) : null;
const columns = [
  { key: "name", label: "Kernel", text: true, get: (r) => r.name },
  { key: "time", label: "Time (ms)", get: (r) => r.time_ns / 1e6 },
  { key: "count", label: "Count", get: (r) => r.count, digits: 0 },
  { key: "avg", label: "Avg (µs)", get: (r) => r.count ? r.time_ns / r.count / 1e3 : null },
  { key: "tflops", label: "TFLOP/s", get: (r) => r.flops && r.time_ns ? r.flops / r.time_ns / 1e3 : null },
  { key: "tbs", label: "TB/s", get: (r) => r.bytes && r.time_ns ? r.bytes / r.time_ns / 1e3 : null },
  { key: "util", label: "Util", get: (r) => r.peak_s && r.time_ns ? r.peak_s / (r.time_ns / 1e9) : null },
];
if (others) {
  const other = (r) => others.get(r.name);
  columns.push({ key: "otime", label: `${D.diff.other} (ms)`, get: (r) => other(r) ? other(r).time_ns / 1e6 : null });
  columns.push({ key: "delta", label: "Δ (ms)", delta: true, get: (r) => other(r) ? (r.time_ns - other(r).time_ns) / 1e6 : null });
}
for (const p of K.properties) columns.push({ key: "p:" + p, label: p, get: (r) => r.props[p] ?? null });

const thead = document.querySelector("#kernels thead"), tbody = document.querySelector("#kernels tbody");
function renderHead() {
  const tr = document.createElement("tr");
  for (const c of columns) {
    const th = document.createElement("th");
    th.textContent = c.label; th.dataset.key = c.key;
    if (c.text) th.className = "name";
    if (c.key === state.sortKey) th.classList.add("sorted", ...(state.asc ? ["asc"] : []));
    th.addEventListener("click", () => sortBy(c.key));
    tr.appendChild(th);
  }
  thead.replaceChildren(tr);
}
function tableRows() {
  const c = columns.find((x) => x.key === state.sortKey);
  const f = state.filter.toLowerCase();
  const picked = K.rows.filter((r) => !f || r.name.toLowerCase().includes(f));
  const sign = state.asc ? 1 : -1;
  picked.sort((a, b) => {
    const x = c.get(a), y = c.get(b);
    if (x == null || y == null) return (x == null) - (y == null);
    return (x < y ? -1 : x > y ? 1 : 0) * sign;
  });
  return picked;
}
function renderTable() {
  renderHead();
  const picked = tableRows();
  const frag = document.createDocumentFragment();
  for (const r of picked.slice(0, TABLE_ROWS)) {
    const tr = document.createElement("tr");
    for (const c of columns) {
      const td = document.createElement("td"), v = c.get(r);
      if (c.text) { td.className = "name"; td.textContent = v; td.title = v; }
      else td.textContent = v == null ? "–" : c.digits === 0 ? v.toLocaleString() : fmt(v);
      if (c.delta && v) td.className = v > 0 ? "worse" : "better";
      tr.appendChild(td);
    }
    frag.appendChild(tr);
  }
  tbody.replaceChildren(frag);
  document.getElementById("table-note").textContent = picked.length > TABLE_ROWS ?
    `showing ${TABLE_ROWS} of ${picked.length} kernels` : `${picked.length} kernels`;
}
function sortBy(key) {
  state.asc = state.sortKey === key ? !state.asc : key === "name";
  state.sortKey = key;
  renderTable();
}
document.getElementById("filter").addEventListener("input", (e) => { state.filter = e.target.value; renderTable(); });

// -- roofline: kernels with flops and bytes, against the first device with known peaks ------------
function roofline() {
  const host = document.getElementById("roofline");
  const peak = (D.peaks || []).find((p) => p.bytes);
  const pts = K.rows.filter((r) => r.flops > 0 && r.bytes > 0 && r.time_ns > 0)
    .map((r) => ({ name: r.name, ai: r.flops / r.bytes, perf: r.flops / (r.time_ns / 1e9) }));
  if (!peak || !pts.length) {
    host.textContent = !pts.length ? "No kernel has both flops and bytes (Triton launch metadata gives them)." :
      "No peak numbers for this device.";
    return;
  }
  document.getElementById("device").textContent = peak.device;
  const W = 720, H = 420, L = 64, B = 40, R = 16, TOP = 12, NS = "http://www.w3.org/2000/svg";
  // The roofs of the operand widths the profile has flops for (flops16: the fp16 roof).
  const widths = Object.entries(peak.flops).filter(([w, f]) => f && (D.flopWidths || []).includes(w));
  const peakF = Math.max(...widths.map(([, f]) => f), 1);
  const ridge = peakF / peak.bytes;
  const xs = [Math.min(ridge / 100, ...pts.map((p) => p.ai)) / 2, Math.max(ridge * 100, ...pts.map((p) => p.ai)) * 2];
  const ys = [Math.min(peakF / 1e4, ...pts.map((p) => p.perf)) / 2, peakF * 2];
  const lx = (v) => L + (Math.log10(v) - Math.log10(xs[0])) / (Math.log10(xs[1]) - Math.log10(xs[0])) * (W - L - R);
  const ly = (v) => H - B - (Math.log10(v) - Math.log10(ys[0])) / (Math.log10(ys[1]) - Math.log10(ys[0])) * (H - B - TOP);
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  const el = (tag, attrs, text) => { const e = document.createElementNS(NS, tag); for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text; svg.appendChild(e); return e; };
  for (let d = Math.ceil(Math.log10(xs[0])); d <= Math.log10(xs[1]); d++) {
    el("line", { x1: lx(10 ** d), x2: lx(10 ** d), y1: TOP, y2: H - B, class: "grid" });
    el("text", { x: lx(10 ** d) - 8, y: H - B + 14 }, `1e${d}`);
  }
  for (let d = Math.ceil(Math.log10(ys[0])); d <= Math.log10(ys[1]); d++) {
    el("line", { x1: L, x2: W - R, y1: ly(10 ** d), y2: ly(10 ** d), class: "grid" });
    el("text", { x: 4, y: ly(10 ** d) + 4 }, `${fmt(10 ** d / 1e12)} T`);
  }
  el("line", { x1: L, x2: L, y1: TOP, y2: H - B, class: "axis" }); el("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" });
  el("text", { x: W / 2 - 80, y: H - 6 }, "arithmetic intensity (FLOP/byte)");
  for (const [width, f] of widths) {
    if (!f) continue;
    const knee = f / peak.bytes;
    el("polyline", { class: "roof", points: `${lx(xs[0])},${ly(xs[0] * peak.bytes)} ${lx(knee)},${ly(f)} ${lx(xs[1])},${ly(f)}` });
    el("text", { x: lx(knee) + 6, y: ly(f) - 6 }, `fp${width} peak ${fmt(f / 1e12)} TFLOP/s`);
  }
  el("text", { x: lx(xs[0]) + 6, y: ly(xs[0] * peak.bytes * 3) - 6 }, `${fmt(peak.bytes / 1e12)} TB/s`);
  for (const p of pts) {
    const c = el("circle", { cx: lx(p.ai), cy: ly(p.perf), r: 5 });
    const t = document.createElementNS(NS, "title"); t.textContent = `${p.name}\n${fmt(p.ai)} FLOP/B, ${fmt(p.perf / 1e12)} TFLOP/s`; c.appendChild(t);
    if (pts.length <= 12) el("text", { x: lx(p.ai) + 7, y: ly(p.perf) + 4 }, p.name.length > 28 ? p.name.slice(0, 27) + "…" : p.name);
  }
  host.replaceChildren(svg);
}

// -- test hooks and first render -----------------------------------------------------------------
const api = window.lepton = {
  boxes: () => boxes.map((b) => b.i), search: (q) => { setQuery(q); return api.lastHits; },
  sortBy: (key) => { sortBy(key); return api.tableNames(); },
  tableNames: () => Array.from(tbody.querySelectorAll("td.name"), (td) => td.textContent),
  zoom: (i) => { state.zoom = i; draw(); return boxes.length; }, nodes: N, lastHits: 0,
};
document.getElementById("title").textContent = D.title + (diff ? ` minus ${diff.other}` : "");
draw(); renderTable(); roofline();
document.body.dataset.renderMs = performance.now().toFixed(1);
window.addEventListener("resize", () => draw());

if (location.hash === "#selftest") {
  const result = { nodes: N, width: canvas.parentElement.clientWidth, boxes: boxes.length, distinctBoxes: new Set(api.boxes()).size, renderMs: +document.body.dataset.renderMs };
  const q = (new URLSearchParams(location.search)).get("q") || "matmul";
  result.search = { query: q, hits: api.search(q) };
  api.search("");
  result.tableBefore = api.tableNames();
  result.tableByName = api.sortBy("name");
  result.tableByTimeAsc = (api.sortBy("time"), api.sortBy("time"));
  result.headers = Array.from(thead.querySelectorAll("th"), (th) => th.textContent);
  result.errors = window.__errors;
  const out = document.getElementById("selftest");
  out.textContent = JSON.stringify(result); out.hidden = false;
}
})();
