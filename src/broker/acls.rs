//! ACL changes: decided by the controller, then applied here like every metadata change.

use super::Broker;
use crate::auth::{AclBinding, AclFilter};
use crate::controller::rpc::{Request, Response};
use crate::error::{Error, Result};

impl Broker {
    /// CreateAcls; one result per binding, in order.
    pub async fn create_acls(&self, acls: Vec<AclBinding>) -> Vec<Result<()>> {
        let n = acls.len();
        match self.submit(Request::CreateAcls { acls }, None).await {
            Ok(Response::Each { results, .. }) if results.len() == n => results,
            Ok(other) => vec![Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))); n],
            Err(e) => vec![Err(e); n],
        }
    }

    /// DeleteAcls; per filter, the bindings removed.
    pub async fn delete_acls(&self, filters: Vec<AclFilter>) -> Vec<Result<Vec<AclBinding>>> {
        let n = filters.len();
        match self.submit(Request::DeleteAcls { filters }, None).await {
            Ok(Response::AclsDeleted { results, .. }) if results.len() == n => results,
            Ok(other) => vec![Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))); n],
            Err(e) => vec![Err(e); n],
        }
    }
}
