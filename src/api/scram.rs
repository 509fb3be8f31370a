//! DescribeUserScramCredentials (answered from this broker's metadata image, as Kafka's
//! brokers answer it) and AlterUserScramCredentials (decided by the controller). The
//! answers carry mechanisms and iteration counts only, never keys or salts.

use std::collections::HashMap;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{CredentialInfo, DescribeUserScramCredentialsResult};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::controller::rpc::ScramUpsertion;
use crate::error::Error;

pub async fn describe(ctx: &Ctx<'_>, req: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse {
    let img = ctx.broker.cluster.image();
    // Null or empty asks for every user that has a credential.
    let asked: Vec<String> = match req.users.as_deref() {
        None | Some([]) => img.scram.keys().cloned().collect(),
        Some(users) => users.iter().map(|u| u.name.to_string()).collect(),
    };
    let mut count: HashMap<&str, usize> = HashMap::new();
    for u in &asked {
        *count.entry(u.as_str()).or_default() += 1;
    }
    let mut answered = std::collections::HashSet::new();
    let results = asked
        .iter()
        .filter(|u| answered.insert(u.as_str()))
        .map(|user| {
            let r = DescribeUserScramCredentialsResult::default().with_user(sb(user.clone()));
            let error = if count[user.as_str()] > 1 {
                Some(Error::DuplicateResource(format!(
                    "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
                )))
            } else if !img.scram.contains_key(user) {
                Some(Error::ResourceNotFound(format!("Attempt to describe a user credential that does not exist: {user}")))
            } else {
                None
            };
            match error {
                Some(e) => r.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
                None => r.with_credential_infos(
                    img.scram[user]
                        .iter()
                        .map(|(m, c)| CredentialInfo::default().with_mechanism(m.type_code()).with_iterations(c.iterations))
                        .collect(),
                ),
            }
        })
        .collect();
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

pub async fn alter(ctx: &Ctx<'_>, req: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse {
    let names: Vec<String> =
        req.deletions.iter().map(|d| d.name.to_string()).chain(req.upsertions.iter().map(|u| u.name.to_string())).collect();
    let deletions = req.deletions.iter().map(|d| (d.name.to_string(), d.mechanism)).collect();
    let upsertions = req
        .upsertions
        .iter()
        .map(|u| ScramUpsertion {
            name: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let results = match ctx.broker.alter_scram_credentials(deletions, upsertions).await {
        Ok(results) => results,
        // The controller could not be reached or did not commit: every user gets the error.
        Err(e) => {
            let mut seen = std::collections::HashSet::new();
            names.into_iter().filter(|n| seen.insert(n.clone())).map(|n| (n, Err(e.clone()))).collect()
        }
    };
    let results = results
        .into_iter()
        .map(|(user, r)| {
            let out = AlterUserScramCredentialsResult::default().with_user(sb(user));
            match r {
                Ok(()) => out,
                Err(e) => out.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
            }
        })
        .collect();
    AlterUserScramCredentialsResponse::default().with_results(results)
}
