//! The kernel second wall: the host process confines itself to the grant
//! before guest code runs, so that a wasm escape finds only the mounts and
//! ports it was given (Linux: Landlock, `no_new_privs`, seccomp).
//!
//! wasm isolation is the first wall; wasmtime has had escape-class bugs, and
//! an escape holds the host process with all of its authority. After
//! [`Policy::apply`], the kernel itself refuses:
//!
//! - opening, creating, renaming or removing files outside the grant's
//!   mounts (reads beneath read mounts, reads and writes beneath write
//!   mounts, plus the few runtime paths a [`Policy`] lists with a reason);
//! - TCP `connect` to any port the egress rules do not name, and every TCP
//!   `bind` (Landlock ABI 4+);
//! - signals to, and abstract UNIX sockets of, processes outside the
//!   domain (Landlock ABI 6+);
//! - new processes (`execve`, `fork`, `clone` of a process rather than a
//!   thread), and kernel-facing calls the host never makes after start-up
//!   (`ptrace`, `mount`, `bpf`, `io_uring`, module loading, ...), by a
//!   seccomp filter on every thread of the process;
//! - gaining privileges through set-user-ID programs (`no_new_privs`).
//!
//! It does not cover: the memory, CPU and open descriptors the process
//! already has (the budgets do); what the process does with allowed files
//! and ports; UDP (DNS lookups still reach the resolver); threads that
//! existed before [`Policy::apply`] on kernels without Landlock's
//! thread-sync (ABI 8): the caller must apply the policy on each of its own
//! long-lived threads ([`crate::wasm::WasmHost`] does so for its epoch
//! thread). Confinement is irreversible and process-wide in effect: apply
//! it only in a process that exists to run one grant (the CLI's `run`).

use crate::caps::Capabilities;
use crate::report::KernelWall;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What the process may still do after confinement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Read (and list, and execute) beneath these.
    pub read: Vec<PathBuf>,
    /// Everything beneath these.
    pub write: Vec<PathBuf>,
    /// Paths the runtime itself reads after confinement, each with why.
    pub runtime_read: Vec<(PathBuf, String)>,
    /// Existing files the runtime writes after confinement, each with why.
    pub runtime_write_files: Vec<(PathBuf, String)>,
    /// TCP ports `connect` may reach; `None` leaves TCP unrestricted.
    pub tcp_connect: Option<BTreeSet<u16>>,
    /// TCP ports `bind` may take (0: an ephemeral one) when TCP is
    /// restricted: the listen rules' (every other `bind` is refused).
    pub tcp_bind: BTreeSet<u16>,
    /// Why TCP is unrestricted, when it is.
    pub tcp_note: Option<String>,
    /// Install the seccomp filter.
    pub seccomp: bool,
}

impl Policy {
    /// The policy for `caps`: each capability's kernel rules (the mounts,
    /// the ports the egress rules name, the resolver's configuration files
    /// if a rule names a host by name), and the seccomp filter.
    pub fn for_caps(caps: &Capabilities) -> Policy {
        // Each capability says what it needs (`capability/*/kernel.rs`);
        // tools need nothing: they run outside the wall, in the CLI's helper.
        let (read, write) = crate::fs::kernel::kernel_needs(caps.mounts());
        let net = crate::net::kernel::kernel_needs(caps.egress());
        Policy {
            read,
            write,
            runtime_read: net.runtime_read,
            runtime_write_files: Vec::new(),
            tcp_connect: net.tcp_connect,
            tcp_bind: net.tcp_bind,
            tcp_note: net.tcp_note,
            seccomp: true,
        }
    }

    /// Also allow reading `path` after confinement, for `why`.
    pub fn allow_runtime_read(mut self, path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        self.runtime_read.push((path.into(), why.into()));
        self
    }

    /// Also allow writing (and truncating) the existing file `path` after
    /// confinement, for `why`.
    pub fn allow_write_file(mut self, path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        self.runtime_write_files.push((path.into(), why.into()));
        self
    }

    /// Confine the calling thread (Landlock, `no_new_privs`) and the whole
    /// process (seccomp, synchronised to every thread). Best effort: what
    /// the kernel cannot enforce is reported in the returned [`KernelWall`]
    /// (`up` is false), never an error; the caller decides whether that is
    /// acceptable.
    pub fn apply(&self) -> KernelWall {
        imp::apply(self, false).0
    }

    /// [`Policy::apply`], and the same Landlock rules for another thread
    /// of the process to take on itself ([`ThreadRules::restrict`]): one
    /// ruleset, built once, so the other thread neither opens the mounts
    /// again nor can end up under different rules.
    pub(crate) fn apply_sharing(&self) -> (KernelWall, ThreadRules) {
        let (wall, shared) = imp::apply(self, true);
        (wall, ThreadRules(shared))
    }

    /// What is known, before applying, to keep this policy from being fully
    /// enforced (TCP left open by a rule; not Linux). Empty does not promise
    /// full enforcement: the kernel has the last word.
    pub fn obstacles(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.tcp_connect.is_none() {
            out.push(format!("tcp {}", self.network_summary()));
        }
        if !cfg!(target_os = "linux") {
            out.push("kernel confinement is implemented for Linux only".into());
        }
        out
    }

    /// What the TCP part of the policy says, for reports.
    fn network_summary(&self) -> String {
        let list = |p: &BTreeSet<u16>| p.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
        let connect = match (&self.tcp_connect, &self.tcp_note) {
            (Some(p), _) if p.is_empty() => "none".into(),
            (Some(p), _) => format!("ports {}", list(p)),
            (None, Some(why)) => return format!("not restricted ({why})"),
            (None, None) => return "not restricted".into(),
        };
        if self.tcp_bind.is_empty() {
            connect
        } else {
            format!("{connect}; bind ports {}", list(&self.tcp_bind))
        }
    }
}

/// Landlock rules made by [`Policy::apply_sharing`] for another thread.
pub(crate) struct ThreadRules(imp::Shared);

impl ThreadRules {
    /// Put the calling thread under these rules (and `no_new_privs`); how
    /// far the kernel enforces them (`not_enforced` when the rules could
    /// not be made).
    pub(crate) fn restrict(self) -> crate::report::Landlock {
        imp::restrict(self.0)
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Policy;
    use crate::report::KernelWall;
    use crate::report::Landlock;
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
        Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
    };

    /// The Landlock ABI whose rights are asked for: V6 adds scoping of
    /// signals and abstract UNIX sockets to V5's files (with ioctl on
    /// devices) and V4's TCP ports.
    const TARGET: ABI = ABI::V6;

    /// The rules for another thread: a copy of the ruleset's handle.
    pub(super) type Shared = Option<RulesetCreated>;

    /// Confine this thread and the process; with `share`, a copy of the
    /// Landlock ruleset for another thread.
    pub(super) fn apply(p: &Policy, share: bool) -> (KernelWall, Shared) {
        let mut wall = KernelWall {
            network: p.network_summary(),
            ..KernelWall::default()
        };
        let mut shared = None;
        for (path, why) in &p.runtime_read {
            wall.notes
                .push(format!("runtime read {}: {why}", path.display()));
        }
        // Named by purpose, not path: the caller chose these files, and a
        // deterministic run's report must not depend on their names.
        for (_, why) in &p.runtime_write_files {
            wall.notes.push(format!("runtime write: {why}"));
        }
        match landlock(p, share) {
            Ok((status, nnp, copy)) => {
                shared = copy;
                wall.no_new_privs = nnp;
                wall.landlock = level(&status);
                wall.filesystem = status != RulesetStatus::NotEnforced;
                if status != RulesetStatus::FullyEnforced {
                    wall.notes.push(format!(
                        "this kernel's Landlock is older than ABI {}: some rights are not enforced",
                        TARGET as i32
                    ));
                }
            }
            Err(e) => {
                wall.landlock = Landlock::NotEnforced;
                wall.notes.push(format!("landlock: {e}"));
            }
        }
        if p.seccomp {
            match super::seccomp::install() {
                Ok(()) => wall.seccomp = true,
                Err(e) => wall.notes.push(format!("seccomp: {e}")),
            }
        }
        wall.up = wall.landlock == Landlock::FullyEnforced
            && wall.no_new_privs
            && (wall.seccomp || !p.seccomp)
            && p.tcp_connect.is_some();
        if p.tcp_connect.is_none() {
            wall.notes.push(format!("tcp: {}", wall.network));
        }
        (wall, shared)
    }

    pub(super) fn restrict(shared: Shared) -> Landlock {
        match shared.map(RulesetCreated::restrict_self) {
            Some(Ok(status)) => level(&status.ruleset),
            _ => Landlock::NotEnforced,
        }
    }

    fn level(status: &RulesetStatus) -> Landlock {
        match status {
            RulesetStatus::FullyEnforced => Landlock::FullyEnforced,
            RulesetStatus::PartiallyEnforced => Landlock::PartiallyEnforced,
            RulesetStatus::NotEnforced => Landlock::NotEnforced,
        }
    }

    /// Restrict this thread; with `share`, first copy the ruleset's handle
    /// (a copy that cannot be made leaves the other thread unconfined,
    /// which the caller sees as `not_enforced`).
    fn landlock(
        p: &Policy,
        share: bool,
    ) -> Result<(RulesetStatus, bool, Shared), Box<dyn std::error::Error>> {
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET))?
            .scope(Scope::from_all(TARGET))?;
        if p.tcp_connect.is_some() {
            ruleset = ruleset.handle_access(AccessNet::from_all(TARGET))?;
        }
        let mut created = ruleset.create()?;
        let read = AccessFs::from_read(TARGET);
        for path in p.read.iter().chain(p.runtime_read.iter().map(|(p, _)| p)) {
            let access = if path.is_dir() {
                read
            } else {
                read & AccessFs::from_file(TARGET)
            };
            created = created.add_rule(PathBeneath::new(PathFd::new(path)?, access))?;
        }
        for path in &p.write {
            created = created.add_rule(PathBeneath::new(
                PathFd::new(path)?,
                AccessFs::from_all(TARGET),
            ))?;
        }
        for (path, _) in &p.runtime_write_files {
            let access = AccessFs::WriteFile | AccessFs::Truncate;
            created = created.add_rule(PathBeneath::new(PathFd::new(path)?, access))?;
        }
        for port in p.tcp_connect.iter().flatten() {
            created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
        }
        if p.tcp_connect.is_some() {
            for port in &p.tcp_bind {
                created = created.add_rule(NetPort::new(*port, AccessNet::BindTcp))?;
            }
        }
        let copy = if share {
            created.try_clone().ok()
        } else {
            None
        };
        let status = created.restrict_self()?;
        Ok((status.ruleset, status.no_new_privs, copy))
    }
}

#[cfg(target_os = "linux")]
mod seccomp {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    use std::collections::BTreeMap;

    #[cfg(target_arch = "x86_64")]
    const ARCH: TargetArch = TargetArch::x86_64;
    #[cfg(target_arch = "aarch64")]
    const ARCH: TargetArch = TargetArch::aarch64;

    /// Calls the host never makes once a run has started: process creation
    /// and calls that reach into the kernel's administration.
    fn denied() -> Vec<i64> {
        let mut v = vec![
            libc::SYS_execve,
            libc::SYS_execveat,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_chroot,
            libc::SYS_setns,
            libc::SYS_unshare,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_kexec_load,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_userfaultfd,
            libc::SYS_reboot,
            libc::SYS_swapon,
            libc::SYS_swapoff,
            libc::SYS_acct,
            libc::SYS_open_by_handle_at,
            libc::SYS_name_to_handle_at,
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
            libc::SYS_settimeofday,
            libc::SYS_clock_settime,
            libc::SYS_sethostname,
            libc::SYS_setdomainname,
        ];
        #[cfg(target_arch = "x86_64")]
        v.extend([
            libc::SYS_fork,
            libc::SYS_vfork,
            libc::SYS_kexec_file_load,
            libc::SYS_iopl,
            libc::SYS_ioperm,
        ]);
        v
    }

    fn install_one(
        rules: BTreeMap<i64, Vec<SeccompRule>>,
        errno: u32,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno),
            ARCH,
        )?;
        let program: seccompiler::BpfProgram = filter.try_into()?;
        seccompiler::apply_filter_all_threads(&program)?;
        Ok(())
    }

    pub(super) fn install() -> Result<(), Box<dyn std::error::Error>> {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            denied().into_iter().map(|n| (n, Vec::new())).collect();
        // clone of a process (no CLONE_THREAD) is refused; threads may still
        // be created (wasmtime-wasi's blocking pool).
        rules.insert(
            libc::SYS_clone,
            vec![SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
                0,
            )?])?],
        );
        install_one(rules, libc::EPERM as u32)?;
        // clone3 passes its flags in memory, out of a filter's sight: answer
        // "not implemented" so the C library falls back to clone, above.
        install_one(
            BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
            libc::ENOSYS as u32,
        )
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Policy;
    use crate::report::KernelWall;

    pub(super) type Shared = ();

    pub(super) fn apply(p: &Policy, _share: bool) -> (KernelWall, Shared) {
        let wall = KernelWall {
            network: p.network_summary(),
            landlock: crate::report::Landlock::NotEnforced,
            notes: vec!["kernel confinement is implemented for Linux only".into()],
            ..KernelWall::default()
        };
        (wall, ())
    }

    pub(super) fn restrict(_: Shared) -> crate::report::Landlock {
        crate::report::Landlock::NotEnforced
    }
}
