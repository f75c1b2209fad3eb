//! A naive summarising agent (the fuzz-your-agent example): a page can make
//! it fetch any URL with a `more: URL` line, the way an injected page
//! steers a model. Its fuzz target finds such a page.

#[path = "../summarize.rs"]
mod summarize;

fn main() {
    summarize::run(false);
}
