//! The second carrier: probes for a task on another node run in a short-lived container
//! on that node's engine, `network_mode: container:<task>` and `pid: container:<task>`,
//! from an image built `FROM scratch` around cordon's own static binary. The container
//! runs the hidden `cordon agent`, reads one plan as JSON on stdin (secrets travel only
//! there) and writes one observation as JSON on stdout.
//!
//! Carriers carry the labels `cordon.carrier=1` and `cordon.carrier.run=<run>`; each is
//! removed when its plan is done (and auto-removed by the engine when the agent exits,
//! which it does once its plan is done even if cordon died); on Ctrl-C every carrier of
//! the run is removed before cordon exits.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bollard::body_full;
use bollard::container::LogOutput;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, BuildImageOptionsBuilder, CreateContainerOptionsBuilder,
    ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use super::Engine;

pub const CARRIER_LABEL: &str = "cordon.carrier";
pub const RUN_LABEL: &str = "cordon.carrier.run";
/// Where cordon finds a static build of itself when it is not static itself.
pub const BINARY_ENV: &str = "CORDON_AGENT_BINARY";
/// Biggest observation cordon reads back from an agent.
const MAX_OUTPUT: usize = 64 * 1024 * 1024;

/// This process's carriers (one run per process).
pub fn carriers() -> &'static Carriers {
    static CARRIERS: OnceLock<Carriers> = OnceLock::new();
    CARRIERS.get_or_init(Carriers::new)
}

/// The run's carriers: one image per engine, built once; every container labelled.
pub struct Carriers {
    run: String,
    images: tokio::sync::Mutex<BTreeMap<String, String>>,
    engines: Mutex<Vec<(String, Engine)>>,
    watching: OnceLock<()>,
    /// Set on Ctrl-C: no carrier is created any more, one being created is removed.
    closing: std::sync::atomic::AtomicBool,
}

impl Default for Carriers {
    fn default() -> Self {
        Self::new()
    }
}

impl Carriers {
    pub fn new() -> Self {
        Carriers {
            run: hex::encode(rand::random::<[u8; 6]>()),
            images: tokio::sync::Mutex::new(BTreeMap::new()),
            engines: Mutex::new(Vec::new()),
            watching: OnceLock::new(),
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs one plan (JSON) in a carrier joined to `container` on `engine`, and returns
    /// what the agent wrote. `key` names the engine (for its image cache).
    pub async fn run(
        &'static self,
        engine: &Engine,
        key: &str,
        container: &str,
        plan: Vec<u8>,
        limit: Duration,
    ) -> Result<Vec<u8>, String> {
        self.watch_interrupts();
        let image = self.image(engine, key).await?;
        {
            let mut known = self.engines.lock().expect("carrier lock");
            if !known.iter().any(|(k, _)| k == key) {
                known.push((key.to_string(), engine.clone()));
            }
        }
        let labels =
            HashMap::from([(CARRIER_LABEL.to_string(), "1".to_string()), (RUN_LABEL.to_string(), self.run.clone())]);
        let config = ContainerCreateBody {
            image: Some(image),
            cmd: Some(vec!["agent".into()]),
            user: Some("65534:65534".into()),
            open_stdin: Some(true),
            stdin_once: Some(true),
            attach_stdin: Some(true),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            labels: Some(labels),
            host_config: Some(HostConfig {
                network_mode: Some(format!("container:{container}")),
                pid_mode: Some(format!("container:{container}")),
                auto_remove: Some(true),
                cap_drop: Some(vec!["ALL".into()]),
                readonly_rootfs: Some(true),
                security_opt: Some(vec!["no-new-privileges:true".into()]),
                memory: Some(256 << 20),
                pids_limit: Some(256),
                ..Default::default()
            }),
            ..Default::default()
        };
        let name = format!("cordon-carrier-{}-{}", self.run, hex::encode(rand::random::<[u8; 4]>()));
        if self.is_closing() {
            return Err("interrupted".into());
        }
        let created = engine
            .docker()
            .create_container(Some(CreateContainerOptionsBuilder::new().name(&name).build()), config)
            .await
            .map_err(|e| format!("creating carrier {name}: {e}"))?;
        let guard = Removal { engine: engine.clone(), id: created.id.clone() };
        if self.is_closing() {
            guard.now().await;
            return Err("interrupted".into());
        }
        let outcome = tokio::time::timeout(limit, async {
            let attach =
                AttachContainerOptionsBuilder::new().stream(true).stdin(true).stdout(true).stderr(true).build();
            let mut attached = engine
                .docker()
                .attach_container(&created.id, Some(attach))
                .await
                .map_err(|e| format!("attaching to carrier {name}: {e}"))?;
            engine
                .docker()
                .start_container(&created.id, None)
                .await
                .map_err(|e| format!("starting carrier {name}: {e}"))?;
            attached.input.write_all(&plan).await.map_err(|e| format!("writing the plan to carrier {name}: {e}"))?;
            attached.input.shutdown().await.map_err(|e| format!("closing the carrier's stdin: {e}"))?;
            let mut out = Vec::new();
            let mut err = Vec::new();
            while let Some(chunk) = attached.output.next().await {
                match chunk {
                    Ok(LogOutput::StdOut { message }) => out.extend_from_slice(&message),
                    Ok(LogOutput::StdErr { message }) => err.extend_from_slice(&message),
                    Ok(_) => {}
                    Err(e) => return Err(format!("reading carrier {name}: {e}")),
                }
                if out.len() > MAX_OUTPUT {
                    return Err(format!("carrier {name} wrote more than {MAX_OUTPUT} bytes"));
                }
            }
            if out.is_empty() {
                let err = String::from_utf8_lossy(&err);
                let why = if err.trim().is_empty() { "its output ended empty".into() } else { err.trim().to_string() };
                return Err(format!("carrier {name} wrote no observation: {why}"));
            }
            Ok(out)
        })
        .await
        .unwrap_or_else(|_| Err(format!("carrier {name} gave no observation within {:.0}s", limit.as_secs_f64())));
        guard.now().await;
        outcome
    }

    /// The carrier image on `engine`, built there from the static binary if missing. The
    /// tag carries the binary's hash: an old carrier never answers for a new cordon.
    async fn image(&self, engine: &Engine, key: &str) -> Result<String, String> {
        let mut images = self.images.lock().await;
        if let Some(tag) = images.get(key) {
            return Ok(tag.clone());
        }
        let binary = agent_binary()?;
        let bytes = std::fs::read(&binary).map_err(|e| format!("reading {}: {e}", binary.display()))?;
        let tag = {
            use sha2::Digest;
            format!("cordon-carrier:{}", &hex::encode(sha2::Sha256::digest(&bytes))[..16])
        };
        if engine.docker().inspect_image(&tag).await.is_err() {
            let dockerfile = "FROM scratch\nLABEL cordon.carrier=1\nCOPY cordon /cordon\nUSER 65534:65534\nENTRYPOINT [\"/cordon\"]\n";
            let context = tar(&[("Dockerfile", dockerfile.as_bytes(), 0o644), ("cordon", &bytes, 0o755)]);
            let options = BuildImageOptionsBuilder::new()
                .dockerfile("Dockerfile")
                .t(&tag)
                .rm(true)
                .forcerm(true)
                .networkmode("none")
                .build();
            let mut build = engine.docker().build_image(options, None, Some(body_full(context.into())));
            while let Some(step) = build.next().await {
                let step = step.map_err(|e| format!("building {tag} on {key}: {e}"))?;
                if let Some(detail) = step.error_detail {
                    return Err(format!("building {tag} on {key}: {}", detail.message.unwrap_or_default()));
                }
            }
        }
        images.insert(key.to_string(), tag.clone());
        Ok(tag)
    }

    /// Ctrl-C: remove every carrier of this run, then end the run as interrupted.
    fn watch_interrupts(&'static self) {
        self.watching.get_or_init(|| {
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("interrupted: removing this run's carriers");
                    self.closing.store(true, std::sync::atomic::Ordering::SeqCst);
                    self.remove_all().await;
                    // A carrier whose creation was in flight shows up a moment later.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    self.remove_all().await;
                    crate::interrupt::request_exit();
                }
            });
        });
    }

    fn is_closing(&self) -> bool {
        self.closing.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Removes every container of this run on every engine it used.
    pub async fn remove_all(&self) {
        let engines = self.engines.lock().expect("carrier lock").clone();
        for (_, engine) in engines {
            let filters = HashMap::from([("label".to_string(), vec![format!("{RUN_LABEL}={}", self.run)])]);
            let listed = engine
                .docker()
                .list_containers(Some(ListContainersOptionsBuilder::new().all(true).filters(&filters).build()))
                .await;
            for c in listed.unwrap_or_default() {
                if let Some(id) = c.id {
                    remove(&engine, &id).await;
                }
            }
        }
    }
}

/// Removes a carrier when dropped (a cancelled probe) or when told.
struct Removal {
    engine: Engine,
    id: String,
}

impl Removal {
    async fn now(self) {
        remove(&self.engine, &self.id).await;
        std::mem::forget(self);
    }
}

impl Drop for Removal {
    fn drop(&mut self) {
        let (engine, id) = (self.engine.clone(), self.id.clone());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { remove(&engine, &id).await });
        }
    }
}

async fn remove(engine: &Engine, id: &str) {
    let options = RemoveContainerOptionsBuilder::new().force(true).build();
    // Already gone (auto-removed) is fine.
    let _ = engine.docker().remove_container(id, Some(options)).await;
}

/// The static cordon binary a carrier image is built from: `$CORDON_AGENT_BINARY`, else
/// this very program if it is statically linked.
pub fn agent_binary() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var(BINARY_ENV) {
        let path = PathBuf::from(path);
        return match is_static(&path) {
            Ok(true) => Ok(path),
            Ok(false) => Err(format!("{BINARY_ENV}={} is not statically linked", path.display())),
            Err(e) => Err(format!("{BINARY_ENV}={}: {e}", path.display())),
        };
    }
    let me = std::env::current_exe().map_err(|e| format!("locating the cordon binary: {e}"))?;
    match is_static(&me) {
        Ok(true) => Ok(me),
        _ => Err(format!(
            "probing a task on another node needs a static cordon binary for the carrier image: build one with \
             `RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build --release --target x86_64-unknown-linux-gnu` \
             and run it, or point {BINARY_ENV} at it ({} is dynamically linked)",
            me.display()
        )),
    }
}

/// An ELF executable with no `PT_INTERP` program header needs no dynamic loader.
pub fn is_static(path: &std::path::Path) -> std::io::Result<bool> {
    let bytes = std::fs::read(path)?;
    Ok(elf_is_static(&bytes))
}

fn elf_is_static(b: &[u8]) -> bool {
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]]));
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    let u64_at = |o: usize| b.get(o..o + 8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")));
    // 64-bit little-endian ELF only (the carrier runs on x86_64 engines).
    if b.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38)) else { return false };
    (0..phnum as usize).all(|i| u32_at(phoff as usize + i * phentsize as usize) != Some(3))
}

/// A ustar archive of regular files (a build context).
pub fn tar(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data, mode) in files {
        let mut header = [0u8; 512];
        header[..name.len()].copy_from_slice(name.as_bytes());
        let octal = |field: &mut [u8], value: u64| {
            let text = format!("{:0width$o}\0", value, width = field.len() - 1);
            field.copy_from_slice(text.as_bytes());
        };
        octal(&mut header[100..108], u64::from(*mode));
        octal(&mut header[108..116], 0);
        octal(&mut header[116..124], 0);
        octal(&mut header[124..136], data.len() as u64);
        octal(&mut header[136..148], 0);
        header[156] = b'0';
        header[257..263].copy_from_slice(b"ustar\0");
        header[263..265].copy_from_slice(b"00");
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
        header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_binary_is_told_apart_from_a_static_one() {
        // The test binary itself is dynamically linked (no crt-static in tests).
        let me = std::env::current_exe().unwrap();
        assert!(!is_static(&me).unwrap());
        assert!(!elf_is_static(b"#!/bin/sh\n"));
    }

    #[test]
    fn the_build_context_is_a_valid_tar() {
        let t = tar(&[("Dockerfile", b"FROM scratch\n", 0o644)]);
        assert_eq!(t.len(), 512 + 512 + 1024);
        assert_eq!(&t[257..262], b"ustar");
        let sum: u32 =
            t[..512].iter().enumerate().map(|(i, b)| if (148..156).contains(&i) { 32 } else { u32::from(*b) }).sum();
        let stored = u32::from_str_radix(std::str::from_utf8(&t[148..154]).unwrap(), 8).unwrap();
        assert_eq!(sum, stored);
    }
}
