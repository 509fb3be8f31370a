// A transactional producer: committed, aborted and committed again, with the consumed
// offsets of a group sent in two of them (TxnOffsetCommit). A read_committed consumer (kafkajs's
// default, readUncommitted=false) sees only the committed records, a read_uncommitted one sees
// all of them, and the group's offsets are the committed transaction's, not the aborted one's.
'use strict'

const assert = require('node:assert/strict')
const { consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')

const perTxn = 12

scenario('transactions', async () => {
  const { client, admin, topic } = await withTopic('txn', 2)
  const group = uniqueName('txn-offsets')

  const producer = client.producer({
    transactionalId: uniqueName('kafkajs-txn'),
    idempotent: true,
    maxInFlightRequests: 1,
  })
  await producer.connect()
  const outcomes = [['committed-1', 'commit', 5], ['aborted', 'abort', 9], ['committed-2', 'commit', 7]]
  for (const [label, end, groupOffset] of outcomes) {
    const txn = await producer.transaction()
    await txn.send({
      topic,
      messages: Array.from({ length: perTxn }, (_, i) => ({ key: `k${i}`, value: `${label}-${i}` })),
    })
    await txn.sendOffsets({
      consumerGroupId: group,
      topics: [{ topic, partitions: [{ partition: 0, offset: String(groupOffset) }] }],
    })
    await (end === 'commit' ? txn.commit() : txn.abort())
  }
  await producer.disconnect()

  const committed = outcomes.filter(o => o[1] === 'commit')
  const wanted = committed.length * perTxn
  // Both consumers read until the records (and markers) of the last transaction are in:
  // the read_committed one cannot see the aborted records before that point, so "none of
  // them" is checked on a log that already holds what came after them.
  const readCommitted = await consumeUntil(consumerOf(client, { groupId: uniqueName('rc') }), topic,
    r => r.filter(m => m.value.startsWith('committed-2')).length === perTxn)
  const values = readCommitted.map(r => r.value)
  assert.equal(values.filter(v => v.startsWith('aborted')).length, 0, 'aborted records seen by read_committed')
  assert.equal(values.length, wanted, 'committed records seen by read_committed')

  const readUncommitted = await consumeUntil(
    consumerOf(client, { groupId: uniqueName('ru'), readUncommitted: true }), topic,
    r => r.filter(m => m.value.startsWith('committed-2')).length === perTxn)
  assert.equal(readUncommitted.filter(r => r.value.startsWith('aborted')).length, perTxn,
    'the aborted records are in the log for read_uncommitted')

  const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  await admin.disconnect()
  const p0 = offsets.partitions.find(p => p.partition === 0)
  assert.equal(p0.offset, '7', "the group's committed offset (the last committed transaction's)")
  return `3 transactions (commit, abort, commit) of ${perTxn} records with sendOffsets: ` +
    `read_committed sees ${wanted}, none aborted; read_uncommitted sees the aborted too; group offset from the commit`
})
