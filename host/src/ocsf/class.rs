//! Which OCSF class and activity each audit record is, and each class's
//! category (the table in `ocsf.rs`'s documentation).

use crate::report::AuditEvent;

/// `(id, name)` of an OCSF enum value.
pub(super) type Named = (u32, &'static str);

pub(super) fn activity_of(e: &AuditEvent) -> (u32, &'static str, Named) {
    const FS: (u32, &str) = (1001, "File System Activity");
    const HTTP: (u32, &str) = (4002, "HTTP Activity");
    const NETWORK: (u32, &str) = (4001, "Network Activity");
    const DNS: (u32, &str) = (4003, "DNS Activity");
    const API: (u32, &str) = (6003, "API Activity");
    let ((class, class_name), activity) = match e.op.as_str() {
        "fs_read" | "fs_list" => (FS, (2, "Read")),
        "fs_stat" => (FS, (8, "Get Attributes")),
        "fs_write" | "fs_mkdir" => (FS, (1, "Create")),
        "fs_remove" => (FS, (4, "Delete")),
        "net_fetch" => (HTTP, (99, "Other")),
        "net_connect" => (NETWORK, (1, "Open")),
        "net_datagram" => (NETWORK, (6, "Traffic")),
        "net_listen" => (NETWORK, (7, "Listen")),
        "net_lookup" => (DNS, (1, "Query")),
        "kv_get" | "kv_list" => (API, (2, "Read")),
        "kv_put" => (API, (3, "Update")),
        "kv_delete" => (API, (4, "Delete")),
        _ => (API, (99, "Other")),
    };
    (class, class_name, activity)
}

pub(super) fn category(class: u32) -> Named {
    match class / 1000 {
        1 => (1, "System Activity"),
        2 => (2, "Findings"),
        4 => (4, "Network Activity"),
        _ => (6, "Application Activity"),
    }
}
