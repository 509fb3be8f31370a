// The Messages pane: browse a partition from an offset or a timestamp (key, value, headers,
// as text, hex or JSON) and produce a test record. Reads this node's replica of the
// partition; a record produced for a partition led elsewhere is sent to its leader.
import { getJSON, el, table, errorLine, clock } from "./api.js";

/** base64 → bytes (null stays null). */
function bytes(b64) {
  if (b64 === null || b64 === undefined) return null;
  const s = atob(b64);
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, "0")).join(" ");

/** Bytes as the chosen view: text (UTF-8), hex, or JSON pretty-printed when they parse. */
function show(b, view) {
  if (b === null) return el("span", { class: "muted" }, "null");
  if (view === "hex") return el("code", {}, hex(b));
  const text = new TextDecoder("utf-8", { fatal: false }).decode(b);
  if (view === "json") {
    try { return el("pre", {}, JSON.stringify(JSON.parse(text), null, 2)); } catch { return el("span", { title: "not JSON" }, text); }
  }
  return text;
}

function recordRow(r, view) {
  const headers = r.headers.map((h) => el("div", { class: "small", dataset: { header: h.key } }, `${h.key}: `, show(bytes(h.value), view === "json" ? "text" : view)));
  return el("tr", { dataset: { offset: r.offset } },
    el("td", {}, r.offset), el("td", {}, clock(r.timestamp)),
    el("td", { class: "key" }, show(bytes(r.key), view)), el("td", { class: "value" }, show(bytes(r.value), view)), el("td", { class: "headers" }, headers));
}

// "name=value" lines → {name: value}; a line without "=" is a header with a null value.
function parseHeaders(text) {
  const out = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const i = line.indexOf("=");
    if (i < 0) out[line] = null; else out[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return out;
}

/** Mounts the pane (`#/messages/TOPIC?partition=P`); returns its stop function. */
export function mount(root, r) {
  const topic = el("select", { id: "msg-topic" });
  const partition = el("input", { id: "msg-partition", type: "number", min: 0, value: r.query.get("partition") || 0, size: 5 });
  const mode = el("select", { id: "msg-mode" }, el("option", { value: "last" }, "the newest"), el("option", { value: "offset" }, "from offset"),
    el("option", { value: "timestamp" }, "from time"));
  const from = el("input", { id: "msg-from", placeholder: "offset, or time (ISO or ms)", size: 24 });
  const limit = el("input", { id: "msg-limit", type: "number", min: 1, max: 500, value: 50, size: 5 });
  const view = el("select", { id: "msg-view" }, ["text", "hex", "json"].map((v) => el("option", { value: v }, v)));
  const info = el("p", { class: "muted", id: "msg-info" });
  const list = el("div");
  let last = null;
  const render = () => {
    if (!last) return;
    list.replaceChildren(last.records.length
      ? table(["Offset", "Time", "Key", "Value", "Headers"], last.records.map((x) => recordRow(x, view.value)), { id: "records" })
      : el("p", { class: "muted", id: "records" }, "No records in that range."));
  };
  const load = async () => {
    const q = new URLSearchParams({ limit: limit.value });
    if (mode.value === "offset") q.set("offset", from.value.trim());
    if (mode.value === "timestamp") {
      const t = /^\d+$/.test(from.value.trim()) ? Number(from.value.trim()) : Date.parse(from.value);
      q.set("timestamp", Number.isNaN(t) ? from.value : String(t));
    }
    try {
      last = await getJSON(`/v1/topics/${encodeURIComponent(topic.value)}/partitions/${partition.value}/records?${q}`);
      info.textContent = `${last.topic}-${last.partition} on this node's ${last.is_leader ? "leader" : "follower"} replica: ` +
        `log start ${last.log_start_offset}, high watermark ${last.high_watermark}, log end ${last.log_end_offset}; ${last.records.length} records from offset ${last.from}`;
      render();
    } catch (e) { last = null; info.textContent = ""; list.replaceChildren(errorLine(e)); }
  };
  view.addEventListener("change", render);

  const key = el("input", { id: "produce-key", placeholder: "key (empty: null)", size: 16 });
  const value = el("textarea", { id: "produce-value", placeholder: "value", rows: 3, cols: 40 });
  const headers = el("textarea", { id: "produce-headers", placeholder: "headers, one name=value a line", rows: 3, cols: 30 });
  const produced = el("p", { id: "produce-result", class: "muted" });
  const produce = async () => {
    try {
      const body = { key: key.value === "" ? null : key.value, value: value.value, headers: parseHeaders(headers.value) };
      const resp = await fetch(`/v1/topics/${encodeURIComponent(topic.value)}/partitions/${partition.value}/records`,
        { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const a = await resp.json();
      if (!resp.ok) throw new Error(a.error);
      produced.className = "muted";
      produced.textContent = `produced to ${a.topic}-${a.partition} at offset ${a.offset} (acks=all)`;
      produced.dataset.offset = a.offset;
      await load();
    } catch (e) { produced.className = "error"; produced.textContent = e.message; }
  };

  root.append(el("h1", {}, "Messages"),
    el("div", { class: "controls" }, el("label", {}, "topic ", topic), el("label", {}, "partition ", partition), mode, from,
      el("label", {}, "limit ", limit), el("button", { id: "msg-load", onclick: load }, "load"), el("label", {}, "view ", view)),
    info, list,
    el("h2", {}, "Produce a test record"),
    el("div", { class: "controls" }, key, value, headers, el("button", { id: "produce", onclick: produce }, "produce")), produced);
  getJSON("/v1/topics?summary=true").then((ts) => {
    const want = r.arg || "";
    topic.replaceChildren(...ts.filter((t) => !t.internal || t.topic === want).map((t) => el("option", { value: t.topic, selected: t.topic === want }, t.topic)));
    if (topic.value) load();
  }).catch((e) => list.replaceChildren(errorLine(e)));
  return () => {};
}
