//! Any bytes as a request frame: decoding must return an error, never panic or abort.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sluice::api::decode_frame(bytes::Bytes::copy_from_slice(data));
    // Also aim every supported API and version at the same body, so the body
    // decoders are reached even when the fuzzer has not found a valid header.
    if data.len() >= 3 {
        let (key, version) = (data[0] as usize, data[1] as i16);
        let apis = sluice::api::SUPPORTED;
        let (api, min, max) = apis[key % apis.len()];
        let mut frame = Vec::with_capacity(data.len() + 10);
        frame.extend((api as i16).to_be_bytes());
        frame.extend((min + version.rem_euclid(max - min + 1)).to_be_bytes());
        frame.extend(7i32.to_be_bytes());
        frame.extend([0xff, 0xff, 0]); // null client id, empty tagged fields
        frame.extend(&data[2..]);
        let _ = sluice::api::decode_frame(bytes::Bytes::from(frame));
    }
});
