//! The summarising agent, fixed: it follows a page's `more:` links only on
//! the page's own origin, so no page can steer it to another site.

#[path = "../summarize.rs"]
mod summarize;

fn main() {
    summarize::run(true);
}
