//! Throughput of the log alone: appending batches, and reading them back with a copy
//! (`Log::read`) or as a file range for `sendfile` (`Log::read_slice`).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sluice::log::batch::{self, BatchHeader};
use sluice::log::{records, Log, LogConfig};

/// A batch of `n` records of `size` bytes each, as a producer would send it.
fn batch_of(n: usize, size: usize) -> Vec<u8> {
    let value = vec![b'v'; size];
    let recs: Vec<(Option<&[u8]>, Option<&[u8]>)> = (0..n).map(|_| (None, Some(value.as_slice()))).collect();
    records::build(&recs, 1_700_000_000_000)
}

fn append(log: &mut Log, template: &[u8]) {
    let mut b = template.to_vec();
    batch::assign_offset(&mut b, log.log_end_offset(), 0);
    let h = BatchHeader::parse(&b).unwrap();
    log.append(&b, &h, 1_700_000_000_000).unwrap();
}

fn bench_append(c: &mut Criterion) {
    let template = batch_of(16, 1024);
    let mut g = c.benchmark_group("log_append");
    g.throughput(Throughput::Bytes(template.len() as u64 * 64));
    g.bench_function("64 batches of 16 x 1 KiB", |bch| {
        bch.iter_batched(
            || (tempfile::tempdir().unwrap(), template.clone()),
            |(dir, t)| {
                let mut log = Log::open(dir.path(), LogConfig::default(), true, 0).unwrap();
                for _ in 0..64 {
                    append(&mut log, &t);
                }
                dir
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn bench_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open(dir.path(), LogConfig::default(), true, 0).unwrap();
    let template = batch_of(16, 1024);
    for _ in 0..2048 {
        append(&mut log, &template);
    }
    let leo = log.log_end_offset();
    let mut g = c.benchmark_group("log_read_1MiB");
    g.throughput(Throughput::Bytes(1 << 20));
    let mut offset = 0;
    g.bench_function("copy (Log::read)", |b| {
        b.iter(|| {
            let r = log.read(offset, leo, 1 << 20, true).unwrap();
            offset = (offset + 1024) % (leo - 2048);
            r.bytes.len()
        })
    });
    g.bench_function("file range (Log::read_slice)", |b| {
        b.iter(|| {
            let r = log.read_slice(offset, leo, 1 << 20, true).unwrap().unwrap();
            offset = (offset + 1024) % (leo - 2048);
            r.len
        })
    });
    g.finish();
}

criterion_group!(benches, bench_append, bench_read);
criterion_main!(benches);
