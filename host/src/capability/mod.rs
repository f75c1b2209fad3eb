//! The capabilities a grant may hold, one folder each: its types, its check
//! (which rule allows a request, or the denial) and its effect (performing
//! an allowed request through the handles the grant opened).
//!
//! - [`fs`]: mounts: the path defense, cap-std handles, file effects;
//! - [`net`]: egress: request bounds, rules, special addresses, the pinned
//!   dial, redirects;
//! - [`tools`]: the allow-list and the registry of tool implementations.
//!
//! Budgets are not a capability but meters ([`crate::budget`]); the gate
//! ([`crate::gate`]) charges them around every capability's check and
//! effect.

pub mod fs;
pub mod net;
pub mod tools;
