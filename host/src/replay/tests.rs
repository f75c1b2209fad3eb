use super::*;
use crate::caps::Capabilities;

fn recording(dir: &std::path::Path) -> Recording {
    let caps = Capabilities::builder()
        .read_mount(dir, "/work")
        .build()
        .unwrap();
    let mut rec = Recorder::new(1 << 20);
    let mounts = crate::fs::MountTable::open(caps.mounts_shared(), caps.folders()).unwrap();
    let mount = mounts.by_guest("/work").unwrap();
    rec.sight(mount, "a.txt");
    rec.sight(mount, "missing.txt");
    rec.listing(mount, "");
    let report = crate::Sandbox::new(caps.clone()).unwrap().report();
    let audit = vec![AuditEvent {
        seq: 1,
        op: crate::OpKind::FsRead.into(),
        target: "/work/a.txt".into(),
        decision: crate::report::Decision::Allowed,
        violation: None,
        hard: false,
        rule: None,
        bytes: 0,
        address: None,
        status: None,
        redirects: None,
        secrets: Vec::new(),
        labels: Vec::new(),
        evidence: None,
        detail: None,
        elapsed_ms: 0,
    }];
    Header::new(&caps, "agent", &[], b"in", 7).assemble(rec, &report, &audit)
}

#[test]
fn a_recording_survives_its_file_and_rebuilds_the_mount_from_itself() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("a.txt"), "hello").unwrap();
    std::fs::write(data.path().join("b.bin"), vec![1u8; 3000]).unwrap();
    let rec = recording(data.path());
    let file = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    rec.write(&file).unwrap();
    let back = Recording::read(&file).unwrap();
    assert_eq!(back, rec);
    assert_eq!(
        back.files
            .iter()
            .map(|f| f.kind.as_str())
            .collect::<Vec<_>>(),
        ["file", "absent"]
    );

    // The real folder changes; the replay's copy does not.
    std::fs::write(data.path().join("a.txt"), "changed").unwrap();
    let replay = Replay::new(back).unwrap();
    let copy = &replay.caps().mounts()[0].host;
    assert_ne!(copy, data.path());
    assert_eq!(std::fs::read(copy.join("a.txt")).unwrap(), b"hello");
    // Listed but never opened: a stand-in of the recorded size.
    assert_eq!(std::fs::metadata(copy.join("b.bin")).unwrap().len(), 3000);
    assert_eq!(std::fs::read(copy.join("b.bin")).unwrap(), vec![0u8; 3000]);
    assert!(!copy.join("missing.txt").exists());
}

#[test]
fn another_format_or_version_is_refused_by_name() {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), r#"{"format":"sbx-wasm-recording","version":99}"#).unwrap();
    let e = Recording::read(f.path()).unwrap_err().to_string();
    assert!(e.contains("version 99 is not 1"), "{e}");
    std::fs::write(f.path(), r#"{"version":1}"#).unwrap();
    let e = Recording::read(f.path()).unwrap_err().to_string();
    assert!(e.contains("not an sbx-wasm recording"), "{e}");
}

#[test]
fn a_crafted_path_cannot_place_a_file_outside_the_copy() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("a.txt"), "hello").unwrap();
    let mut rec = recording(data.path());
    rec.files[0].path = "../../escape.txt".into();
    let e = Replay::new(rec).err().expect("refused").to_string();
    assert!(e.contains("not a plain path below its mount"), "{e}");
}

#[test]
fn a_different_op_or_one_past_the_end_diverges_with_both_named() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("a.txt"), "hello").unwrap();
    let rec = recording(data.path());
    assert!(diverges(&rec, 1, &Op::read("/work/a.txt")).is_none());
    let d = diverges(&rec, 1, &Op::read("/work/b.txt")).unwrap();
    assert_eq!(d.violation, Violation::ReplayDiverged);
    assert!(d.hard);
    assert!(
        d.message.contains("/work/b.txt") && d.message.contains("/work/a.txt"),
        "{}",
        d.message
    );
    let d = diverges(&rec, 2, &Op::read("/work/a.txt")).unwrap();
    assert!(d.message.contains("ends at seq 1"), "{}", d.message);
}

#[test]
fn a_recording_keeps_no_more_than_its_limit_whatever_the_guest_meets() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("big.bin"), vec![7u8; 5000]).unwrap();
    std::fs::write(data.path().join("small.txt"), "ok").unwrap();
    let caps = Capabilities::builder()
        .read_mount(data.path(), "/work")
        .build()
        .unwrap();
    let mounts = crate::fs::MountTable::open(caps.mounts_shared(), caps.folders()).unwrap();
    let mount = mounts.by_guest("/work").unwrap();
    let mut rec = Recorder::new(1000);
    rec.sight(mount, "big.bin");
    rec.sight(mount, "small.txt");
    // Met again under the same name: not read again.
    rec.sight(mount, "small.txt");
    let kept: u64 = rec.blobs.values().map(|c| c.0.len() as u64).sum();
    assert_eq!(kept, 2);
    assert_eq!(rec.files.len(), 2);
    assert_eq!(
        (rec.files[0].size, rec.files[0].blob.as_ref()),
        (5000, None)
    );
    assert!(rec.notes[0].contains("/work/big.bin"), "{:?}", rec.notes);
    // Past the limit, a listing is not kept either, and a note says so.
    let mut full = Recorder::new(0);
    full.listing(mount, "");
    assert!(full.listings.is_empty());
    assert!(
        full.notes[0].contains("entries were not kept"),
        "{:?}",
        full.notes
    );
}
