//! The network capability's check: request bounds first (nothing of an
//! oversized request is parsed), then the URL against the egress rules.
//! Name resolution and the address checks belong to the effect
//! ([`super::Egress::decide`]), which a pure check cannot do.

use super::{Egress, FetchRequest, check_request};
use crate::violation::Denial;

/// Whether `req` may go out under `egress`. `Ok` names the rule.
pub(crate) fn check_fetch(egress: &Egress, req: &FetchRequest) -> Result<String, Denial> {
    check_request(&req.method, &req.url, &req.headers, &req.body)?;
    egress.check(&req.url).map(|(_, rule)| rule)
}
