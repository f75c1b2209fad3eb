//! `sbx-wasm policy networkpolicy`: the Kubernetes NetworkPolicy a grant's
//! `[net]` section asks for, so the cluster's wall around the pod is made
//! from the caps file instead of kept in step with it by hand.
//!
//! NetworkPolicy matches addresses and ports, not names. An IP or CIDR rule
//! becomes that block on its port. A name rule (`https://api.github.com`,
//! `https://*.example.com`) becomes the public internet on its port with
//! the special-purpose ranges left out (private, loopback, link-local,
//! shared, metadata): the sandbox itself checks the name and every address
//! it resolves to, and never dials a special-purpose address for a name
//! rule. `--cidr NAME=CIDR` narrows a name to the ranges its operator
//! publishes. Names need DNS: a rule to kube-dns on 53 comes with them.

use anyhow::{Result, bail};
use sbx_wasm::Capabilities;
use sbx_wasm::net::{EgressRule, HostPattern, PortPattern, Scheme};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The IPv4 and IPv6 ranges a name rule never reaches through the cluster.
const SPECIAL_V4: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
];
const SPECIAL_V6: &[&str] = &["::1/128", "fc00::/7", "fe80::/10"];

/// What the policy selects and lets in.
pub(crate) struct Shape<'a> {
    pub(crate) name: &'a str,
    /// The pods' `app.kubernetes.io/name` label.
    pub(crate) app: &'a str,
    /// The MCP port ingress is allowed on.
    pub(crate) port: u16,
    /// `NAME=CIDR` ranges for name rules, as given.
    pub(crate) cidrs: &'a [String],
}

/// A YAML scalar: JSON's quoting, which YAML reads as it is.
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The rule's ports, of its protocol (UDP for a `udp://` rule, TCP
/// otherwise); every port of that protocol for `*`, never another
/// protocol's.
fn ports(port: PortPattern, scheme: Scheme, out: &mut String) {
    let protocol = if scheme == Scheme::Udp { "UDP" } else { "TCP" };
    match port {
        PortPattern::Port(p) => {
            let _ = writeln!(
                out,
                "      ports:\n        - port: {p}\n          protocol: {protocol}"
            );
        }
        PortPattern::Any => {
            let _ = writeln!(out, "      ports:\n        - protocol: {protocol}");
        }
    }
}

/// The NetworkPolicy for `caps`, as YAML.
pub(crate) fn render(caps: &Capabilities, shape: &Shape<'_>) -> Result<String> {
    let mut given: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in shape.cidrs {
        let Some((name, cidr)) = c.split_once('=') else {
            bail!("--cidr {c:?}: give NAME=CIDR (e.g. api.github.com=140.82.112.0/20)");
        };
        let net: ipnet::IpNet = cidr
            .parse()
            .map_err(|e| anyhow::anyhow!("--cidr {c:?}: {cidr:?} is not a CIDR ({e})"))?;
        given.entry(name).or_default().push(net.to_string());
    }
    let egress = caps.egress();
    let rules: &[EgressRule] = egress.rules();
    for name in given.keys() {
        let named = rules.iter().any(|r| match r.host() {
            HostPattern::Name(n) | HostPattern::Subdomains(n) => n == name,
            _ => false,
        });
        if !named {
            bail!("--cidr names {name:?}, which no [net] allow rule of the grant names");
        }
    }
    let mut out = String::new();
    out += "# Made by `sbx-wasm policy networkpolicy` from the grant's [net] allow\n\
            # rules: egress only to what they allow (and DNS for names), ingress only\n\
            # on the MCP port. The sandbox checks names, ports and every resolved\n\
            # address itself; this is the cluster's second wall around it.\n";
    out += "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n";
    let _ = writeln!(out, "  name: {}", q(shape.name));
    out += "spec:\n  podSelector:\n    matchLabels:\n";
    let _ = writeln!(out, "      app.kubernetes.io/name: {}", q(shape.app));
    out += "  policyTypes: [\"Ingress\", \"Egress\"]\n  ingress:\n    - ports:\n";
    let _ = writeln!(
        out,
        "        - port: {}\n          protocol: TCP",
        shape.port
    );
    let names = rules
        .iter()
        .any(|r| matches!(r.host(), HostPattern::Name(_) | HostPattern::Subdomains(_)));
    if rules.is_empty() && !egress.allows_all() {
        out += "  egress: []\n";
        return Ok(out);
    }
    out += "  egress:\n";
    if names || egress.allows_all() {
        out += "    - to:\n        - namespaceSelector: {}\n          podSelector:\n            \
                matchLabels:\n              k8s-app: kube-dns\n      ports:\n        \
                - port: 53\n          protocol: UDP\n        - port: 53\n          protocol: TCP\n";
    }
    if egress.allows_all() {
        out += "    # The grant allows every http(s) URL (dangerous_allow_all).\n    - {}\n";
        return Ok(out);
    }
    for rule in rules {
        let _ = writeln!(out, "    # {}", rule.as_str().replace('\n', " "));
        out += "    - to:\n";
        match rule.host() {
            HostPattern::Ip(ip) => {
                let bits = if ip.is_ipv4() { 32 } else { 128 };
                let _ = writeln!(out, "        - ipBlock:\n            cidr: {ip}/{bits}");
            }
            HostPattern::Cidr(net) => {
                let _ = writeln!(out, "        - ipBlock:\n            cidr: {net}");
            }
            HostPattern::Name(n) | HostPattern::Subdomains(n) => match given.get(n.as_str()) {
                Some(blocks) => {
                    for b in blocks {
                        let _ = writeln!(out, "        - ipBlock:\n            cidr: {b}");
                    }
                }
                None => {
                    for (all, special) in [("0.0.0.0/0", SPECIAL_V4), ("::/0", SPECIAL_V6)] {
                        let _ = writeln!(
                            out,
                            "        - ipBlock:\n            cidr: {all}\n            except:"
                        );
                        for s in special {
                            let _ = writeln!(out, "              - {s}");
                        }
                    }
                }
            },
        }
        ports(rule.port(), rule.scheme(), &mut out);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranges left out for names are special to the sandbox too.
    #[test]
    fn every_range_left_out_is_one_the_sandbox_refuses_for_names() {
        for r in SPECIAL_V4.iter().chain(SPECIAL_V6) {
            let net: ipnet::IpNet = r.parse().unwrap();
            for ip in [net.network(), net.broadcast()] {
                assert!(sbx_wasm::net::special_range(ip).is_some(), "{ip} in {r}");
            }
        }
    }
}
