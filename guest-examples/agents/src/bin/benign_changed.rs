//! The benign agent, changed: after its first fetch it also fetches
//! `http://127.0.0.1:9/extra`. Replaying a recording of the benign agent
//! with this one departs from the recording at that fetch.

#[path = "../summary.rs"]
mod summary;

fn main() -> std::process::ExitCode {
    summary::run(Some("http://127.0.0.1:9/extra"))
}
