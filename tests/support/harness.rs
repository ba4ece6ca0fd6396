//! Runs the cordon binary against scenario and suite files written to a temp directory,
//! and reads back what it wrote.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

pub struct Fixture {
    pub dir: tempfile::TempDir,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub report: Value,
    pub results_dir: PathBuf,
}

/// A provider entry of a scenario file.
pub struct ProviderYaml<'a> {
    pub id: &'a str,
    pub url: &'a str,
    pub sse: bool,
    pub credential: &'a str,
    pub allowlist: &'a [&'a str],
    pub extra: &'a str,
}

impl ProviderYaml<'_> {
    pub fn render(&self) -> String {
        let transport = if self.sse { "sse" } else { "streamable_http" };
        format!(
            "  {id}:\n    url: {url}\n    transport: {transport}\n    credential: {cred}\n    tools:\n      allowlist: [{tools}]\n{extra}",
            id = self.id,
            url = self.url,
            cred = self.credential,
            tools = self.allowlist.join(", "),
            extra = self.extra,
        )
    }
}

/// The read every well-behaved peer answers: add(2, 3) = 5.
pub const ADD_READ: &str =
    "    read:\n      tool: add\n      arguments: { a: 2, b: 3 }\n      expect: { json_subset: { result: 5 } }\n";

pub const HOST_SUITE: &str = "mode: host\nfamilies: [contract]\ntimeouts: { connect: 2s, read: 5s, deadline: 0s, sse_max_duration: 5s }\nlimits: { max_response_bytes: 1MiB }\n";

impl Fixture {
    pub fn new() -> Self {
        Fixture { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write fixture file");
        path
    }

    /// A scenario whose credentials are files in the fixture directory.
    pub fn scenario(&self, tokens: &[(&str, &str)], providers: &[ProviderYaml]) -> PathBuf {
        let mut text = String::from("name: test\ncredentials:\n");
        for (name, value) in tokens {
            self.write(&format!("{name}.token"), value);
            text.push_str(&format!("  {name}: {{ file: {name}.token }}\n"));
        }
        text.push_str("providers:\n");
        for p in providers {
            text.push_str(&p.render());
        }
        self.write("scenario.yaml", &text)
    }

    pub fn cordon(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run cordon");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub fn run(&self, suite: &str, extra: &[&str]) -> Run {
        let suite_path = self.write("suite.yaml", suite);
        let results_dir = self.path("results");
        let mut args = vec![
            "run",
            "--suite",
            suite_path.to_str().unwrap(),
            "--scenario",
            "scenario.yaml",
            "--results",
            results_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = self.cordon(&args);
        let report = std::fs::read_to_string(results_dir.join("report.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        Run { code, stdout, stderr, report, results_dir }
    }
}

impl Run {
    /// (verdict, reason, evidence joined) of one check; panics with the whole output if absent.
    pub fn check(&self, name: &str) -> (String, String, String) {
        let results = self.report["report"]["results"].as_array().cloned().unwrap_or_default();
        let r = results.iter().find(|r| r["name"] == name).unwrap_or_else(|| {
            panic!("no check {name} in the report\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
        });
        let evidence = r["evidence"]
            .as_array()
            .map(|a| a.iter().filter_map(|l| l.as_str()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        (r["verdict"].as_str().unwrap_or("").to_string(), r["reason"].as_str().unwrap_or("").to_string(), evidence)
    }

    pub fn expect(&self, name: &str, verdict: &str, reason_contains: &str) {
        let (v, reason, evidence) = self.check(name);
        assert_eq!(v, verdict, "{name}: reason: {reason}\nevidence:\n{evidence}\nstderr:\n{}", self.stderr);
        assert!(
            reason.contains(reason_contains),
            "{name}: reason {reason:?} lacks {reason_contains:?}\nevidence:\n{evidence}"
        );
    }

    pub fn verdicts(&self) -> Vec<(String, String)> {
        self.report["report"]["results"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|r| (r["name"].as_str().unwrap_or("").to_string(), r["verdict"].as_str().unwrap_or("").to_string()))
            .collect()
    }

    /// Every check passed, but those whose name ends with one of `skips`' suffixes, which
    /// must be skipped for a reason holding its fragment (a key the scenario lacks).
    pub fn assert_passed_or_skipped(&self, skips: &[(&str, &str)]) {
        let results = self.report["report"]["results"].as_array().cloned().unwrap_or_default();
        let bad: Vec<String> = results
            .iter()
            .filter_map(|r| {
                let (name, verdict) = (r["name"].as_str().unwrap_or(""), r["verdict"].as_str().unwrap_or(""));
                let reason = r["reason"].as_str().unwrap_or("");
                let skip = skips.iter().find(|(suffix, _)| name.ends_with(suffix));
                let fine = match skip {
                    Some((_, why)) => verdict == "skipped" && reason.contains(why),
                    None => verdict == "passed",
                };
                (!fine).then(|| format!("{name}: {verdict}: {reason}"))
            })
            .collect();
        assert!(
            bad.is_empty() && self.code == 0,
            "exit {}; not as expected: {bad:#?}\nstdout:\n{}\nstderr:\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
    }

    pub fn assert_all_passed(&self) {
        let bad: Vec<_> = self.verdicts().into_iter().filter(|(_, v)| v != "passed").collect();
        assert!(
            bad.is_empty() && self.code == 0,
            "exit {}; not passed: {bad:?}\nstdout:\n{}\nstderr:\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
    }
}
