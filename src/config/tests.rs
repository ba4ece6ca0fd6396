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
    // Reports name the scenario by the hash of the text read, so an edit shows night over night.
    assert_eq!(s.sha256, crate::text::sha256_of(GOOD_SCENARIO.as_bytes()));
    assert!(s.sha256.starts_with("sha256:") && s.sha256.len() == 7 + 64);
    let built_in = Suite::load_or_built_in(std::path::Path::new("suites/swarm.yaml")).unwrap();
    assert_eq!(built_in.sha256, crate::text::sha256_of(super::suite::BUILT_IN[1].1.as_bytes()));
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
    let path = files.write("suite.yaml", "mode: host\nfamilies: [contract]\ntimeouts: { connect: 500ms, deadline: 5s }\nlimits: { max_response_bytes: 1MiB }\nknown_failures:\n  - { check: contract::a::read, finding: { kind: read_failed }, reason: ticket 7 }\n");
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
#[case(
    "mode: host\nfamilies: [contract]\nknown_failures:\n  - { check: x, reason: 'bug 7' }\n",
    "suite.yaml:4:5: known_failures[0].finding: a known failure accepts one finding of `x`, not the whole check: add `finding: { kind: <kind> }`"
)]
#[case(
    "mode: host\nfamilies: [contract]\nknown_failures:\n  - { check: x, finding: { kind: broken }, reason: 'bug 7' }\n",
    "known_failures[0].finding: `broken` is not a finding kind"
)]
#[case(
    "mode: host\nfamilies: [contract]\nknown_failures:\n  - { check: x, finding: { kind: hardening, facts: { rule: root } }, reason: a }\n  - { check: x, finding: { kind: hardening, facts: { rule: root } }, reason: b }\n",
    "known_failures[1].check: `x` with finding hardening rule=\"root\" is listed twice"
)]
#[case(
    "mode: host\nfamilies: [contract]\nknown_failures:\n  - { check: '*::*::read', finding: { kind: read_failed }, reason: a }\n",
    "suite.yaml:4:5: known_failures[0].check: the pattern `*::*::read` must start with a family written out"
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

#[rstest]
#[case::quoted_number(
    "concurrency: \"4\"\n",
    "3:14: concurrency: expected a whole number from 1 to 4096, got the text `4`: write the number without quotes"
)]
#[case::quoted_pages(
    "limits: { max_pages: \"3\" }\n",
    "3:22: limits.max_pages: expected a whole number from 1 to 10000, got the text `3`"
)]
#[case::zero_pages("limits: { max_pages: 0 }\n", "limits.max_pages: expected a whole number from 1 to 10000, got 0")]
#[case::zero_tools("limits: { max_tools: 0 }\n", "limits.max_tools: expected a whole number from 1 to 1000000, got 0")]
#[case::zero_bytes(
    "limits: { max_response_bytes: 0 }\n",
    "3:31: limits.max_response_bytes: must be from 1 byte to 256MiB, got 0"
)]
#[case::quoted_bytes(
    "limits: { max_response_bytes: \"100\" }\n",
    "limits.max_response_bytes: expected a size, got the text `100`"
)]
#[case::huge_bytes(
    "limits: { max_response_bytes: 99999999999999999999999 }\n",
    "limits.max_response_bytes: the size is too large"
)]
#[case::huge_duration(
    "timeouts: { connect: 99999999999999999999999s }\n",
    "3:22: timeouts.connect: `99999999999999999999999s` is longer than the limit of 24h"
)]
#[case::nan_duration("timeouts: { read: .nan }\n", "timeouts.read: `.nan` is not a duration")]
#[case::negative_duration("timeouts: { deadline: -3s }\n", "timeouts.deadline: `-3s` is not a duration")]
#[case::bare_number("timeouts: { connect: 3 }\n", "timeouts.connect: `3` has no unit")]
#[case::zero_exchange("timeouts: { exchange: 0s }\n", "3:23: timeouts.exchange: must be longer than zero")]
#[case::yaml11_boolean("concurrency: yes\n", "concurrency: expected a whole number from 1 to 4096, got `yes`")]
#[case::scalar_for_list("families: contract\n", "families: expected a list")]
#[case::output_escapes("outputs: { junit: ../x.xml }\n", "3:19: outputs.junit: `../x.xml` leaves the output directory")]
#[case::output_absolute("outputs: { json: /tmp/r.json }\n", "outputs.json: `/tmp/r.json` is an absolute path")]
#[case::outputs_collide("outputs: { json: junit.xml }\n", "outputs.json: `junit.xml` is also where outputs.junit goes")]
#[case::two_documents("---\nmode: host\n", "the file exceeds a parser limit: it holds 2 YAML documents")]
fn suite_values_are_strict(#[case] tail: &str, #[case] expected: &str) {
    let text = if tail.starts_with("families") {
        format!("mode: host\n{tail}")
    } else {
        format!("mode: host\nfamilies: [contract]\n{tail}")
    };
    let err = suite_errors(&text);
    assert!(err.contains(expected), "{err}");
}

#[rstest]
#[case::quoted_flag(
    "    disabled: \"yes\"\n",
    "22:15: providers.beta.disabled: expected a boolean, got the text `yes`"
)]
#[case::yaml11_flag("    disabled: on\n", "providers.beta.disabled: expected a boolean, got the text `on`")]
#[case::quoted_port(
    "    app_ports: [80, \"81\"]\n",
    "22:21: providers.beta.app_ports[1]: expected a whole number from 1 to 65535, got the text `81`"
)]
#[case::port_range(
    "    app_ports: [80, 70000]\n",
    "providers.beta.app_ports[1]: expected a whole number from 1 to 65535, got 70000"
)]
#[case::port_zero(
    "    app_ports: [0]\n",
    "providers.beta.app_ports[0]: expected a whole number from 1 to 65535, got 0"
)]
#[case::quoted_mutating_flag(
    "      mutating_enabled: \"true\"\n",
    "providers.beta.tools.mutating_enabled: expected a boolean, got the text `true`"
)]
fn scenario_values_are_strict(#[case] extra: &str, #[case] expected: &str) {
    let text = GOOD_SCENARIO.replacen("      allowlist: [echo]\n", &format!("      allowlist: [echo]\n{extra}"), 1);
    let errors = scenario_errors(&text);
    assert!(errors.iter().any(|e| e.contains(expected)), "{errors:#?}");
}

#[test]
fn urls_carry_no_credentials_and_errors_never_echo_them() {
    for url in ["http://user:hunter2@127.0.0.1:2/sse", "http://user:hun ter2@127.0.0.1:2/sse", "https://:hunter2@h/"] {
        let errors = scenario_errors(&GOOD_SCENARIO.replacen("http://127.0.0.1:2/sse", url, 1));
        let hit = errors.iter().find(|e| e.contains("providers.beta.url")).expect("an error on the url");
        assert!(hit.contains("carries a user name or password") || hit.contains("is not a URL"), "{hit}");
        assert!(!hit.contains("hunter2") && !hit.contains("hun ter2"), "{hit}");
    }
}

#[test]
fn an_empty_provider_list_says_so() {
    let providers_at = GOOD_SCENARIO.find("providers:").unwrap();
    let clients_at = GOOD_SCENARIO.find("clients:").unwrap();
    for list in ["providers: {}\n", "providers:\n"] {
        let text = format!("{}{list}{}", &GOOD_SCENARIO[..providers_at], &GOOD_SCENARIO[clients_at..]);
        let errors = scenario_errors(&text);
        assert!(errors.iter().any(|e| e.contains("providers: no provider is listed")), "{errors:#?}");
    }
}

#[test]
fn credential_values_must_fit_a_header_and_are_never_echoed() {
    let files = Files::new();
    files.write("alpha.token", "first-line-secret\nsecond-line\n");
    let path = files.write("scenario.yaml", GOOD_SCENARIO);
    let err = Scenario::load(&path, &Redactor::new()).unwrap_err().to_string();
    assert!(err.contains("3:16: credentials.alpha-token: the value from file `"), "{err}");
    assert!(err.contains("holds a line break at character 18"), "{err}");
    assert!(!err.contains("first-line-secret") && !err.contains("second-line"), "{err}");
}

#[test]
fn built_in_suites_parse() {
    for (name, text) in super::suite::BUILT_IN {
        Suite::from_text(std::path::Path::new(name), text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Which one is read (built in, or a file at that path) is replayed against the binary
    // in tests/bad-inputs/, where the working directory is the test's own.
}

/// GOOD_SCENARIO's beta behind a sidecar with `tail` under `sidecar:`.
fn with_sidecar(tail: &str) -> String {
    GOOD_SCENARIO.replacen(
        "      allowlist: [echo]\n",
        &format!("      allowlist: [echo]\n    sidecar:\n      networks: [net-beta]\n{tail}"),
        1,
    )
}

#[test]
fn a_sidecar_pins_its_image_by_digest() {
    let files = Files::new();
    let digest = format!("sha256:{}", "ab12".repeat(16));
    let text = with_sidecar(&format!("      image: adapter:1.2\n      digest: {digest}\n"));
    let s = Scenario::load(&files.write("scenario.yaml", &text), &Redactor::new()).unwrap();
    let pin = s.provider("beta").unwrap().sidecar_image.clone().unwrap();
    assert_eq!((pin.shown(), pin.image.as_deref(), pin.source.as_str()), (digest, Some("adapter:1.2"), "the scenario"));
    let bare = with_sidecar("");
    let s = Scenario::load(&files.write("bare.yaml", &bare), &Redactor::new()).unwrap();
    assert_eq!(s.provider("beta").unwrap().sidecar_image, None, "no digest, no image check");
}

#[rstest]
#[case::image_without_digest(
    "      image: adapter:1.2\n",
    "providers.beta.sidecar.digest: image `adapter:1.2` is named without a digest"
)]
#[case::a_tag_is_no_digest("      digest: latest\n", "providers.beta.sidecar.digest: `latest` is not a digest")]
#[case::placeholder(
    "      digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\n",
    "a placeholder digest (all zeros)"
)]
#[case::unset_variable(
    "      digest: { env: CORDON_TEST_DIGEST_NEVER_SET }\n",
    "environment variable `CORDON_TEST_DIGEST_NEVER_SET` is not set"
)]
#[case::unknown_reference(
    "      digest: { file: pin.txt }\n",
    "providers.beta.sidecar.digest: expected a digest (`sha256:` and hex digits) or `{ env: VAR }`, got a mapping of `file`"
)]
fn a_sidecar_pin_that_pins_nothing_is_refused(#[case] tail: &str, #[case] expected: &str) {
    let errors = scenario_errors(&with_sidecar(tail));
    assert!(errors.iter().any(|e| e.contains(expected)), "{errors:#?}");
}
