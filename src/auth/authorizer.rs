//! The ACL index and Kafka's `StandardAuthorizer` decision over it.
//!
//! ACLs are indexed by resource type, then by literal name (a hash map) and by prefix
//! (a hash map plus the set of prefix lengths in use), so one check looks at the ACLs
//! that can apply to the resource and nothing else, however many others exist.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::acl::*;

/// Every ACL of the cluster, by id, with its lookup index. Clones share the data until
/// one of them changes it, so the metadata image can be copied on every update.
#[derive(Debug, Clone, Default)]
pub struct Acls {
    inner: Arc<Inner>,
}

#[derive(Debug, Clone, Default)]
struct Inner {
    by_id: BTreeMap<Uuid, AclBinding>,
    by_type: HashMap<ResourceType, TypeIndex>,
}

/// The ACLs of one resource type.
#[derive(Debug, Clone, Default)]
struct TypeIndex {
    literal: HashMap<String, Vec<Uuid>>,
    prefixed: HashMap<String, Vec<Uuid>>,
    /// How many prefixed patterns have each length, so a lookup tries only those.
    prefix_lens: BTreeMap<usize, usize>,
}

impl PartialEq for Acls {
    fn eq(&self, other: &Acls) -> bool {
        self.inner.by_id == other.inner.by_id
    }
}

impl Serialize for Acls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.inner.by_id.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Acls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Acls, D::Error> {
        let by_id = BTreeMap::<Uuid, AclBinding>::deserialize(d)?;
        let mut acls = Acls::default();
        for (id, acl) in by_id {
            acls.insert(id, acl);
        }
        Ok(acls)
    }
}

impl Acls {
    /// Adds (or replaces) the ACL with this id.
    pub fn insert(&mut self, id: Uuid, acl: AclBinding) {
        self.remove(id);
        let inner = Arc::make_mut(&mut self.inner);
        let t = inner.by_type.entry(acl.resource_type).or_default();
        match acl.pattern_type {
            PatternType::Prefixed => {
                let ids = t.prefixed.entry(acl.resource_name.clone()).or_default();
                if ids.is_empty() {
                    *t.prefix_lens.entry(acl.resource_name.len()).or_default() += 1;
                }
                ids.push(id);
            }
            _ => t.literal.entry(acl.resource_name.clone()).or_default().push(id),
        }
        inner.by_id.insert(id, acl);
    }

    /// Removes the ACL with this id; the removed binding, if there was one.
    pub fn remove(&mut self, id: Uuid) -> Option<AclBinding> {
        if !self.inner.by_id.contains_key(&id) {
            return None;
        }
        let inner = Arc::make_mut(&mut self.inner);
        let acl = inner.by_id.remove(&id)?;
        let t = inner.by_type.get_mut(&acl.resource_type)?;
        let prefixed = acl.pattern_type == PatternType::Prefixed;
        let map = if prefixed { &mut t.prefixed } else { &mut t.literal };
        if let Some(ids) = map.get_mut(&acl.resource_name) {
            ids.retain(|x| *x != id);
            if ids.is_empty() {
                map.remove(&acl.resource_name);
                if prefixed {
                    let len = acl.resource_name.len();
                    if let Some(n) = t.prefix_lens.get_mut(&len) {
                        *n -= 1;
                        if *n == 0 {
                            t.prefix_lens.remove(&len);
                        }
                    }
                }
            }
        }
        Some(acl)
    }

    /// Every ACL, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &AclBinding)> {
        self.inner.by_id.iter()
    }

    pub fn len(&self) -> usize {
        self.inner.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.by_id.is_empty()
    }

    /// The ids and bindings a filter selects.
    pub fn matching(&self, f: &AclFilter) -> Vec<(Uuid, AclBinding)> {
        self.iter().filter(|(_, a)| f.matches(a)).map(|(id, a)| (*id, a.clone())).collect()
    }

    /// The ACLs that apply to one resource: its literal name, the `*` literal, and every
    /// prefixed pattern that is a prefix of the name.
    fn applying<'a>(&'a self, rtype: ResourceType, name: &'a str) -> impl Iterator<Item = &'a AclBinding> + 'a {
        let t = self.inner.by_type.get(&rtype);
        let literal = t.into_iter().flat_map(move |t| {
            let exact = t.literal.get(name).into_iter().flatten();
            let wild = if name == WILDCARD { None } else { t.literal.get(WILDCARD) };
            exact.chain(wild.into_iter().flatten())
        });
        let prefixed = t.into_iter().flat_map(move |t| {
            t.prefix_lens.range(..=name.len()).filter_map(move |(&len, _)| name.get(..len).and_then(|p| t.prefixed.get(p))).flatten()
        });
        literal.chain(prefixed).filter_map(|id| self.inner.by_id.get(id))
    }
}

/// The authorizer's settings and the ACLs, borrowed for one decision.
pub struct Authorizer<'a> {
    pub acls: &'a Acls,
    /// `Type:name` of each principal that is allowed everything.
    pub super_users: &'a [String],
    /// `allow.everyone.if.no.acl.found`.
    pub allow_if_no_acl: bool,
}

/// Who asks, and from where (a bare IP address).
pub struct Requester<'a> {
    pub principal: &'a str,
    pub host: &'a str,
}

fn principal_matches(acl: &AclBinding, who: &Requester<'_>) -> bool {
    (acl.principal == who.principal || acl.principal == WILDCARD_PRINCIPAL) && (acl.host == WILDCARD || acl.host == who.host)
}

impl Authorizer<'_> {
    /// Is `who` a super user?
    pub fn is_super(&self, who: &Requester<'_>) -> bool {
        self.super_users.iter().any(|s| s == who.principal)
    }

    /// Kafka's decision: super users may do anything; a matching DENY (for the
    /// operation or ALL) refuses; a matching ALLOW (or one that implies the operation)
    /// permits; a resource with no ACLs at all follows `allow.everyone.if.no.acl.found`.
    pub fn authorize(&self, who: &Requester<'_>, op: Operation, rtype: ResourceType, name: &str) -> bool {
        if self.is_super(who) {
            return true;
        }
        let mut any_acl = false;
        let mut allowed = false;
        for acl in self.acls.applying(rtype, name) {
            any_acl = true;
            if !principal_matches(acl, who) {
                continue;
            }
            match acl.permission {
                Permission::Deny if acl.operation == op || acl.operation == Operation::All => return false,
                Permission::Allow if acl.operation.allows(op) => allowed = true,
                _ => {}
            }
        }
        allowed || (!any_acl && self.allow_if_no_acl)
    }

    /// Kafka's `authorizeByResourceType`: may `who` do `op` on at least one resource of
    /// the type? True if some ALLOW applies to it that no DENY of the same reach covers.
    pub fn authorize_any(&self, who: &Requester<'_>, op: Operation, rtype: ResourceType) -> bool {
        if self.is_super(who) {
            return true;
        }
        let mine: Vec<&AclBinding> = self
            .acls
            .iter()
            .map(|(_, a)| a)
            .filter(|a| a.resource_type == rtype && principal_matches(a, who) && (a.operation == op || a.operation == Operation::All))
            .collect();
        let denied = |allow: &AclBinding| {
            mine.iter().any(|d| {
                d.permission == Permission::Deny
                    && match d.pattern_type {
                        PatternType::Literal => {
                            d.resource_name == WILDCARD
                                || (d.resource_name == allow.resource_name && allow.pattern_type == PatternType::Literal)
                        }
                        PatternType::Prefixed => allow.resource_name.starts_with(&d.resource_name),
                        _ => false,
                    }
            })
        };
        if mine.iter().any(|a| a.permission == Permission::Allow && !denied(a)) {
            return true;
        }
        self.allow_if_no_acl && !self.acls.iter().any(|(_, a)| a.resource_type == rtype)
    }

    /// The `*_authorized_operations` bit set Kafka reports for one resource.
    pub fn authorized_operations(&self, who: &Requester<'_>, rtype: ResourceType, name: &str) -> i32 {
        Operation::for_resource(rtype)
            .iter()
            .filter(|op| self.authorize(who, **op, rtype, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}
