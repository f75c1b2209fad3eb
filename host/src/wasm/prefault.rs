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

/// Map `component`'s compiled image now, and every private writable
/// mapping of the same file (the linear memories of its instances, whose
/// initial contents are mapped from the artifact). Best effort: a kernel
/// without `MADV_POPULATE_READ` (before Linux 5.14) refuses the advice,
/// and the pages then fault in at first use, as they would have.
#[cfg(target_os = "linux")]
pub(super) fn image(component: &wasmtime::component::Component) {
    let code = component.image_range();
    populate(code.start as usize, code.end as usize);
    // The memory images: found by the file the code is mapped from.
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    let at = code.start as usize;
    let Some(file) = maps
        .lines()
        .filter_map(Mapping::parse)
        .find(|m| m.start <= at && at < m.end)
        .and_then(|m| m.file)
    else {
        return;
    };
    for m in maps.lines().filter_map(Mapping::parse) {
        if m.private_writable && m.file == Some(file) {
            populate(m.start, m.end);
        }
    }
}

/// Elsewhere the pages fault in at first use.
#[cfg(not(target_os = "linux"))]
pub(super) fn image(_component: &wasmtime::component::Component) {}

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

/// Ask the kernel to map `[start, end)` for reading.
#[cfg(target_os = "linux")]
fn populate(start: usize, end: usize) {
    // Mappings start at a page boundary; the rounding is for 4 KiB pages
    // (a kernel with larger ones refuses a start it does not find aligned,
    // and the pages fault in as before).
    let start = start & !0xfff;
    let len = end.saturating_sub(start);
    if len == 0 {
        return;
    }
    // SAFETY: the advice only reads pages of mappings wasmtime made and
    // keeps for the component's (and its instances') life, which outlives
    // this call; it changes neither their contents nor their protection,
    // and a range the kernel cannot populate is refused with an error,
    // ignored here.
    #[allow(unsafe_code)]
    let _ = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_POPULATE_READ) };
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
