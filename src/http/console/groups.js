// The Groups pane: the cluster's groups (classic, consumer, share, streams) with their
// coordinators, and a group's members with their assignments, committed offsets and lag per
// partition (a bar per partition, scaled to the largest lag).
import { getJSON, el, poll, table, errorLine } from "./api.js";

function mountList(root) {
  const body = el("div");
  root.append(el("h1", {}, "Groups"), el("p", { class: "muted" }, "Every group of the cluster, as its coordinator reports it."), body);
  return poll(async () => {
    const groups = await getJSON("/v1/groups");
    body.replaceChildren(groups.length
      ? table(["Group", "Type", "Protocol", "State", "Coordinator"], groups.map((g) => [
        el("a", { href: `#/group/${encodeURIComponent(g.group_id)}` }, g.group_id), g.group_type, g.protocol_type || "—", g.state,
        String(g.coordinator ?? "—")]), { id: "groups" })
      : el("p", { class: "muted" }, "No groups here."));
  }, 3000, (e) => e && body.replaceChildren(errorLine(e)));
}

function lagBar(lag, max) {
  if (lag === undefined) return "—";
  return el("span", { class: "lag" }, el("span", { class: "bar", style: `width:${max ? (100 * lag) / max : 0}%` }), ` ${lag}`);
}

/** A member's assignment as text: `topic: 0, 1` per topic; a streams member's tasks by kind. */
function assignment(a) {
  if (!a) return "—";
  const parts = (xs, key) => xs.map((x) => `${x[key]}: ${x.partitions.join(", ")}`);
  if (Array.isArray(a)) return parts(a, "topic").join("; ") || "none";
  const kinds = ["active", "standby", "warmup"].filter((k) => (a[k] || []).length).map((k) => `${k} ${parts(a[k], "subtopology").join("; ")}`);
  return kinds.join(" · ") || "none";
}

function mountGroup(root, id) {
  const body = el("div");
  root.append(el("h1", {}, "Group ", id), el("p", {}, el("a", { href: "#/groups" }, "‹ all groups")), body);
  return poll(async () => {
    const g = await getJSON(`/v1/groups/${encodeURIComponent(id)}`);
    const max = Math.max(0, ...g.partitions.map((p) => p.lag || 0));
    const total = g.partitions.reduce((s, p) => s + (p.lag || 0), 0);
    body.replaceChildren(
      el("p", {}, `${g.group_type} group · state ${g.state} · protocol ${g.protocol_type || "—"} · total lag ${total}`),
      el("h2", {}, "Members"),
      table(["Member", "Instance", "Client", "Host", "Assignment"],
        g.members.map((m) => [m.member_id, m.group_instance_id || "—", m.client_id, m.client_host, assignment(m.assignment)]), { id: "members" }),
      el("h2", {}, "Offsets and lag"),
      table(["Topic", "Partition", "Committed", "High watermark", "Lag"],
        g.partitions.map((p) => [p.topic, p.partition, p.committed_offset, p.high_watermark ?? "—", lagBar(p.lag, max)]), { id: "lag" }));
  }, 2000, (e) => e && body.replaceChildren(errorLine(e)));
}

/** Mounts the list (`#/groups`) or one group (`#/group/ID`); returns its stop function. */
export function mount(root, r) {
  return r.pane === "group" && r.arg ? mountGroup(root, r.arg) : mountList(root);
}
