//! What cordon makes in Flowise for one check — an API key for a flow author, entries
//! made to test the SSRF guard (when the guard lets them through), the chat messages a
//! run leaves — undone on every path: at the end of the check, when the check's future
//! is dropped (a spawned undo on the namespace's own runtime), and on Ctrl-C (through
//! [`crate::interrupt`]). Every name starts with [`PREFIX`] and this run's tag.

use reqwest::Method;

use super::api::Session;
use crate::interrupt::Ledger;
use crate::secret::Redactor;

/// Flowise's custom MCP server entries (the registry).
pub const ENTRIES: &str = "/api/v1/custom-mcp-servers";

pub use crate::apps::openwebui::ephemeral::PREFIX;

/// `cordon-eph-<run>-<what>` (the run's tag is shared with every family).
pub fn name(what: &str) -> String {
    crate::apps::openwebui::ephemeral::name(what)
}

/// What is still to undo, by check; read by the Ctrl-C cleanup.
#[derive(Default, Clone, Debug)]
pub struct Pending {
    pub keys: Vec<String>,
    pub entries: Vec<String>,
    pub chats: Vec<Chat>,
}

/// A chat a run makes: Flowise saves it when the run ends.
#[derive(Clone, Debug)]
pub struct Chat {
    pub chatflow: String,
    pub chat: String,
    /// The run has not answered yet: its chat may still be saved.
    pub in_flight: bool,
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.entries.is_empty() && self.chats.is_empty()
    }
}

static LEDGER: Ledger<Pending> = Ledger::new();

/// Everything cordon makes in Flowise for one check.
pub struct Ephemeral {
    session: Session,
    redactor: Redactor,
    key: u64,
    done: bool,
}

impl Ephemeral {
    pub fn new(session: &Session, redactor: &Redactor) -> Ephemeral {
        Ephemeral { session: session.clone(), redactor: redactor.clone(), key: LEDGER.open(), done: false }
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn note(&self, change: impl FnOnce(&mut Pending)) {
        LEDGER.note(self.key, change);
    }

    pub fn key(&self, id: &str) {
        self.note(|p| p.keys.push(id.to_string()));
    }

    pub fn entry(&self, id: &str) {
        self.note(|p| p.entries.push(id.to_string()));
    }

    /// A run of `chatflow` is about to start in chat `chat`.
    pub fn chat(&self, chatflow: &str, chat: &str) {
        let chat = Chat { chatflow: chatflow.to_string(), chat: chat.to_string(), in_flight: true };
        self.note(|p| p.chats.push(chat));
    }

    /// The run in `chat` answered: its chat is saved, or never will be.
    pub fn answered(&self, chat: &str) {
        self.note(|p| p.chats.iter_mut().filter(|c| c.chat == chat).for_each(|c| c.in_flight = false));
    }

    /// Undoes everything; returns what could not be undone.
    pub async fn cleanup(mut self) -> Vec<String> {
        self.done = true;
        let todo = LEDGER.close(self.key);
        undo(&self.session, &todo).await
    }
}

impl Drop for Ephemeral {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Dropped mid-check (the attempt was cut): undo on the namespace's own runtime.
        let todo = LEDGER.close(self.key);
        let (session, redactor) = (self.session.clone(), self.redactor.clone());
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::task::spawn_local(async move {
                for l in undo(&session, &todo).await {
                    eprintln!("{}", redactor.redact(&format!("warning: {l}")));
                }
            });
        }
    }
}

/// Deletes keys, entries and chat messages; returns what failed.
pub async fn undo(session: &Session, todo: &Pending) -> Vec<String> {
    let mut left = Vec::new();
    let mut delete = async |path: String, what: String| match session.send(Method::DELETE, &path, None).await {
        Ok(a) if a.status == 200 || a.status == 404 => {}
        Ok(a) => left.push(format!("could not delete {what}: DELETE {path} answered {}: {}", a.status, a.detail())),
        Err(e) => left.push(format!("could not delete {what}: {e}")),
    };
    for id in &todo.keys {
        delete(format!("/api/v1/apikey/{id}"), format!("ephemeral API key {id}")).await;
    }
    for id in &todo.entries {
        delete(format!("{ENTRIES}/{id}"), format!("ephemeral MCP server entry {id}")).await;
    }
    for c in &todo.chats {
        let (flow, chat) = (&c.chatflow, &c.chat);
        if c.in_flight {
            settle(session, c).await;
        }
        delete(format!("/api/v1/chatmessage/{flow}?chatId={chat}"), format!("the chat {chat} of chatflow {flow}"))
            .await;
    }
    left
}

/// How long a run left in flight (Ctrl-C, or cordon gave up waiting) may take to end:
/// Flowise's MCP client waits 60 s for a tool, then the model answers.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(75);

/// Waits until a run left in flight has saved its chat, or `SETTLE` passed: Flowise
/// 3.1.4 saves the chat when the run ends, abort or not (the abort signal is not honoured
/// by a chatflow's tool agent), so deleting it earlier would leave the later save behind.
async fn settle(session: &Session, c: &Chat) {
    let _ = session.send(Method::PUT, &format!("/api/v1/chatmessage/abort/{}/{}", c.chatflow, c.chat), None).await;
    eprintln!("waiting up to {} s for Flowise to end a run still in flight, to delete its chat", SETTLE.as_secs());
    let started = tokio::time::Instant::now();
    let path = format!("/api/v1/chatmessage/{}?chatId={}", c.chatflow, c.chat);
    while started.elapsed() < SETTLE {
        if let Ok(a) = session.send(Method::GET, &path, None).await
            && a.json().and_then(|v| v.as_array().map(|m| !m.is_empty())).unwrap_or(false)
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Takes every pending change of every check (the Ctrl-C cleanup undoes them).
pub fn take_all() -> Vec<Pending> {
    LEDGER.take_all().into_iter().filter(|p| !p.is_empty()).collect()
}
