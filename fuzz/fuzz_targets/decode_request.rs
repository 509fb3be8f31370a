//! Any bytes as a request frame: decoding must return an error, never panic or abort.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use sluice::auth::oauth::Validator;
use sluice::auth::plain::PlainUsers;
use sluice::auth::sasl::{Outcome, SaslConfig, SaslSession};
use sluice::auth::scram::credential_from_salted;
use sluice::metadata::records::{ScramCredential, ScramMechanism};

fn sasl_config() -> Arc<SaslConfig> {
    static CONFIG: OnceLock<Arc<SaslConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let enabled = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"].map(String::from).to_vec();
            let mut c = SaslConfig::new(enabled, Some(PlainUsers::new([("u", "p")])), 1000, 1 << 20).unwrap();
            c.oauth = Some(Arc::new(Validator::Unsecured(Default::default())));
            Arc::new(c)
        })
        .clone()
}

fn lookup(user: &str, m: ScramMechanism) -> Option<ScramCredential> {
    (user == "u").then(|| credential_from_salted(m, b"salt", &[7; 64], 4096))
}

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
    // The same bytes as a connection's frames (split at 0xfe) into a SASL session.
    let mut session = SaslSession::new(sasl_config());
    for (i, frame) in data.split(|b| *b == 0xfe).enumerate() {
        if matches!(session.on_frame(frame, i as i64 * 400, &lookup), Outcome::Close { .. }) {
            break;
        }
    }
});
