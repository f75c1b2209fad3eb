//! The grant's builder: one method (or a few) per capability, each handing
//! what it is given to that capability's requested form; `build` validates
//! them all at once.

use super::*;

impl CapabilitiesBuilder {
    /// Folder that relative host paths resolve against.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// Show host folder `host` read-only at guest path `guest`.
    pub fn read_mount(mut self, host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        self.mounts
            .push(host.into(), guest.into(), Access::ReadOnly, false);
        self
    }

    /// Show host folder `host` read-write at guest path `guest`.
    pub fn write_mount(mut self, host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        self.mounts
            .push(host.into(), guest.into(), Access::ReadWrite, false);
        self
    }

    /// [`write_mount`](Self::write_mount) for a folder made for one run and
    /// removed after it: audit rules name it `write mount GUEST (private
    /// to the run)`, not by its host path, so a deterministic run's records
    /// stay byte-identical. (A caps file says `private = true`.)
    pub fn private_write_mount(
        mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
    ) -> Self {
        self.mounts
            .push(host.into(), guest.into(), Access::ReadWrite, true);
        self
    }

    /// Allow fetches matching `rule` (see [`RULE_FORM`](crate::net::RULE_FORM)).
    pub fn allow_egress(mut self, rule: impl Into<String>) -> Self {
        self.egress.allow(rule.into());
        self
    }

    /// Let a component's sockets bind the loopback address `rule`
    /// (`127.0.0.1:8080`, `[::1]:*`; see
    /// [`LISTEN_FORM`](crate::net::LISTEN_FORM)): listen there over TCP,
    /// or receive datagrams there over UDP.
    pub fn allow_listen(mut self, rule: impl Into<String>) -> Self {
        self.egress.listen(rule.into());
        self
    }

    /// Follow up to `n` redirects per fetch (default 0, at most
    /// [`LIMIT_MAX_REDIRECTS`](crate::net::LIMIT_MAX_REDIRECTS)); every hop
    /// passes the whole egress decision.
    pub fn max_redirects(mut self, n: u32) -> Self {
        self.egress.max_redirects(n);
        self
    }

    /// Allow calls to the tool `name` (it must also be registered to run).
    pub fn allow_tool(mut self, name: impl Into<String>) -> Self {
        self.tools.allow(name.into());
        self
    }

    /// Run tool `name` as the program `argv` (for the CLI's registry), in
    /// the base folder.
    pub fn tool_command(mut self, name: impl Into<String>, argv: Vec<String>) -> Self {
        self.tools.command(name.into(), argv);
        self
    }

    /// Add secret `name` with `value` (from the embedder, not a caps file),
    /// sent only in `headers` of requests to `hosts` (egress-rule syntax,
    /// each granted by an allow rule). The guest's env var `name` holds a
    /// per-run placeholder; the value never enters the sandbox.
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::Capabilities;
    ///
    /// let caps = Capabilities::builder()
    ///     .allow_egress("https://api.github.com")
    ///     .secret("GITHUB_TOKEN", "ghp_example", ["https://api.github.com"], ["Authorization"])
    ///     .build()?;
    /// assert_eq!(caps.secrets()[0].name(), "GITHUB_TOKEN");
    /// assert!(!format!("{caps:?}").contains("ghp_example"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn secret<H, K>(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
        hosts: impl IntoIterator<Item = H>,
        headers: impl IntoIterator<Item = K>,
    ) -> Self
    where
        H: Into<String>,
        K: Into<String>,
    {
        self.secrets.value(
            name.into(),
            value.into(),
            hosts.into_iter().map(Into::into).collect(),
            headers.into_iter().map(Into::into).collect(),
        );
        self
    }

    /// Grant a key-value store of at most `grant`'s keys and bytes (see
    /// [`KvGrant::default`] for the caps file's defaults). Its data lives
    /// in the run's [`KvStore`](crate::capability::kv::KvStore) backend.
    pub fn kv(mut self, grant: KvGrant) -> Self {
        self.kv = Some(grant);
        self
    }

    /// Let a run ask for fetches matching `rule` (the
    /// [`allow_egress`](Self::allow_egress) form) while it runs: the run's
    /// [`Approver`](crate::ask::Approver) decides (see [`crate::ask`]).
    pub fn ask_egress(mut self, rule: impl Into<String>) -> Self {
        self.ask.net(rule.into());
        self
    }

    /// Let a run ask to call the tool `name` while it runs (it must also
    /// be registered to run).
    pub fn ask_tool(mut self, name: impl Into<String>) -> Self {
        self.ask.tool(name.into());
        self
    }

    /// The most questions one run may ask (default 3, at most
    /// [`LIMIT_MAX_QUESTIONS`](crate::ask::LIMIT_MAX_QUESTIONS)).
    pub fn max_questions(mut self, n: u32) -> Self {
        self.ask.max_questions(n);
        self
    }

    /// Options that weaken the sandbox.
    pub fn dangerous(self) -> DangerousCapabilities {
        DangerousCapabilities { inner: self }
    }

    /// Validate everything and freeze the grant.
    pub fn build(self) -> Result<Capabilities, CapsError> {
        let base = self.base_dir.clone().unwrap_or_else(|| PathBuf::from("."));
        let mut warnings = Vec::new();
        let mounts = self.mounts.build(&base)?;
        let egress = self.egress.build(&mut warnings)?;
        let (tools, commands) = self.tools.build(&base, &mut warnings)?;
        let env = env::build_env(&self.env)?;
        let secrets = self.secrets.build(&base, &egress, &env)?;
        let ask = self.ask.build(&tools, &mut warnings)?;
        if let Some(kv) = &self.kv {
            check_grant(kv)?;
        }
        let flow = self.flow_policy(&mounts, &egress, &tools, &secrets, &ask, &mut warnings)?;
        check_budget(&self.budget)?;
        Ok(Capabilities {
            grant: Arc::new(Grant {
                mounts: mounts.into(),
                egress,
                tools,
                commands,
                kv: self.kv,
                env,
                secrets,
                ask,
                flow,
                budget: self.budget,
                warnings,
                folders: self.folders_of.unwrap_or_default(),
            }),
        })
    }
}
