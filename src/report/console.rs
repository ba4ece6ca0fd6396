//! The libtest-style console, through libtest-mimic: `--list`, filters, `--exact` and
//! `--skip` behave as in `cargo test`. Trials only replay finished results.

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use super::failure_text;
use crate::model::{CheckName, RunReport, Verdict};
use crate::secret::Redactor;

/// The same selection libtest-mimic applies, so only selected checks are run at all.
pub fn is_selected(args: &Arguments, name: &str) -> bool {
    let matches = |pattern: &str| if args.exact { name == pattern } else { name.contains(pattern) };
    if let Some(filter) = &args.filter
        && !matches(filter)
    {
        return false;
    }
    !args.skip.iter().any(|s| matches(s))
}

/// Prints planned check names the way `cargo test -- --list` does.
pub fn list(args: &Arguments, planned: &[CheckName]) {
    let trials = planned.iter().map(|n| Trial::test(n.to_string(), || Ok(()))).collect();
    let _listing = libtest_mimic::run(&console_args(args), trials);
}

/// Prints finished results; checks filtered out are passed along so the counts match.
pub fn print(args: &Arguments, report: &RunReport, unselected: &[String], redactor: &Redactor) {
    let mut trials: Vec<Trial> = report
        .results
        .iter()
        .map(|r| {
            let text = redactor.redact(&failure_text(r));
            let reason = redactor.redact(&r.reason);
            let trial = match r.verdict {
                Verdict::Passed => Trial::test(r.name.clone(), || Ok(())),
                Verdict::Failed | Verdict::Unreachable | Verdict::StaleBaseline => {
                    Trial::test(r.name.clone(), move || Err(Failed::from(text)))
                }
                Verdict::Skipped => Trial::ignorable_test(r.name.clone(), move || Ok(Completion::ignored_with(reason))),
                Verdict::KnownFailure => Trial::ignorable_test(r.name.clone(), move || {
                    Ok(Completion::ignored_with(format!("known failure: {reason}")))
                }),
            };
            match r.verdict {
                Verdict::Passed | Verdict::Failed => trial,
                other => trial.with_kind(other.as_str()),
            }
        })
        .collect();
    trials.extend(unselected.iter().map(|n| Trial::test(n.clone(), || Ok(()))));
    // The exit code comes from the verdict classes, which libtest's counts blur.
    let _conclusion = libtest_mimic::run(&console_args(args), trials);
}

/// One thread keeps the replay in plan order.
fn console_args(args: &Arguments) -> Arguments {
    let mut args = args.clone();
    args.test_threads = Some(1);
    args
}
