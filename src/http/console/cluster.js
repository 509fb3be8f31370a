// The Cluster pane (the landing page): brokers with role, liveness, fencing and rack; the
// active controller and the metadata quorum; and the topics, each linked to its grid.
import { getJSON, el, poll, table, address, errorLine } from "./api.js";
import { topicRow, TOPIC_HEADERS } from "./topics.js";

function role(id, brokers, voters) {
  const broker = brokers.some((b) => b.broker_id === id);
  const controller = voters.includes(id);
  return broker && controller ? "broker, controller" : controller ? "controller" : "broker";
}

function brokersTable(c, brokers) {
  const voters = c.quorum.voters || [];
  const ids = [...new Set([...brokers.map((b) => b.broker_id), ...voters])].sort((a, b) => a - b);
  const rows = ids.map((id) => {
    const b = brokers.find((x) => x.broker_id === id);
    const live = b ? b.live : null;
    return el("tr", { class: live === false ? "down" : "", dataset: { broker: id, live: String(live) } },
      el("td", {}, id, id === c.controller_id ? el("span", { class: "tag" }, "active controller") : null),
      el("td", {}, b ? address(b) : "—"),
      el("td", {}, role(id, brokers, voters)),
      el("td", { class: live === false ? "bad" : "ok" }, live === null ? "—" : live ? "alive" : "not alive"),
      el("td", {}, b ? (b.fenced ? "fenced" : "no") : "—"),
      el("td", {}, (b && b.rack) || "—"),
      el("td", {}, b ? b.epoch : "—"));
  });
  return table(["Broker", "Address", "Role", "Liveness", "Fenced", "Rack", "Epoch"], rows, { id: "brokers" });
}

function quorumPart(c) {
  const q = c.quorum;
  const states = q.voter_states || [];
  const rows = (q.voters || []).map((id) => {
    const s = states.find((x) => x.node_id === id);
    return [String(id) + (id === q.leader_id ? " (leader)" : ""), s ? s.log_end_offset : "—", s ? s.lag : "—"];
  });
  return el("section", {},
    el("h2", {}, "Metadata quorum"),
    el("p", {}, `Leader ${q.leader_id ?? "none"} · epoch ${q.leader_epoch ?? "?"} · high watermark ${q.high_watermark ?? "?"} · this node's metadata offset ${c.metadata_offset}`),
    table(["Voter", "Log end offset", "Lag"], rows, { id: "quorum" }));
}

/** Mounts the pane into `root`; returns its stop function. */
export function mount(root) {
  const body = el("div");
  root.append(el("h1", {}, "Cluster"), body);
  return poll(async () => {
    const [c, brokers, topics] = await Promise.all([
      getJSON("/v1/cluster"), getJSON("/v1/brokers"), getJSON("/v1/topics?summary=true")]);
    const user = topics.filter((t) => !t.internal);
    body.replaceChildren(
      el("p", {}, `Active controller: ${c.controller_id ?? "none"}`),
      brokersTable(c, brokers),
      quorumPart(c),
      el("section", {}, el("h2", {}, "Topics"),
        user.length ? table(TOPIC_HEADERS, user.map(topicRow), { id: "landing-topics" }) : el("p", { class: "muted" }, "No topics yet.")));
  }, 1500, (e) => e && body.replaceChildren(errorLine(e)));
}
