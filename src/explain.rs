//! `cordon explain <check>`: what a check proves, from where, and what the last run saw
//! (read back from `report.json`; nothing is probed).

use std::path::Path;

use serde_json::Value;

use crate::exit::Ending;
use crate::model::CheckName;

/// (what it proves, where it looks from) for a check: its family says
/// (`checks::Spec::explain`).
pub fn describe(name: &CheckName) -> Option<(&'static str, &'static str)> {
    (crate::checks::spec(name.family).explain)(name)
}

pub fn run(check: &str, results: &Path) -> Ending {
    let Some((what, from)) = CheckName::parse(check).as_ref().and_then(describe) else {
        eprintln!("error: `{check}` is not a check name cordon knows (family::subject[::aspect]; see --list)");
        return Ending::Usage;
    };
    println!("{check}\n  proves: {what}\n  from:   {from}");
    let path = results.join("report.json");
    let report: Option<Value> =
        crate::fsutil::read_regular_text(&path, 64 << 20).ok().and_then(|t| serde_json::from_str(&t).ok());
    let Some(report) = report else {
        println!("  last run: no report at {} (run a suite first)", path.display());
        return Ending::Passed;
    };
    let found = report["report"]["results"].as_array().and_then(|rs| rs.iter().find(|r| r["name"] == check));
    match found {
        None => println!("  last run: {} has no result for this check", path.display()),
        Some(r) => {
            let text = |v: &Value| crate::text::sanitize(v.as_str().unwrap_or(""));
            println!("  last run: {} — {}", text(&r["verdict"]), text(&r["reason"]));
            for line in r["evidence"].as_array().into_iter().flatten() {
                println!("    {}", text(line));
            }
            for line in r["transient"].as_array().into_iter().flatten() {
                println!("    transient: {}", text(line));
            }
        }
    }
    Ending::Passed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_explained() {
        for name in [
            "route::webui->native",
            "reach::n8n-/->legacy",
            "reach::webui-/->app:gitea",
            "session::webui->native",
            "contract::native::tools",
            "contract::native::read",
            "contract::native::foreign_bearer",
            "disabled::wiki",
            "sidecar::gitea::interfaces",
            "sidecar::gitea::hardening",
            "openwebui::connections",
            "contract::native::call_allowlist",
            "contract::gitea::arguments",
            "contract::gitea::limits",
            "credentials::native::retired",
            "credentials::native::revoked",
            "secrets::logs",
            "sidecar::gitea::egress",
            "flowise::registry",
            "flowise::tool_call::native",
            "flowise::access",
            "n8n::client::legacy",
            "n8n::server",
        ] {
            assert!(describe(&CheckName::parse(name).unwrap()).is_some(), "{name}");
        }
        assert!(CheckName::parse("nope::x").is_none());
        let app = CheckName::parse("reach::webui-/->app:gitea").unwrap();
        assert!(describe(&app).unwrap().0.contains("app behind"));
    }
}
