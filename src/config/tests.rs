//! Validation errors name file, line, column and key.

use std::path::PathBuf;

use rstest::rstest;

use super::{Scenario, Suite};
use crate::secret::Redactor;

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("alpha.token"), "alpha-secret-value-1\n").unwrap();
        std::fs::write(dir.path().join("beta.token"), "beta-secret-value-22\n").unwrap();
        Files { dir }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

const GOOD_SCENARIO: &str = r#"name: local
credentials:
  alpha-token: { file: alpha.token }
  beta-token: { file: beta.token }
providers:
  alpha:
    url: http://127.0.0.1:1/mcp
    credential: alpha-token
    allowed_consumers: [webui]
    tools:
      allowlist: [add, echo]
    read:
      tool: add
      arguments: { a: 2, b: 3 }
      expect: { json_subset: { result: 5 } }
  beta:
    url: http://127.0.0.1:2/sse
    transport: sse
    credential: beta-token
    tools:
      allowlist: [echo]
clients:
  webui:
    credentials: { alpha: alpha-token }
"#;

fn scenario_errors(text: &str) -> Vec<String> {
    let files = Files::new();
    let path = files.write("scenario.yaml", text);
    match Scenario::load(&path, &Redactor::new()) {
        Ok(_) => vec![],
        Err(e) => e.0.iter().map(|e| format!("{}:{}: {}: {}", e.line, e.column, e.key, e.message)).collect(),
    }
}

#[test]
fn good_scenario_loads_and_registers_secrets() {
    let files = Files::new();
    let path = files.write("scenario.yaml", GOOD_SCENARIO);
    let redactor = Redactor::new();
    let s = Scenario::load(&path, &redactor).unwrap();
    assert_eq!(s.providers.len(), 2);
    assert_eq!(s.secret("alpha-token").expose(), "alpha-secret-value-1");
    assert_eq!(redactor.redact("x alpha-secret-value-1"), "x «redacted:alpha-token»");
}

#[rstest]
#[case::unknown_key(
    "    credential: alpha-token\n",
    "    credential: alpha-token\n    colour: blue\n",
    "unknown field `colour`",
    "9:5: providers.alpha.colour: unknown field"
)]
#[case::dangling_consumer(
    "allowed_consumers: [webui]",
    "allowed_consumers: [webui, flowise]",
    "`flowise` is not a client",
    "9:"
)]
#[case::dangling_credential(
    "    credential: beta-token",
    "    credential: gamma-token",
    "providers.beta.credential: credential `gamma-token` is not defined",
    "19:17:"
)]
#[case::duplicate_id(
    "clients:\n",
    "  alpha:\n    url: http://127.0.0.1:3/mcp\n    credential: alpha-token\n    tools: { allowlist: [a] }\nclients:\n",
    "`alpha` is defined twice",
    ""
)]
#[case::read_not_allowed("      tool: add", "      tool: multiply", "providers.alpha.read.tool", "")]
#[case::bad_url("http://127.0.0.1:2/sse", "ftp://127.0.0.1:2/sse", "providers.beta.url", "")]
#[case::unreadable_credential("beta.token", "missing.token", "credentials.beta-token: cannot read credential file", "")]
fn scenario_errors_point_at_the_key(
    #[case] from: &str,
    #[case] to: &str,
    #[case] expected: &str,
    #[case] line_prefix: &str,
) {
    assert!(GOOD_SCENARIO.contains(from), "test setup: {from:?} not in the scenario");
    let errors = scenario_errors(&GOOD_SCENARIO.replacen(from, to, 1));
    let hit = errors.iter().find(|e| e.contains(expected));
    assert!(hit.is_some(), "no error containing {expected:?} in {errors:#?}");
    assert!(hit.unwrap().starts_with(line_prefix), "{hit:?} should start with {line_prefix:?}");
    assert!(!hit.unwrap().starts_with("0:0"), "{hit:?} has no location");
}

#[test]
fn short_credentials_are_rejected() {
    let files = Files::new();
    files.write("alpha.token", "abc");
    let path = files.write("scenario.yaml", GOOD_SCENARIO);
    let err = Scenario::load(&path, &Redactor::new()).unwrap_err();
    assert!(err.to_string().contains("credentials.alpha-token: the value from file `"), "{err}");
    assert!(err.to_string().contains("alpha.token` is shorter than 8 characters"), "{err}");
}

#[test]
fn unset_env_credential_names_the_variable() {
    let text = GOOD_SCENARIO.replace("{ file: alpha.token }", "{ env: CORDON_TEST_SURELY_UNSET_VAR }");
    let errors = scenario_errors(&text);
    assert!(
        errors.iter().any(|e| e.starts_with("3:") && e.contains("`CORDON_TEST_SURELY_UNSET_VAR` is not set")),
        "{errors:#?}"
    );
}

fn suite_errors(text: &str) -> String {
    let files = Files::new();
    let path = files.write("suite.yaml", text);
    Suite::load(&path).map(|_| String::new()).unwrap_or_else(|e| e.to_string())
}

#[test]
fn good_suite_loads() {
    let files = Files::new();
    let path = files.write("suite.yaml", "mode: host\nfamilies: [contract]\ntimeouts: { connect: 500ms, deadline: 5s }\nlimits: { max_response_bytes: 1MiB }\nknown_failures:\n  - { check: contract::a::read, reason: ticket 7 }\n");
    let suite = Suite::load(&path).unwrap();
    assert_eq!(suite.limits.connect_timeout.as_millis(), 500);
    assert_eq!(suite.limits.max_response_bytes, 1 << 20);
    assert_eq!(suite.known_failures[0].check, "contract::a::read");
}

#[rstest]
#[case("mode: host\nfamilies: [contract]\nconcurency: 3\n", "unknown field `concurency`")]
#[case("mode: host\nfamilies: [route]\n", "families[0]: family `route` cannot run in Host mode")]
#[case("mode: host\nfamilies: [contract]\ntimeouts: { read: 3 days }\n", "unknown duration unit")]
#[case(
    "mode: host\nfamilies: [contract]\nknown_failures:\n  - { check: x, reason: '' }\n",
    "known_failures[0].reason: a known failure needs a reason"
)]
#[case("mode: lan\nfamilies: [contract]\n", "lan")]
#[case(
    "mode: host\nfamilies: [contract]\ntimeouts: { connect: 0s }\n",
    "suite.yaml:3:22: timeouts.connect: must be longer than zero"
)]
fn suite_errors_point_at_the_key(#[case] text: &str, #[case] expected: &str) {
    let err = suite_errors(text);
    assert!(err.contains(expected), "{err}");
    assert!(err.contains("suite.yaml:"), "{err}");
}

#[test]
fn scratch_print() {
    for t in [
        "mode: host\nfamilies: [contract]\nconcurrency: \"4\"\n",
        "mode: host\nfamilies: [contract]\nlimits: { max_pages: \"3\" }\n",
        "mode: host\nfamilies: [contract]\nlimits: { max_pages: 0 }\n",
        "mode: host\nfamilies: [contract]\nlimits: { max_response_bytes: 0 }\n",
        "mode: host\nfamilies: [contract]\nlimits: { max_response_bytes: \"100\" }\n",
        "mode: host\nfamilies: [contract]\nlimits: { max_response_bytes: 99999999999999999999999 }\n",
        "mode: host\nfamilies: [contract]\ntimeouts: { connect: 99999999999999999999999s }\n",
        "mode: host\nfamilies: [contract]\ntimeouts: { connect: .nan }\n",
        "mode: host\nfamilies: [contract]\ntimeouts: { connect: -3s }\n",
        "mode: host\nfamilies: [contract]\ntimeouts: { connect: 3 }\n",
        "mode: host\nfamilies: [contract]\ntimeouts: { exchange: 0s }\n",
        "mode: host\nfamilies: [contract]\nconcurrency: 70000000000000000000000\n",
        "mode: host\nfamilies: [contract]\nconcurrency: yes\n",
        "mode: host\nfamilies: [contract]\nconcurrency:\n",
        "mode: host\nfamilies: contract\n",
        "mode: host\nfamilies: [contract]\noutputs: { junit: ../x.xml, json: junit.xml }\n",
        "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
        &format!("{}1{}", "[".repeat(100), "]".repeat(100)),
        &format!("mode: host\nfamilies: [contract]\nx:{}", "\n  - a".repeat(10)),
        "mode: host\nfamilies: [contract]\n---\nmode: host\n",
        "mode: host\nmode: host\nfamilies: [contract]\n",
    ] {
        println!("{}\n   => {}", t.lines().last().unwrap_or(""), suite_errors(t));
    }
    for (from, to) in [
        ("      allowlist: [echo]\n", "      allowlist: [echo]\n    disabled: \"yes\"\n"),
        ("      allowlist: [echo]\n", "      allowlist: [echo]\n    disabled: yes\n"),
        ("      allowlist: [echo]\n", "      allowlist: [echo]\n    app_ports: [80, \"81\", 0]\n"),
        ("      allowlist: [echo]\n", "      allowlist: [echo]\n    app_ports: [80, 70000]\n"),
        ("http://127.0.0.1:2/sse", "http://user:hunter2@127.0.0.1:2/sse"),
        ("http://127.0.0.1:2/sse", "http://user:hun ter2@127.0.0.1:2/sse"),
        ("http://127.0.0.1:2/sse", "file:///etc/passwd"),
    ] {
        println!("{to:?}\n   => {:?}", scenario_errors(&GOOD_SCENARIO.replacen(from, to, 1)));
    }
    let providers_at = GOOD_SCENARIO.find("providers:").unwrap();
    let clients_at = GOOD_SCENARIO.find("clients:").unwrap();
    let t = format!("{}providers: {{}}\n{}", &GOOD_SCENARIO[..providers_at], &GOOD_SCENARIO[clients_at..]);
    println!("empty => {:?}", scenario_errors(&t));
    let t = format!("{}providers:\n{}", &GOOD_SCENARIO[..providers_at], &GOOD_SCENARIO[clients_at..]);
    println!("null => {:?}", scenario_errors(&t));
}
