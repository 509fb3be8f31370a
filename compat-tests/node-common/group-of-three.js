// The group-of-three scenario for any Node.js client: all three members join and split the
// partitions; one leaves and the other two take its partitions over; a third joins in a process
// of its own and is killed -9, and when its session expires the two take over again; then the
// group stops and a new member resumes from the committed offsets. No record is missed, and
// none is delivered twice: every phase waits for its offsets to be committed first. The suite's
// test file supplies the client's side (see groupOfThree's parameters).
'use strict'

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const readline = require('node:readline')
const { waitFor, duplicates } = require('./harness')

/**
 * Runs the scenario and returns its note. The client's side:
 * - `partitions`: the topic's partition count; `perPhase`: records per phase;
 * - `startMember(who, onRecord, onAssignment)`: starts a member in this process, which calls
 *   onRecord(partition, value) per record and onAssignment([partitions]) per new assignment;
 *   resolves to an object with `disconnect()` (leaving the group);
 * - `memberProcess`: [script, ...args] of a member in its own process, printing one JSON line
 *   per event: {"join": [partitions]} or {"record": {partition, value}};
 * - `send(messages)`: produces [{partition, value}] (acks=all);
 * - `ends()`: the partitions' ends, [{partition, high}] (high a string);
 * - `committed()`: the group's offsets, [{partition, offset}] (offset a string).
 */
async function groupOfThree({ partitions, perPhase, startMember, memberProcess, send, ends, committed }) {
  const received = [] // {who, partition, value}
  const assignment = {} // member name -> its partitions, from its latest assignment
  const members = {}
  const onRecord = who => (partition, value) => received.push({ who, partition, value })
  const onAssignment = who => list => { assignment[who] = list }
  async function start(who) {
    members[who] = await startMember(who, onRecord(who), onAssignment(who))
  }
  // A member in a child process, which stop() ends with SIGKILL.
  function startProcess(who) {
    const child = spawn(process.execPath, memberProcess, { stdio: ['ignore', 'pipe', 'inherit'] })
    readline.createInterface({ input: child.stdout }).on('line', line => {
      const event = JSON.parse(line)
      if (event.join) onAssignment(who)(event.join)
      if (event.record) onRecord(who)(event.record.partition, event.record.value)
    })
    members[who] = { disconnect: async () => child.kill('SIGKILL') }
  }
  async function stop(who) {
    await members[who].disconnect()
    delete members[who]
    delete assignment[who]
  }
  // The live members' latest assignments split every partition among them, none left out.
  const balanced = () => {
    const lists = Object.keys(members).map(n => assignment[n])
    if (lists.some(l => !l || l.length === 0)) return false
    const all = lists.flat()
    return all.length === partitions && new Set(all).size === partitions
  }
  const waitBalanced = what => waitFor(what, balanced).catch(e => {
    throw new Error(`${e.message}; assignments ${JSON.stringify(assignment)}`)
  })
  const phaseRecords = phase => Array.from({ length: perPhase }, (_, i) => ({ partition: i % partitions, value: `${phase}-${i}` }))
  const ofPhase = phase => received.filter(r => r.value.startsWith(`${phase}-`))
  async function producePhase(phase) {
    await send(phaseRecords(phase))
    await waitFor(`phase ${phase}'s records`, () => ofPhase(phase).length >= perPhase)
    return ofPhase(phase)
  }
  // Every record so far is committed: the group's offsets are the partitions' ends.
  async function allCommitted() {
    const high = await ends()
    await waitFor('the group to commit every record', async () => {
      const offsets = await committed()
      return high.every(e => (offsets.find(p => p.partition === e.partition) || {}).offset === e.high)
    })
  }
  // Each of a phase's records went to the member that owned its partition then.
  function checkOwners(records, owners) {
    for (const r of records) assert.ok(owners[r.who].includes(r.partition), `${r.value} on p${r.partition} went to ${r.who}`)
  }

  try {
    await start('a')
    await start('b')
    await start('c')
    await waitBalanced('three members to split the partitions')
    const three = { ...assignment }
    checkOwners(await producePhase('one'), three)
    await allCommitted()

    await stop('c')
    await waitBalanced('two members to take over the third one\'s partitions')
    const two = { ...assignment }
    checkOwners(await producePhase('two'), two)
    await allCommitted()

    startProcess('e')
    await waitBalanced('a member in its own process to join')
    checkOwners(await producePhase('crash'), { ...assignment })
    await allCommitted()
    await stop('e')
    await waitBalanced('the session of the killed member to expire, and the two to take its partitions')
    checkOwners(await producePhase('after-crash'), { ...assignment })
    await allCommitted()

    await stop('a')
    await stop('b')
    await send(phaseRecords('three'))
    // The restarted group reads each partition from its committed offset: an earlier record
    // re-delivered would come before that partition's phase-three records, so waiting for all
    // of phase three also waits for any re-delivery.
    const before = received.length
    await start('d')
    await waitFor("phase three's records", () => ofPhase('three').length >= perPhase)
    await stop('d')

    const afterRestart = received.slice(before)
    assert.deepEqual(afterRestart.filter(r => !r.value.startsWith('three-')).map(r => r.value), [],
      're-delivered after the restart')
    const values = received.map(r => r.value)
    assert.deepEqual(duplicates(values), [], 'records delivered twice')
    assert.equal(values.length, 5 * perPhase, 'records delivered')
    const sizes = o => Object.values(o).map(l => l.length).sort().join('+')
    return `join of 3 (${sizes(three)} partitions), one leaves (${sizes(two)}), one killed -9 (session expiry), ` +
      `restart resumes at the commits: ${values.length} records, each once`
  } finally {
    // A failed step leaves members running (a child process among them): stop them all.
    for (const who of Object.keys(members)) await stop(who).catch(() => {})
  }
}

module.exports = { groupOfThree }
