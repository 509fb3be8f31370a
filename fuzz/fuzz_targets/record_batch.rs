//! Any bytes as a produced `records` field: validation must refuse, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::log::batch;

fuzz_target!(|data: &[u8]| {
    if let Ok(ranges) = batch::split(data) {
        for r in ranges {
            let _ = batch::validate(&data[r.clone()]);
            let _ = batch::record_timestamps(&data[r]);
        }
    }
});
