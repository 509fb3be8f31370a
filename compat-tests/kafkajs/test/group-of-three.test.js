// A consumer group of three (the classic protocol, kafkajs's round-robin assignor): all three
// join and split the partitions; one leaves and the other two take its partitions over; a third
// joins in a process of its own and is killed -9, and when its session expires the two take
// over again; then the group stops and a new member resumes from the committed offsets. No
// record is missed, and none is delivered twice: every phase waits for its offsets to be
// committed first.
'use strict'

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')
const { consumerOf, uniqueName, withTopic, scenario, waitFor, duplicates } = require('../lib')

const partitions = 6
const perPhase = 120

scenario('group-of-three', async () => {
  const { client, admin, topic } = await withTopic('group3', partitions)
  const groupId = uniqueName('group3-g')
  const producer = client.producer()
  await producer.connect()

  const received = [] // {who, partition, value}
  const assignment = {} // member name -> its partitions, from its latest join
  const members = {}
  async function start(who) {
    const c = consumerOf(client, { groupId })
    c.on(c.events.GROUP_JOIN, e => { assignment[who] = e.payload.memberAssignment[topic] || [] })
    await c.connect()
    await c.subscribe({ topics: [topic], fromBeginning: true })
    await c.run({
      eachMessage: async ({ partition, message }) => {
        received.push({ who, partition, value: message.value.toString() })
      },
    })
    members[who] = c
  }
  // A member in a child process (group-member.js), which kill() ends with SIGKILL.
  function startProcess(who) {
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'group-member.js'), groupId, topic],
      { stdio: ['ignore', 'pipe', 'inherit'] })
    readline.createInterface({ input: child.stdout }).on('line', line => {
      const event = JSON.parse(line)
      if (event.join) assignment[who] = event.join
      if (event.record) received.push({ who, ...event.record })
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
    const names = Object.keys(members)
    const lists = names.map(n => assignment[n])
    if (lists.some(l => !l || l.length === 0)) return false
    const all = lists.flat()
    return all.length === partitions && new Set(all).size === partitions
  }
  async function producePhase(phase) {
    const messages = Array.from({ length: perPhase }, (_, i) => ({ partition: i % partitions, value: `${phase}-${i}` }))
    await producer.send({ topic, acks: -1, messages })
    await waitFor(`phase ${phase}'s records`,
      () => received.filter(r => r.value.startsWith(`${phase}-`)).length >= perPhase)
    return received.filter(r => r.value.startsWith(`${phase}-`))
  }
  // Every record so far is committed: the group's offsets are the partitions' ends.
  async function allCommitted() {
    const ends = await admin.fetchTopicOffsets(topic)
    await waitFor('the group to commit every record', async () => {
      const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] })
      return ends.every(e => offsets.partitions.find(p => p.partition === e.partition).offset === e.high)
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
    await waitFor('three members to split the partitions', balanced)
    const three = { ...assignment }
    checkOwners(await producePhase('one'), three)
    await allCommitted()

    await stop('c')
    await waitFor('two members to take over the third one\'s partitions', balanced)
    const two = { ...assignment }
    checkOwners(await producePhase('two'), two)
    await allCommitted()

    startProcess('e')
    await waitFor('a member in its own process to join', balanced)
    checkOwners(await producePhase('crash'), { ...assignment })
    await allCommitted()
    await stop('e')
    await waitFor("the session of the killed member to expire, and the two to take its partitions", balanced)
    checkOwners(await producePhase('after-crash'), { ...assignment })
    await allCommitted()

    await stop('a')
    await stop('b')
    await producer.send({ topic, acks: -1, messages: Array.from({ length: perPhase }, (_, i) => ({ partition: i % partitions, value: `three-${i}` })) })
    // The restarted group reads each partition from its committed offset: an earlier record
    // re-delivered would come before that partition's phase-three records, so waiting for all
    // of phase three also waits for any re-delivery.
    const before = received.length
    await start('d')
    await waitFor("phase three's records", () => received.filter(r => r.value.startsWith('three-')).length >= perPhase)
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
    await producer.disconnect()
    await admin.disconnect()
  }
})
