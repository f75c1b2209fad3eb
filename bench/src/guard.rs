//! The bench as a guard. `--check`: every row must meet its goal, allowing
//! for the noise this run measured (an A/A row: the same bare embedding
//! timed against itself, side by side; its distance from 1.0x is the band).
//! `--baseline FILE`: no ratio may be more than `--regression` times (2 by
//! default) worse than the one recorded in FILE for the same row (written
//! by `--write-baseline FILE`): the quick guard CI runs, which compares
//! ratios only, never absolute times.

use super::{Res, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the command line asked the guard to do.
#[derive(Default)]
pub(crate) struct Guard {
    check: bool,
    baseline: Option<PathBuf>,
    write_baseline: Option<PathBuf>,
    regression: Option<f64>,
}

/// Which way a goal points, and its bound.
#[derive(Debug, PartialEq)]
enum Bound {
    AtMost(f64),
    AtLeast(f64),
    /// A yes-or-no goal (`all complete`, `no growth`): `met` decides.
    Exact,
    /// Reported, not a goal.
    None,
}

/// `"<= 1.3x"`, `"< 0.7x"`, `">= 0.9x"`, `"all complete"`, `"(reported)"`.
fn bound(goal: &str) -> Bound {
    let number = |s: &str| s.trim().trim_end_matches('x').trim().parse::<f64>().ok();
    if goal.starts_with('(') {
        return Bound::None;
    }
    for (prefix, at_most) in [("<=", true), ("<", true), (">=", false), (">", false)] {
        if let Some(n) = goal.strip_prefix(prefix).and_then(number) {
            return if at_most {
                Bound::AtMost(n)
            } else {
                Bound::AtLeast(n)
            };
        }
    }
    Bound::Exact
}

impl Guard {
    /// The guard's flags among `args` (the harness's own arguments).
    pub(crate) fn from_args(args: &[String]) -> Res<Guard> {
        let mut g = Guard::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--check" => g.check = true,
                "--baseline" => g.baseline = Some(value()?.into()),
                "--write-baseline" => g.write_baseline = Some(value()?.into()),
                "--regression" => g.regression = Some(value()?.parse()?),
                other => return Err(format!("unknown argument {other:?}").into()),
            }
        }
        Ok(g)
    }

    /// Whether the noise row is needed.
    pub(crate) fn wants_noise(&self) -> bool {
        self.check
    }

    /// Judge `rows` (the noise band from the `N0` row, when measured):
    /// the failures, one line each; and write the baseline when asked.
    pub(crate) fn judge(&self, rows: &[Row]) -> Res<Vec<String>> {
        let keyed = keyed(rows);
        if let Some(path) = &self.write_baseline {
            let text: String = keyed
                .iter()
                .map(|(k, r)| format!("{k}\t{:.4}\n", r.ratio))
                .collect();
            std::fs::write(path, text)?;
        }
        let mut failures = Vec::new();
        if self.check {
            let noise = rows
                .iter()
                .find(|r| r.id == "N0")
                .map_or(0.0, |r| (r.ratio - 1.0).abs());
            let band = noise.max(0.05);
            eprintln!("bench: --check allows a noise band of {:.0}%", band * 100.0);
            for (key, r) in &keyed {
                let missed = match bound(r.goal) {
                    Bound::AtMost(n) => r.ratio > n * (1.0 + band),
                    Bound::AtLeast(n) => r.ratio < n * (1.0 - band),
                    Bound::Exact => !r.met,
                    Bound::None => false,
                };
                if missed {
                    failures.push(format!(
                        "{key} ({}): {:.2}x misses {} beyond the {:.0}% noise band",
                        r.what,
                        r.ratio,
                        r.goal,
                        band * 100.0
                    ));
                }
            }
        }
        if let Some(path) = &self.baseline {
            let factor = self.regression.unwrap_or(2.0);
            let recorded = read_baseline(path)?;
            for (key, r) in &keyed {
                let Some(&was) = recorded.get(key) else {
                    continue;
                };
                let worse = match bound(r.goal) {
                    Bound::AtLeast(_) => r.ratio * factor < was,
                    Bound::AtMost(_) => r.ratio > was * factor,
                    _ => false,
                };
                if worse {
                    failures.push(format!(
                        "{key} ({}): {:.2}x, more than {factor}x worse than the recorded {was:.2}x",
                        r.what, r.ratio
                    ));
                }
            }
        }
        Ok(failures)
    }
}

/// Each row under a key that stays the same from run to run: its id and
/// its place among the rows of that id (`P4.2`).
fn keyed(rows: &[Row]) -> Vec<(String, &Row)> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    rows.iter()
        .map(|r| {
            let n = seen.entry(r.id).or_default();
            *n += 1;
            (format!("{}.{n}", r.id), r)
        })
        .collect()
}

fn read_baseline(path: &Path) -> Res<BTreeMap<String, f64>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the baseline {}: {e}", path.display()))?;
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (key, ratio) = line
            .split_once('\t')
            .ok_or(format!("a baseline line is not KEY<tab>RATIO: {line:?}"))?;
        out.insert(key.to_string(), ratio.trim().parse()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &'static str, ratio: f64, goal: &'static str, met: bool) -> Row {
        Row {
            id,
            what: String::new(),
            ours: String::new(),
            theirs: String::new(),
            ratio,
            goal,
            met,
        }
    }

    #[test]
    fn goals_are_read_in_their_direction() {
        assert_eq!(bound("<= 1.3x"), Bound::AtMost(1.3));
        assert_eq!(bound("< 0.7x"), Bound::AtMost(0.7));
        assert_eq!(bound(">= 0.9x"), Bound::AtLeast(0.9));
        assert_eq!(bound("all complete"), Bound::Exact);
        assert_eq!(bound("(reported)"), Bound::None);
    }

    #[test]
    fn check_allows_the_noise_band_and_the_baseline_a_factor() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.tsv");
        let rows = vec![
            row("N0", 1.10, "(reported)", true),
            row("P3", 1.25, "<= 1.2x", false),
            row("P4", 1.5, "<= 1.3x", false),
            row("P6", 0.85, ">= 0.9x", false),
            row("S2", 0.99, "all complete", false),
        ];
        let write = Guard {
            write_baseline: Some(base.clone()),
            ..Guard::default()
        };
        assert!(write.judge(&rows).unwrap().is_empty());
        let check = Guard {
            check: true,
            ..Guard::default()
        };
        // 10% noise: P3 (4% over) and P6 (6% under) pass, P4 (15% over)
        // and S2 (not all complete) fail.
        let failed = check.judge(&rows).unwrap();
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert!(failed[0].starts_with("P4.1"), "{failed:?}");
        assert!(failed[1].starts_with("S2.1"), "{failed:?}");
        // Against the baseline: P4 twice as bad fails, P6 halved fails,
        // P3 a little worse passes.
        let later = vec![
            row("N0", 1.0, "(reported)", true),
            row("P3", 1.3, "<= 1.2x", false),
            row("P4", 3.1, "<= 1.3x", false),
            row("P6", 0.4, ">= 0.9x", false),
        ];
        let guard = Guard {
            baseline: Some(base),
            ..Guard::default()
        };
        let failed = guard.judge(&later).unwrap();
        assert_eq!(failed.len(), 2, "{failed:?}");
        assert!(failed[0].starts_with("P4.1") && failed[1].starts_with("P6.1"));
    }
}
