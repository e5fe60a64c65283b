// The icicle graph: one canvas box per node at least MIN_BOX_PX wide, sized by the chosen metric
// (with -diff the larger side; with ranks the median), labels cut to their measured width.
const Icicle = (function () {
  const T = D.tree, N = T.parent.length, ROW = 18, MIN_BOX_PX = 0.5, MAX_ROWS = 80, FONT = "11px system-ui, sans-serif";
  const diff = D.diff || null, ranks = D.ranks || null;
  const ONLY_THIS = "#c77dda", ONLY_OTHER = "#6fa8dc";  // apart from the red / green of more / less
  const name = (i) => T.names[T.name[i]];
  const label = (i) => (T.short && T.short[T.name[i]]) || name(i);

  // The tree: children sorted by name, as lepton-view prints them.
  const kids = new Array(N), roots = [];
  for (let i = 0; i < N; i++) kids[i] = [];
  for (let i = 0; i < N; i++) { const p = T.parent[i]; if (p >= 0) kids[p].push(i); else roots.push(i); }
  const byName = (a, b) => { const x = name(a), y = name(b); return x < y ? -1 : x > y ? 1 : 0; };
  for (let i = 0; i < N; i++) if (kids[i].length > 1) kids[i].sort(byName);
  roots.sort(byName);

  const state = { metric: D.initialSize || 0, zoom: -1 };
  let boxes = [], rows = [], matcher = null, hits = 0;
  const unit = () => D.sizes[state.metric].unit;
  const own = (i) => D.sizes[state.metric].values[i] || 0;
  const other = (i) => diff ? diff.b[state.metric][i] || 0 : 0;
  const size = (i) => diff ? Math.max(own(i), other(i)) : own(i);

  // Children share their parent's width in proportion to their sizes; where they add up to more
  // than the parent (a median over ranks does not add up), they share the sum instead.
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
      const sum = kids[i].reduce((s, c) => s + size(c), 0), v = Math.max(size(i), sum);
      if (!v) continue;
      let cx = x0;
      for (const c of kids[i]) { const cw = size(c) / v * w; stack.push([c, cx, cw, row + 1]); cx += cw; }
    }
    for (const r of rows) if (r) r.sort((a, b) => a.x - b.x);
  }

  function hue(s) { let h = 0; for (let k = 0; k < s.length; k++) h = (h * 31 + s.charCodeAt(k)) | 0; return h; }
  function color(i, hit) {
    if (matcher) return hit ? "#f5a623" : "#e4e6eb";
    if (diff) {
      const side = diff.only[i];
      if (side === 1) return ONLY_THIS;
      if (side === 2) return ONLY_OTHER;
      const a = own(i), b = other(i), r = Math.max(-1, Math.min(1, (a - b) / Math.max(b, 1e-30)));
      return r >= 0 ? `hsl(0, ${25 + 60 * r}%, ${78 - 22 * r}%)` : `hsl(130, ${25 - 50 * r}%, ${78 + 18 * r}%)`;
    }
    if (ranks) {  // spread over ranks: (max - min) / median, white to red
      const lo = ranks.min[state.metric][i], hi = ranks.max[state.metric][i], mid = own(i);
      const r = mid > 0 && hi != null && lo != null ? Math.min(1, (hi - lo) / mid) : 0;
      return `hsl(${T.kind[i] ? 25 : 210}, ${30 + 55 * r}%, ${80 - 25 * r}%)`;
    }
    const h = hue(name(i));
    if (T.kind[i] === 1) return `hsl(${20 + (h & 31)}, 85%, ${60 + ((h >> 5) & 7)}%)`;
    if (T.kind[i] === 2) return `hsl(${265 + (h & 31)}, 45%, ${72 + ((h >> 5) & 7)}%)`;
    return `hsl(${195 + (h & 31)}, 45%, ${72 + ((h >> 5) & 7)}%)`;
  }

  // The longest prefix of `text` (with "…") whose measured width fits `room` pixels.
  function fit(ctx, text, room) {
    if (ctx.measureText(text).width <= room) return text;
    let lo = 0, hi = text.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(text.slice(0, mid) + "…").width <= room) lo = mid; else hi = mid - 1;
    }
    return lo > 0 ? text.slice(0, lo) + "…" : "";
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
    ctx.font = FONT; ctx.textBaseline = "middle";
    hits = 0;
    for (const b of boxes) {
      const hit = matcher ? matcher(name(b.i)) : false;
      if (hit) hits++;
      ctx.fillStyle = color(b.i, hit);
      ctx.fillRect(b.x, b.row * ROW, Math.max(b.w - 0.5, 0.5), ROW - 1);
      if (b.w > 12) {
        const text = fit(ctx, label(b.i), b.w - 6);
        if (text) { ctx.fillStyle = "#1d2330"; ctx.fillText(text, b.x + 3, b.row * ROW + ROW / 2); }
      }
    }
    let hitValue = 0;
    if (matcher) for (let i = 0; i < N; i++) if (matcher(name(i)) && !(T.parent[i] >= 0 && matcher(name(T.parent[i])))) hitValue += own(i);
    const total = roots.reduce((s, i) => s + own(i), 0);
    document.getElementById("info").textContent = `${N.toLocaleString("en-US")} nodes, ${boxes.length.toLocaleString("en-US")} drawn` +
      (matcher ? `; ${hits} matching boxes (${Fmt.pct(hitValue / (total || 1))} of ${D.sizes[state.metric].label})` : "");
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

  function tipText(i) {
    const m = D.sizes[state.metric], total = roots.reduce((s, r) => s + own(r), 0) || 1;
    let text = `${name(i)}\n${m.label}: ${Fmt.value(m.values[i], unit())} (${Fmt.pct((m.values[i] || 0) / total)} of all)`;
    if (diff) {
      const b = diff.b[state.metric][i];
      text = `${name(i)}\n${diff.file}: ${Fmt.value(m.values[i], unit())}\n${diff.other}: ${Fmt.value(b, unit())}` +
        `\nΔ ${Fmt.value((m.values[i] || 0) - (b || 0), unit())}`;
    }
    if (ranks) {
      const lo = ranks.min[state.metric][i], hi = ranks.max[state.metric][i];
      text = `${name(i)}\n${m.label} over ${ranks.ranks.length} ranks: min ${Fmt.value(lo, unit())}, median ` +
        `${Fmt.value(m.values[i], unit())}, max ${Fmt.value(hi, unit())}`;
      if (state.metric === 0 && ranks.slowest[i] != null) text += `\nslowest: rank ${ranks.slowest[i]}`;
    }
    return text;
  }

  const tip = document.getElementById("tip");
  canvas.addEventListener("mousemove", (e) => {
    const b = boxAt(e.offsetX, e.offsetY);
    if (!b) { tip.hidden = true; return; }
    tip.textContent = tipText(b.i); tip.hidden = false;
    tip.style.left = Math.max(0, Math.min(e.offsetX + 12, canvas.clientWidth - 320)) + "px"; tip.style.top = (e.offsetY + 14) + "px";
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
    if (!q) matcher = null;
    else if (q.length > 2 && q[0] === "/" && q[q.length - 1] === "/") {
      try { const re = new RegExp(q.slice(1, -1), "i"); matcher = (s) => re.test(s); } catch (err) { matcher = () => false; }
    } else { const low = q.toLowerCase(); matcher = (s) => s.toLowerCase().includes(low); }
    draw();
    return hits;
  }
  let searchTimer = 0;
  document.getElementById("search").addEventListener("input", (e) => {
    clearTimeout(searchTimer); searchTimer = setTimeout(() => setQuery(e.target.value), 120);
  });
  const select = document.getElementById("metric");
  D.sizes.forEach((m, k) => select.appendChild(el("option", { value: String(k), textContent: m.label })));
  select.value = String(state.metric);
  select.addEventListener("change", () => { state.metric = +select.value; draw(); });
  window.addEventListener("resize", () => draw());

  // Pixels painted on the canvas, for the self-check: 0 means a blank drawing.
  function paintedPixels() {
    if (!canvas.width || !canvas.height) return 0;
    const data = ctx.getImageData(0, 0, canvas.width, Math.min(canvas.height, 4 * ROW)).data;
    let painted = 0;
    for (let k = 3; k < data.length; k += 4) if (data[k]) painted++;
    return painted;
  }

  return {
    ONLY_THIS, ONLY_OTHER, draw, setQuery, paintedPixels, nodes: N, tipText, fit: (text, room) => { ctx.font = FONT; return fit(ctx, text, room); },
    boxes: () => boxes.map((b) => b.i), labels: () => boxes.filter((b) => b.w > 12).map((b) => ({ i: b.i, w: b.w, text: fit(ctx, label(b.i), b.w - 6) })),
    zoom: (i) => { state.zoom = i; draw(); return boxes.length; }, width: () => canvas.parentElement.clientWidth,
    measure: (text) => { ctx.font = FONT; return ctx.measureText(text).width; },
  };
})();
