//! One node's carrier for one run: a container started once, fed plans as lines on its
//! stdin and answering them, in any order, as lines on its stdout.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::query_parameters::AttachContainerOptionsBuilder;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;

use super::super::Engine;
use crate::netns::plan::{CarriedError, CarriedObservation, CarriedPlan};

/// Biggest line cordon reads back from a carrier.
const MAX_LINE: usize = 64 * 1024 * 1024;
/// What a carrier wrote on stderr is kept up to this much, for the reason it ended.
const MAX_STDERR: usize = 16 * 1024;

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<serde_json::Value, CarriedError>>>>>;

pub struct Session {
    pub name: String,
    pub id: String,
    input: tokio::sync::Mutex<Pin<Box<dyn AsyncWrite + Send>>>,
    waiting: Waiting,
    /// Why the carrier stopped answering, once it has.
    ended: Arc<Mutex<Option<String>>>,
    next: AtomicU64,
}

impl Session {
    /// Attaches to the created carrier `id`, starts it, and reads its answers from then on.
    pub async fn start(engine: &Engine, id: &str, name: &str) -> Result<Session, String> {
        let attach = AttachContainerOptionsBuilder::new().stream(true).stdin(true).stdout(true).stderr(true).build();
        let attached = engine
            .docker()
            .attach_container(id, Some(attach))
            .await
            .map_err(|e| format!("attaching to carrier {name}: {e}"))?;
        engine.docker().start_container(id, None).await.map_err(|e| format!("starting carrier {name}: {e}"))?;
        let waiting: Waiting = Arc::default();
        let ended = Arc::new(Mutex::new(None));
        tokio::spawn(read_answers(attached.output, waiting.clone(), ended.clone(), name.to_string()));
        Ok(Session {
            name: name.to_string(),
            id: id.to_string(),
            input: tokio::sync::Mutex::new(attached.input),
            waiting,
            ended,
            next: AtomicU64::new(1),
        })
    }

    /// Why the carrier no longer answers, if it does not.
    pub fn ended(&self) -> Option<String> {
        self.ended.lock().expect("carrier lock").clone()
    }

    /// Sends one plan (`{KIND: plan}`) for `container` (`pid` as its node sees it) and
    /// waits up to `limit` for its answer.
    pub async fn ask(
        &self,
        container: &str,
        pid: u32,
        label: &str,
        plan: serde_json::Value,
        limit: Duration,
    ) -> Result<serde_json::Value, CarriedError> {
        let ask = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().expect("carrier lock").insert(ask, tx);
        let _unregister = Unregister { waiting: self.waiting.clone(), ask };
        if let Some(why) = self.ended() {
            return Err(CarriedError::Failed(why));
        }
        let carried = CarriedPlan { ask, container: container.to_string(), pid, label: label.to_string(), plan };
        let mut line =
            serde_json::to_vec(&carried).map_err(|e| CarriedError::Failed(format!("encoding the plan: {e}")))?;
        line.push(b'\n');
        {
            let mut input = self.input.lock().await;
            let written = async {
                input.write_all(&line).await?;
                input.flush().await
            };
            written.await.map_err(|e| CarriedError::Failed(format!("writing a plan to carrier {}: {e}", self.name)))?;
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(CarriedError::Failed(
                self.ended().unwrap_or_else(|| format!("carrier {} ended without an answer", self.name)),
            )),
            Err(_) => Err(CarriedError::Failed(format!(
                "carrier {} gave no observation within {:.0}s",
                self.name,
                limit.as_secs_f64()
            ))),
        }
    }

    /// Ends the carrier's input: it answers what is in flight and exits.
    pub async fn close(&self) {
        let _ = self.input.lock().await.shutdown().await;
    }
}

/// A plan whose caller stopped waiting is forgotten, so its late answer goes nowhere.
struct Unregister {
    waiting: Waiting,
    ask: u64,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        self.waiting.lock().expect("carrier lock").remove(&self.ask);
    }
}

/// Hands each answer line to the plan waiting for it; when the stream ends, records why
/// and fails every plan still waiting.
async fn read_answers(
    mut output: Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>,
    waiting: Waiting,
    ended: Arc<Mutex<Option<String>>>,
    name: String,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut stderr: Vec<u8> = Vec::new();
    let why = loop {
        match output.next().await {
            Some(Ok(LogOutput::StdOut { message })) => {
                pending.extend_from_slice(&message);
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    answer(&waiting, &line);
                }
                if pending.len() > MAX_LINE {
                    break format!("carrier {name} wrote a line longer than {MAX_LINE} bytes");
                }
            }
            Some(Ok(LogOutput::StdErr { message })) => {
                stderr.extend_from_slice(&message);
                if stderr.len() > MAX_STDERR {
                    stderr.drain(..stderr.len() - MAX_STDERR);
                }
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => break format!("reading carrier {name}: {e}"),
            None => {
                let said = String::from_utf8_lossy(&stderr).trim().to_string();
                break match said.is_empty() {
                    true => format!("carrier {name} ended"),
                    false => format!("carrier {name} ended: {said}"),
                };
            }
        }
    };
    *ended.lock().expect("carrier lock") = Some(why.clone());
    for (_, tx) in waiting.lock().expect("carrier lock").drain() {
        let _ = tx.send(Err(CarriedError::Failed(why.clone())));
    }
}

fn answer(waiting: &Waiting, line: &[u8]) {
    let Ok(answer) = serde_json::from_slice::<CarriedObservation>(line) else { return };
    if let Some(tx) = waiting.lock().expect("carrier lock").remove(&answer.ask) {
        let _ = tx.send(answer.observed);
    }
}
