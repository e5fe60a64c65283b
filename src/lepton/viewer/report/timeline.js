// The per-warp timeline of an instrumentation trace: a row per (CTA, warp), a bar per scope
// interval, in cycles from the kernel's first event (CTAs start at their globaltimer offsets).
const Timeline = (function () {
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  const LEFT = 150, FONT = "11px system-ui, sans-serif";
  let canvas = null, current = null, rowHeight = 12, scale = 1, drawnBars = 0;

  function draw(k) {
    current = D.timeline.kernels[k];
    const width = canvas.parentElement.clientWidth || 1200, rows = current.rows.length;
    rowHeight = Math.max(3, Math.min(14, Math.floor(600 / Math.max(rows, 1))));
    const height = rows * rowHeight + 24, ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio; canvas.height = height * ratio; canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const end = Math.max(...current.events.map((e) => e[2] + e[3]), 1);
    scale = (width - LEFT - 10) / end;
    ctx.font = FONT; ctx.textBaseline = "middle";
    drawnBars = 0;
    for (const [row, scope, start, dur] of current.events) {
      ctx.fillStyle = PALETTE[scope % PALETTE.length];
      ctx.fillRect(LEFT + start * scale, row * rowHeight, Math.max(dur * scale, 1), rowHeight - 1);
      drawnBars++;
    }
    ctx.fillStyle = "#445";
    if (rowHeight >= 10) current.rows.forEach((r, i) => ctx.fillText(r, 4, i * rowHeight + rowHeight / 2));
    const step = niceStep(end / 5);
    for (let at = 0; at <= end; at += step) {
      ctx.fillText(Fmt.count(at) + (at + step > end ? " cycles" : ""), LEFT + at * scale, rows * rowHeight + 12);
    }
  }

  // 1, 2 or 5 times a power of ten, at least `raw`: round tick labels.
  function niceStep(raw) {
    const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
    return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  }

  function eventAt(x, y) {
    if (!current) return null;
    const row = Math.floor(y / rowHeight), cycle = (x - LEFT) / scale;
    return current.events.find((e) => e[0] === row && cycle >= e[2] && cycle <= e[2] + Math.max(e[3], 1 / scale)) || null;
  }

  function mount(host) {
    const P = D.timeline;
    host.append(el("h2", null, "Per-warp timeline (instrumentation trace)"),
      el("p", { className: "note" }, "Cycles from the kernel's first event (the trace's 1 GHz convention: 1 µs = 1,000 cycles); " +
        "SM clocks are not synchronised, so compare cycles within a CTA." + (P.cut ? ` Cut at ${Fmt.count(P.max_events)} events.` : "")));
    const select = el("select");
    P.kernels.forEach((k, i) => select.appendChild(el("option", { value: String(i), textContent: `${k.name} (${k.rows.length} rows)` })));
    const legend = el("span", { className: "legend" });
    const tip = el("div", { className: "tip", hidden: true });
    canvas = el("canvas", { className: "timeline" });
    host.append(el("div", { className: "controls" }, [el("label", null, ["kernel ", select]), legend]),
      el("div", { className: "timeline-wrap" }, [canvas, tip]));
    const show = () => {
      const k = +select.value;
      draw(k);
      legend.replaceChildren(...D.timeline.kernels[k].scopes.map((s, i) =>
        el("span", null, [el("span", { className: "swatch", style: `background:${PALETTE[i % PALETTE.length]}` }), ` ${s} `])));
    };
    select.addEventListener("change", show);
    canvas.addEventListener("mousemove", (e) => {
      const hit = eventAt(e.offsetX, e.offsetY);
      if (!hit) { tip.hidden = true; return; }
      tip.textContent = `${current.scopes[hit[1]]}, ${current.rows[hit[0]]}\nstart ${Fmt.count(hit[2])} cycles, ${Fmt.count(hit[3])} cycles`;
      tip.hidden = false; tip.style.left = (e.offsetX + 12) + "px"; tip.style.top = (e.offsetY + 14) + "px";
    });
    canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
    window.addEventListener("resize", () => { if (current) draw(+select.value); });
    show();
  }
  return { mount, bars: () => drawnBars };
})();
