//! The gate's questions (see [`crate::ask`]): after the check denied an op
//! that the grant's `[ask]` covers, ask the run's approver, and widen the
//! run's own view of the grant by the entry it approved. The grant itself
//! never changes; the widened egress rules and tool names live here, for
//! this run only, and every check after an approval reads them
//! (`Sandbox::held`).

use super::Sandbox;
use crate::ask::{Answer, AskLimits, Question};
use crate::capability::{OpKind, Permit};
use crate::net::Egress;
use crate::op::Op;
use crate::violation::{Denial, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// What a run asked and was answered.
#[derive(Default)]
pub(super) struct Asked {
    /// The grant's egress rules plus the approved `[ask]` ones, once one
    /// was approved.
    pub(super) egress: Option<Egress>,
    /// The grant's tools plus the approved ones, once one was approved.
    pub(super) tools: Option<BTreeSet<String>>,
    /// The rules approved (an origin's egress rule, or `tool NAME`), each
    /// with the `[ask]` entry that let it be asked: an op allowed by one is
    /// recorded as approved.
    approved: BTreeMap<String, String>,
    /// Every answer, by `kind target`: a target is asked about once.
    answers: BTreeMap<String, Answer>,
    questions: u32,
}

/// What approving a question adds to the run's view of the grant: for a
/// fetch, the one origin asked about (not the whole `[ask]` rule, which may
/// be a wildcard: another host under it is asked about in turn).
enum Widening {
    Rule(crate::net::EgressRule),
    Tool(String),
}

impl Sandbox {
    /// `rule` as the audit records it: marked when an approval allowed it.
    pub(super) fn mark(&self, rule: String) -> String {
        match self.asked.as_ref().and_then(|a| a.approved.get(&rule)) {
            Some(entry) => format!("{rule} (approved at run time, [ask] {entry})"),
            None => rule,
        }
    }

    /// `denial` of `op`, or, when the grant's `[ask]` covers `op` and the
    /// run has an approver, the permit an approval gives (or the denial
    /// saying what was asked and why it was refused).
    pub(super) fn ask(&mut self, op: &Op, denial: Denial) -> Result<Permit, Denial> {
        if denial.hard || self.caps.ask().is_empty() {
            return Err(denial);
        }
        let Some(approver) = self.services.approver.clone() else {
            return Err(denial);
        };
        let Some((question, widening)) = self.question(op, &denial) else {
            return Err(denial);
        };
        let key = format!("{} {}", question.kind.name(), question.target);
        let asked = self.asked.get_or_insert_with(Default::default);
        let questions = asked.questions;
        let answer = match asked.answers.get(&key).cloned() {
            Some(answer) => answer,
            None if questions >= self.caps.ask().max_questions() => {
                let message = format!(
                    "{}; not asked: the run already asked {questions} questions, the most its grant allows",
                    denial.message
                );
                return Err(Denial::new(denial.violation, message));
            }
            None => {
                asked.questions += 1;
                let limits = AskLimits {
                    timeout: self
                        .caps
                        .budget()
                        .max_wall
                        .saturating_sub(self.elapsed_now()),
                    cancel: self.cancel.clone().unwrap_or_default(),
                };
                let answer = approver.approve(&question, &limits);
                // An answer after the wall budget or a cancel is no answer.
                let answer =
                    match self.elapsed_now() > self.caps.budget().max_wall || self.cancelled() {
                        true => Answer::Refused("no answer in time".into()),
                        false => answer,
                    };
                let asked = self.asked.get_or_insert_with(Default::default);
                asked.answers.insert(key, answer.clone());
                answer
            }
        };
        match answer {
            Answer::Approved => {
                self.widen(widening, &question.entry);
                self.check(op)
            }
            Answer::Refused(why) => {
                let why = crate::bound::clip(why);
                let message = format!(
                    "{}; asked to {question} ([ask] {}) and refused: {why}",
                    denial.message, question.entry
                );
                Err(Denial::new(denial.violation, message))
            }
        }
    }

    /// The question `op`'s denial raises, and what approving it adds: a
    /// fetch that one `[ask]` egress rule would let through (so the rule
    /// was all it lacked), or a call of an `[ask]` tool not on the
    /// allow-list.
    fn question(&self, op: &Op, denial: &Denial) -> Option<(Question, Widening)> {
        match op {
            Op::Net(req) if denial.violation == Violation::EgressDenied => {
                let url = url::Url::parse(&req.url).ok()?;
                let entry = (self.caps.ask().net().iter()).find(|r| r.matches(&url))?;
                let origin = crate::capability::net::url_origin(&url);
                let exact = crate::net::EgressRule::parse(&origin).ok()?;
                let mut wider = self.held().egress.clone();
                wider.rules.push(exact.clone());
                wider.check(&req.url).ok()?;
                let question = Question {
                    kind: OpKind::NetFetch,
                    target: origin,
                    entry: entry.as_str().to_string(),
                };
                Some((question, Widening::Rule(exact)))
            }
            Op::Tool(call) if denial.violation == Violation::ToolDenied => {
                let asked = self.caps.ask().tools().contains(&call.name);
                if !asked || self.held().allowed_tools.contains(&call.name) {
                    return None;
                }
                let question = Question {
                    kind: OpKind::ToolCall,
                    target: call.name.clone(),
                    entry: call.name.clone(),
                };
                Some((question, Widening::Tool(call.name.clone())))
            }
            _ => None,
        }
    }

    fn widen(&mut self, widening: Widening, entry: &str) {
        let asked = self.asked.get_or_insert_with(Default::default);
        match widening {
            Widening::Rule(rule) => {
                let egress = (asked.egress).get_or_insert_with(|| self.caps.egress().clone());
                (asked.approved).insert(rule.as_str().to_string(), entry.to_string());
                egress.rules.push(rule);
            }
            Widening::Tool(name) => {
                let tools = (asked.tools).get_or_insert_with(|| self.caps.tools().clone());
                (asked.approved).insert(format!("tool {name}"), entry.to_string());
                tools.insert(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ask::{Answer, Question};
    use crate::tools::ToolRegistry;
    use crate::{Capabilities, Op, Sandbox, Services, Violation};
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// A real HTTP server on 127.0.0.1 answering `200 ok` to each
    /// connection, counting them.
    fn server() -> (String, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            }
        });
        (origin, seen)
    }

    type Asked = Arc<Mutex<Vec<String>>>;

    /// A sandbox whose approver answers `answer` and keeps each question.
    fn sandbox(caps: Capabilities, answer: Answer) -> (Sandbox, Asked) {
        let asked: Asked = Arc::default();
        let keep = asked.clone();
        let approver = move |q: &Question| {
            keep.lock().unwrap().push(format!("{q} [{}]", q.entry));
            answer.clone()
        };
        let mut tools = ToolRegistry::new();
        tools.register("lookup", |input: &str| Ok(format!("found {input}")));
        tools.register("other", |_: &str| Ok("other".to_string()));
        let services = Services::new().approver(Arc::new(approver)).tools(tools);
        (
            Sandbox::builder(caps).services(services).build().unwrap(),
            asked,
        )
    }

    #[test]
    fn an_approved_origin_is_fetched_under_its_entry_for_the_rest_of_the_run() {
        let (origin, seen) = server();
        let caps = Capabilities::builder().ask_egress(&origin).build().unwrap();
        let (mut sb, asked) = sandbox(caps, Answer::Approved);
        for _ in 0..2 {
            let r = sb.run(Op::fetch(format!("{origin}/a")));
            assert!(r.ok, "{r:?}");
            let rule = format!("{origin} (approved at run time, [ask] {origin})");
            assert_eq!(r.rule.unwrap(), rule);
        }
        // Asked once; both fetches reached the server.
        assert_eq!(asked.lock().unwrap().len(), 1, "{asked:?}");
        assert!(asked.lock().unwrap()[0].starts_with("fetch from http://127.0.0.1:"));
        assert_eq!(seen.load(Ordering::SeqCst), 2);
        // The grant itself is unchanged.
        assert!(sb.caps().egress().rules().is_empty());
    }

    #[test]
    fn approving_one_origin_under_a_wide_entry_approves_that_origin_only() {
        let (a, seen_a) = server();
        let (b, seen_b) = server();
        let entry = "http://127.0.0.0/8:*";
        let caps = Capabilities::builder().ask_egress(entry).build().unwrap();
        let (mut sb, asked) = sandbox(caps, Answer::Approved);
        for url in [&a, &a, &b] {
            let r = sb.run(Op::fetch(format!("{url}/x")));
            let rule = format!("{url} (approved at run time, [ask] {entry})");
            assert_eq!(r.rule.as_deref(), Some(rule.as_str()), "{r:?}");
        }
        // Asked about each origin once: the approval of the first did not
        // reach the second.
        assert_eq!(asked.lock().unwrap().len(), 2, "{asked:?}");
        assert_eq!(
            (seen_a.load(Ordering::SeqCst), seen_b.load(Ordering::SeqCst)),
            (2, 1)
        );
    }

    #[test]
    fn a_refused_origin_is_denied_with_the_answer_and_never_reached_nor_asked_again() {
        let (origin, seen) = server();
        let caps = Capabilities::builder().ask_egress(&origin).build().unwrap();
        let (mut sb, asked) = sandbox(caps, Answer::Refused("not today".into()));
        for _ in 0..3 {
            let r = sb.run(Op::fetch(format!("{origin}/a")));
            assert_eq!(r.violation(), Some(Violation::EgressDenied));
            assert!(!r.hard());
            let message = r.denial.unwrap().message;
            assert!(message.contains("and refused: not today"), "{message}");
        }
        assert_eq!(asked.lock().unwrap().len(), 1);
        assert_eq!(seen.load(Ordering::SeqCst), 0);
        let audit = sb.audit();
        assert!(audit.iter().all(|e| e.decision == crate::Decision::Denied));
    }

    #[test]
    fn without_an_entry_or_an_approver_nothing_is_asked() {
        let (origin, seen) = server();
        let (other, _) = server();
        // An origin no entry covers: the grant's denial, as always.
        let caps = Capabilities::builder().ask_egress(&origin).build().unwrap();
        let (mut sb, asked) = sandbox(caps.clone(), Answer::Approved);
        let r = sb.run(Op::fetch(format!("{other}/a")));
        assert_eq!(r.violation(), Some(Violation::EgressDenied));
        assert!(!r.denial.unwrap().message.contains("asked"));
        assert!(asked.lock().unwrap().is_empty());
        // An entry but no approver.
        let mut plain = Sandbox::new(caps).unwrap();
        assert_eq!(
            plain.run(Op::fetch(format!("{origin}/a"))).violation(),
            Some(Violation::EgressDenied)
        );
        // A fetch the entry covers but the grant refuses for another
        // reason (a bad header) is not asked about either.
        let (mut sb, asked) = sandbox(
            Capabilities::builder().ask_egress(&origin).build().unwrap(),
            Answer::Approved,
        );
        let Op::Net(mut bad) = Op::fetch(format!("{origin}/a")) else {
            unreachable!()
        };
        bad.headers.push(("Host".into(), "elsewhere".into()));
        assert!(!sb.run(Op::Net(bad)).ok);
        assert!(asked.lock().unwrap().is_empty());
        assert_eq!(seen.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn an_asked_tool_runs_when_approved_and_questions_stop_at_the_grants_most() {
        let caps = Capabilities::builder()
            .ask_tool("lookup")
            .ask_tool("other")
            .max_questions(1)
            .build()
            .unwrap();
        let (mut sb, asked) = sandbox(caps.clone(), Answer::Approved);
        let r = sb.run(Op::tool("lookup", "x"));
        assert!(r.ok, "{r:?}");
        assert_eq!(
            r.rule.unwrap(),
            "tool lookup (approved at run time, [ask] lookup)"
        );
        // The one question was asked: the second tool is denied unasked.
        let r = sb.run(Op::tool("other", "x"));
        assert_eq!(r.violation(), Some(Violation::ToolDenied));
        assert!(
            r.denial
                .unwrap()
                .message
                .contains("not asked: the run already asked 1")
        );
        assert_eq!(
            asked.lock().unwrap().as_slice(),
            ["call the tool lookup [lookup]"]
        );
        // A tool that is not an entry is never asked about.
        let (mut sb, asked) = sandbox(caps, Answer::Approved);
        assert_eq!(
            sb.run(Op::tool("nope", "x")).violation(),
            Some(Violation::ToolDenied)
        );
        assert!(asked.lock().unwrap().is_empty());
    }

    #[test]
    fn the_ask_section_round_trips_and_a_bad_entry_names_its_key() {
        let text =
            "[ask]\nnet = [\"https://api.example.org\"]\ntools = [\"lookup\"]\nmax_questions = 2\n";
        let caps = Capabilities::from_toml(text, std::path::Path::new("."), None).unwrap();
        assert_eq!(caps.ask().max_questions(), 2);
        assert_eq!(caps.ask().net()[0].as_str(), "https://api.example.org");
        let again = Capabilities::from_toml(&caps.to_toml(), std::path::Path::new("."), None);
        assert_eq!(again.unwrap(), caps);
        for (bad, key) in [
            ("[ask]\nnet = [\"ftp://x\"]\n", "ask.net[0]"),
            ("[ask]\ntools = [\"Bad Name\"]\n", "ask.tools[0]"),
            ("[ask]\nmax_questions = 101\n", "ask.max_questions"),
        ] {
            let e = Capabilities::from_toml(bad, std::path::Path::new("."), None).unwrap_err();
            assert!(e.to_string().contains(key), "{bad}: {e}");
        }
        let none = Capabilities::builder().build().unwrap();
        assert!(!none.to_toml().contains("[ask]"));
    }
}
