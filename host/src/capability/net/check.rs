//! The network capability's check: request bounds first (nothing of an
//! oversized request is parsed), then the URL against the egress rules.
//! Name resolution and the address checks belong to the effect
//! ([`super::Egress::decide`]), which a pure check cannot do.

use super::{Egress, check_request};
use crate::violation::Denial;

/// Whether a fetch may go out under `egress`. `Ok` names the rule.
pub(crate) fn check_fetch(
    egress: &Egress,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<String, Denial> {
    check_request(method, url, headers, body)?;
    egress.check(url).map(|(_, rule)| rule)
}
