"""The harness's own checks: a broker log line reporting a broken invariant fails the
test that ran the broker."""

import pytest

from conftest import fail_on_invariant_violations, invariant_violations


def test_invariant_lines_in_a_log_are_found_and_fail(tmp_path):
    clean = tmp_path / "clean.log"
    clean.write_text("INFO became leader\nWARN truncated a divergent tail\n")
    broken = tmp_path / "broken.log"
    broken.write_text("INFO ok\nERROR sluice::partition::replica: invariant violated: t-0: leader epoch 3 after 4\n")
    assert invariant_violations([clean, tmp_path / "missing.log"]) == []
    found = invariant_violations([clean, broken])
    assert len(found) == 1 and "leader epoch 3 after 4" in found[0]
    with pytest.raises(pytest.fail.Exception):
        fail_on_invariant_violations([broken])
