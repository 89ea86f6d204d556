"""The rules of the parameter-server disciplines, checked on the records of any driver (simulated, threads, MPI).

Free-running drivers give no fixed update sequence, so their tests check these invariants instead.
"""


def assert_ssp_invariants(record, s):
    """Ho et al.'s rules, checked on any driver's record: no gradient recorded twice or lost (every worker's
    clocks 0, 1, … in order; as many applied gradients as the ps's global step counts), each applied once, on
    arrival; and the read gate: a gradient of clock c was computed on parameters holding every update of clocks
    <= c - s - 1 (the slowest worker's clock then was >= c - s)."""
    keys = [(u.worker, u.step) for u in record.updates]
    assert len(keys) == len(set(keys))
    for w in range(record.num_workers):
        assert sorted(c for v, c in keys if v == w) == list(range(sum(v == w for v, _ in keys)))
    assert all(u.applied for u in record.updates) and len(record.updates) == record.final_version
    assert all(u.slowest_clock >= u.step - s for u in record.updates)


def assert_sync_invariants(record):
    """``SyncReplicasOptimizer`` without backup workers: every update averages exactly ``num_workers`` gradients
    (none lost or applied twice), each computed on the parameters it updates (staleness 0); a gradient that
    missed its update was dropped, never applied late. Tokens are not addressed to workers, so a fast worker may
    take a slow one's token and give two of an update's gradients (TF's behaviour too)."""
    assert record.replicas_to_aggregate == record.num_workers
    applied = [u for u in record.updates if u.applied]
    assert all(u.staleness == 0 for u in applied)
    for version in range(record.final_version):
        assert sum(u.version_applied_at == version for u in applied) == record.num_workers
    keys = [(u.worker, u.step) for u in record.updates]
    assert len(keys) == len(set(keys))
