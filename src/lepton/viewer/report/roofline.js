// The roofline (SVG): a point per kernel and shape, a roof per operand width the profile has flops
// for, labels placed greedily where they collide with nothing drawn before them.
const Roofline = (function () {
  const W = 760, H = 440, L = 70, B = 40, R = 16, TOP = 12, NS = "http://www.w3.org/2000/svg", FONT = "11px system-ui, sans-serif";
  const measurer = document.createElement("canvas").getContext("2d");
  const textWidth = (text) => { measurer.font = FONT; return measurer.measureText(text).width; };
  const overlaps = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  let placedLabels = [];

  // Tries the spots around a point in order; returns the first box inside the plot that overlaps
  // no taken box, or null (the point keeps its tooltip).
  function place(x, y, width, taken) {
    const h = 13, spots = [[8, -h / 2], [-8 - width, -h / 2], [-width / 2, -8 - h], [-width / 2, 8],
      [8, -h - 4], [8, 4], [-8 - width, -h - 4], [-8 - width, 4]];
    for (const [dx, dy] of spots) {
      const box = { x: x + dx, y: y + dy, w: width, h: h };
      if (box.x < L + 2 || box.x + box.w > W - R || box.y < TOP || box.y + box.h > H - B) continue;
      if (!taken.some((t) => overlaps(box, t))) return box;
    }
    return null;
  }

  function mount(host) {
    const peak = (D.peaks || []).find((p) => p.bytes);
    const pts = D.roofline || [];
    host.append(el("h2", null, "Roofline"));
    if (!peak) { host.append(el("p", { className: "note" }, "No peak numbers for this device: the roofline needs a known GPU.")); return; }
    document.getElementById("device").textContent = peak.device;
    const widths = Object.entries(peak.flops).filter(([w, f]) => f && (D.flopWidths || []).includes(w));
    const peakF = Math.max(...widths.map(([, f]) => f), ...pts.map((p) => p.perf), 1);
    const ridge = peakF / peak.bytes;
    const xs = [Math.min(ridge / 100, ...pts.map((p) => p.ai)) / 2, Math.max(ridge * 100, ...pts.map((p) => p.ai)) * 2];
    const ys = [Math.min(peakF / 1e4, ...pts.map((p) => p.perf)) / 2, peakF * 2];
    const lx = (v) => L + (Math.log10(v) - Math.log10(xs[0])) / (Math.log10(xs[1]) - Math.log10(xs[0])) * (W - L - R);
    const ly = (v) => H - B - (Math.log10(v) - Math.log10(ys[0])) / (Math.log10(ys[1]) - Math.log10(ys[0])) * (H - B - TOP);
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("width", W); svg.setAttribute("height", H);
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(NS, tag);
      for (const k in attrs) e.setAttribute(k, attrs[k]);
      if (text != null) e.textContent = text;
      svg.appendChild(e); return e;
    };
    for (let d = Math.ceil(Math.log10(xs[0])); d <= Math.log10(xs[1]); d++) {
      add("line", { x1: lx(10 ** d), x2: lx(10 ** d), y1: TOP, y2: H - B, class: "grid" });
      add("text", { x: lx(10 ** d) - 10, y: H - B + 14 }, Fmt.num(10 ** d));
    }
    for (let d = Math.ceil(Math.log10(ys[0])); d <= Math.log10(ys[1]); d++) {
      add("line", { x1: L, x2: W - R, y1: ly(10 ** d), y2: ly(10 ** d), class: "grid" });
      add("text", { x: 4, y: ly(10 ** d) + 4 }, Fmt.rate(10 ** d, "FLOP/s"));
    }
    add("line", { x1: L, x2: L, y1: TOP, y2: H - B, class: "axis" });
    add("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" });
    add("text", { x: W / 2 - 90, y: H - 6 }, "arithmetic intensity (FLOP/byte)");
    const taken = pts.map((p) => ({ x: lx(p.ai) - 5, y: ly(p.perf) - 5, w: 10, h: 10 }));  // the points themselves
    const label = (x, y, text, cls) => {
      const box = place(x, y, textWidth(text), taken);
      if (!box) return false;
      taken.push(box);
      add("text", { x: box.x, y: box.y + 10, class: cls || "" }, text);
      return true;
    };
    for (const [, f] of widths) {  // labels keep off the roofs: small boxes along each one
      const knee = f / peak.bytes;
      add("polyline", { class: "roof", points: `${lx(xs[0])},${ly(xs[0] * peak.bytes)} ${lx(knee)},${ly(f)} ${lx(xs[1])},${ly(f)}` });
      for (let x = L; x < W - R; x += 6) {
        const ai = 10 ** (Math.log10(xs[0]) + (x - L) / (W - L - R) * (Math.log10(xs[1]) - Math.log10(xs[0])));
        taken.push({ x: x - 2, y: ly(Math.min(ai * peak.bytes, f)) - 2, w: 4, h: 4 });
      }
    }
    for (const [width, f] of widths) label(lx(f / peak.bytes), ly(f) - 8, `fp${width} peak ${Fmt.rate(f, "FLOP/s")}`, "roof-label");
    const knee = peakF / peak.bytes, bandwidth = Fmt.rate(peak.bytes, "B/s");
    [0.2, 0.35, 0.5, 0.65].some((at) => {  // somewhere along the memory roof, above it
      const x = L + at * (lx(knee) - L), ai = 10 ** (Math.log10(xs[0]) + (x - L) / (W - L - R) * (Math.log10(xs[1]) - Math.log10(xs[0])));
      return label(x, ly(ai * peak.bytes) - 12, bandwidth, "roof-label");
    });
    placedLabels = [];
    const order = pts.map((p, k) => k).sort((a, b) => pts[b].time_ns - pts[a].time_ns);  // the costliest are labelled first
    for (const k of order) {
      const p = pts[k], x = lx(p.ai), y = ly(p.perf);
      const c = add("circle", { cx: x, cy: y, r: 5 });
      const t = document.createElementNS(NS, "title");
      t.textContent = `${p.label}\n${Fmt.num(p.ai)} FLOP/byte, ${Fmt.rate(p.perf, "FLOP/s")}, ${Fmt.count(p.launches)} launches`;
      c.appendChild(t);
      if (label(x, y, p.label, "point-label")) placedLabels.push(taken[taken.length - 1]);
    }
    host.append(el("div", { className: "roofline-plot" }, svg));
    const hidden = pts.length - placedLabels.length;
    host.append(el("p", { className: "note" }, `${pts.length} kernel shapes` +
      (hidden ? `; ${hidden} labels left out where they would overlap (hover a point for its name)` : "")));
  }
  return { mount, labelBoxes: () => placedLabels.map((b) => ({ ...b })) };
})();
