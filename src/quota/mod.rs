//! Client quotas (KIP-13, KIP-55, KIP-124, KIP-219): who a quota applies to, which keys
//! exist, which stored quota governs a client, and the windowed rate that decides how long
//! a client that went over is throttled. Pure: time is an argument, nothing here does I/O.

pub mod entity;
pub mod rate;
pub mod resolve;
pub mod throttle;

pub use entity::{EntityName, QuotaEntity};
pub use rate::{Rate, WindowConfig};
pub use throttle::{ThrottleKind, Throttler};
