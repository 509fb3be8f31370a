// The console's few shared helpers: reading the JSON API and building DOM nodes.

/** GETs a path of this node's JSON API; rejects with the API's own error message. */
export async function getJSON(path) {
  const r = await fetch(path, { headers: { accept: "application/json" } });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error((body && body.error) || `${path}: HTTP ${r.status}`);
  return body;
}

/** A DOM element: `el("td", { class: "x", dataset: { broker: 1 } }, "text", child)`. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** Calls `fn` now and every `ms` until the returned stop function runs; errors show in `onError`. */
export function poll(fn, ms, onError) {
  let stopped = false;
  let timer = null;
  const tick = async () => {
    try {
      await fn();
      onError && onError(null);
    } catch (e) {
      onError && onError(e);
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** A table with a header row and `rows` (arrays of cells or `tr` elements). */
export function table(headers, rows, attrs = {}) {
  return el("table", attrs,
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => (r instanceof Node ? r : el("tr", {}, r.map((c) => (c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c))))))));
}

/** A broker's client address: its first listener's `host:port`. */
export function address(b) {
  return Object.values(b.endpoints || {}).join(", ");
}

/** A clock time with milliseconds, for events. */
export function clock(ms) {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

/** An error line for a pane. */
export function errorLine(e) {
  return el("p", { class: "error" }, String(e && e.message ? e.message : e));
}
