// The Topics pane (a filterable, paginated list) and a topic's partition grid: partitions ×
// replicas with the leader, ISR membership, HW/LEO and each follower's lag, refreshed live.
import { getJSON, el, poll, table, errorLine } from "./api.js";

const PAGE = 50;
const GRID_PAGE = 100;

export const TOPIC_HEADERS = ["Topic", "Partitions", "RF", "min ISR", "Under-replicated", "Under min ISR", "Offline"];

/** One row of a topic list. */
export function topicRow(t) {
  const cls = t.offline_count ? "offline" : t.under_min_isr_count ? "under-min-isr" : t.under_replicated_count ? "under-replicated" : "";
  return el("tr", { class: cls, dataset: { topic: t.topic } },
    el("td", {}, el("a", { href: `#/topic/${encodeURIComponent(t.topic)}` }, t.topic)),
    el("td", {}, t.partition_count), el("td", {}, t.replication_factor), el("td", {}, t.min_insync_replicas ?? "—"),
    el("td", {}, t.under_replicated_count), el("td", {}, t.under_min_isr_count), el("td", {}, t.offline_count));
}

function pager(page, pages, go) {
  return el("div", { class: "pager" },
    el("button", { disabled: page <= 0, onclick: () => go(page - 1) }, "‹ prev"),
    ` page ${page + 1} of ${Math.max(pages, 1)} `,
    el("button", { disabled: page + 1 >= pages, onclick: () => go(page + 1) }, "next ›"));
}

function mountList(root, r) {
  let filter = r.query.get("filter") || "";
  let internal = false;
  let page = 0;
  let topics = [];
  const input = el("input", { type: "search", id: "topic-filter", placeholder: "filter topics", value: filter });
  const box = el("input", { type: "checkbox", id: "show-internal" });
  const body = el("div");
  const render = () => {
    const shown = topics.filter((t) => (internal || !t.internal) && t.topic.includes(filter));
    const pages = Math.ceil(shown.length / PAGE);
    page = Math.min(page, Math.max(pages - 1, 0));
    body.replaceChildren(
      el("p", { class: "muted" }, `${shown.length} of ${topics.length} topics`),
      table(TOPIC_HEADERS, shown.slice(page * PAGE, (page + 1) * PAGE).map(topicRow), { id: "topics" }),
      pager(page, pages, (p) => { page = p; render(); }));
  };
  input.addEventListener("input", () => { filter = input.value; page = 0; render(); });
  box.addEventListener("change", () => { internal = box.checked; render(); });
  root.append(el("h1", {}, "Topics"), el("div", { class: "controls" }, input, el("label", {}, box, " internal topics")), body);
  return poll(async () => {
    topics = await getJSON("/v1/topics?summary=true");
    render();
  }, 3000, (e) => e && body.replaceChildren(errorLine(e)));
}

// One replica's cell: broker, leader or follower, in the ISR or not, and its progress.
function replicaCell(p, id, live) {
  const leader = id === p.leader;
  const inIsr = p.isr.includes(id);
  const follower = (p.followers || []).find((f) => f.broker_id === id);
  const offline = p.offline_replicas.includes(id) || !live.has(id);
  const cls = ["replica", leader ? "leader" : "follower", inIsr ? "in-isr" : "out-of-isr", offline ? "offline" : ""].join(" ");
  let progress = "";
  if (leader && p.log_end_offset !== undefined) progress = `LEO ${p.log_end_offset}`;
  else if (follower) progress = `LEO ${follower.log_end_offset ?? "?"} · lag ${follower.lag}`;
  return el("td", { class: cls, dataset: { broker: id, role: leader ? "leader" : "follower", isr: String(inIsr) } },
    el("b", {}, id), " ", leader ? "leader" : "follower", inIsr ? "" : " · out of ISR", offline ? " · down" : "",
    progress ? el("div", { class: "small" }, progress) : null);
}

function partitionRow(p, width, live) {
  const state = p.offline ? "offline" : p.under_min_isr ? "under-min-isr" : p.under_replicated ? "under-replicated" : "";
  const cells = p.replicas.map((id) => replicaCell(p, id, live));
  while (cells.length < width) cells.push(el("td"));
  return el("tr", { class: state, dataset: { partition: p.partition, leader: p.leader, isr: p.isr.join(",") } },
    el("td", {}, p.partition),
    el("td", {}, p.leader < 0 ? "none" : p.leader),
    el("td", {}, p.isr.join(", ")),
    el("td", {}, p.high_watermark ?? "—"),
    el("td", {}, p.log_end_offset ?? "—"),
    el("td", {}, state ? el("span", { class: "tag " + state }, state.replaceAll("-", " ")) : "ok"),
    cells);
}

function mountGrid(root, r) {
  const name = r.arg;
  let page = Number(r.query.get("page") || 0);
  const head = el("p", { class: "muted" });
  const body = el("div");
  root.append(el("h1", {}, "Topic ", el("span", { id: "grid-topic" }, name)), el("p", {}, el("a", { href: "#/topics" }, "‹ all topics")), head, body);
  return poll(async () => {
    const [t, brokers] = await Promise.all([
      getJSON(`/v1/topics/${encodeURIComponent(name)}?offset=${page * GRID_PAGE}&limit=${GRID_PAGE}`), getJSON("/v1/brokers")]);
    const live = new Set(brokers.filter((b) => b.live).map((b) => b.broker_id));
    const width = Math.max(t.replication_factor, ...t.partitions.map((p) => p.replicas.length));
    const pages = Math.ceil(t.partition_count / GRID_PAGE);
    head.textContent = `${t.partition_count} partitions · RF ${t.replication_factor} · min.insync.replicas ${t.min_insync_replicas ?? "?"} · ` +
      "HW/LEO and follower lag as each partition's leader reports them";
    const headers = ["Partition", "Leader", "ISR", "HW", "LEO", "State", ...Array.from({ length: width }, (_, i) => `Replica ${i + 1}`)];
    const grid = table(headers, t.partitions.map((p) => partitionRow(p, width, live)), { id: "grid" });
    if (pages > 1) body.replaceChildren(grid, pager(page, pages, (p) => { location.hash = `#/topic/${encodeURIComponent(name)}?page=${p}`; }));
    else body.replaceChildren(grid);
  }, 1000, (e) => e && body.replaceChildren(errorLine(e)));
}

/** Mounts the list (`#/topics`) or a topic's grid (`#/topic/NAME`); returns its stop function. */
export function mount(root, r) {
  return r.pane === "topic" && r.arg ? mountGrid(root, r) : mountList(root, r);
}
