//! The door's gauges and counters, for `GET /metrics`.

use super::door::Door;
use std::sync::atomic::Ordering;

impl Door {
    /// The door's gauges and counters in the Prometheus text format
    /// (`GET /metrics`): what an autoscaler scales on.
    pub(crate) fn metrics(&self) -> String {
        let rows = [
            (
                "sbx_mcp_runs_in_flight",
                "gauge",
                "Calls running now, over all sessions.",
                self.inflight.load(Ordering::SeqCst) as u64,
            ),
            (
                "sbx_mcp_run_slots",
                "gauge",
                "Calls that may run at once (--max-concurrent).",
                self.max_concurrent as u64,
            ),
            (
                "sbx_mcp_sessions_open",
                "gauge",
                "Sessions and workspaces open now.",
                self.open.load(Ordering::SeqCst) as u64,
            ),
            (
                "sbx_mcp_sessions_max",
                "gauge",
                "Sessions and workspaces that may be open at once (--max-sessions).",
                self.max_sessions as u64,
            ),
            (
                "sbx_mcp_sessions_opened_total",
                "counter",
                "Sessions and workspaces opened since start.",
                self.sessions.load(Ordering::Relaxed),
            ),
            (
                "sbx_mcp_calls_ran_total",
                "counter",
                "Calls that ran (a program or ops) since start.",
                self.ran.load(Ordering::Relaxed),
            ),
            (
                "sbx_mcp_calls_turned_away_total",
                "counter",
                "Calls answered busy or refused before running, since start.",
                self.turned_away.load(Ordering::Relaxed),
            ),
        ];
        let mut out = String::new();
        for (name, kind, help, value) in rows {
            out += &format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n");
        }
        out
    }
}
