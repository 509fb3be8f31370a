// The Faults pane (only where fault.injection.enable=true): the dev-cluster's nodes with
// kill, pause, resume and restart buttons; faults on any node (isolate it, delay its link
// to a peer, inject an error into an API); and the scenarios as one-click runs, whose
// narration shows in the timeline.
import { getJSON, el, poll, table, errorLine } from "./api.js";

/** Sends `body` (JSON) with `method`; resolves with the answer, rejects with its error. */
async function send(method, path, body) {
  const r = await fetch(path, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await r.json().catch(() => null);
  if (!r.ok) throw new Error((answer && answer.error) || `${path}: HTTP ${r.status}`);
  return answer;
}

const NODE_COMMANDS = {
  running: ["kill", "pause", "restart"], paused: ["resume", "kill", "restart"], dead: ["restart"],
};

function nodesPart(list, thisNode, say) {
  const rows = list.map((n) => el("tr", { dataset: { node: n.node, state: n.state } },
    el("td", {}, n.node, n.node === thisNode ? el("span", { class: "tag" }, "serves this page") : null),
    el("td", { class: n.state === "running" ? "ok" : "bad" }, n.state),
    el("td", {}, n.pid), el("td", {}, n.listening), el("td", {}, n.http || "—"),
    el("td", {}, (NODE_COMMANDS[n.state] || []).map((cmd) => el("button", {
      dataset: { node: n.node, command: cmd },
      onclick: async (ev) => {
        ev.target.disabled = true;
        say(`${cmd} node ${n.node}…`);
        try { say((await send("POST", `/v1/nodes/${n.node}/${cmd}`)).message); } catch (e) { say(e.message, true); }
      },
    }, cmd)))));
  return table(["Node", "State", "Pid", "Kafka listener", "HTTP", "Act"], rows, { id: "nodes" });
}

// The fault form: a kind, its target and its limits, as POST /v1/faults takes them.
function faultForm(nodeIds, thisNode, say, changed) {
  const node = el("select", { id: "fault-node" }, nodeIds.map((id) => el("option", { value: id, selected: id === thisNode }, `node ${id}`)));
  const kind = el("select", { id: "fault-kind" },
    el("option", { value: "isolate" }, "isolate the node"),
    el("option", { value: "delay" }, "delay its link to a peer"),
    el("option", { value: "inject" }, "inject an error into an API"));
  const peer = el("input", { id: "fault-peer", type: "number", min: 0, placeholder: "peer node", size: 6 });
  const ms = el("input", { id: "fault-ms", type: "number", min: 1, value: 500, size: 6 });
  const api = el("input", { id: "fault-api", value: "Produce", size: 10 });
  const code = el("input", { id: "fault-error", value: "NOT_LEADER_OR_FOLLOWER", size: 24 });
  const count = el("input", { id: "fault-count", type: "number", min: 1, placeholder: "every request", size: 8 });
  const fields = {
    isolate: [],
    delay: [el("label", {}, "peer ", peer), el("label", {}, "ms ", ms)],
    inject: [el("label", {}, "API ", api), el("label", {}, "error ", code), el("label", {}, "count ", count)],
  };
  const extra = el("span", { class: "controls" });
  const showFields = () => extra.replaceChildren(...fields[kind.value]);
  kind.addEventListener("change", showFields);
  showFields();
  const body = () => {
    const b = { kind: kind.value };
    if (kind.value === "delay") Object.assign(b, { peer: Number(peer.value), ms: Number(ms.value) });
    if (kind.value === "inject") {
      Object.assign(b, { api: api.value, error: code.value });
      if (count.value) b.count = Number(count.value);
    }
    return b;
  };
  const path = () => (nodeIds.length ? `/v1/nodes/${node.value}/faults` : "/v1/faults");
  const inject = el("button", { id: "fault-add", onclick: async () => {
    try { say(`injected on node ${node.value}: ${(await send("POST", path(), body())).description}`); } catch (e) { say(e.message, true); }
    changed();
  } }, "inject");
  const clear = el("button", { id: "fault-clear", onclick: async () => {
    try { await send("DELETE", path()); say(`cleared the faults of node ${node.value}`); } catch (e) { say(e.message, true); }
    changed();
  } }, "clear its faults");
  node.addEventListener("change", changed);
  return { form: el("div", { class: "controls" }, nodeIds.length ? node : null, kind, extra, inject, clear), path };
}

function scenariosPart(s, say) {
  const rows = s.scenarios.map((x) => [x.name, x.summary, el("button", {
    dataset: { scenario: x.name }, disabled: !!s.running,
    onclick: async () => {
      try {
        await send("POST", `/v1/scenarios/${encodeURIComponent(x.name)}`);
        say(`scenario ${x.name} started: its steps show in the timeline`);
      } catch (e) { say(e.message, true); }
    },
  }, "run")]);
  return el("div", {},
    el("p", { class: "muted" }, s.running ? `Running: ${s.running}. ` : "", "Each step of a run shows in the ", el("a", { href: "#/timeline" }, "timeline"),
      " (type scenario_step). A scenario may kill the node serving this page; open another node's console to watch it then."),
    table(["Scenario", "What it shows", ""], rows, { id: "scenarios" }));
}

/** Mounts the pane into `root`; returns its stop function. Where fault injection is off
 * it shows why, and no control at all. */
export function mount(root) {
  let stop = () => {};
  let stopped = false;
  getJSON("/v1/faults")
    .then(() => { if (!stopped) stop = controls(root); })
    .catch((e) => root.append(el("h1", {}, "Faults"), el("p", { id: "faults-off", class: "muted" }, e.message)));
  return () => { stopped = true; stop(); };
}

function controls(root) {
  const result = el("p", { id: "fault-result", class: "muted" });
  const say = (msg, bad) => { result.textContent = msg; result.className = bad ? "error" : "muted"; };
  const nodesBox = el("div");
  const formBox = el("div");
  const activeBox = el("div");
  const scenarioBox = el("div");
  root.append(el("h1", {}, "Faults"), result,
    el("h2", {}, "Nodes"), nodesBox, el("h2", {}, "Faults on a node"), formBox, activeBox, el("h2", {}, "Scenarios"), scenarioBox);
  let form = null;
  let refreshActive = () => {};
  const stopActive = poll(async () => refreshActive(), 2000);
  const stopNodes = poll(async () => {
    let nodes = null;
    try { nodes = await getJSON("/v1/nodes"); } catch (e) {
      if (!form) nodesBox.replaceChildren(el("p", { class: "muted", id: "no-node-control" }, e.message));
    }
    if (nodes) nodesBox.replaceChildren(nodesPart(nodes.nodes, nodes.this_node, say));
    if (!form) {
      const me = (await getJSON("/v1/cluster")).node_id;
      form = faultForm(nodes ? nodes.nodes.map((n) => n.node) : [], me, say, () => refreshActive());
      refreshActive = async () => {
        try {
          const f = await getJSON(form.path());
          activeBox.replaceChildren(f.faults.length
            ? table(["Id", "Kind", "What", "Remaining"], f.faults.map((x) => [x.id, x.kind, x.description, x.remaining ?? "∞"]), { id: "active-faults" })
            : el("p", { class: "muted", id: "active-faults" }, "No active faults on that node."));
        } catch (e) { activeBox.replaceChildren(errorLine(e)); }
      };
      formBox.replaceChildren(form.form);
      refreshActive();
      getJSON("/v1/scenarios").then((s) => scenarioBox.replaceChildren(scenariosPart(s, say)))
        .catch((e) => scenarioBox.replaceChildren(el("p", { class: "muted" }, e.message)));
    }
  }, 1000, (e) => e && say(e.message, true));
  const stopScenarios = poll(async () => {
    if (!form) return;
    const s = await getJSON("/v1/scenarios").catch(() => null);
    if (s) scenarioBox.replaceChildren(scenariosPart(s, say));
  }, 3000);
  return () => { stopNodes(); stopActive(); stopScenarios(); };
}
