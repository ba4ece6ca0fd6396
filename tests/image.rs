//! cordon from its own image (docker/build-cordon-image.sh), run with the README's run
//! line: the compose suite against the reference stack gives the same verdicts as the
//! host binary, and each privilege the line gives is needed (without it, exit 3 for the
//! reason the README states).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::shell::{command_at, words};
use support::stack::{Stack, fixture_image, repo, verdicts};

/// `cordon:<tag of FIXTURE_TAG>`: checkouts building side by side keep their own image.
fn image() -> String {
    let fixture = fixture_image();
    format!("cordon:{}", fixture.rsplit_once(':').map_or("dev", |(_, tag)| tag))
}

fn build_image() {
    let out = Command::new("bash")
        .arg(repo().join("docker/build-cordon-image.sh"))
        .env("CORDON_TAG", image())
        // The carriers' build (tests/support/swarm.rs), shared: one static build per run.
        .env("CORDON_STATIC_PROFILE", "dev")
        .output()
        .expect("bash");
    assert!(out.status.success(), "docker/build-cordon-image.sh failed:\n{}", String::from_utf8_lossy(&out.stderr));
    // The digest to pin by is printed, and the image carries its provenance.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let id = inspect("{{.Id}}");
    assert!(stdout.starts_with(&format!("{} {id}\n", image())), "{stdout}");
    assert!(id.starts_with("sha256:") && id.len() == 71, "{id}");
    let label = |name: &str| inspect(&format!("{{{{index .Config.Labels \"org.opencontainers.image.{name}\"}}}}"));
    assert_eq!(label("version"), env!("CARGO_PKG_VERSION"));
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(repo()).output().unwrap();
    if head.status.success() {
        assert_eq!(label("revision"), String::from_utf8_lossy(&head.stdout).trim());
    }
    assert!(label("created").ends_with('Z') && !label("source").is_empty());
}

fn inspect(format: &str) -> String {
    let out = Command::new("docker").args(["image", "inspect", "-f", format, &image()]).output().expect("docker");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The docker options of the README's run line, but for the credentials (passed here by
/// the stack's names) and the working directory's mount (the checkout, read-only here,
/// with the reports in a directory of their own).
fn readme_options() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let line = command_at(&readme, "docker run --rm --pid host").expect("the README's run line");
    let vars = BTreeMap::from([("PWD".to_string(), "$PWD".to_string())]);
    let argv = words(&line, &vars).unwrap();
    let image = argv.iter().position(|w| w == "cordon:dev").expect("the README's image");
    let mut options = Vec::new();
    let mut it = argv[2..image].iter();
    while let Some(o) = it.next() {
        match o.as_str() {
            "-e" => {
                it.next();
            }
            "-v" => {
                let v = it.next().unwrap();
                if v != "$PWD:/work" {
                    options.extend(["-v".to_string(), v.clone()]);
                }
            }
            _ => options.push(o.clone()),
        }
    }
    options
}

struct Run {
    code: i32,
    stderr: String,
    report: Value,
}

/// Runs the image with `options`, the stack's credentials by name, the checkout at /work
/// and `out` at /out; `cordon compose` against the stack, reports to /out.
fn run_image(stack: &Stack, options: &[String], out: &Path) -> Run {
    let mut cmd = Command::new("docker");
    cmd.arg("run").args(options);
    cmd.arg("-v").arg(format!("{}:/work:ro", repo().display()));
    cmd.arg("-v").arg(format!("{}:/out", out.display()));
    // Every variable the scenario reads: the credentials, and the pin of the adapter image.
    for (var, _) in stack.env.iter().filter(|(k, _)| k.ends_with("_TOKEN") || k == "CORDON_FIXTURE_DIGEST") {
        cmd.args(["-e", var]);
    }
    cmd.envs(stack.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    cmd.args([image().as_str(), "compose", "--project", &stack.project, "--scenario", "scenarios/reference.yaml"]);
    cmd.args(["--results", "/out"]);
    let output = cmd.output().expect("docker");
    let report = std::fs::read_to_string(out.join("report.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    Run {
        code: output.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        report,
    }
}

/// `options` without `flag` (and its value, when it takes one).
fn without(options: &[String], flag: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < options.len() {
        if options[i..].len() >= flag.len() && options[i..i + flag.len()].iter().zip(flag).all(|(a, b)| a == b) {
            i += flag.len();
        } else {
            out.push(options[i].clone());
            i += 1;
        }
    }
    assert_eq!(out.len() + flag.len(), options.len(), "{flag:?} is not in the README's run line");
    out
}

#[test]
fn the_image_gives_the_host_binarys_verdicts_and_needs_each_privilege() {
    build_image();
    let stack = Stack::up("image", "10.150", None);
    let host = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, report) = stack.cordon(&repo().join("scenarios/reference.yaml"), host.path(), &[]);
    let on_host: Vec<(String, String)> = verdicts(&report).into_iter().map(|(n, v, _)| (n, v)).collect();
    assert!(code == 0 && !on_host.is_empty(), "the host binary: exit {code}\n{stdout}\n{stderr}");

    let options = readme_options();
    let out = tempfile::tempdir().unwrap();
    let run = run_image(&stack, &options, out.path());
    let mut from_image: Vec<(String, String)> = verdicts(&run.report).into_iter().map(|(n, v, _)| (n, v)).collect();
    let mut sorted_host = on_host.clone();
    sorted_host.sort();
    from_image.sort();
    assert_eq!(run.code, 0, "from the image: {}", run.stderr);
    assert_eq!(from_image, sorted_host, "the image's verdicts differ from the host binary's");
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for (var, value) in stack.env.iter().filter(|(k, _)| k.ends_with("_TOKEN")) {
            assert!(!text.contains(value.as_str()), "a report written from the image holds {var}");
        }
    }

    // Each privilege of the run line, taken away: exit 3, for the README's reason.
    let cases: [(&[&str], &str); 4] = [
        (&["--pid", "host"], "no process"),
        (&["--cap-add", "SYS_ADMIN"], "setns: EPERM"),
        (&["--cap-add", "SYS_PTRACE"], "Permission denied"),
        (&["-v", "/var/run/docker.sock:/var/run/docker.sock"], "docker.sock"),
    ];
    for (flag, reason) in cases {
        let out = tempfile::tempdir().unwrap();
        let run = run_image(&stack, &without(&options, flag), out.path());
        eprintln!(
            "observed without {}: exit {}: {}",
            flag.join(" "),
            run.code,
            run.stderr.lines().find(|l| l.starts_with("error")).unwrap_or("")
        );
        assert_eq!(run.code, 3, "without {flag:?}: {}", run.stderr);
        assert!(run.stderr.contains(reason), "without {flag:?}, expected {reason:?}:\n{}", run.stderr);
    }
}
