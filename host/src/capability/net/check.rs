//! The network capability's check: request bounds first (nothing of an
//! oversized request is parsed), then the URL against the egress rules.
//! Name resolution and the address checks belong to the effect
//! ([`super::Egress::decide`]), which a pure check cannot do.

use super::{Egress, FetchRequest, check_request};
use crate::capability::{Grant, Permit};
use crate::violation::Denial;

/// Whether `req` may go out under `egress`: the permit holds the URL as
/// parsed and the rule that allows it.
pub(crate) fn check_fetch(egress: &Egress, req: &FetchRequest) -> Result<Permit, Denial> {
    check_request(&req.method, &req.url, &req.headers, &req.body)?;
    let (url, rule) = egress.check(&req.url)?;
    Ok(Permit::new(rule, Grant::Net(url)))
}

/// The URL a fetch permit holds.
pub(super) fn permitted_url(permit: Permit) -> Option<url::Url> {
    match permit.grant {
        Grant::Net(url) => Some(url),
        _ => None,
    }
}
