//! What cordon writes: no secret anywhere, reports in every format, libtest-style
//! filtering and listing, and usage errors with exit code 2.

mod support;

use support::harness::{ADD_READ, Fixture, HOST_SUITE, ProviderYaml};
use support::peers::{Peer, Sdk};
use support::stack::random_token;

fn all_files(dir: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.display().to_string(), String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()))
        .collect()
}

#[test]
fn no_secret_value_appears_in_anything_written() {
    let tokens: Vec<String> = (0..4).map(|_| random_token()).collect();
    // Failing peers put bearers into error paths: accepted foreign bearers, redirects, HTML.
    let peers = [
        Peer::start(Sdk::V1, "stateful-sse", &tokens[0], None),
        Peer::start(Sdk::V1, "any-bearer", &tokens[1], None),
        Peer::start(Sdk::V1, "foreign-bearer", &tokens[2], Some(&tokens[0])),
        Peer::start(Sdk::V1, "redirect-login", &tokens[3], None),
    ];
    let fixture = Fixture::new();
    let ids = ["alpha", "beta", "gamma", "delta"];
    let named: Vec<(&str, &str)> = ids.iter().zip(&tokens).map(|(i, t)| (*i, t.as_str())).collect();
    let providers: Vec<ProviderYaml> = ids
        .iter()
        .zip(&peers)
        .map(|(id, p)| ProviderYaml {
            id,
            url: &p.url,
            sse: false,
            credential: id,
            allowlist: &["add", "echo"],
            extra: ADD_READ,
        })
        .collect();
    fixture.scenario(&named, &providers);
    let run = fixture.run(HOST_SUITE, &[]);
    assert_eq!(run.code, 1, "the failing peers must fail the run:\n{}", run.stdout);
    run.expect("contract::gamma::foreign_bearer", "failed", "another provider's valid bearer (");
    assert!(
        run.check("contract::gamma::foreign_bearer")
            .2
            .contains("another provider's valid bearer (alpha, of provider alpha)")
    );

    let mut outputs = all_files(&run.results_dir);
    assert_eq!(
        outputs.len(),
        4,
        "junit, json, markdown and html: {:?}",
        outputs.iter().map(|o| &o.0).collect::<Vec<_>>()
    );
    outputs.push(("stdout".into(), run.stdout.clone()));
    outputs.push(("stderr".into(), run.stderr.clone()));
    for (name, text) in &outputs {
        for token in &tokens {
            assert!(!text.contains(token.as_str()), "{name} contains a secret value");
        }
    }
}

#[test]
fn a_run_where_nothing_is_echoed_has_no_redaction_marker() {
    let (_peer, fixture) = solo("stateless");
    let run = fixture.run(HOST_SUITE, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let mut outputs = all_files(&run.results_dir);
    outputs.push(("stdout".into(), run.stdout.clone()));
    outputs.push(("stderr".into(), run.stderr.clone()));
    for (name, text) in &outputs {
        assert!(!text.contains("«redacted"), "{name} masks what is no secret:\n{text}");
    }
}

#[test]
fn the_console_prints_the_run_duration() {
    let (_peer, fixture) = solo("stateless");
    let run = fixture.run(HOST_SUITE, &[]);
    let seconds = |line: &str| -> f64 {
        line.rsplit(" in ").next().unwrap().trim_end_matches('s').parse().unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let libtest = run.stdout.lines().find(|l| l.starts_with("test result: ")).expect("a libtest summary");
    let ours = run.stdout.lines().find(|l| l.starts_with("cordon: ")).expect("cordon's summary");
    let json = run.report["report"]["duration"].as_f64().unwrap();
    assert!(json > 0.0, "{json}");
    assert!((seconds(libtest) - json).abs() < 0.01, "{libtest} vs report.json {json}");
    assert!((seconds(ours) - json).abs() < 0.06, "{ours} vs report.json {json}");
}

/// One provider `solo` served by a peer of `kind`, in a fresh fixture directory.
fn solo(kind: &str) -> (Peer, Fixture) {
    let token = random_token();
    let peer = Peer::start(Sdk::V1, kind, &token, None);
    let fixture = Fixture::new();
    let provider = ProviderYaml {
        id: "solo",
        url: &peer.url,
        sse: false,
        credential: "solo",
        allowlist: &["add", "echo"],
        extra: ADD_READ,
    };
    fixture.scenario(&[("solo", &token)], &[provider]);
    (peer, fixture)
}

#[test]
fn reports_carry_every_check_with_its_verdict_class() {
    let (_peer, fixture) = solo("read-error");
    let run = fixture.run(HOST_SUITE, &[]);
    assert_eq!(run.code, 1);
    let junit = std::fs::read_to_string(run.results_dir.join("junit.xml")).unwrap();
    // The five aspects of the handshake and the three behind it (call_allowlist,
    // arguments, limits: skipped here, each for the scenario key it lacks).
    assert_eq!(junit.matches("<testcase ").count(), 8, "{junit}");
    assert!(junit.contains(r#"name="contract::solo::read""#) && junit.contains("returned isError: true"), "{junit}");
    assert!(junit.contains(r#"type="skipped""#), "foreign_bearer has no other provider: {junit}");
    let markdown = std::fs::read_to_string(run.results_dir.join("summary.md")).unwrap();
    assert!(markdown.contains("| `contract::solo::read` | ❌ failed |"), "{markdown}");
    run.expect("contract::solo::foreign_bearer", "skipped", "no other provider");
    assert_eq!(run.report["exit_code"], 1);
    assert!(run.stdout.contains("test [skipped] contract::solo::foreign_bearer ... ignored"), "{}", run.stdout);
}

#[test]
fn list_filter_exact_and_skip_behave_like_libtest() {
    let (_peer, fixture) = solo("stateless");

    let run = fixture.run(HOST_SUITE, &["--list"]);
    assert_eq!(run.code, 0);
    for aspect in ["tools", "read", "anonymous", "wrong_bearer", "foreign_bearer"] {
        assert!(run.stdout.contains(&format!("contract::solo::{aspect}: test")), "{}", run.stdout);
    }

    let run = fixture.run(HOST_SUITE, &["bearer", "--skip", "foreign"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let names: Vec<String> = run.verdicts().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["contract::solo::wrong_bearer"]);
    assert_eq!(run.report["report"]["filtered_out"], 7);

    let run = fixture.run(HOST_SUITE, &["contract::sol0"]);
    assert_eq!(run.code, 2, "a filter that matches nothing must not pass green: {}", run.stderr);
    assert!(run.stderr.contains("no check matches the filter"), "{}", run.stderr);

    let run = fixture.run(HOST_SUITE, &["--exact", "contract::solo::tools"]);
    let names: Vec<String> = run.verdicts().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["contract::solo::tools"]);
}

#[test]
fn invalid_files_exit_2_naming_file_line_column_and_key() {
    let fixture = Fixture::new();
    fixture.write("scenario.yaml", "name: x\ncredentials:\n  a: { env: CORDON_SURELY_UNSET_1 }\nproviders:\n  p:\n    url: http://127.0.0.1:9/mcp\n    credential: b\n    tools: { allowlist: [t] }\n");
    let run = fixture.run(HOST_SUITE, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("scenario.yaml:7:17: providers.p.credential: credential `b` is not defined"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("scenario.yaml:3:6: credentials.a: environment variable `CORDON_SURELY_UNSET_1` is not set"),
        "{}",
        run.stderr
    );

    let token = random_token();
    fixture.scenario(
        &[("solo", &token)],
        &[ProviderYaml {
            id: "solo",
            url: "http://127.0.0.1:9/mcp",
            sse: false,
            credential: "solo",
            allowlist: &["add"],
            extra: "",
        }],
    );
    let suite = format!(
        "{HOST_SUITE}known_failures:\n  - {{ check: contract::nobody::tools, finding: {{ kind: tools_mismatch }}, reason: typo }}\n"
    );
    let run = fixture.run(&suite, &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "suite.yaml:6:5: known_failures[0].check: known failure `contract::nobody::tools` names no check"
        ),
        "{}",
        run.stderr
    );

    let (code, _, stderr) = fixture.cordon(&["run", "--scenario", "scenario.yaml"]);
    assert_eq!(code, 2, "{stderr}");
}

/// In GitHub Actions the Markdown summary lands on the job page: appended to the file
/// `GITHUB_STEP_SUMMARY` names, after what earlier steps wrote; a variable naming a file
/// that is not there (a container without the mount) is an error that says how to fix it.
#[test]
fn the_summary_is_appended_to_the_github_job_summary() {
    let fixture = Fixture::new();
    let provider = ProviderYaml {
        id: "gone",
        url: "http://127.0.0.1:9/mcp",
        sse: false,
        credential: "gone",
        allowlist: &["add"],
        extra: "",
    };
    fixture.scenario(&[("gone", &random_token())], &[provider]);
    let suite = fixture.write("suite.yaml", HOST_SUITE);
    let summary = fixture.write("step_summary", "earlier step\n");
    let run = |target: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["run", "--suite", suite.to_str().unwrap(), "--scenario", "scenario.yaml", "--results", "results"])
            .current_dir(fixture.dir.path())
            .env("GITHUB_STEP_SUMMARY", target)
            .output()
            .unwrap()
    };
    let out = run(&summary);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "nothing answers on port 9: {stdout}");
    let page = std::fs::read_to_string(&summary).unwrap();
    let written = std::fs::read_to_string(fixture.path("results/summary.md")).unwrap();
    assert_eq!(page, format!("earlier step\n\n{written}"));
    assert!(stdout.contains(&format!("appended the summary to {}", summary.display())), "{stdout}");

    let out = run(&fixture.path("not/mounted"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("GITHUB_STEP_SUMMARY=") && stderr.contains("mount that file"), "{stderr}");
}
