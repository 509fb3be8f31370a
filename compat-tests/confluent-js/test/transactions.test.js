// A transactional producer: committed, aborted and committed again, with a group's offsets sent
// in each (TxnOffsetCommit, through the client's sendOffsets, which takes a consumer of the
// group); then a second producer with the same transactional id fences the first in the middle
// of a transaction and commits one of its own. A read_committed consumer (librdkafka's default)
// sees only the committed records, a read_uncommitted one sees the aborted and fenced ones too,
// and the group's offset is the last committed transaction's. While a transaction is open, the
// last stable offset (ListOffsets at read_committed) stays where it began.
'use strict'

const assert = require('node:assert/strict')
const { checkTransactionsReadBack } = require('../../node-common/checks')
const { transactionRounds } = require('../../node-common/transactions')
const { confluent, consumerOf, uniqueName, withTopic, scenario, consumeUntil, describeError } = require('../lib')

const { IsolationLevel } = confluent.KafkaJS
const perTxn = 12

scenario('transactions', async () => {
  const { client, admin, topic } = await withTopic('txn', 2)
  const group = uniqueName('txn-offsets')
  // sendOffsets needs the group's consumer (its group metadata); it need not consume.
  const groupConsumer = consumerOf(client, group)
  await groupConsumer.connect()

  const transactionalId = uniqueName('confluent-js-txn')
  const transactional = () => client.producer({ kafkaJS: { transactionalId, idempotent: true, acks: -1 } })
  // The successor's connect() (InitProducerId) bumps the epoch: the coordinator aborts the
  // first producer's open transaction, and its next send and its commit are refused.
  const refusal = await transactionRounds({
    topic,
    perTxn,
    transactional,
    offsetsAt: offset => ({ consumer: groupConsumer, topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }] }),
    stable: async () => (await admin.fetchTopicOffsets(topic, { isolationLevel: IsolationLevel.READ_COMMITTED }))
      .map(p => `${p.partition}:${p.high}`).sort().join(' '),
    fenced: e => (/fenc|epoch/i.test(describeError(e)) ? e.type || e.code : undefined),
  })
  await groupConsumer.disconnect()

  // Both consumers read until the records of the last transaction are in: the read_committed
  // one cannot see the aborted records before that point, so "none of them" is checked on a
  // log that already holds what came after them.
  const readCommitted = await consumeUntil(consumerOf(client, uniqueName('rc')), topic,
    r => r.filter(m => m.value.startsWith('committed-3')).length === perTxn)
  const readUncommitted = await consumeUntil(consumerOf(client, uniqueName('ru'), { readUncommitted: true }), topic,
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
