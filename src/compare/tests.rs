use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use rstest::rstest;

use super::*;
use crate::config::{Family, Mode};
use crate::model::{CheckName, CheckResult};

fn run(at: u64, checks: &[(&str, Verdict)]) -> RunReport {
    RunReport {
        scenario: "reference".into(),
        suite: "suites/swarm.yaml".into(),
        mode: Mode::Swarm,
        started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(at),
        duration: Duration::from_secs(3),
        results: checks
            .iter()
            .map(|(name, v)| {
                let (family, subject) = name.split_once("::").unwrap();
                let family: Family = serde_json::from_value(serde_json::Value::String(family.into())).unwrap();
                CheckResult::new(&CheckName::new(family, subject), *v, format!("{name} is {}", v.as_str()))
            })
            .collect(),
        filtered_out: 0,
        cost: Default::default(),
        provenance: Default::default(),
    }
}

fn earlier(runs: Vec<RunReport>) -> Earlier {
    Earlier {
        compared_with: "results/swarm/history".into(),
        runs: runs.into_iter().enumerate().map(|(i, r)| (PathBuf::from(format!("run{i}/report.json")), r)).collect(),
        notes: vec![],
    }
}

fn names(changes: &[Change]) -> Vec<&str> {
    changes.iter().map(|c| c.check.as_str()).collect()
}

use Verdict::*;

#[test]
fn one_new_failure_then_one_fixed() {
    let good = || run(100, &[("route::a->b", Passed), ("reach::c-/->b", Passed)]);
    let broken = run(200, &[("route::a->b", Passed), ("reach::c-/->b", Failed)]);
    let s = since(&earlier(vec![good()]), &broken);
    assert_eq!(names(&s.new_failures), ["reach::c-/->b"]);
    assert_eq!(s.new_failures[0].before, Some(Passed));
    assert_eq!(s.new_failures[0].reason, "reach::c-/->b is failed");
    assert!(s.fixed.is_empty() && s.still_failing.is_empty() && s.flaky.is_empty());
    let mut fixed_run = good();
    fixed_run.started_at += Duration::from_secs(200);
    let s = since(&earlier(vec![good(), broken]), &fixed_run);
    assert_eq!(names(&s.fixed), ["reach::c-/->b"]);
    assert_eq!(s.fixed[0].reason, "reach::c-/->b is failed", "a fixed check shows why it had failed");
    assert!(s.new_failures.is_empty());
    assert_eq!(s.previous.as_ref().unwrap().path, "run1/report.json", "compared with the newest earlier run");
    assert_eq!(s.previous.as_ref().unwrap().stamp, "1970-01-01T00-03-20Z");
    assert_eq!(s.headline(), "0 new failure(s), 1 fixed, 0 still failing, 0 other change(s), 0 flaky over 3 run(s)");
}

/// previous verdict → this verdict: where the change is listed.
#[rstest]
#[case::holds(Some(Passed), Passed, "")]
#[case::breaks(Some(Passed), Failed, "new")]
#[case::stale_baseline_is_a_failure(Some(KnownFailure), StaleBaseline, "new")]
#[case::was_unreachable(Some(Unreachable), Failed, "new")]
#[case::new_check_failing(None, Failed, "new")]
#[case::new_check_passing(None, Passed, "")]
#[case::fixed(Some(Failed), Passed, "fixed")]
#[case::still(Some(Failed), Failed, "still")]
#[case::still_stale(Some(Failed), StaleBaseline, "still")]
#[case::now_accepted(Some(Failed), KnownFailure, "other")]
#[case::now_unreachable(Some(Failed), Unreachable, "other")]
#[case::was_fine_now_unreachable(Some(Passed), Unreachable, "other")]
#[case::now_skipped(Some(Failed), Skipped, "other")]
#[case::known_still(Some(KnownFailure), KnownFailure, "")]
fn every_change_is_listed_once(#[case] before: Option<Verdict>, #[case] now: Verdict, #[case] list: &str) {
    let previous = run(1, &before.map(|v| vec![("contract::x::tools", v)]).unwrap_or_default());
    let s = since(&earlier(vec![previous]), &run(2, &[("contract::x::tools", now)]));
    let lists =
        [("new", &s.new_failures), ("fixed", &s.fixed), ("still", &s.still_failing), ("other", &s.other_changes)];
    for (name, changes) in lists {
        assert_eq!(changes.len(), usize::from(name == list), "{name}: {changes:?}");
    }
    assert_eq!(s.new_checks.len(), usize::from(before.is_none()));
}

#[test]
fn a_check_this_run_did_not_plan_is_not_fixed() {
    let previous = run(1, &[("reach::c-/->b", Failed), ("route::a->b", Passed)]);
    let filtered = run(2, &[("route::a->b", Passed)]);
    let s = since(&earlier(vec![previous]), &filtered);
    assert!(s.fixed.is_empty());
    assert_eq!(s.not_in_this_run, ["reach::c-/->b"]);
}

/// Oldest first, this run last.
#[rstest]
#[case::steady(&[Passed, Passed, Passed, Passed], 0)]
#[case::one_break_is_news_not_flakiness(&[Passed, Passed, Failed, Failed], 0)]
#[case::one_fix(&[Failed, Failed, Passed], 0)]
#[case::a_break_and_its_fix_are_news(&[Passed, Failed, Passed], 0)]
#[case::back_and_forth_twice(&[Passed, Failed, Passed, Failed], 3)]
#[case::every_night(&[Passed, Failed, Passed, Failed, Passed], 4)]
#[case::unreachable_nights_count(&[Passed, Unreachable, Passed, Unreachable], 3)]
#[case::absent_nights_are_skipped(&[Passed, Failed, Skipped, Passed, Failed], 3)]
#[case::skipped_nights_say_nothing(&[Passed, Skipped, Passed, Skipped], 0)]
fn flaky_means_flipping_back_and_forth(#[case] nights: &[Verdict], #[case] flips: usize) {
    let mut runs: Vec<RunReport> =
        nights.iter().enumerate().map(|(i, v)| run(i as u64, &[("route::a->b", *v)])).collect();
    let current = runs.pop().unwrap();
    let s = since(&earlier(runs), &current);
    match s.flaky.first() {
        Some(f) => {
            assert_eq!(f.flips, flips);
            assert_eq!(f.verdicts.len(), nights.len());
        }
        None => assert_eq!(flips, 0),
    }
}

#[test]
fn a_flaky_new_failure_says_so() {
    let runs = vec![
        run(1, &[("route::a->b", Passed)]),
        run(2, &[("route::a->b", Failed)]),
        run(3, &[]),
        run(4, &[("route::a->b", Passed)]),
    ];
    let s = since(&earlier(runs), &run(5, &[("route::a->b", Failed)]));
    assert!(s.new_failures[0].flaky);
    assert_eq!(s.flaky[0].trail(), "p F . p F");
}

#[test]
fn no_earlier_run_is_not_an_error() {
    let s = since(&Earlier { compared_with: "h".into(), runs: vec![], notes: vec!["first".into()] }, &run(1, &[]));
    assert!(s.previous.is_none() && s.is_empty());
    assert_eq!(s.notes, ["first"]);
}

mod loading {
    use super::*;

    fn write(dir: &std::path::Path, rel: &str, report: &RunReport) -> PathBuf {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, crate::report::json::render(report)).unwrap();
        path
    }

    #[test]
    fn two_saved_runs_compare_offline() {
        let dir = tempfile::tempdir().unwrap();
        let good = write(dir.path(), "a/report.json", &run(1, &[("route::a->b", Passed)]));
        let bad = write(dir.path(), "b/report.json", &run(2, &[("route::a->b", Failed)]));
        let worse = super::super::offline(&good, &bad).unwrap();
        assert_eq!(worse.new_failures.len(), 1, "a new failure");
        assert!(super::super::offline(&bad, &good).unwrap().new_failures.is_empty(), "a fix");
        let missing = super::super::offline(&good, &dir.path().join("c/report.json")).unwrap_err();
        assert!(missing.contains("c/report.json") && missing.contains("not a report.json file"), "{missing}");
        let directory = super::super::offline(dir.path(), &good).unwrap_err();
        assert!(directory.contains("not a report.json file"), "a directory is not a report: {directory}");
    }

    #[test]
    fn a_report_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "old/report.json", &run(5, &[("route::a->b", Passed)]));
        let e = load(&file, "report.json", 7).unwrap();
        assert_eq!(e.runs.len(), 1);
        assert_eq!(e.runs[0].0, file);
    }

    #[test]
    fn a_history_directory_gives_the_newest_runs_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        for (i, stamp) in ["2026-12-01T02-30-00Z", "2026-12-03T02-30-00Z", "2026-12-02T02-30-00Z"].iter().enumerate() {
            write(dir.path(), &format!("history/{stamp}/report.json"), &run(i as u64, &[]));
        }
        std::fs::create_dir_all(dir.path().join("history/2026-12-04T02-30-00Z")).unwrap();
        let e = load(&dir.path().join("history"), "report.json", 3).unwrap();
        let got: Vec<String> =
            e.runs.iter().map(|(p, _)| p.parent().unwrap().file_name().unwrap().to_string_lossy().into()).collect();
        assert_eq!(got, ["2026-12-02T02-30-00Z", "2026-12-03T02-30-00Z"], "a window of 3 is this run and 2 earlier");
        // The results directory itself leads to its history.
        write(dir.path(), "report.json", &run(9, &[]));
        let e = load(dir.path(), "report.json", 2).unwrap();
        assert!(e.runs[0].0.ends_with("2026-12-03T02-30-00Z/report.json"), "{:?}", e.runs[0].0);
    }

    #[test]
    fn a_results_directory_without_history_gives_its_report() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "report.json", &run(9, &[]));
        let e = load(dir.path(), "report.json", 7).unwrap();
        assert_eq!(e.runs.len(), 1);
    }

    #[test]
    fn the_first_night_has_nothing_to_compare() {
        let dir = tempfile::tempdir().unwrap();
        let e = load(&dir.path().join("history"), "report.json", 7).unwrap();
        assert!(e.runs.is_empty());
        assert!(e.notes[0].contains("does not exist yet"), "{:?}", e.notes);
        let e = load(dir.path(), "report.json", 7).unwrap();
        assert!(e.notes[0].contains("no earlier run in"), "{:?}", e.notes);
    }

    #[test]
    fn a_file_that_is_no_report_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junit.xml");
        std::fs::write(&junk, "<testsuites/>").unwrap();
        let e = load(&junk, "report.json", 7).unwrap_err();
        assert!(e.contains("junit.xml: not a report.json cordon wrote"), "{e}");
        let e = load(std::path::Path::new("/dev/null"), "report.json", 7).unwrap_err();
        assert!(e.contains("/dev/null"), "{e}");
    }

    #[test]
    fn a_broken_night_is_skipped_and_said() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "history/2026-12-01T02-30-00Z/report.json", &run(1, &[]));
        let broken = dir.path().join("history/2026-12-02T02-30-00Z/report.json");
        std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
        std::fs::write(&broken, "{\"report\": ").unwrap();
        let e = load(&dir.path().join("history"), "report.json", 7).unwrap();
        assert_eq!(e.runs.len(), 1);
        assert!(e.notes[0].starts_with("skipped ") && e.notes[0].contains("2026-12-02"), "{:?}", e.notes);
    }
}

fn with_provenance(mut r: RunReport, commit: &str, scenario: &str, suite: &str, engine: &str) -> RunReport {
    r.provenance = crate::model::Provenance {
        cordon_version: "0.1.0".into(),
        cordon_commit: commit.into(),
        scenario_sha256: scenario.into(),
        suite_sha256: suite.into(),
        engine: engine.into(),
    };
    r
}

#[rstest::rstest]
#[case::nothing("a", "sha256:s1", "sha256:u1", "Docker Engine 26.1.5", &[])]
#[case::cordon_upgraded("b", "sha256:s1", "sha256:u1", "Docker Engine 26.1.5", &["cordon"])]
#[case::scenario_edited("a", "sha256:s2", "sha256:u1", "Docker Engine 26.1.5", &["scenario"])]
#[case::suite_and_engine("a", "sha256:s1", "sha256:u2", "Docker Engine 27.0.1", &["suite", "engine"])]
fn a_change_of_cordon_scenario_suite_or_engine_is_said_beside_the_verdicts(
    #[case] commit: &str,
    #[case] scenario: &str,
    #[case] suite: &str,
    #[case] engine: &str,
    #[case] changed: &[&str],
) {
    let before = with_provenance(
        run(1, &[("reach::a", Verdict::Passed)]),
        "a",
        "sha256:s1",
        "sha256:u1",
        "Docker Engine 26.1.5",
    );
    let now = with_provenance(run(2, &[("reach::a", Verdict::Failed)]), commit, scenario, suite, engine);
    let earlier = Earlier { compared_with: "h".into(), runs: vec![("h/1/report.json".into(), before)], notes: vec![] };
    let s = since(&earlier, &now);
    assert_eq!(s.changed_inputs, changed);
    assert_eq!(s.new_failures.len(), 1, "the verdicts are compared all the same");
    if changed.contains(&"cordon") {
        assert!(
            s.notes.iter().any(|n| n == "cordon changed since the previous run (0.1.0 (commit a) → 0.1.0 (commit b)): a change of verdict may be the cordon's, not the platform's"),
            "{:?}",
            s.notes
        );
    }
}

#[test]
fn a_report_that_recorded_no_provenance_is_not_called_changed() {
    let before = run(1, &[("reach::a", Verdict::Passed)]);
    let now = with_provenance(run(2, &[("reach::a", Verdict::Passed)]), "b", "sha256:s", "sha256:u", "e");
    let earlier = Earlier { compared_with: "h".into(), runs: vec![("h/1/report.json".into(), before)], notes: vec![] };
    assert!(since(&earlier, &now).changed_inputs.is_empty());
}
