//! `cordon agent` (hidden): what a node's carrier container runs. One carrier serves a
//! whole node for a whole run: it sits in the node's host pid namespace, reads
//! [`CarriedPlan`] lines on stdin (each a plan for one container of that node, by id and
//! pid), runs each with the same code cordon runs after `setns` (one namespace worker per
//! container, entered once), and writes a [`CarriedObservation`] line per plan on stdout
//! as each finishes. It ends when its input ends and every plan in flight has answered.
//!
//! Secrets arrive in the plans, on stdin only; nothing the agent prints is shown without
//! passing cordon's redactor on the other side.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::checks::plan::ProbePlan;
use crate::exit::Ending;
use crate::netns::plan::{CarriedError, CarriedObservation, CarriedPlan};
use crate::netns::{NetnsError, NsPool, Place};

/// However the run goes, the agent is gone after this long (its carrier with it): cordon
/// closes its input at the end of a run, and a cordon that died closes it too (the
/// attach ends), so this only bounds a carrier nobody hears from.
const LIFETIME: Duration = Duration::from_secs(3600);

pub fn main() -> Ending {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cordon agent: cannot start a runtime: {e}");
            return Ending::Infrastructure;
        }
    };
    let local = tokio::task::LocalSet::new();
    let served = local.block_on(&runtime, async {
        tokio::time::timeout(LIFETIME, serve(tokio::io::stdin(), tokio::io::stdout(), container_owns)).await
    });
    match served {
        Ok(Ok(())) => Ending::Passed,
        Ok(Err(e)) => {
            eprintln!("cordon agent: {e}");
            Ending::Infrastructure
        }
        Err(_) => {
            eprintln!("cordon agent: still serving after {}s: ending", LIFETIME.as_secs());
            Ending::Infrastructure
        }
    }
}

/// Does `pid` belong to `container`? Checked before a namespace is entered, so a pid that
/// was reused since cordon read it from the engine never puts a probe in a stranger's
/// namespace (from then on the namespace worker pins the process with a pidfd).
pub type Membership = fn(u32, &str) -> Result<(), CarriedError>;

/// Answers every plan read from `input` on `output`, each as soon as it is done. Must run
/// inside a `LocalSet`.
pub async fn serve(
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + 'static,
    owns: Membership,
) -> Result<(), String> {
    let pool = std::sync::Arc::new(NsPool::new());
    let (answers, mut to_write) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::task::spawn_local(async move {
        let mut output = output;
        while let Some(mut line) = to_write.recv().await {
            line.push(b'\n');
            output.write_all(&line).await.map_err(|e| format!("writing an observation: {e}"))?;
            output.flush().await.map_err(|e| format!("writing an observation: {e}"))?;
        }
        Ok::<(), String>(())
    });
    let mut in_flight = tokio::task::JoinSet::new();
    let mut lines = BufReader::new(input).lines();
    while let Some(line) = lines.next_line().await.map_err(|e| format!("reading a plan: {e}"))? {
        if line.trim().is_empty() {
            continue;
        }
        let carried: CarriedPlan = match serde_json::from_str(&line) {
            Ok(c) => c,
            Err(e) => {
                // No ask to answer: cordon's side times the plan out and says so.
                eprintln!("cordon agent: a line that is not a plan: {e}");
                continue;
            }
        };
        let (pool, answers) = (pool.clone(), answers.clone());
        in_flight.spawn_local(async move {
            let ask = carried.ask;
            let observed = observe(&pool, carried, owns).await;
            if let Ok(line) = serde_json::to_vec(&CarriedObservation { ask, observed }) {
                let _ = answers.send(line);
            }
        });
    }
    while in_flight.join_next().await.is_some() {}
    drop(answers);
    writer.await.map_err(|e| format!("the writer ended: {e}"))?
}

async fn observe(pool: &NsPool, carried: CarriedPlan, owns: Membership) -> Result<serde_json::Value, CarriedError> {
    let plan: ProbePlan = serde_json::from_value(carried.plan)
        .map_err(|e| CarriedError::Failed(format!("a plan this agent cannot read: {e}")))?;
    owns(carried.pid, &carried.container)?;
    let place = Place::Container { id: carried.container, pid: carried.pid, netns_inode: None, label: carried.label };
    let observation = pool.run(&place, move |view| plan.observe(view)).await.map_err(|e| match e {
        NetnsError::Gone { .. } | NetnsError::Mismatch { .. } | NetnsError::NoSuchProcess { .. } => {
            CarriedError::Gone(e.to_string())
        }
        other => CarriedError::Failed(other.to_string()),
    })?;
    serde_json::to_value(&observation).map_err(|e| CarriedError::Failed(format!("encoding the observation: {e}")))
}

/// The engine puts a container's processes in cgroups named by its id (`/docker/<id>`,
/// `docker-<id>.scope`), in every hierarchy and driver.
fn container_owns(pid: u32, container: &str) -> Result<(), CarriedError> {
    match std::fs::read_to_string(format!("/proc/{pid}/cgroup")) {
        Ok(text) if cgroups_name(&text, container) => Ok(()),
        Ok(_) => Err(CarriedError::Gone(format!("pid {pid} is no longer a process of container {container}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(CarriedError::Gone(format!("no process {pid}: container {container} stopped or restarted")))
        }
        Err(e) => Err(CarriedError::Failed(format!(
            "cannot read /proc/{pid}/cgroup: {e} (the carrier needs the host's pid namespace and CAP_SYS_PTRACE)"
        ))),
    }
}

fn cgroups_name(text: &str, container: &str) -> bool {
    container.len() >= 12 && text.lines().any(|line| line.contains(container))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_belongs_to_the_container_its_cgroups_name() {
        let id = "4f1c0ffee".repeat(7);
        let v1 = format!("12:memory:/docker/{id}\n1:name=systemd:/docker/{id}\n");
        let v2 = format!("0::/system.slice/docker-{id}.scope\n");
        assert!(cgroups_name(&v1, &id) && cgroups_name(&v2, &id));
        assert!(!cgroups_name("0::/user.slice/session-3.scope\n", &id), "a stranger");
        assert!(!cgroups_name(&v1, ""), "an empty id names nothing");
    }

    /// Plans answer as they finish, each by its ask; a plan the agent cannot read and a
    /// process that is not the container's are answered, not dropped.
    #[tokio::test]
    async fn every_plan_gets_its_answer_by_its_ask() {
        let me = std::process::id();
        let plans = [
            serde_json::json!({"ask": 1, "container": "ours", "pid": me, "label": "l",
                "plan": serde_json::from_slice::<serde_json::Value>(
                    &crate::netns::plan::encode(&crate::netns::plan::ProcPlan { pid: me }).unwrap()).unwrap()}),
            serde_json::json!({"ask": 2, "container": "ours", "pid": me, "label": "l", "plan": {"NoSuchKind": {}}}),
            serde_json::json!({"ask": 3, "container": "theirs", "pid": me, "label": "l", "plan": {"Proc": {"pid": me}}}),
        ];
        let input: String = plans.iter().map(|p| format!("{p}\n")).collect();
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let owns: Membership = |_, c| if c == "ours" { Ok(()) } else { Err(CarriedError::Gone(format!("not {c}'s"))) };
        let local = tokio::task::LocalSet::new();
        local.run_until(serve(input.as_bytes(), theirs, owns)).await.unwrap();
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut BufReader::new(ours), &mut out).await.unwrap();
        let mut answers: Vec<CarriedObservation> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        answers.sort_by_key(|a| a.ask);
        assert_eq!(answers.len(), 3, "{out}");
        let facts = crate::netns::plan::decode_value::<crate::netns::plan::ProcPlan>(
            answers[0].observed.clone().expect("this process's own facts"),
        )
        .unwrap()
        .unwrap();
        assert!(facts.uid.is_some(), "{facts:?}");
        assert!(matches!(&answers[1].observed, Err(CarriedError::Failed(e)) if e.contains("cannot read")));
        assert_eq!(answers[2].observed, Err(CarriedError::Gone("not theirs's".into())));
    }
}
