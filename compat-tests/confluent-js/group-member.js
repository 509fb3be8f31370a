// One consumer-group member in a process of its own, for group-of-three to kill -9 (a member
// that vanishes without leaving): `node group-member.js GROUP TOPIC`. Prints one JSON line per
// event: {"join": [partitions]} when its assignment changes, {"record": {partition, value}} per
// record.
'use strict'

const { kafka, consumerOf } = require('./lib')

const [groupId, topic] = process.argv.slice(2)
const say = event => process.stdout.write(`${JSON.stringify(event)}\n`)

async function main() {
  // The shortest session the suite's broker allows (group.min.session.timeout.ms is 1 s) with
  // room for two heartbeats, so that the group notices the kill soon.
  const consumer = consumerOf(kafka(), groupId, { sessionTimeout: 3000, heartbeatInterval: 500 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic] })
  await consumer.run({
    eachMessage: async ({ partition, message }) => say({ record: { partition, value: message.value.toString() } }),
  })
  let last = ''
  setInterval(() => {
    const now = JSON.stringify(partitionsOf(consumer.assignment(), topic))
    if (now !== last) say({ join: JSON.parse(now) })
    last = now
  }, 100)
}

/** The partitions of `topic` in a consumer's assignment(), sorted. (Its doc comment says
 * [{topic, partitions}], but it returns one {topic, partition} per partition.) */
function partitionsOf(assignment, topic) {
  return assignment.filter(a => a.topic === topic).map(a => a.partition).sort((a, b) => a - b)
}

if (require.main === module) {
  main().catch(e => {
    console.error(e)
    process.exit(1)
  })
}

module.exports = { partitionsOf }
