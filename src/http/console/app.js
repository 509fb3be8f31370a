// The console's shell: hash routes to panes, and the health banner every pane shares.
import { getJSON, poll } from "./api.js";
import * as cluster from "./cluster.js";
import * as topics from "./topics.js";
import * as timeline from "./timeline.js";
import * as groups from "./groups.js";
import * as messages from "./messages.js";
import * as faults from "./faults.js";
import * as charts from "./charts.js";

const panes = { cluster, topics, topic: topics, timeline, groups, group: groups, messages, faults, charts };
const view = document.getElementById("view");
let unmount = null;

// "#/topic/orders?page=2" → { pane: "topic", arg: "orders", query: URLSearchParams }.
function route() {
  const [path, q] = (location.hash.replace(/^#\/?/, "") || "cluster").split("?");
  const [pane, ...rest] = path.split("/");
  return { pane, arg: rest.map(decodeURIComponent).join("/"), query: new URLSearchParams(q || "") };
}

function show() {
  if (unmount) unmount();
  view.replaceChildren();
  const r = route();
  const pane = panes[r.pane] || cluster;
  const name = pane === topics ? "topics" : pane === groups ? "groups" : r.pane in panes ? r.pane : "cluster";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.pane === name);
  unmount = pane.mount(view, r);
}

// The same reasons as `sluice cluster health`, from GET /v1/health.
function banner() {
  const box = document.getElementById("health");
  return poll(async () => {
    const h = await getJSON("/v1/health");
    box.hidden = false;
    box.className = "banner " + (h.is_healthy ? "ok" : "bad");
    box.dataset.healthy = h.is_healthy;
    const parts = [];
    if (h.nodes_down.length) parts.push(`nodes down: ${h.nodes_down.join(", ")}`);
    if (h.leaderless_partitions.length) parts.push(`${h.leaderless_partitions.length} leaderless`);
    if (h.under_replicated_partitions.length) parts.push(`${h.under_replicated_partitions.length} under-replicated`);
    if (h.under_min_isr_partitions.length) parts.push(`${h.under_min_isr_partitions.length} under min ISR`);
    box.textContent = h.is_healthy
      ? "Healthy"
      : `Unhealthy: ${h.unhealthy_reasons.join(", ")}` + (parts.length ? ` (${parts.join("; ")})` : "");
  }, 1000, (e) => {
    if (!e) return;
    box.hidden = false;
    box.className = "banner bad";
    box.textContent = `This node does not answer: ${e.message}`;
  });
}

// The Faults link shows only where fault injection is on (GET /v1/faults answers 403 elsewhere).
getJSON("/v1/faults").then(() => { document.querySelector('nav a[data-pane="faults"]').hidden = false; }).catch(() => {});
getJSON("/v1/cluster").then((c) => {
  document.getElementById("node").textContent = `node ${c.node_id} · cluster ${c.cluster_id || "?"}`;
}).catch(() => {});
window.addEventListener("hashchange", show);
banner();
show();
