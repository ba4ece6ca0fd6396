//! The command line as a user meets it: `--version` names the commit, the shell
//! completions and the man pages under docs/man/ come from the same definitions as
//! `--help` (a man page that no longer matches them fails here; regenerate with
//! `CORDON_UPDATE_DOCS=1 cargo test --test cli`).

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cordon(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cordon")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let (code, stdout, _) = cordon(&["--version"]);
    assert_eq!(code, 0);
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(repo()).output();
    let expected = match head {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => "unknown".into(),
    };
    assert_eq!(stdout.trim(), format!("cordon {} (commit {expected})", env!("CARGO_PKG_VERSION")));
}

#[test]
fn completions_cover_every_subcommand_and_option() {
    for shell in ["bash", "zsh", "fish"] {
        let (code, script, stderr) = cordon(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {stderr}");
        for word in ["compose", "swarm", "explain", "--compare", "--results", "--flaky-window"] {
            assert!(script.contains(word.trim_start_matches('-')), "{shell}: no {word} in the script");
        }
    }
    let (code, _, stderr) = cordon(&["completions", "powershell"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn the_man_pages_match_the_command_line() {
    // The plain version: a page does not change with every commit.
    let cmd = cordon::cli::command().version(env!("CARGO_PKG_VERSION"));
    let fresh = tempfile::tempdir().unwrap();
    clap_mangen::generate_to(cmd, fresh.path()).unwrap();
    let docs = repo().join("docs/man");
    let names = |dir: &std::path::Path| -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        n.sort();
        n
    };
    if std::env::var_os("CORDON_UPDATE_DOCS").is_some() {
        let _ = std::fs::remove_dir_all(&docs);
        std::fs::create_dir_all(&docs).unwrap();
        for name in names(fresh.path()) {
            std::fs::copy(fresh.path().join(&name), docs.join(&name)).unwrap();
        }
    }
    let want = names(fresh.path());
    assert!(want.contains(&"cordon.1".to_string()) && want.contains(&"cordon-compose.1".to_string()), "{want:?}");
    assert!(!want.iter().any(|n| n.contains("agent")), "the hidden agent gets no page: {want:?}");
    assert_eq!(
        names(&docs),
        want,
        "docs/man/ is not what the command line generates: CORDON_UPDATE_DOCS=1 cargo test --test cli"
    );
    for name in want {
        let have = std::fs::read_to_string(docs.join(&name)).unwrap();
        let fresh = std::fs::read_to_string(fresh.path().join(&name)).unwrap();
        assert!(have == fresh, "docs/man/{name} is stale: CORDON_UPDATE_DOCS=1 cargo test --test cli");
    }
}

/// A scenario that loads (its credential in a file), for commands that stop before a probe.
fn loadable_scenario(dir: &std::path::Path) -> PathBuf {
    std::fs::write(dir.join("token"), "a-credential-value-long-enough\n").unwrap();
    let path = dir.join("scenario.yaml");
    std::fs::write(
        &path,
        "name: cli\ncredentials:\n  t: { file: token }\nproviders:\n  p:\n    url: http://p:8000/mcp\n    credential: t\n    tools: { allowlist: [echo] }\n",
    )
    .unwrap();
    path
}

#[test]
fn a_mistyped_compare_path_is_an_error_and_compare_init_takes_a_first_night() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = loadable_scenario(dir.path());
    let missing = dir.path().join("results/histroy");
    let (scenario, missing) = (scenario.to_str().unwrap(), missing.to_str().unwrap());
    let results = dir.path().join("out");
    let results = results.to_str().unwrap();
    let (code, _, stderr) = cordon(&["compose", "--scenario", scenario, "--results", results, "--compare", missing]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("--compare {missing}: no such file or directory (on the first night of a history that does not exist yet, use --compare-init {missing})")),
        "{stderr}"
    );
    // Past the comparison, the run stops at the next thing this scenario lacks.
    let (code, _, stderr) =
        cordon(&["compose", "--scenario", scenario, "--results", results, "--compare-init", missing]);
    assert_eq!(code, 2, "{stderr}");
    assert!(!stderr.contains("--compare") && stderr.contains("compose mode needs the compose project"), "{stderr}");
    let (code, _, stderr) =
        cordon(&["compose", "--scenario", scenario, "--compare", missing, "--compare-init", missing, "--list"]);
    assert_eq!(code, 2, "the two are one choice: {stderr}");
}

/// libtest habits: `--list` needs no credentials and stops quietly when its reader does;
/// several filters select their union; `--format json` lists JSON; flags that would do
/// nothing are refused with why; completions offer no hidden command; exit codes are in
/// the top-level help.
#[test]
fn libtest_habits_work_or_are_refused_with_why() {
    let scenario = repo().join("scenarios/reference.yaml");
    let scenario = scenario.to_str().unwrap();
    let list = |extra: &[&str]| {
        let mut args = vec!["compose", "--project", "p", "--scenario", scenario, "--list"];
        args.extend_from_slice(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(&args)
            .env_remove("GITEA_TOKEN")
            .env_remove("NATIVE_TOKEN")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, all, stderr) = list(&[]);
    assert_eq!(code, 0, "no credential is needed to list: {stderr}");
    assert!(all.lines().any(|l| l == "route::webui->gitea: test"), "{all}");
    let (_, union, _) = list(&["route::", "reach::"]);
    let names: Vec<&str> = union.lines().filter_map(|l| l.strip_suffix(": test")).collect();
    assert!(
        names.iter().any(|n| n.starts_with("route::")) && names.iter().any(|n| n.starts_with("reach::")),
        "{union}"
    );
    assert!(names.iter().all(|n| n.starts_with("route::") || n.starts_with("reach::")), "{union}");
    let (_, json, _) = list(&["--format", "json", "disabled::"]);
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["name"], "disabled::wiki");
    assert_eq!(first["family"], "disabled");

    // A reader that stops after one line: no panic, exit 0.
    let mut child = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["compose", "--project", "p", "--scenario", scenario, "--list"])
        .env_remove("GITEA_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));

    for flag in ["--nocapture", "--ignored", "--include-ignored", "--show-output", "--bench"] {
        let (code, _, stderr) = cordon(&["compose", "--project", "p", "--scenario", scenario, flag]);
        assert_eq!(code, 2, "{flag}: {stderr}");
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
    let (_, script, _) = cordon(&["completions", "bash"]);
    assert!(!script.contains("agent"), "the hidden agent command is offered");
    assert!(script.contains("compose"));
    let (_, help, _) = cordon(&["--help"]);
    assert!(help.contains("Exit codes: 0"), "{help}");
}

/// No silent default to the demo's scenario: without `--scenario` every mode that runs
/// checks stops with exit 2 and says how to get one.
#[test]
fn a_run_without_a_scenario_says_how_to_get_one() {
    for args in
        [&["compose", "--project", "p"][..], &["swarm", "--stack", "s"], &["run", "--suite", "suites/local.yaml"]]
    {
        let (code, stdout, stderr) = cordon(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains("--scenario FILE is required"), "{args:?}: {stderr}");
        assert!(stderr.contains("cordon import infinito") && stderr.contains("by hand"), "{args:?}: {stderr}");
    }
}

/// The README's scenario written by hand is one cordon reads: listed without its
/// credential in the environment, it plans checks for the one provider and client.
#[test]
fn the_readme_scenario_by_hand_loads_and_plans_checks() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let block =
        readme.split("```yaml\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a yaml block in the README");
    assert!(block.lines().count() <= 14, "a first scenario short enough to type: {block}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.yaml");
    std::fs::write(&path, block).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["compose", "--scenario", path.to_str().unwrap(), "--list"])
        .env_remove("WIKI_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for check in ["route::webui->wiki", "session::webui->wiki", "contract::wiki::tools"] {
        assert!(stdout.contains(check), "no {check}: {stdout}");
    }
}

/// `cordon init` refuses what it cannot do before it touches anything: a project and a
/// stack at once, a credential mapping that is not SERVICE=VAR, a draft over an existing
/// file; and with no engine to read, it ends as an infrastructure error that names it.
#[test]
fn init_refuses_bad_arguments_and_says_when_the_engine_is_unreachable() {
    let (code, _, stderr) = cordon(&["init"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--project"), "{stderr}");
    let (code, _, stderr) = cordon(&["init", "--project", "p", "--stack", "s"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = cordon(&["init", "--project", "p", "--credential", "GITEA_TOKEN"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--credential takes SERVICE=VAR"), "{stderr}");
    // A token pasted where the variable's name goes is refused without being shown.
    let (code, _, stderr) = cordon(&["init", "--project", "p", "--credential", "gitea=s3cr3t-t0ken.value"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--credential gitea=…: expected SERVICE=VAR with VAR the name"), "{stderr}");
    assert!(!stderr.contains("s3cr3t"), "{stderr}");
    let (code, _, stderr) = cordon(&["init", "--project", "p", "--path", "mcp"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--path mcp: expected an absolute URL path"), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("scenario.yaml");
    std::fs::write(&existing, "keep me").unwrap();
    let (code, _, stderr) = cordon(&["init", "--project", "p", "--out", existing.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("exists; cordon init writes a new file only"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me");
    let socket = dir.path().join("no-engine.sock");
    let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["init", "--project", "p"])
        .env("DOCKER_HOST", format!("unix://{}", socket.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains(&socket.display().to_string()), "the error names the engine it tried: {stderr}");
    assert!(out.stdout.is_empty(), "nothing is drafted: {}", String::from_utf8_lossy(&out.stdout));
}
