// The Timeline pane: the event journal live from GET /v1/events?follow (server-sent
// events), counted on a time axis so an election storm reads as a burst, and listed below.
import { el, clock } from "./api.js";

const KEEP = 5000;
const WINDOWS = { "1 min": 60e3, "5 min": 300e3, "30 min": 1800e3, "all": Infinity };

// What kind of mark an event gets on the axis.
const CATEGORY = {
  leader_changed: "election", isr_shrunk: "isr", isr_expanded: "isr", broker_fenced: "fencing", broker_unfenced: "fencing",
  broker_registered: "fencing", broker_unregistered: "fencing", controller_changed: "controller", fault_injected: "fault", fault_cleared: "fault",
  scenario_step: "scenario",
};

const part = (e) => `${e.topic}/${e.partition}`;

/** One line describing an event. */
function describe(e) {
  switch (e.type) {
    case "leader_changed":
      return `${part(e)}: leader ${e.previous_leader} → ${e.leader < 0 ? "none (offline)" : e.leader}, epoch ${e.leader_epoch}, cause ${e.reason}`;
    case "isr_shrunk":
    case "isr_expanded":
      return `${part(e)}: ISR [${e.isr_before.join(", ")}] → [${e.isr_after.join(", ")}] (leader ${e.leader})`;
    case "broker_fenced": return `broker ${e.broker_id} fenced (epoch ${e.epoch})`;
    case "broker_unfenced": return `broker ${e.broker_id} unfenced (epoch ${e.epoch})`;
    case "broker_unregistered": return `broker ${e.broker_id} unregistered (epoch ${e.epoch})`;
    case "broker_registered": return `broker ${e.broker_id} registered (epoch ${e.epoch}) ${Object.values(e.endpoints || {}).join(", ")}`;
    case "controller_changed": return `controller is now ${e.controller_id} (term ${e.epoch})`;
    case "topic_created": return `topic ${e.topic} created: ${e.partitions} partitions, RF ${e.replication_factor}`;
    case "topic_deleted": return `topic ${e.topic} deleted`;
    case "partitions_created": return `topic ${e.topic}: ${e.count_before} → ${e.count_after} partitions`;
    case "config_changed": return `${e.resource_type} ${e.name || "(cluster default)"}: ${e.key} = ${e.sensitive ? "(sensitive)" : e.value ?? "(removed)"}`;
    case "reassignment_started":
    case "reassignment_completed":
      return `${part(e)}: replicas [${e.replicas_before.join(", ")}] → [${e.replicas_after.join(", ")}]`;
    case "fault_injected": return `fault ${e.fault_id} (${e.fault}): ${e.description}`;
    case "fault_cleared": return `fault ${e.fault_id} (${e.fault}) ended, ${e.reason}: ${e.description}`;
    case "scenario_step": return `scenario ${e.scenario}: ${e.message}`;
    default: return JSON.stringify(e);
  }
}

const BUCKETS = 120;
const ORDER = ["election", "isr", "fencing", "controller", "fault", "scenario", "other"];

// The axis: the window cut into buckets, each a stack of one bar per kind of event, its
// height growing with the log of the count, so a storm of elections towers over the rest.
function axis(events, span) {
  const timed = events.filter((e) => e.time_ms !== null && e.time_ms !== undefined);
  const end = Date.now();
  const start = span === Infinity ? Math.min(end - 1000, ...timed.map((e) => e.time_ms)) : end - span;
  const width = Math.max(end - start, 1) / BUCKETS;
  const counts = Array.from({ length: BUCKETS }, () => ({}));
  for (const e of timed) {
    if (e.time_ms < start) continue;
    const b = Math.min(BUCKETS - 1, Math.floor((e.time_ms - start) / width));
    const k = CATEGORY[e.type] || "other";
    counts[b][k] = (counts[b][k] || 0) + 1;
  }
  const pos = (t) => `${(100 * (t - start)) / Math.max(end - start, 1)}%`;
  const ticks = Array.from({ length: 5 }, (_, i) => start + ((end - start) * i) / 4);
  const columns = counts.flatMap((c, b) => {
    const kinds = ORDER.filter((k) => c[k]);
    if (!kinds.length) return [];
    const from = start + b * width;
    return [el("span", { class: "bucket", style: `left:${(100 * b) / BUCKETS}%;width:${100 / BUCKETS}%`,
      title: `${clock(from)}–${clock(from + width)}: ` + kinds.map((k) => `${c[k]} ${k}`).join(", ") },
    kinds.map((k) => el("span", { class: `mark ${k}`, style: `height:${6 + 8 * Math.log2(c[k])}px`, dataset: { count: c[k] } })))];
  });
  return el("div", { class: "axis", id: "axis" },
    ticks.map((t) => el("span", { class: "tick", style: `left:${pos(t)}` }, clock(t).slice(0, 8))), columns);
}

/** Mounts the pane into `root`; returns its stop function. */
export function mount(root) {
  const events = [];
  let span = WINDOWS["5 min"];
  let typeFilter = "";
  const status = el("span", { class: "muted", id: "stream-status" }, "connecting…");
  const choose = el("select", { id: "window" }, Object.keys(WINDOWS).map((k) => el("option", { value: k, selected: k === "5 min" }, k)));
  const kinds = el("select", { id: "type-filter" }, el("option", { value: "" }, "every type"),
    Object.keys(CATEGORY).concat(["topic_created", "config_changed"]).map((k) => el("option", { value: k }, k)));
  const legend = el("div", { class: "legend" },
    ORDER.map((c) => el("span", {}, el("span", { class: `mark ${c}` }), c)));
  const pic = el("div");
  const list = el("tbody");
  root.append(el("h1", {}, "Timeline"), el("div", { class: "controls" }, choose, kinds, status), legend, pic,
    el("table", { id: "events" }, el("thead", {}, el("tr", {}, ["Seq", "Time", "Type", "What"].map((h) => el("th", {}, h)))), list));
  const row = (e) => el("tr", { class: CATEGORY[e.type] || "other", dataset: { type: e.type, seq: e.seq } },
    el("td", {}, e.seq), el("td", {}, clock(e.time_ms)), el("td", {}, e.type), el("td", {}, describe(e)));
  const render = () => {
    pic.replaceChildren(axis(events, span));
    list.replaceChildren(...events.filter((e) => !typeFilter || e.type === typeFilter).slice(-500).reverse().map(row));
  };
  choose.addEventListener("change", () => { span = WINDOWS[choose.value]; render(); });
  kinds.addEventListener("change", () => { typeFilter = kinds.value; render(); });
  // EventSource reconnects by itself, sending Last-Event-ID, so nothing is seen twice.
  const source = new EventSource("/v1/events?follow");
  let pending = false;
  source.onopen = () => { status.textContent = "live"; };
  source.onerror = () => { status.textContent = "reconnecting…"; };
  source.onmessage = (m) => {
    events.push(JSON.parse(m.data));
    if (events.length > KEEP) events.splice(0, events.length - KEEP);
    // A burst of thousands of events redraws once per frame, not once per event.
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => { pending = false; render(); });
    }
  };
  const clockTimer = setInterval(render, 5000);
  render();
  return () => { source.close(); clearInterval(clockTimer); };
}
