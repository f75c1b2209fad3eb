//! The grant's `[ask]` in the door: a run's question (a fetch or a tool
//! call the grant lets the user approve while the run goes on) put to the
//! client's user by form elicitation, over the session the call came in
//! on. The user is shown what is asked and which `[ask]` entry allows it,
//! and answers with one yes-or-no field; anything but an accepted yes is a
//! refusal. A client that does not offer elicitation (and every sessionless
//! 2026-07-28 request, where the server may not ask the client) is not
//! asked: the request is refused saying so. The run waits at most its wall
//! time left, and the answer is in the op's audit record (the rule of an
//! approved op, the message of a refused one).

use super::catalog::AskKind;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::Capabilities;
use sbx_wasm::ask::{Answer, Approver, Question, approver_async};
use serde_json::json;
use std::sync::Arc;

/// The approver of a call from `peer`'s client under `caps`; none when the
/// grant has no `[ask]` (nothing can be asked, so no run carries one).
pub(crate) fn approver(caps: &Capabilities, peer: &Peer<RoleServer>) -> Option<Arc<dyn Approver>> {
    if caps.ask().is_empty() {
        return None;
    }
    let peer = peer.clone();
    Some(approver_async(
        tokio::runtime::Handle::current(),
        move |question| {
            let peer = peer.clone();
            async move { ask(&peer, &question).await }
        },
    ))
}

/// The message the user is shown.
pub(crate) fn message(question: &Question) -> String {
    format!(
        "Sandboxed code asks to {question}, which the server's grant does not allow but lets you \
         approve for the rest of this run ([ask] {}). Approve?",
        question.entry
    )
}

async fn ask(peer: &Peer<RoleServer>, question: &Question) -> Answer {
    if let Err(missing) = super::catalog::client_offers(peer, AskKind::Elicitation) {
        return Answer::Refused(missing.to_string());
    }
    let schema = json!({
        "type": "object",
        "properties": { "approve": { "type": "boolean", "title": "Approve", "default": false } },
        "required": ["approve"],
    });
    let Ok(requested_schema) = serde_json::from_value::<ElicitationSchema>(schema) else {
        return Answer::Refused("the question could not be put".into());
    };
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(question),
        requested_schema,
    };
    match peer.create_elicitation(params).await {
        Ok(r) if r.action == ElicitationAction::Accept => {
            let yes = (r.content.as_ref()).is_some_and(|c| c["approve"] == json!(true));
            match yes {
                true => Answer::Approved,
                false => Answer::Refused("the user did not approve".into()),
            }
        }
        Ok(r) if r.action == ElicitationAction::Decline => {
            Answer::Refused("the user declined".into())
        }
        Ok(_) => Answer::Refused("the user cancelled".into()),
        Err(e) => Answer::Refused(format!(
            "the client could not be asked: {}",
            sbx_wasm::bound::clip(e.to_string())
        )),
    }
}
