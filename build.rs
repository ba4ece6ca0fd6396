//! Build script: the commit cordon is built from, for `cordon --version`.
//!
//! `CORDON_COMMIT` wins (a build from a source archive, or an image build that knows
//! better); otherwise git is asked. Outside a git checkout it is "unknown", never a guess.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=CORDON_COMMIT");
    let commit = std::env::var("CORDON_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CORDON_COMMIT={commit}");
    // Rebuilt when HEAD moves: HEAD itself (a checkout), and the branch it points at (a
    // commit). Only files that exist are named: cargo reruns a script for a missing one
    // on every build.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
