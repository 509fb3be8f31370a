"""The nemesis suite's short run (issue 23; see nemesis.py): a minute of random faults from a
printed seed (env NEMESIS_SEED repeats a run) under idempotent, transactional and
read_committed librdkafka workloads on a 3-node cluster, then 0 on every checker: lost
acknowledged writes, duplicates, aborted reads, inconsistent offsets, non-monotonic or
skipping polls. A failed run keeps its history in target/test-logs. The soak mode is
`compat-tests/nemesis-soak [--minutes M] [--seed S]`."""

import os
import random
from pathlib import Path

from conftest import fail_on_invariant_violations
from nemesis import CHECKERS, nemesis_cluster, run

SECONDS = 60
LOGS = Path(__file__).resolve().parents[2] / "target" / "test-logs"


def test_a_minute_of_random_faults_breaks_no_checker(tmp_path):
    seed = int(os.environ.get("NEMESIS_SEED", random.randrange(1 << 31)))
    c = nemesis_cluster(tmp_path)
    try:
        report = run(c, SECONDS, seed, LOGS)
    finally:
        c.shutdown()
    fail_on_invariant_violations([n.log_path for n in c.nodes.values()])
    assert report["faults"] >= 5, f"too few faults injected: {report}"
    ops = report["operations"]
    assert ops["idempotent_acked"] > 0 and ops["transactions_committed"] > 0 and ops["polled"] > 0, report
    assert all(report["checkers"][k] == 0 for k in CHECKERS), (
        f"seed {seed}: {report['checkers']}, e.g. {report['examples']}; history in {report.get('history')}")
