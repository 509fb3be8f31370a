//! Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-599): who a quota applies to, which
//! keys exist, which stored quota governs a client, the windowed rate that decides how long
//! a client that went over is throttled, and the token bucket of the controller mutation
//! quota. Pure: time is an argument, nothing here does I/O.

pub mod entity;
pub mod rate;
pub mod resolve;
pub mod throttle;
pub mod token_bucket;

pub use entity::{EntityName, QuotaEntity};
pub use rate::{Rate, WindowConfig};
pub use throttle::{request_percentage, ThrottleKind, Throttler};
