//! The ratchet: a text file listing the parity cases known to pass, one id per line (`#` starts
//! a comment line), and the gradient checks known to pass as the case id with [`GRAD_SUFFIX`].
//! A listed case or gradient check that fails, or that no longer exists, is a regression.

use std::collections::{BTreeSet, HashSet};

/// The suffix of a gradient check's id: `add.Tensor/0#grad` is the gradient check of case
/// `add.Tensor/0`.
pub const GRAD_SUFFIX: &str = "#grad";

/// The comment written at the top of a regenerated ratchet file.
pub const HEADER: &str = "\
# Parity cases known to pass, one id per line, and (as ID#grad) the gradient checks known to
# pass. `cargo xtask parity DIR --ratchet FILE` fails when one of them fails;
# `--update-ratchet` rewrites this file from the cases and gradient checks that pass.
";

/// The ids listed in a ratchet file: trimmed lines, without blank lines and `#` comment lines.
pub fn parse(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string).collect()
}

/// The text of a ratchet file listing `ids` (sorted, without duplicates).
pub fn render<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let ids: BTreeSet<&str> = ids.into_iter().collect();
    let mut text = HEADER.to_string();
    for id in ids {
        text.push_str(id);
        text.push('\n');
    }
    text
}

/// The outcome of comparing a run with the ratchet.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// Listed ids that ran and failed.
    pub regressed: Vec<String>,
    /// Listed ids (within the filter) that name no case.
    pub missing: Vec<String>,
    /// Ids that passed and are not listed.
    pub newly_passing: Vec<String>,
    /// The ids a rewritten file lists: those that passed, plus listed cases the filter skipped.
    pub updated: Vec<String>,
}

impl Verdict {
    /// Compares a run with the listed ids. `results` holds every case that ran with whether it
    /// passed; `all_ids` every case id in the file; `selected` says whether an id is within the
    /// run's filter.
    pub fn new(
        listed: &[String],
        results: &[(String, bool)],
        all_ids: &HashSet<&str>,
        selected: impl Fn(&str) -> bool,
    ) -> Verdict {
        let listed_set: HashSet<&str> = listed.iter().map(String::as_str).collect();
        let ran: HashSet<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
        let mut v = Verdict::default();
        for id in listed {
            if !all_ids.contains(id.as_str()) {
                if selected(id) {
                    v.missing.push(id.clone());
                }
            } else if !ran.contains(id.as_str()) {
                v.updated.push(id.clone());
            }
        }
        for (id, passed) in results {
            match (passed, listed_set.contains(id.as_str())) {
                (true, listed) => {
                    v.updated.push(id.clone());
                    if !listed {
                        v.newly_passing.push(id.clone());
                    }
                }
                (false, true) => v.regressed.push(id.clone()),
                (false, false) => {}
            }
        }
        v.updated.sort();
        v.updated.dedup();
        v
    }

    /// Whether the run breaks the ratchet.
    pub fn is_broken(&self) -> bool {
        !self.regressed.is_empty() || !self.missing.is_empty()
    }

    /// The `RATCHET:` report lines.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.regressed.iter().map(|id| format!("RATCHET: {id} is listed as passing but failed")));
        out.extend(
            self.missing.iter().map(|id| format!("RATCHET: {id} is listed as passing but there is no such case")),
        );
        out.extend(self.newly_passing.iter().map(|id| format!("RATCHET: newly passing: {id}")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_skipping_comments_and_blanks() {
        let text = "# header\n\nadd.Tensor/0\n  mul.Scalar/32  \n   # indented comment\nsum/1\n";
        assert_eq!(parse(text), ["add.Tensor/0", "mul.Scalar/32", "sum/1"]);
        assert!(parse("").is_empty());
        assert!(parse("# only comments\n#\n").is_empty());
    }

    #[test]
    fn render_sorts_dedups_and_reparses() {
        let text = render(["b/1", "a/0", "b/1"]);
        assert!(text.starts_with(HEADER));
        assert_eq!(parse(&text), ["a/0", "b/1"]);
    }

    #[test]
    fn verdict_finds_regressions_new_passes_and_missing() {
        let listed: Vec<String> = ["a", "b", "gone", "skipped", "x/gone"].map(String::from).to_vec();
        let results: Vec<(String, bool)> =
            [("a", true), ("b", false), ("c", true), ("d", false)].map(|(i, p)| (i.to_string(), p)).to_vec();
        let all: HashSet<&str> = ["a", "b", "c", "d", "skipped"].into_iter().collect();
        let v = Verdict::new(&listed, &results, &all, |id| id != "x/gone");
        assert_eq!(v.regressed, ["b"]);
        assert_eq!(v.missing, ["gone"]);
        assert_eq!(v.newly_passing, ["c"]);
        assert_eq!(v.updated, ["a", "c", "skipped"]);
        assert!(v.is_broken());
        assert_eq!(
            v.lines(),
            [
                "RATCHET: b is listed as passing but failed",
                "RATCHET: gone is listed as passing but there is no such case",
                "RATCHET: newly passing: c",
            ]
        );
        let ok = Verdict::new(&["a".to_string()], &results, &all, |_| true);
        assert!(!ok.is_broken());
    }
}
