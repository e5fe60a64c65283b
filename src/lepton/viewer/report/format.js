// Numbers as people read them: in the unit a column or metric shows, never in exponent notation.
// unit: {kind: "time", ns: ns per unit} | {kind: "count"|"bytes"|"flops"|"percent"|"plain", suffix}.
const D = JSON.parse(document.getElementById("data").textContent);

const Fmt = (function () {
  const trim = (text) => text.includes(".") && !text.includes("e") ? text.replace(/\.?0+$/, "") : text;
  const sig = (v, digits) => trim(Math.abs(v) >= 1e21 ? v.toExponential(digits - 1) : v.toPrecision(digits));

  // A plain number, for a cell whose header names the unit: 171.263, 0.000123, 12,345.6.
  function num(v) {
    if (v == null || !isFinite(v)) return "–";
    const a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 1e3) return v.toLocaleString("en-US", { maximumFractionDigits: 1 });
    if (a >= 1) return trim(v.toFixed(3));
    return trim(v.toFixed(Math.min(20, 3 - Math.floor(Math.log10(a)))));
  }

  function scaled(v, steps, digits) {  // steps: [[scale, suffix], ...] largest first
    const a = Math.abs(v);
    for (const [scale, suffix] of steps) if (a >= scale) return `${sig(v / scale, digits)} ${suffix}`;
    const [scale, suffix] = steps[steps.length - 1];
    return `${sig(v / scale, digits)} ${suffix}`;
  }
  const TIME = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];
  const BYTES = [[1e12, "TB"], [1e9, "GB"], [1e6, "MB"], [1e3, "kB"], [1, "B"]];
  const FLOPS = [[1e15, "PFLOP"], [1e12, "TFLOP"], [1e9, "GFLOP"], [1e6, "MFLOP"], [1e3, "kFLOP"], [1, "FLOP"]];

  function count(v) {
    return Number.isInteger(v) ? v.toLocaleString("en-US") : Number(v.toPrecision(6)).toLocaleString("en-US", { maximumFractionDigits: 2 });
  }

  // A metric's value with its unit: 171.3 ms, 12,345 samples, 40.3 GB, 12.5%.
  function value(v, unit) {
    if (v == null || !isFinite(v)) return "–";
    if (v === 0) return unit && unit.kind === "time" ? "0 ns" : "0";
    switch (unit ? unit.kind : "plain") {
      case "time": return scaled(v * unit.ns, TIME, 4);
      case "bytes": return scaled(v, BYTES, 4);
      case "flops": return scaled(v, FLOPS, 4);
      case "percent": return `${sig(v, 4)}%`;
      case "count": return `${count(v)}${unit.suffix ? " " + unit.suffix : ""}`;
      default: return num(v);
    }
  }

  const pct = (share) => share == null || !isFinite(share) ? "–" : `${(100 * share).toFixed(1)}%`;
  // A rate or any SI quantity: rate(6.42e14, "FLOP/s") -> "642 TFLOP/s".
  const rate = (v, suffix) => v == null || !isFinite(v) ? "–" :
    scaled(v, [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"], [1, ""]].map(([s, p]) => [s, p + suffix]), 4);
  return { num, value, pct, rate, count };
})();

// A DOM element: el("td", {className: "name", title: t}, text or child nodes).
function el(tag, props, content) {
  const node = document.createElement(tag);
  if (props) for (const key in props) {
    if (key === "dataset") Object.assign(node.dataset, props[key]); else node[key] = props[key];
  }
  if (content != null) {
    if (Array.isArray(content)) node.append(...content.filter((c) => c != null)); else node.append(content);
  }
  return node;
}
