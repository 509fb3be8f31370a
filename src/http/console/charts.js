// The Charts pane: produce and fetch rates per topic, and request latency percentiles per
// API, from the brokers' /metrics (OpenMetrics text, each asked through this node's
// /v1/brokers/{id}/metrics), sampled every second and drawn as small hand-written SVG
// lines. Each broker counts what it leads, so "all brokers" adds their counters up.
import { el, table, errorLine, poll, getJSON } from "./api.js";

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

/** The metrics of the chosen brokers ("all": every live one), and the ids that did not answer. */
async function scrape(choice) {
  const ids = choice === "all" ? (await getJSON("/v1/brokers")).filter((b) => b.live).map((b) => b.broker_id) : [Number(choice)];
  const texts = await Promise.all(ids.map(async (id) => {
    const r = await fetch(`/v1/brokers/${id}/metrics`).catch(() => null);
    return r && r.ok ? r.text() : null;
  }));
  return { metrics: texts.filter((t) => t !== null).flatMap(parseMetrics), missing: ids.filter((_, i) => texts[i] === null), ids };
}

/** Sums the values of `name` by the label `by`. */
function sumBy(m, name, by) {
  const out = {};
  for (const x of m) if (x.name === name && x.labels[by] !== undefined) out[x.labels[by]] = (out[x.labels[by]] || 0) + x.value;
  return out;
}

/** Mounts the pane into `root`; returns its stop function. */
export function mount(root) {
  const rates = el("div", { id: "rates" });
  const latency = el("div", { id: "latency" });
  const sources = el("p", { class: "muted", id: "chart-sources" });
  let choice = "all";
  let previous = null;
  let history = {};
  const reset = () => {
    previous = null;
    history = Object.fromEntries(Object.keys(SERIES).map((k) => [k, []]));
  };
  reset();
  const picker = el("select", { id: "chart-broker", onchange: (e) => { choice = e.target.value; reset(); } }, el("option", { value: "all" }, "all brokers"));
  root.append(el("h1", {}, "Charts"),
    el("p", { class: "muted" }, "Counters from the brokers' /metrics, sampled every second. Each broker counts the partitions it leads; \"all brokers\" adds them up. ",
      el("label", {}, "Brokers: ", picker)),
    sources, rates, el("h2", {}, "Request latency by API (since each node started)"), latency);
  return poll(async () => {
    const { metrics: m, missing, ids } = await scrape(choice);
    if (choice === "all") {
      const known = new Set([...picker.options].map((o) => o.value));
      for (const id of ids) if (!known.has(String(id))) picker.append(el("option", { value: id }, `broker ${id}`));
    }
    sources.textContent = `From broker${ids.length === 1 ? "" : "s"} ${ids.join(", ")}` + (missing.length ? `; no answer from ${missing.join(", ")}` : ".");
    const now = Date.now();
    const totals = Object.fromEntries(Object.entries(SERIES).map(([k, name]) => [k, sumBy(m, name, "topic")]));
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
        : el("p", { class: "muted" }, "No topic traffic on these brokers yet."));
    // Cumulative buckets with the same bounds add up across brokers.
    const apis = {};
    for (const x of m.filter((x) => x.name === "sluice_request_duration_seconds_bucket")) {
      const le = x.labels.le === "+Inf" ? Infinity : Number(x.labels.le);
      const byLe = (apis[x.labels.api] ||= {});
      byLe[le] = (byLe[le] || 0) + x.value;
    }
    const rows = Object.entries(apis).map(([api, byLe]) => {
      const b = Object.entries(byLe).map(([le, c]) => [Number(le), c]).sort((a, c) => a[0] - c[0]);
      return { api, count: b[b.length - 1][1], q: [0.5, 0.95, 0.99].map((q) => quantile(q, b)) };
    }).filter((x) => x.count > 0).sort((a, b) => b.count - a.count);
    const slowest = Math.max(1e-9, ...rows.map((x) => x.q[2] || 0));
    const ms = (s) => (s === null ? "—" : (s * 1000).toFixed(s < 0.01 ? 2 : 1));
    latency.replaceChildren(table(["API", "Requests", "p50 ms", "p95 ms", "p99 ms", ""], rows.map((x) => el("tr", { dataset: { api: x.api } },
      el("td", {}, x.api), el("td", {}, x.count), x.q.map((v) => el("td", {}, ms(v))),
      el("td", {}, el("span", { class: "lag" }, el("span", { class: "bar", style: `width:${(100 * (x.q[2] || 0)) / slowest}%` }))))), { id: "latency-table" }));
  }, 1000, (e) => e && rates.replaceChildren(errorLine(e)));
}
