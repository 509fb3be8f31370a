// The Charts pane: produce and fetch rates per topic, and request latency percentiles per
// API, from this node's /metrics (OpenMetrics text), sampled every second and drawn as
// small hand-written SVG lines. The counters are this node's: it counts what it leads.
import { el, table, errorLine, poll } from "./api.js";

const SAMPLES = 120;
const SERIES = {
  "records in/s": "sluice_records_in_total", "bytes in/s": "sluice_bytes_in_total", "bytes out/s (fetch)": "sluice_bytes_out_total",
};
const COLORS = ["#0969da", "#8250df", "#1a7f37", "#bf8700", "#cf222e", "#6e7781", "#d63384", "#0a7ea4"];
const SVG = "http://www.w3.org/2000/svg";

/** OpenMetrics text → [{name, labels, value}]. */
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The `q` quantile of a cumulative histogram [[le, count]], interpolated in its bucket. */
function quantile(q, buckets) {
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (!total) return null;
  const rank = q * total;
  let prevLe = 0, prevCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(count - prevCount, 1);
    }
    [prevLe, prevCount] = [le, count];
  }
  return prevLe;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// A line per topic over the samples kept, scaled to the largest value.
function lineChart(id, history, topics) {
  const [w, h] = [560, 140];
  const max = Math.max(1e-9, ...topics.flatMap((t) => history.map((s) => s[t] || 0)));
  const chart = svg("svg", { id, viewBox: `0 0 ${w} ${h + 14}`, width: w, height: h + 14, class: "chart" });
  chart.append(svg("line", { x1: 0, y1: h, x2: w, y2: h, stroke: "#d0d7de" }));
  topics.forEach((t, i) => {
    // The newest sample at the right edge, as a strip chart.
    const pts = history.map((s, j) => `${(w * (SAMPLES - history.length + j)) / (SAMPLES - 1)},${(h - (h * (s[t] || 0)) / max).toFixed(1)}`);
    const peak = Math.max(0, ...history.map((s) => s[t] || 0));
    if (pts.length > 1) chart.append(svg("polyline", { points: pts.join(" "), fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 1.5, "data-topic": t, "data-peak": peak }));
  });
  const label = svg("text", { x: 2, y: 11, "font-size": 11, fill: "#6e7781" });
  label.textContent = `max ${max < 10 ? max.toFixed(2) : Math.round(max)}`;
  chart.append(label);
  return chart;
}

/** Mounts the pane into `root`; returns its stop function. */
export function mount(root) {
  const rates = el("div", { id: "rates" });
  const latency = el("div", { id: "latency" });
  root.append(el("h1", {}, "Charts"),
    el("p", { class: "muted" }, "This node's counters from /metrics, sampled every second: a topic's rates count the partitions this node leads."),
    rates, el("h2", {}, "Request latency by API (since the node started)"), latency);
  let previous = null;
  const history = Object.fromEntries(Object.keys(SERIES).map((k) => [k, []]));
  return poll(async () => {
    const r = await fetch("/metrics");
    if (!r.ok) throw new Error(`/metrics: HTTP ${r.status}`);
    const now = Date.now();
    const m = parseMetrics(await r.text());
    const totals = Object.fromEntries(Object.entries(SERIES).map(([k, name]) =>
      [k, Object.fromEntries(m.filter((x) => x.name === name && x.labels.topic).map((x) => [x.labels.topic, x.value]))]));
    if (previous) {
      const dt = (now - previous.at) / 1000;
      for (const k of Object.keys(SERIES)) {
        const sample = {};
        for (const [t, v] of Object.entries(totals[k])) sample[t] = Math.max(0, v - (previous.totals[k][t] ?? v)) / dt;
        history[k].push(sample);
        if (history[k].length > SAMPLES) history[k].shift();
      }
    }
    previous = { at: now, totals };
    const topics = [...new Set(Object.values(totals).flatMap((o) => Object.keys(o)))].filter((t) => !t.startsWith("__")).sort();
    const last = (k, t) => (history[k].length ? history[k][history[k].length - 1][t] || 0 : 0);
    rates.replaceChildren(
      el("div", { class: "charts" }, Object.keys(SERIES).map((k) => el("figure", {}, el("figcaption", {}, k), lineChart(`chart-${SERIES[k]}`, history[k], topics)))),
      topics.length
        ? table(["Topic", ...Object.keys(SERIES)], topics.map((t, i) => el("tr", { dataset: { topic: t } },
          el("td", {}, el("span", { class: "swatch", style: `background:${COLORS[i % COLORS.length]}` }), t),
          Object.keys(SERIES).map((k) => el("td", {}, last(k, t).toFixed(1))))), { id: "rate-table" })
        : el("p", { class: "muted" }, "No topic traffic on this node yet."));
    const apis = {};
    for (const x of m.filter((x) => x.name === "sluice_request_duration_seconds_bucket")) {
      (apis[x.labels.api] ||= []).push([x.labels.le === "+Inf" ? Infinity : Number(x.labels.le), x.value]);
    }
    const rows = Object.entries(apis).map(([api, b]) => {
      b.sort((a, c) => a[0] - c[0]);
      return { api, count: b[b.length - 1][1], q: [0.5, 0.95, 0.99].map((q) => quantile(q, b)) };
    }).filter((x) => x.count > 0).sort((a, b) => b.count - a.count);
    const slowest = Math.max(1e-9, ...rows.map((x) => x.q[2] || 0));
    const ms = (s) => (s === null ? "—" : (s * 1000).toFixed(s < 0.01 ? 2 : 1));
    latency.replaceChildren(table(["API", "Requests", "p50 ms", "p95 ms", "p99 ms", ""], rows.map((x) => el("tr", { dataset: { api: x.api } },
      el("td", {}, x.api), el("td", {}, x.count), x.q.map((v) => el("td", {}, ms(v))),
      el("td", {}, el("span", { class: "lag" }, el("span", { class: "bar", style: `width:${(100 * (x.q[2] || 0)) / slowest}%` }))))), { id: "latency-table" }));
  }, 1000, (e) => e && rates.replaceChildren(errorLine(e)));
}
