//! ACL vocabulary with Kafka's wire codes: resource and pattern types, operations,
//! permissions, principals, bindings and the filters that Describe/DeleteAcls match.

use serde::{Deserialize, Serialize};

macro_rules! codes {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $code:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name { $($variant),* }

        impl $name {
            /// The value for a wire code; codes this build does not know are `Unknown`.
            pub fn from_code(code: i8) -> $name {
                match code { $($code => $name::$variant,)* _ => $name::Unknown }
            }

            /// Kafka's wire code.
            pub fn code(self) -> i8 {
                match self { $($name::$variant => $code),* }
            }
        }
    };
}

codes!(
    /// Kafka's `ResourceType`.
    ResourceType { Unknown = 0, Any = 1, Topic = 2, Group = 3, Cluster = 4, TransactionalId = 5, DelegationToken = 6, User = 7 }
);
codes!(
    /// Kafka's `PatternType`; ANY and MATCH exist only in filters.
    PatternType { Unknown = 0, Any = 1, Match = 2, Literal = 3, Prefixed = 4 }
);
codes!(
    /// Kafka's `AclOperation`.
    Operation {
        Unknown = 0, Any = 1, All = 2, Read = 3, Write = 4, Create = 5, Delete = 6, Alter = 7, Describe = 8,
        ClusterAction = 9, DescribeConfigs = 10, AlterConfigs = 11, IdempotentWrite = 12, CreateTokens = 13,
        DescribeTokens = 14, TwoPhaseCommit = 15,
    }
);
codes!(
    /// Kafka's `AclPermissionType`.
    Permission { Unknown = 0, Any = 1, Deny = 2, Allow = 3 }
);

/// The name of the one CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The literal resource name and host that match everything.
pub const WILDCARD: &str = "*";
/// The principal that matches every user.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

impl Operation {
    /// Does an ALLOW for `self` also allow `wanted`? READ, WRITE, DELETE and ALTER imply
    /// DESCRIBE, and ALTER_CONFIGS implies DESCRIBE_CONFIGS, as in Kafka.
    pub fn allows(self, wanted: Operation) -> bool {
        use Operation::*;
        self == All
            || self == wanted
            || (wanted == Describe && matches!(self, Read | Write | Delete | Alter))
            || (wanted == DescribeConfigs && self == AlterConfigs)
    }

    /// The operations Kafka reports in `*_authorized_operations` for a resource type.
    pub fn for_resource(t: ResourceType) -> &'static [Operation] {
        use Operation::*;
        match t {
            ResourceType::Topic => &[Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs],
            ResourceType::Group => &[Read, Delete, Describe, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[Create, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, Alter, Describe],
            ResourceType::TransactionalId => &[Describe, Write, TwoPhaseCommit],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            _ => &[],
        }
    }
}

/// Kafka's `KafkaPrincipal`: a type and a name, written `Type:name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    pub kind: String,
    pub name: String,
}

impl Principal {
    /// `User:ANONYMOUS`, the principal of an unauthenticated connection.
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }

    /// `User:<name>`.
    pub fn user(name: &str) -> Principal {
        Principal { kind: "User".into(), name: name.into() }
    }

    /// Parses `Type:name`, as Kafka's `SecurityUtils.parseKafkaPrincipal` does: the type
    /// is what comes before the first colon and may not be empty.
    pub fn parse(s: &str) -> Result<Principal, String> {
        match s.split_once(':') {
            Some((kind, name)) if !kind.is_empty() => Ok(Principal { kind: kind.into(), name: name.into() }),
            _ => Err(format!("principal '{s}' is not of the form Type:name")),
        }
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// One ACL: who may (or may not) do what to which resources, from where.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern_type: PatternType,
    /// `Type:name`, or `User:*`.
    pub principal: String,
    /// An IP address, or `*`.
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclBinding {
    /// Refuses what Kafka's controller refuses in a CreateAcls (INVALID_REQUEST).
    pub fn validate(&self) -> Result<(), String> {
        if matches!(self.resource_type, ResourceType::Unknown | ResourceType::Any) {
            return Err("Invalid resourceType".into());
        }
        if !matches!(self.pattern_type, PatternType::Literal | PatternType::Prefixed) {
            return Err("Invalid patternType".into());
        }
        if matches!(self.operation, Operation::Unknown | Operation::Any) {
            return Err("Invalid operation".into());
        }
        if matches!(self.permission, Permission::Unknown | Permission::Any) {
            return Err("Invalid permissionType".into());
        }
        if self.resource_name.is_empty() {
            return Err("Resource name should not be empty".into());
        }
        if self.resource_type == ResourceType::Cluster && self.resource_name != CLUSTER_NAME {
            return Err(format!("The only valid name for the CLUSTER resource is {CLUSTER_NAME}"));
        }
        Principal::parse(&self.principal).map(|_| ())
    }
}

/// What DescribeAcls and DeleteAcls select by; `None` strings match anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclFilter {
    pub resource_type: ResourceType,
    pub resource_name: Option<String>,
    pub pattern_type: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclFilter {
    /// A filter naming an UNKNOWN value matches nothing and is refused.
    pub fn is_unknown(&self) -> bool {
        self.resource_type == ResourceType::Unknown
            || self.pattern_type == PatternType::Unknown
            || self.operation == Operation::Unknown
            || self.permission == Permission::Unknown
    }

    /// Does the filter select `acl`? MATCH selects the patterns that would apply to the
    /// named resource (the literal name, the `*` literal, prefixes of it).
    pub fn matches(&self, acl: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != acl.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match) && self.pattern_type != acl.pattern_type {
            return false;
        }
        let name_ok = match &self.resource_name {
            None => true,
            Some(n) if self.pattern_type != PatternType::Match || self.pattern_type == acl.pattern_type => *n == acl.resource_name,
            Some(n) => match acl.pattern_type {
                PatternType::Literal => *n == acl.resource_name || acl.resource_name == WILDCARD,
                PatternType::Prefixed => n.starts_with(&acl.resource_name),
                _ => false,
            },
        };
        name_ok
            && self.principal.as_ref().is_none_or(|p| *p == acl.principal)
            && self.host.as_ref().is_none_or(|h| *h == acl.host)
            && (self.operation == Operation::Any || self.operation == acl.operation)
            && (self.permission == Permission::Any || self.permission == acl.permission)
    }
}
