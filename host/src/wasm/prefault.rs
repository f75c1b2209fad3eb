//! A component's compiled image, and the memory images of its instances
//! made so far, mapped into this process's page tables before a run needs
//! them.
//!
//! Both are mapped from the artifact file, and each page of them a run
//! first reaches costs a page fault (the kernel maps a few pages around
//! each one). A process that exists for one run of a large component (the
//! CLI's warm Python workers) took about 570 of them in its run of
//! `print(1)`, most of the run's time. Asking the kernel to map them
//! while the process waits for its run moves that work off the run's
//! path. The pages are the file's, shared with every other process that
//! maps it: nothing is copied (a page the run writes is copied then, as
//! before).

/// How much is mapped between two questions to `stop` ([`image`]): a
/// few milliseconds of the kernel's work at most, which is how long a
/// request that arrives meanwhile waits.
#[cfg(target_os = "linux")]
const STEP: usize = 4 << 20;

impl super::PreparedAgent {
    /// Map this agent's compiled code into the process now, and the memory
    /// of its instances made so far (their initial contents are mapped
    /// from the same artifact), as [`instantiate_ahead`](Self::instantiate_ahead)
    /// does, but a few MiB at a time, asking `stop` before each step: it
    /// stops as soon as `stop` says so. For a process that says it is
    /// ready first and maps while it waits (the CLI's warm Python workers:
    /// a request that comes meanwhile waits for one step, not for all of
    /// it; what is left faults in during the run, as without this). Made
    /// with [`instantiate_ahead_unmapped`](Self::instantiate_ahead_unmapped).
    ///
    /// Whether everything was mapped. Best effort: the pages are the
    /// file's (nothing is copied); a kernel without `MADV_POPULATE_READ`
    /// (before Linux 5.14) refuses the advice, and elsewhere than Linux
    /// nothing is done; the pages then fault in at first use.
    pub fn map_ahead(&self, mut stop: impl FnMut() -> bool) -> bool {
        image(self.pre.component(), &mut stop)
    }
}

/// Map `component`'s compiled image, and every private writable mapping
/// of the same file (the linear memories of its instances, whose initial
/// contents are mapped from the artifact), `STEP` bytes at a time, until
/// `stop` says to stop. Whether all of it was mapped.
#[cfg(target_os = "linux")]
pub(super) fn image(
    component: &wasmtime::component::Component,
    stop: &mut dyn FnMut() -> bool,
) -> bool {
    let code = component.image_range();
    if !populate(code.start as usize, code.end as usize, stop) {
        return false;
    }
    // The memory images: found by the file the code is mapped from.
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    let maps: Vec<Mapping<'_>> = maps.lines().filter_map(Mapping::parse).collect();
    let at = code.start as usize;
    let Some(file) = maps
        .iter()
        .find(|m| m.start <= at && at < m.end)
        .and_then(|m| m.file)
    else {
        return false;
    };
    maps.iter()
        .filter(|m| m.private_writable && m.file == Some(file))
        .all(|m| populate(m.start, m.end, stop))
}

/// Elsewhere the pages fault in at first use.
#[cfg(not(target_os = "linux"))]
pub(super) fn image(
    _component: &wasmtime::component::Component,
    _stop: &mut dyn FnMut() -> bool,
) -> bool {
    false
}

/// One line of `/proc/self/maps`: `start-end perms offset dev inode path`.
#[cfg(target_os = "linux")]
struct Mapping<'a> {
    start: usize,
    end: usize,
    private_writable: bool,
    /// The file's device and inode (`None` for an anonymous mapping).
    file: Option<(&'a str, &'a str)>,
}

#[cfg(target_os = "linux")]
impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut fields = line.split_ascii_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let perms = fields.next()?;
        let _offset = fields.next()?;
        let (dev, inode) = (fields.next()?, fields.next()?);
        Some(Mapping {
            start: usize::from_str_radix(start, 16).ok()?,
            end: usize::from_str_radix(end, 16).ok()?,
            private_writable: perms.starts_with("rw") && perms.ends_with('p'),
            file: (inode != "0").then_some((dev, inode)),
        })
    }
}

/// Ask the kernel to map `[start, end)` for reading, `STEP` bytes at a
/// time, asking `stop` before each step; whether it got to the end.
#[cfg(target_os = "linux")]
fn populate(start: usize, end: usize, stop: &mut dyn FnMut() -> bool) -> bool {
    // Mappings start at a page boundary; the rounding is for 4 KiB pages
    // (a kernel with larger ones refuses a start it does not find aligned,
    // and the pages fault in as before).
    let mut at = start & !0xfff;
    while at < end {
        if stop() {
            return false;
        }
        let len = STEP.min(end - at);
        // SAFETY: the advice only reads pages of mappings wasmtime made
        // and keeps for the component's (and its instances') life, which
        // outlives this call; it changes neither their contents nor their
        // protection, and a range the kernel cannot populate is refused
        // with an error, ignored here.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_POPULATE_READ) };
        at += len;
    }
    true
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::Mapping;

    #[test]
    fn a_maps_line_is_read_or_skipped() {
        let m = Mapping::parse(
            "7f213a0ef000-7f213cbf0000 rw-p 0183e000 fe:00 6136856   /cache/x.cwasm",
        )
        .unwrap();
        assert_eq!((m.start, m.end), (0x7f21_3a0e_f000, 0x7f21_3cbf_0000));
        assert!(m.private_writable);
        assert_eq!(m.file, Some(("fe:00", "6136856")));
        let code = Mapping::parse("7f22-7f23 r-xp 00001000 fe:00 6136856 /cache/x.cwasm").unwrap();
        assert!(!code.private_writable);
        let shared = Mapping::parse("7f22-7f23 rw-s 00000000 00:01 99 /memfd:x").unwrap();
        assert!(
            !shared.private_writable,
            "a shared mapping is never populated here"
        );
        let anon = Mapping::parse("7f22-7f23 rw-p 00000000 00:00 0").unwrap();
        assert_eq!(anon.file, None);
        assert!(Mapping::parse("garbage").is_none());
    }
}
