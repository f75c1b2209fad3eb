//! Setting up a replay: a private copy of each mount made from the
//! recording alone (the paths the guest met, with their recorded content;
//! the folders it listed, their other entries as stand-ins of the recorded
//! size), and the recorded grant pointed at those copies, with stand-in
//! values for its secrets. Nothing of the host's real folders is read.

use super::format::{Recording, SecretRecord};
use super::recorder::join;
use crate::caps::Capabilities;
use crate::error::Error;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What a replay puts where a secret's value was: the recorded answers
/// already hold what the guest got, so no value is needed.
const STAND_IN: &str = "sbx-replay-stand-in";

/// The grant for a replay and the private folders it mounts.
pub(super) struct Trees {
    pub(super) caps: Capabilities,
    pub(super) root: tempfile::TempDir,
    pub(super) notes: Vec<String>,
    /// Each copy's folder (as mount rules name it) and the host folder it
    /// stands for in the recording.
    pub(super) hosts: Vec<(String, String)>,
}

fn fail(message: impl Into<String>) -> Error {
    Error::Recording {
        path: PathBuf::new(),
        message: message.into(),
    }
}

/// Build the private folders and the grant that mounts them.
pub(super) fn build(rec: &Recording) -> Result<Trees, Error> {
    let mut table: toml::Table = rec
        .caps
        .parse()
        .map_err(|e| fail(format!("its caps are not TOML: {e}")))?;
    let root = tempfile::Builder::new()
        .prefix("sbx-replay-")
        .tempdir()
        .map_err(|e| fail(format!("cannot make a folder for the replay: {e}")))?;
    let mut notes = Vec::new();
    let mut hosts = Vec::new();
    let mut n = 0;
    if let Some(fs) = table.get_mut("fs").and_then(toml::Value::as_table_mut) {
        for key in ["read", "write"] {
            let Some(mounts) = fs.get_mut(key).and_then(toml::Value::as_array_mut) else {
                continue;
            };
            for m in mounts.iter_mut().filter_map(toml::Value::as_table_mut) {
                let guest = m
                    .get("guest")
                    .and_then(toml::Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                n += 1;
                let dir = root.path().join(format!("mount-{n}"));
                fill(rec, &guest, &dir, &mut notes)?;
                let dir = dir.canonicalize().unwrap_or(dir);
                if let Some(recorded) = m.get("host").and_then(toml::Value::as_str) {
                    hosts.push((dir.display().to_string(), recorded.to_string()));
                }
                m.insert("host".into(), dir.display().to_string().into());
            }
        }
    }
    table.remove("secrets");
    let text = toml::to_string(&table).map_err(|e| fail(e.to_string()))?;
    let caps = Capabilities::from_toml(&text, Path::new("/"), None)
        .map_err(|e| fail(format!("its caps do not load: {e}")))?;
    let caps = with_stand_ins(caps, &rec.secrets)?;
    Ok(Trees {
        caps,
        root,
        notes,
        hosts,
    })
}

fn with_stand_ins(caps: Capabilities, secrets: &[SecretRecord]) -> Result<Capabilities, Error> {
    if secrets.is_empty() {
        return Ok(caps);
    }
    let mut b = caps.to_builder().map_err(|e| fail(e.to_string()))?;
    for s in secrets {
        b = b.secret(&s.name, STAND_IN, &s.hosts, &s.headers);
    }
    b.build()
        .map_err(|e| fail(format!("its secrets do not load: {e}")))
}

/// Make `dir` hold what the recording kept below mount `guest`.
fn fill(rec: &Recording, guest: &str, dir: &Path, notes: &mut Vec<String>) -> Result<(), Error> {
    let io = |p: &Path, e: std::io::Error| fail(format!("cannot make {}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut kept = HashSet::new();
    let mut links = Vec::new();
    for f in rec.files.iter().filter(|f| f.mount == guest) {
        kept.insert(f.path.clone());
        let at = below(dir, &f.path)?;
        match f.kind.as_str() {
            "dir" => std::fs::create_dir_all(&at).map_err(|e| io(&at, e))?,
            "file" => {
                let content = match f.blob.as_ref().and_then(|b| rec.blobs.get(b)) {
                    Some(c) => c.0.as_slice(),
                    None => {
                        notes.push(format!(
                            "{}: content not recorded; replayed as {} zero bytes",
                            join(guest, &f.path),
                            f.size
                        ));
                        &[]
                    }
                };
                write_file(&at, content, f.size).map_err(|e| io(&at, e))?;
            }
            "symlink" => links.push((at, f.target.clone().unwrap_or_default())),
            _ => {}
        }
    }
    // A folder the guest made itself (first met as absent) is not made
    // here, listed or not: the replayed guest makes it again.
    let absent: HashSet<&str> = rec
        .files
        .iter()
        .filter(|f| f.mount == guest && f.kind == "absent")
        .map(|f| f.path.as_str())
        .collect();
    let made_by_guest = |path: &str| {
        let mut p = Some(path);
        while let Some(at) = p {
            if absent.contains(at) {
                return true;
            }
            p = at.rsplit_once('/').map(|(parent, _)| parent);
        }
        false
    };
    for l in rec
        .listings
        .iter()
        .filter(|l| l.mount == guest && !made_by_guest(&l.path))
    {
        let folder = below(dir, &l.path)?;
        std::fs::create_dir_all(&folder).map_err(|e| io(&folder, e))?;
        for e in &l.entries {
            let path = if l.path.is_empty() {
                e.name.clone()
            } else {
                format!("{}/{}", l.path, e.name)
            };
            if kept.contains(&path) {
                continue;
            }
            let at = below(dir, &path)?;
            match e.kind.as_str() {
                "dir" => std::fs::create_dir_all(&at).map_err(|e| io(&at, e))?,
                "file" => write_file(&at, &[], e.size).map_err(|e| io(&at, e))?,
                "symlink" => links.push((at, e.target.clone().unwrap_or_default())),
                _ => {}
            }
        }
    }
    // Links last: a link is made as recorded, never followed here.
    for (at, target) in links {
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        if std::fs::symlink_metadata(&at).is_err() {
            std::os::unix::fs::symlink(&target, &at).map_err(|e| io(&at, e))?;
        }
    }
    Ok(())
}

/// `content`, then zeros up to `size` (a stand-in for bytes not recorded).
fn write_file(at: &Path, content: &[u8], size: u64) -> std::io::Result<()> {
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(at, content)?;
    if size > content.len() as u64 {
        std::fs::File::options()
            .write(true)
            .open(at)?
            .set_len(size)?;
    }
    Ok(())
}

/// `dir` joined with a recorded path, which must stay below it: a
/// recording is input, and a crafted one must not make files elsewhere.
fn below(dir: &Path, path: &str) -> Result<PathBuf, Error> {
    let p = Path::new(path);
    let plain = p
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain {
        return Err(fail(format!(
            "recorded path {path:?} is not a plain path below its mount"
        )));
    }
    Ok(dir.join(p))
}
