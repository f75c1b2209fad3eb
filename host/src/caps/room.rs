//! A grant in a few sentences for a model: the room it has (folders,
//! network, tools, limits), so a tool description can say it before the
//! model tries what it would only be refused.

use super::Capabilities;

impl Capabilities {
    /// What a model is told of this grant: its folders (with their
    /// access), the network origins it may reach, the tools of `tools` it
    /// may call (pass the ones a run can reach, e.g.
    /// [`Sandbox::reachable_tools`](crate::Sandbox::reachable_tools)), and
    /// its limits. Host paths, secrets' values and rule names are never in
    /// it: only what the guest itself would see.
    ///
    /// # Examples
    ///
    /// ```
    /// let caps = sbx_wasm::Capabilities::builder()
    ///     .read_mount(std::env::temp_dir(), "/data")
    ///     .allow_egress("https://api.example.com")
    ///     .max_ops(50)
    ///     .build()?;
    /// let room = caps.room_for_model(&["search".to_string()]);
    /// assert!(room.starts_with("Folders: /data (read-only)."), "{room}");
    /// assert!(room.contains("Network: only https://api.example.com"), "{room}");
    /// assert!(room.contains("Tools: search."), "{room}");
    /// assert!(room.contains("50 operations"), "{room}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn room_for_model(&self, tools: &[String]) -> String {
        let folders: Vec<String> = self
            .mounts()
            .iter()
            .map(|m| {
                let access = match (m.private, m.access) {
                    (true, _) => "read-write, the run's own",
                    (false, crate::fs::Access::ReadOnly) => "read-only",
                    (false, _) => "read-write",
                };
                format!("{} ({access})", m.guest.as_str())
            })
            .collect();
        let folders = match folders.is_empty() {
            true => "none".to_string(),
            false => folders.join(", "),
        };
        let egress = self.egress();
        let network = if egress.allows_all() {
            "any public address".to_string()
        } else if egress.rules().is_empty() {
            "none".to_string()
        } else {
            let rules: Vec<&str> = egress.rules().iter().map(|r| r.as_str()).collect();
            format!("only {}", rules.join(", "))
        };
        let tools = match tools.is_empty() {
            true => "none".to_string(),
            false => tools.join(", "),
        };
        let b = self.budget();
        format!(
            "Folders: {folders}. Network: {network}. Tools: {tools}. Limits: {} s of wall time, \
             {} operations, {} MiB of memory, {} KiB of output.",
            b.max_wall.as_secs_f64(),
            b.max_ops,
            b.max_memory_bytes / (1024 * 1024),
            b.max_output_bytes / 1024,
        )
    }
}
