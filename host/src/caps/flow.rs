//! The grant's flow rules (`[flow]`): the builder's methods and the check
//! against the rest of the grant (the rules themselves are in
//! `crate::flow`).

use super::{Capabilities, CapabilitiesBuilder};
use crate::ask::AskGrant;
use crate::error::CapsError;
use crate::flow::FlowPolicy;
use crate::flow::config::{Named, NamedMount};
use crate::fs::{Access, Mount};
use crate::net::{Egress, Secret};
use std::collections::BTreeSet;

impl CapabilitiesBuilder {
    /// Put `label` on `source`: a mount's guest path (everything read
    /// through it), an egress rule as given to
    /// [`allow_egress`](Self::allow_egress) (its responses), or
    /// `tool:NAME` (the tool's results). The label needs a rule
    /// ([`flow`](Self::flow)).
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::Capabilities;
    ///
    /// let data = tempfile::tempdir()?;
    /// let out = tempfile::tempdir()?;
    /// let caps = Capabilities::builder()
    ///     .read_mount(data.path(), "/data")
    ///     .write_mount(out.path(), "/out")
    ///     .allow_egress("https://crm.internal")
    ///     .label("/data", "customer")
    ///     .flow("customer", ["stdout", "/out", "https://crm.internal"])
    ///     .build()?;
    /// assert_eq!(caps.flow().allowed()["customer"].len(), 3);
    /// // A label without a rule is an error, not data left unlabelled.
    /// let err = Capabilities::builder()
    ///     .read_mount(data.path(), "/data")
    ///     .label("/data", "custmer")
    ///     .build()
    ///     .unwrap_err();
    /// assert!(err.to_string().contains("no rule"), "{err}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn label(mut self, source: impl Into<String>, label: impl Into<String>) -> Self {
        let source = source.into();
        let key = format!("label({source:?})");
        self.flow.label(source, label.into(), &key);
        self
    }

    /// Let data carrying `label` reach `sinks`: `"stdout"`, `"kv"`, a
    /// write mount's guest path, `"tool:NAME"`, or an egress rule as
    /// given to [`allow_egress`](Self::allow_egress). `secret:NAME` as
    /// the label labels the responses of requests that carried secret
    /// NAME. Any other sink is refused `flow_denied` once the run has
    /// read data carrying the label.
    pub fn flow<S: Into<String>>(
        mut self,
        label: impl Into<String>,
        sinks: impl IntoIterator<Item = S>,
    ) -> Self {
        let sinks = sinks.into_iter().map(Into::into).collect();
        self.flow.allow(label.into(), sinks);
        self
    }

    /// Fingerprint labelled bytes the gate sees (files read, responses,
    /// tool results; a caps file says `[flow] evidence = true`) and note
    /// each send that carries them in its audit record (`evidence`). A
    /// note, never a decision: encoding the data otherwise defeats it, and
    /// the run's mark is what enforces. Default: off.
    pub fn flow_evidence(mut self) -> Self {
        self.flow.evidence = true;
        self
    }

    /// The flow rules, checked against what the grant holds.
    pub(super) fn flow_policy(
        &self,
        mounts: &[Mount],
        egress: &Egress,
        tools: &BTreeSet<String>,
        secrets: &[Secret],
        ask: &AskGrant,
        warnings: &mut Vec<String>,
    ) -> Result<FlowPolicy, CapsError> {
        let named = Named {
            mounts: mounts
                .iter()
                .map(|m| NamedMount {
                    guest: m.guest.as_str(),
                    writable: m.access == Access::ReadWrite,
                    private: m.private,
                })
                .collect(),
            rules: egress
                .rules()
                .iter()
                .chain(&ask.net)
                .map(|r| r.as_str())
                .collect(),
            tools: tools
                .iter()
                .chain(ask.tools.iter())
                .map(String::as_str)
                .collect(),
            secrets: secrets.iter().map(Secret::name).collect(),
            kv: self.kv.is_some(),
        };
        self.flow.build(&named, warnings)
    }
}

impl Capabilities {
    /// Where data may flow: the labels on sources and the sinks each label
    /// may reach (`[flow]`; empty: nothing labelled, nothing tracked).
    pub fn flow(&self) -> &FlowPolicy {
        &self.grant.flow
    }
}
