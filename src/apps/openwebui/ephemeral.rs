//! Users, groups and config changes cordon makes in Open WebUI for one check, undone on
//! every path: at the end of the check, when the check's future is dropped (a spawned
//! undo on the namespace's own runtime), and on Ctrl-C (a handler that undoes what is
//! still pending, then ends the run with 130).
//!
//! Every name starts with [`PREFIX`] and this run's tag, so a leftover of a killed run is
//! recognisable as cordon's and as this run's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::api::{Api, ApiError, Token};

pub const PREFIX: &str = "cordon-eph-";
const EMAIL_DOMAIN: &str = "cordon.invalid";

/// This run's tag: in every name cordon gives an ephemeral object.
pub fn run_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| format!("{:08x}", rand::random::<u32>()))
}

/// `cordon-eph-<run>-<what>`.
pub fn name(what: &str) -> String {
    format!("{PREFIX}{}-{what}", run_tag())
}

pub fn email(what: &str) -> String {
    format!("{}@{EMAIL_DOMAIN}", name(what))
}

/// What is still to undo, by check; read by the Ctrl-C handler.
#[derive(Default, Clone, Debug)]
pub struct Pending {
    pub users: Vec<String>,
    pub groups: Vec<String>,
    /// The connections list to put back (a drift a check made).
    pub connections: Option<Value>,
    /// Users made by a login (OIDC), known by email before their id exists.
    pub emails: Vec<String>,
    /// Test users made at the identity provider (by email), for the OIDC case.
    pub idp_users: Vec<String>,
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
            && self.groups.is_empty()
            && self.emails.is_empty()
            && self.connections.is_none()
            && self.idp_users.is_empty()
    }
}

fn pending() -> &'static Mutex<BTreeMap<u64, Pending>> {
    static PENDING: OnceLock<Mutex<BTreeMap<u64, Pending>>> = OnceLock::new();
    PENDING.get_or_init(Default::default)
}

/// Everything cordon creates for one check.
pub struct Ephemeral {
    api: Api,
    admin: Token,
    key: u64,
    done: bool,
}

pub struct User {
    pub id: String,
    /// The session token Open WebUI handed out when it created the user.
    pub token: Token,
    pub label: String,
}

impl Ephemeral {
    pub fn new(api: &Api, admin: &Token) -> Ephemeral {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let key = NEXT.fetch_add(1, Ordering::Relaxed);
        pending().lock().expect("pending lock").insert(key, Pending::default());
        Ephemeral { api: api.clone(), admin: admin.clone(), key, done: false }
    }

    fn note(&self, change: impl FnOnce(&mut Pending)) {
        if let Some(p) = pending().lock().expect("pending lock").get_mut(&self.key) {
            change(p);
        }
    }

    /// A user with role `user`, and a fresh random password (registered for redaction).
    pub async fn user(&self, what: &str) -> Result<User, ApiError> {
        refuse_if_interrupted("/api/v1/auths/add")?;
        let email = email(what);
        let password =
            self.api.redactor().register(&format!("password:{what}"), format!("Pw-{:032x}", rand::random::<u128>()));
        let body = json!({"name": name(what), "email": email, "password": password.expose(), "role": "user"});
        let v = self.api.json(Method::POST, "/api/v1/auths/add", &self.admin, Some(&body)).await?;
        let id = v.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
        if id.is_empty() {
            return Err(unreadable("/api/v1/auths/add", "the answer names no user id"));
        }
        self.note(|p| p.users.push(id.clone()));
        let label = format!("user {}", name(what));
        let token = match v.get("token").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => self.api.token(&label, t),
            _ => self.api.signin(&label, &email, &password).await?,
        };
        Ok(User { id, token, label })
    }

    /// A user a login is about to create: deleted by email, whenever it exists.
    pub fn expect_user(&self, email: &str) {
        self.note(|p| p.emails.push(email.to_string()));
    }

    /// A test user about to be made at the identity provider: the Ctrl-C handler removes
    /// it there (the check itself does on every other path).
    pub fn expect_idp_user(&self, email: &str) {
        self.note(|p| p.idp_users.push(email.to_string()));
    }

    /// Leaves everything pending (for a later job in another namespace, e.g. after a
    /// restart) and returns the key to [`Ephemeral::resume`] it with.
    pub fn detach(mut self) -> u64 {
        self.done = true;
        self.key
    }

    pub fn resume(api: &Api, admin: &Token, key: u64) -> Ephemeral {
        pending().lock().expect("pending lock").entry(key).or_default();
        Ephemeral { api: api.clone(), admin: admin.clone(), key, done: false }
    }

    pub async fn group(&self, what: &str) -> Result<String, ApiError> {
        refuse_if_interrupted("/api/v1/groups/create")?;
        let body = json!({"name": name(what), "description": "made by cordon for one check; removed after it"});
        let v = self.api.json(Method::POST, "/api/v1/groups/create", &self.admin, Some(&body)).await?;
        let id = v.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
        if id.is_empty() {
            return Err(unreadable("/api/v1/groups/create", "the answer names no group id"));
        }
        self.note(|p| p.groups.push(id.clone()));
        Ok(id)
    }

    /// Remembers the connections list to restore if the check does not get to undo its drift.
    pub fn drifting(&self, original: Value) {
        self.note(|p| p.connections = Some(original));
    }

    /// The drift was undone (by a restart that reloaded the declared state).
    pub fn drift_undone(&self) {
        self.note(|p| p.connections = None);
    }

    /// Undoes everything; returns what could not be undone.
    pub async fn cleanup(mut self) -> Vec<String> {
        self.done = true;
        let todo = pending().lock().expect("pending lock").remove(&self.key).unwrap_or_default();
        undo(&self.api, &self.admin, &todo).await
    }
}

impl Drop for Ephemeral {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Dropped mid-check (the attempt was cut): undo on the namespace's own runtime.
        let todo = pending().lock().expect("pending lock").remove(&self.key).unwrap_or_default();
        let (api, admin) = (self.api.clone(), self.admin.clone());
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::task::spawn_local(async move {
                let left = undo(&api, &admin, &todo).await;
                for l in left {
                    eprintln!("{}", api.redactor().redact(&format!("warning: {l}")));
                }
            });
        }
    }
}

/// Deletes users and groups and restores connections; returns what failed.
pub async fn undo(api: &Api, admin: &Token, todo: &Pending) -> Vec<String> {
    let mut left = Vec::new();
    if let Some(original) = &todo.connections {
        let body = json!({"TOOL_SERVER_CONNECTIONS": original});
        if let Err(e) = api.json(Method::POST, "/api/v1/configs/tool_servers", admin, Some(&body)).await {
            left.push(format!("could not restore the connections cordon changed: {e}"));
        }
    }
    let mut users = todo.users.clone();
    for email in &todo.emails {
        match super::gather::user_id_by_email(api, admin, email).await {
            Ok(Some(id)) if !users.contains(&id) => users.push(id),
            Ok(_) => {}
            Err(e) => left.push(format!("could not look up ephemeral user {email}: {e}")),
        }
    }
    for id in &users {
        if let Err(e) = api.json(Method::DELETE, &format!("/api/v1/users/{id}"), admin, None).await {
            left.push(format!("could not delete ephemeral user {id}: {e}"));
        }
    }
    for id in &todo.groups {
        if let Err(e) = api.json(Method::DELETE, &format!("/api/v1/groups/id/{id}/delete"), admin, None).await {
            left.push(format!("could not delete ephemeral group {id}: {e}"));
        }
    }
    left
}

/// After Ctrl-C nothing new is made: the handler undoes what exists.
pub fn refuse_if_interrupted(path: &str) -> Result<(), ApiError> {
    if crate::interrupt::interrupted() { Err(unreadable(path, "interrupted (Ctrl-C)")) } else { Ok(()) }
}

fn unreadable(path: &str, detail: &str) -> ApiError {
    ApiError::Unreadable { method: "POST".into(), path: path.into(), detail: detail.into() }
}

/// How the Ctrl-C handler reaches Open WebUI: set once per run by the family.
pub type Undoer = Arc<dyn Fn(Vec<Pending>) -> futures_util::future::BoxFuture<'static, Vec<String>> + Send + Sync>;

/// Registers with the run's Ctrl-C handler (`crate::interrupt`) an undo of every pending
/// change through `undoer`. Call it from the run's tokio runtime.
pub fn undo_on_ctrl_c(undoer: Undoer) {
    crate::interrupt::on_interrupt(
        "Open WebUI",
        Arc::new(move || {
            let undoer = undoer.clone();
            Box::pin(async move {
                // Checks still running may add to the list until they notice: undo in rounds.
                let mut left = Vec::new();
                for _ in 0..3 {
                    let todo: Vec<Pending> =
                        std::mem::take(&mut *pending().lock().expect("pending lock")).into_values().collect();
                    if todo.iter().all(Pending::is_empty) {
                        break;
                    }
                    left = undoer(todo).await;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                left
            })
        }),
    );
}
