// One consumer-group member in a process of its own, for group-of-three to kill -9 (a member
// that vanishes without leaving): `node group-member.js GROUP TOPIC`. Prints one JSON line per
// event: {"join": [partitions]} after each rebalance, {"record": {partition, value}} per record.
'use strict'

const { kafka, consumerOf } = require('./lib')

const [groupId, topic] = process.argv.slice(2)
const say = event => process.stdout.write(`${JSON.stringify(event)}\n`)

async function main() {
  // The shortest session the suite's broker allows (group.min.session.timeout.ms), so that
  // the group notices the kill soon.
  const consumer = consumerOf(kafka(), { groupId, sessionTimeout: 2000 })
  consumer.on(consumer.events.GROUP_JOIN, e => say({ join: e.payload.memberAssignment[topic] || [] }))
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }) => say({ record: { partition, value: message.value.toString() } }),
  })
}

main().catch(e => {
  console.error(e)
  process.exit(1)
})
