//! SCRAM credential decisions of the active controller (Kafka's `ScramControlManager`).
//!
//! A request's changes commit together or not at all. A user may appear once per
//! request: a second deletion or upsertion of the same user fails both with
//! DUPLICATE_RESOURCE, whichever mechanisms they name, as in Kafka.

use std::collections::BTreeMap;

use super::rpc::{Response, ScramUpsertion};
use super::Controller;
use crate::auth::scram::{credential_from_salted, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::error::{Error, Result};
use crate::metadata::image::Image;
use crate::metadata::records::{Record, ScramMechanism};

impl Controller {
    pub(super) async fn alter_scram(&self, deletions: Vec<(String, i8)>, upsertions: Vec<ScramUpsertion>) -> Result<Response> {
        let (recs, results) = plan(&self.image(), &deletions, &upsertions);
        let offset = if recs.is_empty() { self.image().offset } else { self.quorum.propose(recs).await? };
        for (user, r) in &results {
            if r.is_ok() {
                tracing::info!(user = %user, "SCRAM credentials changed");
            }
        }
        Ok(Response::Users { results, offset })
    }
}

fn check_user_and_mechanism(name: &str, mechanism: i8) -> Result<ScramMechanism> {
    if name.is_empty() {
        return Err(Error::UnacceptableCredential("Username must not be empty".into()));
    }
    ScramMechanism::from_type(mechanism).ok_or_else(|| Error::UnsupportedSaslMechanism("Unknown SCRAM mechanism".into()))
}

/// The records for a request and each user's result, in the order users first appear.
pub(super) fn plan(img: &Image, deletions: &[(String, i8)], upsertions: &[ScramUpsertion]) -> (Vec<Record>, Vec<(String, Result<()>)>) {
    let duplicate = || Error::DuplicateResource("A user credential cannot be altered twice in the same request".into());
    let mut order: Vec<String> = Vec::new();
    let mut outcome: BTreeMap<String, Result<Record>> = BTreeMap::new();
    let mut see = |name: &str, decide: &dyn Fn() -> Result<Record>| {
        match outcome.get(name) {
            None => {
                order.push(name.to_string());
                outcome.insert(name.to_string(), decide());
            }
            // An earlier error stands; an earlier accepted change becomes a duplicate.
            Some(Ok(_)) => {
                outcome.insert(name.to_string(), Err(duplicate()));
            }
            Some(Err(_)) => {}
        }
    };
    for (name, mech) in deletions {
        see(name, &|| {
            let m = check_user_and_mechanism(name, *mech)?;
            if img.scram_credential(name, m).is_none() {
                return Err(Error::ResourceNotFound("Attempt to delete a user credential that does not exist".into()));
            }
            Ok(Record::RemoveUserScramCredential { name: name.clone(), mechanism: m })
        });
    }
    for u in upsertions {
        see(&u.name, &|| {
            let m = check_user_and_mechanism(&u.name, u.mechanism)?;
            if u.iterations < MIN_ITERATIONS {
                return Err(Error::UnacceptableCredential("Too few iterations".into()));
            }
            if u.iterations > MAX_ITERATIONS {
                return Err(Error::UnacceptableCredential("Too many iterations".into()));
            }
            let credential = credential_from_salted(m, &u.salt, &u.salted_password, u.iterations);
            Ok(Record::UserScramCredential { name: u.name.clone(), mechanism: m, credential })
        });
    }
    let mut recs = Vec::new();
    let results = order
        .into_iter()
        .map(|name| {
            let r = outcome.remove(&name).expect("every user seen has an outcome").map(|rec| recs.push(rec));
            (name, r)
        })
        .collect();
    (recs, results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(name: &str, mechanism: i8, iterations: i32) -> ScramUpsertion {
        ScramUpsertion { name: name.into(), mechanism, iterations, salt: b"salt".to_vec(), salted_password: vec![1; 32] }
    }

    fn codes(results: &[(String, Result<()>)]) -> Vec<(&str, i16)> {
        results.iter().map(|(u, r)| (u.as_str(), crate::error::code_of(r))).collect()
    }

    #[test]
    fn kafkas_validation_rules() {
        let mut img = Image::default();
        let (recs, results) = plan(&img, &[], &[up("alice", 1, 8192), up("bob", 2, 4096), up("", 1, 4096), up("carol", 3, 4096)]);
        assert_eq!(codes(&results), [("alice", 0), ("bob", 0), ("", 93), ("carol", 33)]);
        assert_eq!(recs.len(), 2);
        for (i, r) in recs.iter().enumerate() {
            img.apply(i as u64 + 1, r);
        }
        assert_eq!(img.scram_credential("alice", ScramMechanism::Sha256).unwrap().iterations, 8192);

        let (recs, results) = plan(&img, &[], &[up("low", 1, 4095), up("high", 2, 16385), up("edge", 2, 16384)]);
        assert_eq!(codes(&results), [("low", 93), ("high", 93), ("edge", 0)]);
        assert_eq!(recs.len(), 1);

        let (recs, results) = plan(&img, &[("alice".into(), 2), ("bob".into(), 2), ("zed".into(), 1)], &[]);
        assert_eq!(codes(&results), [("alice", 91), ("bob", 0), ("zed", 91)]);
        assert_eq!(recs, [Record::RemoveUserScramCredential { name: "bob".into(), mechanism: ScramMechanism::Sha512 }]);
    }

    #[test]
    fn a_user_twice_in_one_request_is_a_duplicate() {
        let img = Image::default();
        let (recs, results) = plan(&img, &[], &[up("alice", 1, 8192), up("alice", 2, 8192), up("alice", 2, 8192)]);
        assert_eq!(codes(&results), [("alice", 92)]);
        assert!(recs.is_empty());
        // An error that came first stands.
        let (_, results) = plan(&img, &[("alice".into(), 1)], &[up("alice", 1, 8192)]);
        assert_eq!(codes(&results), [("alice", 91)]);
    }

    #[test]
    fn keys_derive_from_the_salted_password_and_never_keep_it() {
        let img = Image::default();
        let (recs, _) = plan(&img, &[], &[up("alice", 2, 4096)]);
        let Record::UserScramCredential { credential, .. } = &recs[0] else { panic!() };
        assert_eq!((credential.stored_key.len(), credential.server_key.len(), credential.salt.as_slice()), (64, 64, &b"salt"[..]));
        let json = String::from_utf8(crate::metadata::records::RecordBatch::new(recs.clone()).encode()).unwrap();
        assert!(!json.contains("1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"), "the salted password is not in the record");
    }
}
