//! The second carrier: probes for a task on another node run in that node's carrier, a
//! container started once per node and run through that node's engine, from an image
//! built `FROM scratch` around cordon's own static binary. It runs the hidden `cordon
//! agent`, which is fed every plan for that node as lines on its stdin (secrets travel
//! only there) and answers each with a line on its stdout (see [`session`]). It holds
//! what cordon itself needs to enter a namespace on its node, and no more: the host's pid
//! namespace (the engine reports host pids), `CAP_SYS_ADMIN` (setns) and
//! `CAP_SYS_PTRACE` (another user's `/proc/<pid>/ns/net` and root); no network of its
//! own, a read-only root, no new privileges.
//!
//! Carriers carry the labels `cordon.carrier=1` and `cordon.carrier.run=<run>`. At the
//! end of the run cordon closes their input: each answers what is in flight and exits,
//! and the engine removes it (it is also removed then, and auto-removed when its agent
//! exits for any other reason: cordon died, the attach broke). On Ctrl-C every carrier of
//! the run is removed before cordon exits.

mod session;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bollard::body_full;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, ListContainersOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::{Engine, Target};
use crate::netns::plan::CarriedError;
use session::Session;

pub const CARRIER_LABEL: &str = "cordon.carrier";
pub const RUN_LABEL: &str = "cordon.carrier.run";
/// Where cordon finds a static build of itself when it is not static itself.
pub const BINARY_ENV: &str = "CORDON_AGENT_BINARY";
/// How long a carrier has, at the end of a run, to answer what is in flight and exit.
const CLOSING: Duration = Duration::from_secs(5);

/// This process's carriers (one run per process).
pub fn carriers() -> &'static Carriers {
    static CARRIERS: OnceLock<Carriers> = OnceLock::new();
    CARRIERS.get_or_init(Carriers::new)
}

/// A node's carrier while it starts, and once it runs.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Session>>>>;

/// The run's carriers: one image per engine, built once; one carrier per node, started
/// once; every container labelled.
pub struct Carriers {
    run: String,
    images: tokio::sync::Mutex<BTreeMap<String, String>>,
    engines: Mutex<Vec<(String, Engine)>>,
    sessions: Mutex<BTreeMap<String, Slot>>,
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
            sessions: Mutex::new(BTreeMap::new()),
            watching: OnceLock::new(),
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs one plan (`{KIND: plan}`) for `target` (`label` says whom it stands for) in
    /// the carrier of the node `key` names, served by `engine`, and returns the
    /// observation (`{KIND: observation}`).
    pub async fn run(
        &'static self,
        engine: &Engine,
        key: &str,
        target: &Target,
        label: &str,
        plan: serde_json::Value,
        limit: Duration,
    ) -> Result<serde_json::Value, CarriedError> {
        let session = self.session(engine, key).await.map_err(CarriedError::Failed)?;
        session.ask(&target.id, target.node_pid, label, plan, limit).await
    }

    /// Starts the carrier of node `key` before any plan needs it, so its start overlaps
    /// with the probes that run here. A failure is left for the first plan to report.
    pub async fn warm(&'static self, engine: &Engine, key: &str) {
        let _ = self.session(engine, key).await;
    }

    /// The carrier of node `key`: started on first use, and again if it ended.
    async fn session(&'static self, engine: &Engine, key: &str) -> Result<Arc<Session>, String> {
        self.watch_interrupts();
        let slot = self.sessions.lock().expect("carrier lock").entry(key.to_string()).or_default().clone();
        let mut slot = slot.lock().await;
        if let Some(running) = slot.as_ref().filter(|s| s.ended().is_none()) {
            return Ok(running.clone());
        }
        if let Some(ended) = slot.take() {
            remove(engine, &ended.id).await;
        }
        let started = Arc::new(self.start(engine, key).await?);
        *slot = Some(started.clone());
        Ok(started)
    }

    async fn start(&self, engine: &Engine, key: &str) -> Result<Session, String> {
        let image = self.image(engine, key).await?;
        {
            let mut known = self.engines.lock().expect("carrier lock");
            if !known.iter().any(|(k, _)| k == key) {
                known.push((key.to_string(), engine.clone()));
            }
        }
        let name = format!("cordon-carrier-{}-{}", self.run, hex::encode(rand::random::<[u8; 4]>()));
        if self.is_closing() {
            return Err("interrupted".into());
        }
        let created = engine
            .docker()
            .create_container(Some(CreateContainerOptionsBuilder::new().name(&name).build()), self.config(image))
            .await
            .map_err(|e| format!("creating carrier {name}: {e}"))?;
        if self.is_closing() {
            remove(engine, &created.id).await;
            return Err("interrupted".into());
        }
        crate::cost::CARRIERS_STARTED.add(1);
        match Session::start(engine, &created.id, &name).await {
            Ok(session) => Ok(session),
            Err(e) => {
                remove(engine, &created.id).await;
                Err(e)
            }
        }
    }

    /// What a carrier holds: what cordon needs to enter its node's namespaces, no more
    /// (see the module's documentation).
    fn config(&self, image: String) -> ContainerCreateBody {
        let labels =
            HashMap::from([(CARRIER_LABEL.to_string(), "1".to_string()), (RUN_LABEL.to_string(), self.run.clone())]);
        ContainerCreateBody {
            image: Some(image),
            cmd: Some(vec!["agent".into()]),
            user: Some("0:0".into()),
            open_stdin: Some(true),
            stdin_once: Some(true),
            attach_stdin: Some(true),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            labels: Some(labels),
            host_config: Some(HostConfig {
                network_mode: Some("none".into()),
                pid_mode: Some("host".into()),
                auto_remove: Some(true),
                cap_drop: Some(vec!["ALL".into()]),
                cap_add: Some(vec!["SYS_ADMIN".into(), "SYS_PTRACE".into()]),
                readonly_rootfs: Some(true),
                security_opt: Some(vec!["no-new-privileges:true".into()]),
                memory: Some(512 << 20),
                // A namespace worker thread per container of the node, and their runtimes.
                pids_limit: Some(4096),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The end of the run: every carrier answers what is in flight and exits (the engine
    /// removes it); one that has not within a few seconds is removed.
    pub async fn finish(&self) {
        let slots: Vec<Slot> = self.sessions.lock().expect("carrier lock").values().cloned().collect();
        for slot in slots {
            if let Some(session) = slot.lock().await.take() {
                session.close().await;
            }
        }
        let deadline = tokio::time::Instant::now() + CLOSING;
        while tokio::time::Instant::now() < deadline && self.count().await > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.remove_all().await;
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

    /// Ctrl-C: every carrier of this run is removed before the run ends as interrupted
    /// (a cleanup like the client apps' own, run by the one listener).
    fn watch_interrupts(&'static self) {
        self.watching.get_or_init(|| {
            let cleanup: crate::interrupt::Cleanup = Arc::new(move || {
                Box::pin(async move {
                    eprintln!("interrupted: removing this run's carriers");
                    self.closing.store(true, std::sync::atomic::Ordering::SeqCst);
                    self.remove_all().await;
                    // A carrier whose creation was in flight shows up a moment later.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    self.remove_all().await;
                    Vec::new()
                })
            });
            crate::interrupt::on_interrupt("carriers", cleanup);
        });
    }

    fn is_closing(&self) -> bool {
        self.closing.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Removes every container of this run on every engine it used.
    pub async fn remove_all(&self) {
        for (engine, id) in self.listed().await {
            remove(&engine, &id).await;
        }
    }

    async fn count(&self) -> usize {
        self.listed().await.len()
    }

    /// Every container of this run, on every engine it used.
    async fn listed(&self) -> Vec<(Engine, String)> {
        let engines = self.engines.lock().expect("carrier lock").clone();
        let filters = HashMap::from([("label".to_string(), vec![format!("{RUN_LABEL}={}", self.run)])]);
        let mut out = Vec::new();
        for (_, engine) in engines {
            let listed = engine
                .docker()
                .list_containers(Some(ListContainersOptionsBuilder::new().all(true).filters(&filters).build()))
                .await;
            out.extend(listed.unwrap_or_default().into_iter().filter_map(|c| c.id).map(|id| (engine.clone(), id)));
        }
        out
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
