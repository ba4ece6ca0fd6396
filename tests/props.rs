//! Property tests over what cordon reads from files: the scenario and suite loaders and
//! the resolv.conf parser take any text without panicking, and every loader error points
//! into the file and holds no raw control character.

use std::path::Path;

use cordon::config::{Scenario, Suite};
use cordon::dns::ResolvConf;
use cordon::secret::Redactor;
use proptest::prelude::*;

/// YAML-ish text: the scenario's and suite's own keys, YAML punctuation, indentation,
/// anchors and aliases, quoted and plain scalars, numbers and control characters.
fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        prop_oneof![
            Just("name"),
            Just("providers"),
            Just("clients"),
            Just("credentials"),
            Just("url"),
            Just("credential"),
            Just("tools"),
            Just("allowlist"),
            Just("disabled"),
            Just("app_ports"),
            Just("read"),
            Just("arguments"),
            Just("expect"),
            Just("env"),
            Just("file"),
            Just("mode"),
            Just("families"),
            Just("timeouts"),
            Just("limits"),
            Just("connect"),
            Just("max_pages"),
            Just("concurrency"),
            Just("outputs"),
            Just("junit"),
            Just("known_failures"),
        ]
        .prop_map(str::to_string),
        prop_oneof![
            Just(": "),
            Just(":"),
            Just("\n"),
            Just("\n  "),
            Just("\n    "),
            Just("- "),
            Just("["),
            Just("]"),
            Just("{"),
            Just("}"),
            Just(", "),
            Just("&a "),
            Just("*a"),
            Just("!!str "),
            Just("? "),
            Just("# c"),
            Just("\""),
            Just("'"),
            Just("|\n  "),
            Just(">-\n  "),
            Just("---\n"),
            Just("<<: "),
            Just("\t"),
            Just("\u{1b}"),
            Just("\u{0}"),
            Just("\u{202e}"),
            Just("\\"),
        ]
        .prop_map(str::to_string),
        prop_oneof![
            Just("host"),
            Just("compose"),
            Just("contract"),
            Just("true"),
            Just("yes"),
            Just("\"4\""),
            Just("0"),
            Just("-1"),
            Just("1.5"),
            Just(".nan"),
            Just("99999999999999999999999s"),
            Just("3s"),
            Just("4MiB"),
            Just("http://u:p@h/"),
            Just("http://127.0.0.1:9/mcp"),
            Just("~"),
            Just("null"),
        ]
        .prop_map(str::to_string),
        "[a-z0-9]{1,5}",
    ];
    proptest::collection::vec(token, 0..60).prop_map(|t| t.concat())
}

fn check_errors(errors: &cordon::config::ConfigErrors) -> Result<(), TestCaseError> {
    for e in &errors.0 {
        let text = e.to_string();
        prop_assert!(!text.chars().any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)), "{text:?}");
        prop_assert!(text.len() < 4096, "an error line stays short: {} bytes", text.len());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_scenario_loader_never_panics(text in yamlish()) {
        let dir = Path::new("/nonexistent-cordon-props");
        if let Err(errors) = Scenario::from_text(&dir.join("scenario.yaml"), &text, &Redactor::new()) {
            check_errors(&errors)?;
        }
    }

    #[test]
    fn the_suite_loader_never_panics(text in yamlish()) {
        if let Err(errors) = Suite::from_text(Path::new("suite.yaml"), &text) {
            check_errors(&errors)?;
        }
    }

    #[test]
    fn the_loaders_take_any_text(text in "\\PC{0,200}|[\\x00-\\x7f]{0,200}") {
        let _ = Scenario::from_text(Path::new("scenario.yaml"), &text, &Redactor::new());
        let _ = Suite::from_text(Path::new("suite.yaml"), &text);
    }

    #[test]
    fn resolv_conf_parsing_never_panics(lines in proptest::collection::vec(
        prop_oneof![
            "nameserver [0-9a-f:.%]{0,40}",
            "(search|domain)( [a-z.]{0,12}){0,8}( #[a-z]{0,4})?",
            "options( (ndots:[0-9]{0,25}|timeout:[0-9]{1,3}|rotate|edns0|[a-z:]{0,8})){0,5}",
            "[#;].{0,20}",
            "\\PC{0,40}",
        ],
        0..20,
    ), ends in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]) {
        let conf = ResolvConf::parse(&lines.join(ends));
        prop_assert!(!conf.nameservers.is_empty(), "glibc's default applies when none is valid");
        prop_assert!(conf.ndots <= 15, "ndots is capped like glibc's: {}", conf.ndots);
        prop_assert!(conf.search.iter().all(|d| !d.is_empty() && !d.ends_with('.')), "{:?}", conf.search);
    }
}
