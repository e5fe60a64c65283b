// The panels a profile's mode adds: sampled lines, instrumented scopes, ranks, the diff's legend.
const Panels = (function () {
  const bar = (share) => el("span", { className: "bar" }, el("span", { style: `width:${Math.max(0, Math.min(100, 100 * share)).toFixed(1)}%` }));
  const table = (headers, rows) => el("table", null, [
    el("thead", null, el("tr", null, headers.map((h) => el("th", { className: h.cls || "" }, h.label || h)))),
    el("tbody", null, rows)]);
  const cell = (text, cls, title) => el("td", { className: cls || "", title: title || "" }, text);

  // Per sampled kernel: its hottest lines (share, stalls, source text) and hottest instructions.
  function lines(host) {
    const P = D.lines;
    host.append(el("h2", null, "Hottest source lines (instruction sampling)"),
      el("p", { className: "note" }, "Share of each kernel's samples; stall reasons as a share of the line's samples."));
    for (const k of P.kernels) {
      const rows = k.lines.map((line) => el("tr", null, [
        el("td", { className: "share" }, [bar(line.share), ` ${Fmt.pct(line.share)}`]),
        cell(line.short, "name", line.name),
        cell(line.stalls.map(([reason, share]) => `${reason} ${Fmt.pct(share)}`).join(", ") || "–", "stalls"),
        cell(line.text ? el("code", null, line.text) : "–", "source")]));
      const block = el("div", { className: "kernel-block" }, [
        el("h3", null, [k.path, el("span", { className: "note" }, `  ${Fmt.count(k.samples)} samples`)]),
        rows.length ? table([{ label: "share", cls: "share" }, { label: "line", cls: "name" }, { label: "top stalls", cls: "stalls" },
          { label: "source", cls: "source" }], rows) :
          el("p", { className: "note" }, "No sample maps to a source line (a kernel without line info)."),
        k.more_lines ? el("p", { className: "note" }, `${k.more_lines} colder lines left out`) : null]);
      if (k.sass.length) {
        block.append(el("h4", null, "Hottest instructions (SASS)"), table([{ label: "share", cls: "share" }, "offset", { label: "instruction", cls: "source" }],
          k.sass.map((s) => el("tr", null, [el("td", { className: "share" }, [bar(s.share), ` ${Fmt.pct(s.share)}`]),
            cell(`/*${s.offset.toString(16).padStart(4, "0")}*/`, "mono"), cell(s.text ? el("code", null, s.text) : "(no text)", "source")]))));
      }
      host.append(block);
    }
    for (const note of P.notes || []) host.append(el("p", { className: "note" }, note));
    if (P.left_out) host.append(el("p", { className: "note" }, `${P.left_out} less sampled kernels left out`));
  }

  // Per instrumented kernel: its scopes as a tree, cycles and ns, and each scope's share.
  function scopes(host) {
    const P = D.scopes;
    const nsNote = P.ns_source === "globaltimer" ? "ns from each CTA's globaltimer" :
      P.ns_source === "clock" ? `ns ≈ cycles at the SM clock (${Fmt.num(P.clock_ghz)} GHz; the profile has cycles only)` :
        "no ns: the profile has cycles only and no clock";
    host.append(el("h2", null, "Instrumented scopes"),
      el("p", { className: "note" }, `Summed over every warp and CTA, and per warp and CTA (normalized); ${nsNote}.`));
    const unitNs = { kind: "time", ns: 1 }, cycles = { kind: "count", suffix: "" };
    for (const k of P.kernels) {
      const rows = k.scopes.map((s) => el("tr", null, [
        el("td", { className: "name", style: `padding-left:${8 + 16 * s.depth}px`, title: s.name }, s.name),
        cell(Fmt.value(s.cycles, cycles)), cell(Fmt.value(s.normalized_cycles, cycles)),
        cell(Fmt.value(s.ns, unitNs)), cell(Fmt.value(s.normalized_ns, unitNs)),
        el("td", { className: "share" }, s.share == null ? "–" : [bar(s.share / 100), ` ${Fmt.pct(s.share / 100)}`])]));
      host.append(el("div", { className: "kernel-block" }, [el("h3", null, k.path),
        table([{ label: "scope", cls: "name" }, "cycles", "cycles per warp", "time", "time per warp", { label: "share of kernel", cls: "share" }], rows)]));
    }
    if (!D.timeline) {
      host.append(el("p", { className: "note" }, "Give the run's instrumentation trace too (lepton-view --html OUT.html " +
        "PROFILE.hatchet TRACE.chrome_trace) for the per-warp timeline."));
    }
  }

  // The nodes whose ranks differ most, with the slowest rank.
  function ranks(host) {
    const P = D.ranks, unit = D.sizes[0].unit;
    host.append(el("h2", null, `${P.ranks.length} ranks`), el("p", { className: "note" },
      `Ranks ${P.ranks.join(", ")}. Boxes are sized by the median over the ranks and redder where the ranks ` +
      `differ more ((max − min) / median). Nodes whose ${P.metric} differs most between ranks:`));
    const rows = P.rows.map((r) => el("tr", null, [cell(r.name, "name", r.name), cell(Fmt.value(r.min, unit)),
      cell(Fmt.value(r.median, unit)), cell(Fmt.value(r.max, unit)),
      cell(r.median ? Fmt.pct((r.max - r.min) / r.median) : "–"), cell(r.slowest == null ? "–" : `rank ${r.slowest}`)]));
    host.append(el("div", { className: "table-wrap" }, table([{ label: "node", cls: "name" }, "min", "median", "max", "spread", "slowest"], rows)));
  }

  // Which file is subtracted from which, and what the colours mean.
  function diffLegend(host) {
    const P = D.diff, swatch = (color) => el("span", { className: "swatch", style: `background:${color}` });
    host.append(el("strong", null, `${P.file} minus ${P.other}`), el("span", null, [
      ": boxes as wide as the larger side; ", swatch("hsl(0, 70%, 62%)"), ` more in ${P.file} (slower), `,
      swatch("hsl(130, 60%, 70%)"), ` less in ${P.file}, `, swatch(Icicle.ONLY_THIS), ` only in ${P.file}, `,
      swatch(Icicle.ONLY_OTHER), ` only in ${P.other}.`]));
  }
  return { lines, scopes, ranks, diffLegend };
})();
