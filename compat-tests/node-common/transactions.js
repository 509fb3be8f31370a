// The transactions scenario's producer side for the Node.js clients with kafkajs's transaction
// API (kafkajs, and Confluent's client's KafkaJS-compatible one): three transactions (commit,
// abort, commit), each with a group offset sent in it, while the last stable offset must stay
// put; then a second producer with the same transactional id fences the first in the middle of
// a transaction, whose next send and commit are refused, and commits one of its own. The read
// back is checkTransactionsReadBack (checks.js).
'use strict'

const assert = require('node:assert/strict')

/**
 * Runs the transactions; resolves to the fenced producer's refusal (what `fenced` returned).
 * The client's side:
 * - `topic`, and `perTxn`: the records per transaction (keys k0..., values `<label>-<i>`);
 * - `transactional()`: a new (unconnected) producer with the scenario's transactional id;
 * - `offsetsAt(offset)`: the sendOffsets() argument that commits the group at partition 0's `offset`;
 * - `stable()`: the topic's last stable offsets, as a string;
 * - `fenced(error)`: the refusal's name if `error` is the fenced producer's, else undefined.
 */
async function transactionRounds({ topic, perTxn, transactional, offsetsAt, stable, fenced }) {
  const records = label => ({
    topic,
    messages: Array.from({ length: perTxn }, (_, i) => ({ key: `k${i}`, value: `${label}-${i}` })),
  })
  const producer = transactional()
  await producer.connect()
  const outcomes = [['committed-1', 'commit', 5], ['aborted', 'abort', 9], ['committed-2', 'commit', 7]]
  for (const [label, end, groupOffset] of outcomes) {
    const before = await stable()
    const txn = await producer.transaction()
    await txn.send(records(label))
    assert.equal(await stable(), before, 'the last stable offset stays at an open transaction\'s first record')
    await txn.sendOffsets(offsetsAt(groupOffset))
    await (end === 'commit' ? txn.commit() : txn.abort())
  }

  const zombie = await producer.transaction()
  await zombie.send(records('fenced'))
  const successor = transactional()
  await successor.connect()
  const next = await successor.transaction()
  let refusal
  const check = e => {
    refusal = fenced(e)
    return refusal !== undefined
  }
  await assert.rejects(zombie.send(records('fenced-late')), check, 'a fenced producer sends')
  await assert.rejects(zombie.commit(), check, 'a fenced producer commits')
  await next.send(records('committed-3'))
  await next.sendOffsets(offsetsAt(11))
  await next.commit()
  // The fenced producer's client may still count itself in a transaction.
  await producer.disconnect().catch(() => {})
  await successor.disconnect()
  return refusal
}

module.exports = { transactionRounds }
