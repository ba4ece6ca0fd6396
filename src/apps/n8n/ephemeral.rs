//! What a check leaves in n8n — the execution records of the runs it made — deleted on
//! every path: at the end of the check, when the check's future is dropped (a spawned
//! delete on the namespace's own runtime), and on Ctrl-C (through [`crate::interrupt`]).
//!
//! A run is known by the nonce its webhook body carried, not by an execution id: n8n's
//! public API lists a run only once n8n has finalized it, which on a loaded host can be
//! seconds after the webhook answered, and one POST may leave more than one record. So
//! the cleanup looks the nonce up itself and deletes every record that holds it, waiting
//! for one while a record is still expected.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use super::api::N8nApi;
use crate::apps::webapp::ApiError;
use crate::interrupt::Ledger;

pub use crate::apps::flowise::ephemeral::name;

/// How long a cleanup waits for the record of a run that n8n took in.
pub const RECORD_WAIT: Duration = Duration::from_secs(30);
/// The same on Ctrl-C, where the user is waiting.
pub const INTERRUPTED_RECORD_WAIT: Duration = Duration::from_secs(5);
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// One webhook run a check started.
#[derive(Clone, Debug, Default)]
pub struct RunMark {
    pub workflow: String,
    pub nonce: String,
    /// n8n took the request in (or may have): a record will appear.
    pub expect_record: bool,
    /// Records already found.
    pub executions: Vec<String>,
}

static LEDGER: Ledger<Vec<RunMark>> = Ledger::new();

pub struct Ephemeral {
    api: N8nApi,
    key: u64,
    done: bool,
}

impl Ephemeral {
    pub fn new(api: &N8nApi) -> Ephemeral {
        Ephemeral { api: api.clone(), key: LEDGER.open(), done: false }
    }

    /// Before the POST: from here on the cleanup looks for this run's records.
    pub fn run_started(&self, workflow: &str, nonce: &str) {
        let mark = RunMark { workflow: workflow.into(), nonce: nonce.into(), expect_record: true, executions: vec![] };
        LEDGER.note(self.key, |p| p.push(mark));
    }

    /// After the POST: whether a record is to be waited for (n8n answers 404 to a
    /// webhook it has not registered, and records nothing).
    pub fn run_answered(&self, nonce: &str, expect_record: bool) {
        LEDGER.note(self.key, |p| {
            p.iter_mut().filter(|m| m.nonce == nonce).for_each(|m| m.expect_record = expect_record)
        });
    }

    pub fn execution(&self, nonce: &str, id: &str) {
        LEDGER.note(self.key, |p| {
            for m in p.iter_mut().filter(|m| m.nonce == nonce) {
                if !m.executions.iter().any(|x| x == id) {
                    m.executions.push(id.to_string());
                }
            }
        });
    }

    pub async fn cleanup(mut self) -> Vec<String> {
        self.done = true;
        let todo = LEDGER.close(self.key);
        undo(&self.api, &todo, RECORD_WAIT).await
    }
}

impl Drop for Ephemeral {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let todo = LEDGER.close(self.key);
        let api = self.api.clone();
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::task::spawn_local(async move {
                for l in undo(&api, &todo, RECORD_WAIT).await {
                    eprintln!("warning: {l}");
                }
            });
        }
    }
}

/// The id of every record of `workflow` whose run data holds `nonce`.
pub async fn records_of(api: &N8nApi, workflow: &str, nonce: &str) -> Result<Vec<(String, Value)>, ApiError> {
    let executions = api.all(&format!("/api/v1/executions?workflowId={workflow}&includeData=true")).await?;
    Ok(executions
        .into_iter()
        .filter(|e| {
            e.pointer("/data/resultData/runData")
                .and_then(Value::as_object)
                .is_some_and(|rd| rd.values().any(|runs| runs.to_string().contains(nonce)))
        })
        .map(|e| {
            let id = match e.get("id") {
                Some(Value::String(x)) => x.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            (id, e)
        })
        .collect())
}

/// Deletes every record of every run; returns what could not be deleted or found.
pub async fn undo(api: &N8nApi, runs: &[RunMark], wait: Duration) -> Vec<String> {
    let mut left = Vec::new();
    for run in runs {
        let mut ids = run.executions.clone();
        let started = tokio::time::Instant::now();
        loop {
            match records_of(api, &run.workflow, &run.nonce).await {
                Ok(found) => ids.extend(found.into_iter().map(|(id, _)| id).filter(|id| !run.executions.contains(id))),
                Err(e) => {
                    left.push(format!(
                        "could not look for the records of run {} of workflow {}: {e}",
                        run.nonce, run.workflow
                    ));
                    break;
                }
            }
            ids.dedup();
            if !ids.is_empty() || !run.expect_record {
                break;
            }
            if started.elapsed() >= wait {
                left.push(format!(
                    "n8n listed no record of run {} of workflow {} within {} s: it may be left in n8n",
                    run.nonce,
                    run.workflow,
                    wait.as_secs()
                ));
                break;
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
        ids.sort();
        ids.dedup();
        for id in ids {
            let path = format!("/api/v1/executions/{id}");
            match api.send(Method::DELETE, &path, None).await {
                Ok(a) if a.status == 200 || a.status == 404 => {}
                Ok(a) => left.push(format!("could not delete execution {id}: answered {}: {}", a.status, a.detail())),
                Err(e) => left.push(format!("could not delete execution {id}: {e}")),
            }
        }
    }
    left
}

/// Every pending run of every check (the Ctrl-C cleanup deletes their records).
pub fn take_all() -> Vec<RunMark> {
    LEDGER.take_all().into_iter().flatten().collect()
}
