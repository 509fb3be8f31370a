//! ACL decisions of the active controller (Kafka's `AclControlManager`): each new ACL
//! gets a random id; a delete names the ids its filters select.

use std::collections::HashSet;

use uuid::Uuid;

use super::rpc::Response;
use super::Controller;
use crate::auth::{AclBinding, AclFilter};
use crate::error::{Error, Result};
use crate::metadata::records::Record;

impl Controller {
    /// Creates ACLs; one result per binding, in order. An ACL that exists already is
    /// not written again and counts as created, as in Kafka.
    pub(super) async fn create_acls(&self, acls: Vec<AclBinding>) -> Result<Response> {
        let img = self.image();
        let mut recs = Vec::new();
        let mut seen: HashSet<&AclBinding> = img.acls.iter().map(|(_, a)| a).collect();
        let results = acls
            .iter()
            .map(|acl| {
                acl.validate().map_err(Error::InvalidRequest)?;
                if seen.insert(acl) {
                    recs.push(Record::AccessControlEntry { id: Uuid::new_v4(), acl: acl.clone() });
                }
                Ok(())
            })
            .collect();
        let offset = if recs.is_empty() { img.offset } else { self.quorum.propose(recs).await? };
        Ok(Response::Each { results, offset })
    }

    /// Deletes what each filter selects; per filter, the bindings it removed. An ACL
    /// that two filters select is removed (and reported) once.
    pub(super) async fn delete_acls(&self, filters: Vec<AclFilter>) -> Result<Response> {
        let img = self.image();
        let mut removed: HashSet<Uuid> = HashSet::new();
        let mut recs = Vec::new();
        let results = filters
            .iter()
            .map(|f| {
                if f.is_unknown() {
                    return Err(Error::InvalidRequest("the filter names an UNKNOWN value".into()));
                }
                let mut out = Vec::new();
                for (id, acl) in img.acls.matching(f) {
                    if removed.insert(id) {
                        recs.push(Record::RemoveAccessControlEntry { id });
                        out.push(acl);
                    }
                }
                Ok(out)
            })
            .collect();
        let offset = if recs.is_empty() { img.offset } else { self.quorum.propose(recs).await? };
        Ok(Response::AclsDeleted { results, offset })
    }
}
