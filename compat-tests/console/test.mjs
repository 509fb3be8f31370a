// The web console against a real 3-node dev-cluster: plain HTTP checks of what `/` serves,
// then Debian's chromium (driven by playwright-core) reading the pages while a node is
// killed. Prints "console: N passed, M failed"; exits 1 on any failure.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const BIN = process.env.SLUICE_BIN || new URL("../../target/release/sluice", import.meta.url).pathname;
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const ARTIFACTS = process.env.CONSOLE_ARTIFACTS || new URL("../../target/test-logs/console", import.meta.url).pathname;
const TOPIC = "console-orders";
const OTHER = "console-audit";
const WIDE = "console-wide";
const GROUP = "console-group";
let passed = 0, failed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.message ? e.message : e}`);
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value; throws its last error (or `what`) after `ms`. */
async function eventually(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  let last = null;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(250);
  }
  throw new Error(`${what} not seen within ${ms} ms${last ? ` (last error: ${last.message})` : ""}`);
}

function portFree(port) {
  return new Promise((resolve) => {
    const s = createServer().once("error", () => resolve(false)).once("listening", () => s.close(() => resolve(true)));
    s.listen(port, "127.0.0.1");
  });
}

// A base port whose client, controller and HTTP ports (base.., base+100.., base+200..) are all free.
async function freeBase() {
  for (let i = 0; i < 50; i++) {
    const base = 21000 + Math.floor(Math.random() * 8000);
    const ports = [0, 1, 2].flatMap((n) => [base + n, base + 100 + n, base + 200 + n]);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error("no free base port");
}

/** Starts `sluice dev-cluster`; resolves with its process and each node's pid and addresses. */
async function startCluster(dir) {
  const base = await freeBase();
  const proc = spawn(BIN, ["dev-cluster", "--brokers", "3", "--base-port", String(base), "--data-dir", join(dir, "cluster"),
    "--set", "broker.session.timeout.ms=4000", "--set", "broker.heartbeat.interval.ms=500",
    "--set", "replica.lag.time.max.ms=4000"], { stdio: ["ignore", "pipe", "inherit"] });
  const nodes = {};
  const lines = createInterface({ input: proc.stdout });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("dev-cluster printed no node lines in 60 s")), 60000);
    proc.once("exit", (c) => reject(new Error(`dev-cluster exited with ${c}`)));
    lines.on("line", (l) => {
      const m = /^node (\d+) pid (\d+) listening (\S+) http (\S+)/.exec(l);
      if (m) nodes[m[1]] = { id: Number(m[1]), pid: Number(m[2]), kafka: m[3], http: m[4] };
      if (Object.keys(nodes).length === 3) { clearTimeout(timer); resolve(); }
    });
  });
  return { proc, nodes, bootstrap: Object.values(nodes).map((n) => n.kafka).join(",") };
}

async function stopCluster(c) {
  if (!c || c.proc.exitCode !== null) return;
  const gone = new Promise((r) => c.proc.once("exit", r));
  c.proc.kill("SIGTERM");
  const t = setTimeout(() => c.proc.kill("SIGKILL"), 20000);
  await gone;
  clearTimeout(t);
}

function sluice(c, ...args) {
  return execFileSync(BIN, [...args, "-b", c.bootstrap], { encoding: "utf8", timeout: 60000 });
}

// --- plain HTTP: what `/` serves, with which content type -------------------------------
async function httpChecks(base) {
  const types = { html: "text/html", js: "text/javascript", css: "text/css" };
  let index = "";
  await check("GET / serves the page as text/html", async () => {
    const r = await fetch(base + "/");
    assert(r.status === 200, `status ${r.status}`);
    assert((r.headers.get("content-type") || "").startsWith(types.html), `content-type ${r.headers.get("content-type")}`);
    index = await r.text();
    assert(index.includes("/console/app.js"), "index.html does not load app.js");
  });
  await check("every asset the page loads is served with its content type", async () => {
    // The page's own links, then each module's imports, followed to the end.
    const todo = [...index.matchAll(/(?:href|src)="(\/console\/[^"]+)"/g)].map((m) => m[1]);
    const seen = new Set();
    while (todo.length) {
      const path = todo.pop();
      if (seen.has(path)) continue;
      seen.add(path);
      const r = await fetch(base + path);
      assert(r.status === 200, `${path}: status ${r.status}`);
      const want = types[path.split(".").pop()];
      assert((r.headers.get("content-type") || "").startsWith(want), `${path}: content-type ${r.headers.get("content-type")}, want ${want}`);
      const text = await r.text();
      for (const m of text.matchAll(/from "\.\/([^"]+)"/g)) todo.push(`/console/${m[1]}`);
    }
    assert(seen.size >= 7, `only ${seen.size} assets reached: ${[...seen]}`);
  });
  for (const path of [`/v1/topics/${TOPIC}?offset=x`, "/v1/topics?limit=-1"]) {
    await check(`GET ${path} is a JSON 400 naming the parameter`, async () => {
      const r = await fetch(base + path);
      assert(r.status === 400, `status ${r.status}`);
      const body = await r.json();
      assert(/offset|limit/.test(body.error), `body ${JSON.stringify(body)}`);
    });
  }
  const bad = [
    ["GET", `/v1/topics/${TOPIC}/partitions/0/records?offset=x`, 400, /offset/],
    ["GET", `/v1/topics/${TOPIC}/partitions/0/records?offset=1&timestamp=1`, 400, /not both/],
    ["GET", `/v1/topics/${TOPIC}/partitions/0/records?limit=0`, 400, /limit/],
    ["GET", `/v1/topics/${TOPIC}/partitions/x/records`, 400, /partition/],
    ["GET", `/v1/topics/${TOPIC}/partitions/99/records`, 404, /no partition 99/],
    ["GET", "/v1/topics/no-such-topic/partitions/0/records", 404, /unknown topic/],
    ["POST", `/v1/topics/${TOPIC}/partitions/0/records`, 400, /JSON object/, "not json"],
    ["POST", `/v1/topics/${TOPIC}/partitions/0/records`, 400, /unknown field 'kee'/, '{"kee": "x"}'],
    ["POST", `/v1/topics/${TOPIC}/partitions/0/records`, 400, /value must be text/, '{"value": 5}'],
    ["POST", "/v1/topics/no-such-topic/partitions/0/records", 404, /unknown topic/, '{"value": "v"}'],
    ["POST", "/v1/nodes/9/kill", 404, /unknown node 9/],
    ["POST", "/v1/nodes/x/kill", 400, /node id/],
    ["POST", "/v1/nodes/2/explode", 400, /unknown node command/],
    ["POST", "/v1/scenarios/no-such-scenario", 404, /unknown scenario/],
    ["POST", "/v1/nodes/2/faults", 400, /kind/, '{"kind": "nope"}'],
  ];
  for (const [method, path, status, reason, body] of bad) {
    await check(`${method} ${path} is a JSON ${status} with a reason`, async () => {
      const r = await fetch(base + path, { method, body, headers: body ? { "content-type": "application/json" } : {} });
      const answer = await r.json();
      assert(r.status === status, `status ${r.status}: ${JSON.stringify(answer)}`);
      assert(reason.test(answer.error), `error ${JSON.stringify(answer)}`);
    });
  }
  await check("GET /v1/nodes lists the dev-cluster's three nodes and GET /v1/scenarios its scenarios", async () => {
    const n = await (await fetch(base + "/v1/nodes")).json();
    assert(n.nodes.length === 3 && n.nodes.every((x) => x.state === "running") && n.this_node === 1, JSON.stringify(n));
    const sc = await (await fetch(base + "/v1/scenarios")).json();
    assert(sc.scenarios.some((x) => x.name === "leader-crash") && sc.running === null, JSON.stringify(sc));
  });
  for (const path of ["/console/nope.js", "/nope", "/v1/nope", "/console/../Cargo.toml"]) {
    await check(`GET ${path} is a JSON 404`, async () => {
      const r = await fetch(base + path);
      assert(r.status === 404, `status ${r.status}`);
      assert((r.headers.get("content-type") || "").startsWith("application/json"), `content-type ${r.headers.get("content-type")}`);
      const body = await r.json();
      assert(typeof body.error === "string", `body ${JSON.stringify(body)}`);
    });
  }
}


/** Saves a screenshot of the page as a test artifact. */
function screenshot(page, name, fullPage = true) {
  return page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage }).catch(() => {});
}

function processAlive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/** The grid's rows: partition, leader, ISR and state class. */
function gridRows(page) {
  return page.locator("#grid tbody tr").evaluateAll((trs) => trs.map((tr) => ({
    partition: Number(tr.dataset.partition), leader: Number(tr.dataset.leader), isr: tr.dataset.isr.split(",").filter(Boolean).map(Number), state: tr.className })));
}

// Done-means 4: a record produced from the console is found in its browser with its key and headers.
async function messageChecks(page, base, grid) {
  // A partition node 1 does not lead: the record goes to its leader as a Produce request.
  const p = (grid.find((r) => r.leader !== 1) || grid[0]).partition;
  await page.goto(`${base}/#/messages/${TOPIC}?partition=${p}`);
  await check(`a record produced from the Messages pane to ${TOPIC}-${p} is browsed back with its key and headers`, async () => {
    await eventually("the topic list", async () => (await page.locator("#msg-topic").inputValue()) === TOPIC);
    await page.fill("#produce-key", "console-key");
    await page.fill("#produce-value", '{"order": 42, "items": ["tea"]}');
    await page.fill("#produce-headers", "trace-id=abc-123\nsource=console");
    await page.click("#produce");
    const offset = await eventually("the produced offset", async () => page.locator("#produce-result").getAttribute("data-offset"));
    await page.selectOption("#msg-mode", "offset");
    await page.fill("#msg-from", offset);
    // A follower learns the high watermark on its next fetch: load until the record shows.
    const row = page.locator(`#records tr[data-offset="${offset}"]`);
    await eventually("the record in the browser", async () => { await page.click("#msg-load"); return (await row.count()) === 1; });
    const text = await row.innerText();
    for (const want of ["console-key", "trace-id: abc-123", "source: console", '"order":42']) {
      assert(text.replace(/\s/g, "").includes(want.replace(/\s/g, "")), `row "${text}" lacks ${want}`);
    }
    await page.selectOption("#msg-view", "hex");
    const hex = [...Buffer.from("console-key")].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    assert((await row.locator("td.key").innerText()).includes(hex), "the hex view does not show the key's bytes");
    await page.selectOption("#msg-view", "json");
    assert((await row.locator("td.value pre").innerText()).includes('"order": 42'), "the JSON view does not pretty-print the value");
  });
  await check("browsing from a timestamp starts at the first record at or after it", async () => {
    await page.selectOption("#msg-mode", "timestamp");
    await page.fill("#msg-from", String(Date.now() + 3600e3));
    await page.click("#msg-load");
    await eventually("no record after an hour from now", async () => (await page.locator("#msg-info").innerText()).includes("0 records"));
    await page.fill("#msg-from", "0");
    await page.click("#msg-load");
    await eventually("records from the start", async () => (await page.locator("#records tbody tr").count()) >= 1);
  });
  await screenshot(page, "messages");
}

// A partition with no replica on the node asked is read from its leader, one hop only.
async function remoteBrowseChecks(base, c) {
  await check(`GET records of a ${WIDE} partition with no replica here is answered by its leader`, async () => {
    const topic = await (await fetch(`${base}/v1/topics/${WIDE}?limit=20`)).json();
    const far = topic.partitions.find((p) => p.leader !== 1 && p.leader >= 0);
    assert(far, `node 1 leads the first 20 partitions of ${WIDE}`);
    const path = `/v1/topics/${WIDE}/partitions/${far.partition}/records`;
    const put = await fetch(base + path, { method: "POST", body: JSON.stringify({ key: "far", value: "away" }) });
    assert(put.status === 201, `produce: status ${put.status}`);
    const { offset } = await put.json();
    const r = await fetch(`${base}${path}?offset=${offset}`);
    assert(r.status === 200, `browse: status ${r.status}`);
    const body = await r.json();
    assert(body.is_leader === true && body.records.length === 1, `body ${JSON.stringify(body)}`);
    assert(Buffer.from(body.records[0].value, "base64").toString() === "away", `value ${body.records[0].value}`);
    const local = await fetch(`${base}${path}?offset=${offset}&local=true`);
    assert(local.status === 409 && /its leader is broker/.test((await local.json()).error), `local=true: status ${local.status}`);
  });
  await check("GET /v1/brokers/{id}/metrics passes on another broker's /metrics, and refuses an unknown id", async () => {
    const r = await fetch(`${base}/v1/brokers/2/metrics`);
    assert(r.status === 200 && (await r.text()).includes(`sluice_node_info{node_id="2"} 1`), `status ${r.status}`);
    for (const [id, status] of [["99", 404], ["x", 400]]) {
      const bad = await fetch(`${base}/v1/brokers/${id}/metrics`);
      assert(bad.status === status, `broker ${id}: status ${bad.status}, want ${status}`);
    }
  });
}

// A topic of 10 000 partitions spread over the three nodes: its last page, partitions led
// by every node, each with the HW and LEO its leader reports.
async function hugeTopicCheck(page, base, c) {
  const HUGE = "console-huge";
  await check(`the grid shows the last page of a topic of 10 000 partitions, with each leader's HW and LEO`, async () => {
    sluice(c, "topic", "create", HUGE, "-p", "10000", "-r", "1");
    await page.goto(`${base}/#/topic/${HUGE}?page=99`);
    const rows = () => page.locator("#grid tbody tr").evaluateAll((trs) => trs.map((tr) => ({
      partition: Number(tr.dataset.partition), leader: Number(tr.dataset.leader), cells: [...tr.cells].map((td) => td.innerText.trim()) })));
    const last = await eventually("partitions 9900-9999 with HW and LEO", async () => {
      const r = await rows();
      const good = r.length === 100 && r[0].partition === 9900 && r[99].partition === 9999 && r.every((x) => /^\d+$/.test(x.cells[3]) && /^\d+$/.test(x.cells[4]));
      return good && r;
    }, 60000);
    assert((await page.locator(".pager").innerText()).includes("page 100 of 100"), "no 'page 100 of 100'");
    const leaders = new Set(last.map((x) => x.leader));
    assert(leaders.size === 3, `the last page's partitions are led by ${[...leaders]}, want all three nodes`);
  });
  await screenshot(page, "partition-grid-10000", false);
  // Gone again, so the scenario that follows places its topic as on a fresh cluster (it
  // kills its topic's follower, which must not be node 1, the node serving the page).
  sluice(c, "topic", "delete", HUGE);
  await eventually(`${HUGE} deleted`, async () => (await fetch(`${base}/v1/topics/${HUGE}?summary=true`)).status === 404, 60000);
}

// The Charts pane: a produce shows as a rate on its topic's line; Produce gets latency percentiles.
async function chartChecks(page, base, c, grid) {
  await page.goto(`${base}/#/charts`);
  await check("the Charts pane adds up every broker: a produce to a partition a peer leads is a rate on the topic's line", async () => {
    // Node 1 serves the page; the records go to another node, whose counters it asks for.
    const led = grid.find((r) => r.leader !== 1);
    assert(led, "node 1 leads every partition");
    await eventually("all three brokers sampled", async () => /From brokers 1, 2, 3\.$/.test(await page.locator("#chart-sources").innerText()));
    await eventually("the first sample", async () => (await page.locator("#chart-sluice_records_in_total").count()) === 1);
    await sleep(1200);
    execFileSync(BIN, ["produce", TOPIC, "-p", String(led.partition), "-b", c.bootstrap, "--acks", "all"],
      { input: Array.from({ length: 200 }, (_, i) => `chart-${i}`).join("\n") + "\n", timeout: 60000, stdio: "pipe" });
    const line = page.locator(`#chart-sluice_records_in_total polyline[data-topic="${TOPIC}"]`);
    await eventually("a records-in peak on the topic's line", async () => Number(await line.getAttribute("data-peak")) > 0);
    const produce = await page.locator('#latency-table tr[data-api="Produce"] td').allInnerTexts();
    assert(Number(produce[1]) > 0 && produce.slice(2, 5).every((v) => /^\d+(\.\d+)?$/.test(v)), `Produce row ${JSON.stringify(produce)}`);
  });
  await check("the Charts pane shows one broker's counters when picked", async () => {
    await page.selectOption("#chart-broker", "1");
    await eventually("broker 1 alone", async () => (await page.locator("#chart-sources").innerText()) === "From broker 1.");
    await page.selectOption("#chart-broker", "all");
  });
  await screenshot(page, "charts");
}

// The fault form: a fault injected on another node through this node, listed, then cleared.
async function faultFormChecks(page, base, c) {
  await page.goto(`${base}/#/faults`);
  await check("the Faults pane injects an error on node 3 and clears it", async () => {
    await eventually("the fault form", async () => (await page.locator("#fault-node").count()) === 1);
    await page.selectOption("#fault-node", "3");
    await page.selectOption("#fault-kind", "inject");
    await page.fill("#fault-api", "ListOffsets");
    await page.fill("#fault-error", "UNKNOWN_SERVER_ERROR");
    await page.click("#fault-add");
    const listed = async () => (await (await fetch(`http://${c.nodes[3].http}/v1/faults`)).json()).faults;
    await eventually("the fault on node 3", async () => (await listed()).some((f) => f.kind === "inject" && f.api === "ListOffsets"));
    await eventually("the fault in the pane", async () => (await page.locator("#active-faults").innerText()).includes("ListOffsets"));
    await screenshot(page, "faults");
    await page.click("#fault-clear");
    await eventually("no fault on node 3", async () => (await listed()).length === 0);
  });
}

/** Clicks the Faults pane's `command` button for `node` and waits for the node's row to
 * show `state`; `after` checks more. */
async function nodeButton(page, base, node, command, state, after = async () => {}) {
  await page.goto(`${base}/#/faults`);
  await check(`the Faults pane's ${command} button leaves node ${node} ${state}`, async () => {
    await page.click(`#nodes button[data-node="${node}"][data-command="${command}"]`, { timeout: 10000 });
    await eventually(`node ${node} shown ${state}`, async () =>
      (await page.locator(`#nodes tr[data-node="${node}"]`).getAttribute("data-state")) === state, 30000);
    await after();
  });
}

// Done-means 3: pausing a follower from the console takes it out of the ISR (partitions
// under-replicated); resuming brings it back.
async function pauseChecks(page, base, c) {
  const controller = (await (await fetch(base + "/v1/cluster")).json()).controller_id;
  const paused = [2, 3].find((n) => n !== controller) ?? 3;
  await nodeButton(page, base, paused, "pause", "paused");
  await page.goto(`${base}/#/topic/${TOPIC}`);
  await check(`node ${paused}, paused, leaves every ISR and the partitions are marked under-replicated`, async () => {
    await eventually("no ISR with the paused node", async () => {
      const rows = await gridRows(page);
      return rows.length === 6 && rows.every((r) => !r.isr.includes(paused) && r.leader >= 0 && r.state === "under-replicated");
    }, 30000);
  });
  await screenshot(page, "partition-grid-paused");
  await nodeButton(page, base, paused, "resume", "running");
  await page.goto(`${base}/#/topic/${TOPIC}`);
  await check(`node ${paused}, resumed, is back in every ISR`, async () => {
    await eventually("full ISRs again", async () => {
      const rows = await gridRows(page);
      return rows.length === 6 && rows.every((r) => r.isr.length === 3 && r.state === "");
    }, 30000);
  });
  return gridRows(page);
}

// The restart button brings the killed node back.
async function restartCheck(page, base, victim) {
  await nodeButton(page, base, victim, "restart", "running", () => eventually("the broker live again", async () =>
    (await (await fetch(base + "/v1/brokers")).json()).some((b) => b.broker_id === victim && b.live), 30000));
}

// A scenario started with its button narrates into the timeline. It may go on to kill a
// node, so it runs last; stopping the cluster ends it (it is a child of node 1).
async function scenarioCheck(page, base) {
  await page.goto(`${base}/#/faults`);
  await check("a scenario run from the Faults pane narrates into the timeline", async () => {
    await page.click('#scenarios button[data-scenario="min-isr"]', { timeout: 10000 });
    await eventually("the run reported", async () => (await page.locator("#fault-result").innerText()).includes("started"));
    await page.goto(`${base}/#/timeline`);
    await eventually("scenario_step rows", async () => {
      const rows = await page.locator('#events tbody tr[data-type="scenario_step"]').allInnerTexts();
      return rows.some((r) => r.includes("scenario min-isr")) && rows.some((r) => r.includes("created min-isr-"));
    }, 30000);
  });
  await screenshot(page, "timeline-scenario", false);
}

// Done-means 7: a node without fault.injection.enable shows no fault control, and every
// fault endpoint refuses, though it names the running dev-cluster's real control socket.
async function refusalChecks(c, dir) {
  const port = await freeBase();
  const [kafka, http] = [`127.0.0.1:${port}`, `127.0.0.1:${port + 200}`];
  const proc = spawn(BIN, ["serve", "--node-id", "1", "--listen", kafka, "--advertise", kafka, "--data-dir", join(dir, "plain"),
    "--set", `http.listener=${http}`, "--set", `dev.control.socket=${join(dir, "cluster", "control.sock")}`], { stdio: "ignore" });
  const base = `http://${http}`;
  try {
    await eventually("the plain node's HTTP listener", async () => (await fetch(base + "/v1/cluster")).ok, 30000);
    const pids = Object.values(c.nodes).map((n) => n.pid);
    for (const [method, path, body] of [["GET", "/v1/faults"], ["POST", "/v1/faults", '{"kind": "isolate"}'], ["DELETE", "/v1/faults"],
      ["GET", "/v1/nodes"], ["POST", "/v1/nodes/3/kill"], ["POST", "/v1/nodes/3/pause"], ["GET", "/v1/nodes/3/faults"],
      ["GET", "/v1/scenarios"], ["POST", "/v1/scenarios/min-isr"]]) {
      await check(`without fault.injection.enable, ${method} ${path} is a JSON 403`, async () => {
        const r = await fetch(base + path, { method, body });
        const answer = await r.json();
        assert(r.status === 403, `status ${r.status}: ${JSON.stringify(answer)}`);
        assert(/fault.injection.enable/.test(answer.error), JSON.stringify(answer));
      });
    }
    await check("the refused kill left the dev-cluster's nodes running", async () => {
      const n = await (await fetch(`http://${c.nodes[1].http}/v1/nodes`)).json();
      assert(n.nodes.every((x) => x.state === "running"), JSON.stringify(n.nodes));
    });
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
      await page.goto(base + "/");
      await check("without fault.injection.enable the console has no Faults link and the pane no controls", async () => {
        await eventually("the node line", async () => (await page.locator("#node").innerText()).includes("node 1"));
        await sleep(500);
        assert(await page.locator('nav a[data-pane="faults"]').isHidden(), "the Faults link is shown");
        await page.goto(base + "/#/faults");
        await eventually("the refusal", async () => (await page.locator("#faults-off").innerText()).includes("fault.injection.enable"));
        assert((await page.locator("button").count()) === 0, "the pane has buttons");
      });
      await screenshot(page, "faults-off");
    } finally {
      await browser.close();
    }
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => (proc.exitCode !== null ? r() : proc.once("exit", r)));
  }
}

// --- the browser -------------------------------------------------------------------------
async function browserChecks(c, base) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  const shot = (name, fullPage = true) => screenshot(page, name, fullPage);
  try {
    await page.goto(base + "/");
    await check("the landing page lists the three brokers with their addresses", async () => {
      await eventually("3 broker rows", async () => (await page.locator("#brokers tbody tr").count()) === 3);
      for (const n of Object.values(c.nodes)) {
        const row = page.locator(`#brokers tr[data-broker="${n.id}"]`);
        const text = await row.innerText();
        assert(text.includes(n.kafka), `broker ${n.id}'s row "${text}" lacks ${n.kafka}`);
        assert((await row.getAttribute("data-live")) === "true", `broker ${n.id} not shown alive`);
      }
    });
    await check("the landing page names the active controller", async () => {
      const id = (await (await fetch(base + "/v1/cluster")).json()).controller_id;
      await eventually("the controller tag", async () =>
        (await page.locator(`#brokers tr[data-broker="${id}"] .tag`).innerText()).includes("active controller"));
    });
    await check("the landing page lists the topic", async () => {
      await eventually(`a row for ${TOPIC}`, async () => (await page.locator(`#landing-topics tr[data-topic="${TOPIC}"]`).count()) === 1);
    });
    await check("the health banner says healthy", async () => {
      await eventually("a healthy banner", async () => (await page.locator("#health").getAttribute("data-healthy")) === "true");
    });
    await shot("cluster");

    await page.goto(`${base}/#/topic/${TOPIC}`);
    let grid = [];
    await check("the partition grid shows the leader and a full ISR for each partition", async () => {
      grid = await eventually("6 partitions, each with one leader and 3 in-ISR replicas", async () => {
        const rows = await page.locator("#grid tbody tr").evaluateAll((trs) => trs.map((tr) => ({
          partition: Number(tr.dataset.partition), leader: Number(tr.dataset.leader),
          leaders: [...tr.querySelectorAll('td[data-role="leader"]')].map((td) => Number(td.dataset.broker)),
          inIsr: [...tr.querySelectorAll('td[data-isr="true"]')].map((td) => Number(td.dataset.broker)),
        })));
        const good = rows.length === 6 && rows.every((r) => r.leaders.length === 1 && r.leaders[0] === r.leader && r.inIsr.length === 3);
        return good && rows;
      });
    });
    await check("the grid shows HW and LEO for every partition, led here or by a peer", async () => {
      assert(grid.some((r) => r.leader !== 1), "node 1 leads every partition: no peer's progress to show");
      for (const p of grid.map((r) => r.partition)) {
        const cells = await page.locator(`#grid tr[data-partition="${p}"] td`).allInnerTexts();
        assert(/^\d+$/.test(cells[3]) && /^\d+$/.test(cells[4]), `partition ${p}: HW "${cells[3]}", LEO "${cells[4]}"`);
      }
    });
    await shot("partition-grid");

    await page.goto(`${base}/#/topic/${WIDE}`);
    await check("the grid pages a topic of 250 partitions 100 at a time", async () => {
      const shown = () => page.locator("#grid tbody tr").evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.partition)));
      const range = (a, b) => JSON.stringify(Array.from({ length: b - a }, (_, i) => a + i));
      await eventually("partitions 0-99", async () => JSON.stringify(await shown()) === range(0, 100));
      assert((await page.locator(".pager").innerText()).includes("page 1 of 3"), "no 'page 1 of 3'");
      await page.click(".pager button:last-child");
      await eventually("partitions 100-199", async () => JSON.stringify(await shown()) === range(100, 200));
      await page.click(".pager button:last-child");
      await eventually("partitions 200-249", async () => JSON.stringify(await shown()) === range(200, 250));
      assert(await page.locator(".pager button:last-child").isDisabled(), "next is enabled on the last page");
    });
    await check("a group's lag is shown per partition and falls to 0 when its consumer catches up", async () => {
      const consume = (n) => sluice(c, "consume", TOPIC, "-g", GROUP, "--from-beginning", "-n", String(n), "-f", "%o\\n");
      consume(3);
      // Any node's console shows any group: open one on a node that does not coordinate it.
      const other = await eventually("a node that does not coordinate the group", async () => {
        const local = await Promise.all(Object.values(c.nodes).map(async (n) => [n, (await fetch(`http://${n.http}/v1/groups/${GROUP}?local=true`)).ok]));
        return local.some(([, coordinates]) => coordinates) && local.find(([, coordinates]) => !coordinates)[0];
      });
      await page.goto(`http://${other.http}/#/group/${GROUP}`);
      const lags = () => page.locator("#lag tbody tr").evaluateAll((trs) => trs.map((tr) => tr.innerText.split("\t").map((s) => s.trim())));
      await eventually("lag 3 on partition 0", async () => (await lags()).some((r) => r[1] === "0" && r[4] === "3"));
      consume(3);
      await eventually("lag 0 on every partition", async () => { const l = await lags(); return l.length > 0 && l.every((r) => r[4] === "0"); });
    });
    await shot("group");
    await page.goto(`${base}/#/topic/${TOPIC}`);

    await messageChecks(page, base, grid);
    await remoteBrowseChecks(base, c);
    await chartChecks(page, base, c, grid);
    await faultFormChecks(page, base, c);
    grid = await pauseChecks(page, base, c);

    // Kill a node that leads something, not node 1 (whose listener serves this page), with
    // the Faults pane's own button.
    const victim = grid.map((r) => r.leader).find((l) => l !== 1) ?? 2;
    const led = grid.filter((r) => r.leader === victim).map((r) => r.partition);
    await nodeButton(page, base, victim, "kill", "dead", async () =>
      assert(!processAlive(c.nodes[victim].pid), `pid ${c.nodes[victim].pid} still runs`));
    await shot("faults-after-kill");
    const killedAt = Date.now();
    await page.goto(`${base}/#/topic/${TOPIC}`);
    await check(`after the kill of node ${victim} the grid moves its partitions' leaders and shrinks their ISRs`, async () => {
      await eventually("no partition led by or in sync on the killed node", async () => {
        const rows = await page.locator("#grid tbody tr").evaluateAll((trs) => trs.map((tr) => ({
          leader: Number(tr.dataset.leader), isr: tr.dataset.isr.split(",").map(Number), state: tr.className })));
        return rows.length === 6 && rows.every((r) => r.leader !== victim && r.leader >= 0 && !r.isr.includes(victim) && r.state === "under-replicated");
      });
      console.log(`     (grid updated ${Date.now() - killedAt} ms after the kill)`);
    });
    await eventually("an unhealthy banner", async () => (await page.locator("#health").getAttribute("data-healthy")) === "false").catch(() => {});
    await shot("partition-grid-after-kill");
    await page.goto(`${base}/#/cluster`);
    await check(`the cluster page shows node ${victim} not alive and the health banner names it`, async () => {
      await eventually("the broker shown not alive", async () =>
        (await page.locator(`#brokers tr[data-broker="${victim}"]`).getAttribute("data-live")) === "false");
      await eventually("an unhealthy banner", async () => (await page.locator("#health").innerText()).includes("nodes_down"));
    });
    await shot("cluster-after-kill");
    await page.goto(`${base}/#/timeline`);
    await check("the timeline shows the fencing, the elections away from the killed node, and the ISR shrinks", async () => {
      await eventually("broker_fenced, leader_changed and isr_shrunk rows", async () => {
        const rows = await page.locator("#events tbody tr").evaluateAll((trs) => trs.map((tr) => ({ type: tr.dataset.type, text: tr.innerText })));
        const fenced = rows.some((r) => r.type === "broker_fenced" && r.text.includes(`broker ${victim} fenced`));
        const moved = led.every((p) => rows.some((r) => r.type === "leader_changed" && r.text.includes(`${TOPIC}/${p}: leader ${victim} →`)));
        const shrunk = rows.some((r) => r.type === "isr_shrunk" && r.text.includes(TOPIC));
        return fenced && moved && shrunk;
      });
      const counted = await page.locator("#axis .mark.election").evaluateAll((ms) => ms.reduce((s, m) => s + Number(m.dataset.count), 0));
      assert(counted >= led.length, `${counted} elections counted on the axis, want at least ${led.length}`);
    });
    // The list below the axis grows with every event: the first screen is the picture.
    await shot("timeline", false);

    await page.goto(`${base}/#/topics`);
    await check("the topic filter keeps only the matching topics", async () => {
      const names = () => page.locator("#topics tbody tr").evaluateAll((trs) => trs.map((tr) => tr.dataset.topic));
      const all = [OTHER, TOPIC, WIDE];
      await eventually("the three topics listed", async () => JSON.stringify(await names()) === JSON.stringify(all));
      await page.fill("#topic-filter", "orders");
      await eventually("only the orders topic", async () => JSON.stringify(await names()) === JSON.stringify([TOPIC]));
      await page.fill("#topic-filter", "no-such-topic");
      await eventually("no topic", async () => (await names()).length === 0);
      await page.fill("#topic-filter", "");
      await eventually("all three again", async () => JSON.stringify(await names()) === JSON.stringify(all));
    });
    await shot("topics");
    await restartCheck(page, base, victim);
    await hugeTopicCheck(page, base, c);
    await scenarioCheck(page, base);
    await check("the pages raised no script error", async () => assert(pageErrors.length === 0, pageErrors.join("; ")));
  } finally {
    await browser.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), "sluice-console-"));
mkdirSync(ARTIFACTS, { recursive: true });
let cluster = null;
try {
  cluster = await startCluster(dir);
  const base = `http://${cluster.nodes[1].http}`;
  await eventually("the cluster answering", async () => sluice(cluster, "topic", "list") !== null, 60000);
  sluice(cluster, "topic", "create", TOPIC, "-p", "6", "-r", "3", "-c", "min.insync.replicas=2");
  sluice(cluster, "topic", "create", OTHER, "-p", "1", "-r", "3");
  sluice(cluster, "topic", "create", WIDE, "-p", "250", "-r", "1");
  execFileSync(BIN, ["produce", TOPIC, "-b", cluster.bootstrap, "--acks", "all"], { input: "a\nb\nc\nd\ne\nf\n", timeout: 60000, stdio: "pipe" });
  await httpChecks(base);
  await refusalChecks(cluster, dir);
  await browserChecks(cluster, base);
} catch (e) {
  failed++;
  console.log(`FAIL setup: ${e && e.stack ? e.stack : e}`);
} finally {
  await stopCluster(cluster);
  rmSync(dir, { recursive: true, force: true });
}
console.log(`console: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
