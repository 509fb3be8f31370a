//! Producer ids and idempotence. Transactions will join them here.

pub mod pid;
pub mod producers;
