//! Help that stands alone: every subcommand's `--help` starts with what it does, shows a
//! usage line with its own name (`cordon compose [OPTIONS] [FILTER]`) and one line per
//! option, in cordon's words.
//!
//! The libtest arguments (libtest-mimic's `Arguments`, flattened into every subcommand
//! that runs checks) bring a help template of their own ("USAGE: [OPTIONS] [FILTER]", no
//! description) and flags cordon accepts for compatibility but ignores: the template is
//! put back to clap's, the flags cordon honours are described as cordon uses them, and
//! the ignored ones are hidden (still accepted, so a libtest habit is no error).

use clap::Command;

/// `0.1.0 (commit 4a38c2e1b2c3)`: the commit cordon was built from (build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("CORDON_COMMIT"), ")");

/// What `cordon compose`, `swarm` and `run` say without `--scenario`: there is no default
/// (the demo's file would judge someone else's stack against the reference), so it says
/// how to get one.
pub const NO_SCENARIO: &str = "\
error: --scenario FILE is required: the scenario says which providers and clients your deployment has, \
and there is no default (the demo's scenarios/reference.yaml describes the reference stack, not yours)
  to get one:
    cordon import infinito --roles ROLES --inventory INVENTORY --project P --out scenario.yaml
                             generated from the platform's role metadata
    cordon init --project P --out scenario.yaml
                             drafted from your running deployment (review it before use)
    write one by hand        README, \"Using it\": a scenario of ten lines
    cargo run -- demo        the reference stack with its own scenario, to see a run first";

/// libtest flags cordon does not show: those it refuses with a reason (see
/// [`refused_libtest_flags`]), `--test` (cordon only runs checks) and `--test-threads`
/// (it sets the suite's concurrency).
const IGNORED: [&str; 8] =
    ["include_ignored", "ignored", "test", "bench", "nocapture", "show_output", "unstable_flags", "test_threads"];

/// libtest flags that would do nothing in cordon: refused, each with why, rather than
/// accepted and ignored (a habit that silently does nothing misleads).
pub fn refused_libtest_flags(tests: &libtest_mimic::Arguments) -> Vec<&'static str> {
    let mut out = Vec::new();
    if tests.nocapture || tests.show_output {
        out.push("--nocapture and --show-output: cordon captures no output; evidence is shown with --verbose or --evidence all");
    }
    if tests.ignored || tests.include_ignored {
        out.push(
            "--ignored and --include-ignored: no check is ignored; a check that cannot apply is skipped, saying why",
        );
    }
    if tests.bench {
        out.push("--bench: cordon runs no benchmarks (see docs/bench.md)");
    }
    if tests.unstable_flags.is_some() {
        out.push("-Z: cordon has no unstable options");
    }
    out
}

/// cordon's words for the libtest flags it honours.
const HONOURED: [(&str, &str); 8] = [
    (
        "filter",
        "Run only the checks whose name contains a FILTER (e.g. `route::`, `->gitea`); several select every check any of them matches",
    ),
    ("list", "List the checks planned for this scenario and suite, and run none"),
    ("exact", "Match FILTER and --skip against whole check names"),
    ("skip", "Skip the checks whose name contains FILTER (may be repeated)"),
    ("quiet", "One character per check (the same as --format terse)"),
    ("format", "Console output: pretty (a line per check), terse (a character per check) or json (libtest's events)"),
    ("color", "Colour the console: auto (on a terminal, unless NO_COLOR is set), always or never"),
    ("logfile", "Write the console's check lines to PATH instead of stdout"),
];

/// clap's own template: the description, the usage line, every argument.
const TEMPLATE: &str = "{before-help}{about-with-newline}\n{usage-heading} {usage}\n\n{all-args}{after-help}";

const EXIT_CODES: &str = "Exit codes: 0 every check held (known failures included); 1 a check failed, or a \
known failure started passing; 2 bad usage, or an invalid scenario or suite (the error names file:line:column \
and key); 3 infrastructure error (engine unreachable, a namespace that cannot be entered, a check still \
unreachable at the deadline): retry, the deployment may be fine. The reports are written in every case but 2.";

/// The finished command line: version with the commit, and every subcommand's help.
pub fn polish(cmd: Command) -> Command {
    let mut cmd = cmd.version(VERSION).after_help(EXIT_CODES);
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, polish_subcommand);
    }
    cmd
}

fn polish_subcommand(mut sub: Command) -> Command {
    let ids: Vec<String> = sub.get_arguments().map(|a| a.get_id().to_string()).collect();
    if !ids.iter().any(|id| id == "list") {
        return sub;
    }
    sub = sub.help_template(TEMPLATE).after_help(EXIT_CODES);
    // Several filters select the checks any of them matches (`route:: reach::`).
    sub = sub.mut_arg("filter", |a| a.num_args(0..).action(clap::ArgAction::Append).value_name("FILTER"));
    for id in ids {
        if IGNORED.contains(&id.as_str()) {
            sub = sub.mut_arg(id, |a| a.hide(true));
        } else if let Some((_, help)) = HONOURED.iter().find(|(h, _)| *h == id) {
            // The possible values are in cordon's sentence; libtest's own say "tests".
            let enumerated = id == "color" || id == "format";
            sub = sub.mut_arg(id, |a| a.help(*help).long_help(*help).hide_possible_values(enumerated));
        }
    }
    sub
}

#[cfg(test)]
mod tests {
    use super::super::command;

    fn help_of(path: &[&str]) -> String {
        let args = std::iter::once("cordon").chain(path.iter().copied()).chain(std::iter::once("--help"));
        let err = command().try_get_matches_from(args).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp, "{path:?}");
        err.to_string()
    }

    /// Every visible subcommand, nested ones (`import infinito`) included, as its path.
    fn subcommands(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            out.push((p.clone(), sub.clone()));
            subcommands(sub, p, out);
        }
    }

    #[test]
    fn every_subcommand_describes_itself_and_every_option() {
        let mut subs = Vec::new();
        subcommands(&command(), vec![], &mut subs);
        assert!(subs.len() >= 8, "{}", subs.len());
        for (path, sub) in subs {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            let name = path.join(" ");
            let help = help_of(&path);
            let first = help.lines().next().unwrap_or_default();
            assert!(!first.is_empty() && !first.starts_with("Usage"), "{name}: no description first:\n{help}");
            assert!(help.contains(&format!("Usage: cordon {name}")), "{name}: usage line without the command:\n{help}");
            assert!(!help.contains("USAGE: [OPTIONS]"), "{name}: libtest's template:\n{help}");
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                let id = arg.get_id().as_str();
                assert!(arg.get_help().is_some(), "{name}: `{id}` has no help line");
                let help_text = arg.get_help().map(ToString::to_string).unwrap_or_default();
                let first_words: String = help_text.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
                assert!(help.contains(&first_words), "{name}: `{id}`'s help is not shown:\n{help}");
                if let Some(long) = arg.get_long() {
                    assert!(help.contains(&format!("--{long}")), "{name}: --{long} is not in the help:\n{help}");
                }
            }
        }
    }

    #[test]
    fn ignored_libtest_flags_are_hidden_but_accepted() {
        let help = help_of(&["compose"]);
        for flag in ["--include-ignored", "--nocapture", "--test-threads", "--bench"] {
            assert!(!help.contains(flag), "{flag} shown:\n{help}");
        }
        assert!(help.contains("--results") && help.contains("--compare"), "{help}");
        assert!(help.contains("Exit codes: 0"), "{help}");
        command().try_get_matches_from(["cordon", "compose", "--nocapture", "--test-threads", "2"]).unwrap();
    }

    #[test]
    fn the_version_names_the_commit() {
        let err = command().try_get_matches_from(["cordon", "--version"]).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with(&format!("cordon {} (commit ", env!("CARGO_PKG_VERSION"))), "{text}");
        assert!(!env!("CORDON_COMMIT").is_empty());
    }
}
