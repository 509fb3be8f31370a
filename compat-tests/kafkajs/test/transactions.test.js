// A transactional producer: committed, aborted and committed again, with the consumed
// offsets of a group sent in each (TxnOffsetCommit); then a second producer with the same
// transactional id fences the first in the middle of a transaction and commits one of its own.
// A read_committed consumer (kafkajs's default, readUncommitted=false) sees only the committed
// records, a read_uncommitted one sees the aborted and fenced ones too, and the group's offset
// is the last committed transaction's. While a transaction is open, the last stable offset
// (ListOffsets at read_committed) stays where it began.
'use strict'

const assert = require('node:assert/strict')
const { checkTransactionsReadBack } = require('../../node-common/checks')
const { transactionRounds } = require('../../node-common/transactions')
const { consumerOf, uniqueName, withTopic, scenario, consumeUntil } = require('../lib')

const perTxn = 12

scenario('transactions', async () => {
  const { client, admin, topic } = await withTopic('txn', 2)
  const group = uniqueName('txn-offsets')

  const transactionalId = uniqueName('kafkajs-txn')
  const transactional = () => client.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  // kafkajs takes a transactional producer id at the first transaction(), so that is where
  // the successor bumps the epoch: the coordinator aborts the open transaction, and the first
  // producer's next send and its commit are refused (Kafka answers clients of kafkajs's
  // versions INVALID_PRODUCER_EPOCH, newer ones PRODUCER_FENCED).
  const refusal = await transactionRounds({
    topic,
    perTxn,
    transactional,
    offsetsAt: offset => ({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }] }),
    // kafkajs's ListOffsets is read_committed: its high offset is the last stable offset.
    stable: async () => (await admin.fetchTopicOffsets(topic)).map(p => `${p.partition}:${p.high}`).sort().join(' '),
    fenced: e => (['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED'].includes(e.type) ? e.type : undefined),
  })

  // Both consumers read until the records (and markers) of the last transaction are in:
  // the read_committed one cannot see the aborted records before that point, so "none of
  // them" is checked on a log that already holds what came after them.
  const readCommitted = await consumeUntil(consumerOf(client, { groupId: uniqueName('rc') }), topic,
    r => r.filter(m => m.value.startsWith('committed-3')).length === perTxn)
  const readUncommitted = await consumeUntil(consumerOf(client, { groupId: uniqueName('ru'), readUncommitted: true }), topic,
    r => r.filter(m => m.value.startsWith('committed-3')).length === perTxn)
  checkTransactionsReadBack(readCommitted, readUncommitted, perTxn)

  const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  await admin.disconnect()
  const p0 = offsets.partitions.find(p => p.partition === 0)
  assert.equal(p0.offset, '11', "the group's committed offset (the last committed transaction's)")
  return `transactions of ${perTxn} records with sendOffsets: commit, abort, commit, fenced by a new producer ` +
    `(${refusal}), its commit: read_committed sees ${3 * perTxn}, none aborted or fenced; ` +
    'read_uncommitted sees them; LSO held by open transactions; group offset from the last commit'
})
