// The kernel table: one row per kernel name, sortable by any column, filterable by name. Each cell
// is in the unit its header names (Time (ms): 171.263, never 1.713e+8 ns).
const KernelTable = (function () {
  const K = D.kernels, TABLE_ROWS = 1000;
  const state = { sortKey: "time", asc: false, filter: "" };
  let thead = null, tbody = null, note = null;

  function columnsOf() {
    const others = D.otherKernels ? new Map(D.otherKernels.rows.map((r) => [r.name, r])) : null;
    const columns = [
      { key: "name", label: "Kernel", text: true, get: (r) => r.name },
      { key: "time", label: "Time (ms)", get: (r) => r.time_ns / 1e6 },
      { key: "count", label: "Count", get: (r) => r.count, count: true },
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
    return columns;
  }
  const columns = K ? columnsOf() : [];

  function renderHead() {
    const tr = el("tr");
    for (const c of columns) {
      const th = el("th", { textContent: c.label, dataset: { key: c.key }, className: c.text ? "name" : "" });
      if (c.key === state.sortKey) th.classList.add("sorted", ...(state.asc ? ["asc"] : []));
      th.addEventListener("click", () => sortBy(c.key));
      tr.appendChild(th);
    }
    thead.replaceChildren(tr);
  }
  function picked() {
    const c = columns.find((x) => x.key === state.sortKey), f = state.filter.toLowerCase(), sign = state.asc ? 1 : -1;
    return K.rows.filter((r) => !f || r.name.toLowerCase().includes(f)).sort((a, b) => {
      const x = c.get(a), y = c.get(b);
      if (x == null || y == null) return (x == null) - (y == null);
      return (x < y ? -1 : x > y ? 1 : 0) * sign;
    });
  }
  function render() {
    renderHead();
    const rows = picked(), frag = document.createDocumentFragment();
    for (const r of rows.slice(0, TABLE_ROWS)) {
      const tr = el("tr");
      for (const c of columns) {
        const v = c.get(r);
        const td = el("td", c.text ? { className: "name", title: v, textContent: v } :
          { textContent: v == null ? "–" : c.count ? Fmt.count(v) : Fmt.num(v) });
        if (c.delta && v) td.className = v > 0 ? "worse" : "better";
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    tbody.replaceChildren(frag);
    note.textContent = (rows.length > TABLE_ROWS ? `showing ${TABLE_ROWS} of ${rows.length} kernels` : `${rows.length} kernel${rows.length === 1 ? "" : "s"}`) +
      (D.kernelsNote ? `; ${D.kernelsNote}` : "");
  }
  function sortBy(key) {
    state.asc = state.sortKey === key ? !state.asc : key === "name";
    state.sortKey = key;
    render();
    return names();
  }
  const names = () => tbody ? Array.from(tbody.querySelectorAll("td.name"), (td) => td.textContent) : [];
  const headers = () => thead ? Array.from(thead.querySelectorAll("th"), (th) => th.textContent) : [];

  function mount(host) {
    const filter = el("input", { type: "search", placeholder: "filter kernels", size: 36 });
    note = el("span", { className: "note" });
    thead = el("thead"); tbody = el("tbody");
    host.append(el("h2", null, "Kernels"), el("div", { className: "controls" }, [filter, note]),
      el("div", { className: "table-wrap" }, el("table", { id: "kernels" }, [thead, tbody])));
    filter.addEventListener("input", (e) => { state.filter = e.target.value; render(); });
    render();
  }
  return { mount, sortBy, names, headers };
})();
