//! What the client-application families (`openwebui`, `flowise`, `n8n`) share: running a
//! job inside the client's container namespace against its API, turning an API error into
//! a verdict class (no answer or a 502-504 from a starting app: not ready; anything else:
//! failed), and the read a client is asked to run: its prompt, its nonce, and whether
//! what came back meets the read's expectation.

use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::apps::webapp::ApiError;
use crate::check::RunContext;
use crate::checks::kit::vantage::client_target;
use crate::config::Expectation;
use crate::model::{Attempt, Finding};
use crate::netns::NsView;

/// What differs between the client apps whose state a family checks through their API:
/// how a job signs in, and what Ctrl-C undoes there. Running a job signed in
/// ([`run_signed_in`]) and registering the undo are written once, below.
pub trait ClientApp: Clone + Send + Sync + 'static {
    /// The app's name in messages ("Flowise").
    const NAME: &'static str;
    /// What a job works through: a signed-in session.
    type Session: 'static;
    /// What the family leaves in the app until it undoes it itself.
    type Pending: Send + 'static;
    /// What signing in needs, owned, from the scenario's block of `client`.
    fn for_client(ctx: &RunContext, client: &str) -> Self;
    /// Signs in, from inside the app's namespace.
    fn sign_in(&self) -> impl Future<Output = Result<Self::Session, ApiError>>;
    /// Everything still pending, taken: Ctrl-C undoes each once.
    fn take_pending() -> Vec<Self::Pending>;
    /// Undoes `pending` from inside the app's namespace: what could not be undone, or why
    /// nothing could be.
    fn undo(&self, pending: Vec<Self::Pending>) -> impl Future<Output = Result<Vec<String>, String>>;
    /// A lock jobs take in turn, for an app that answers concurrent writes with errors.
    fn one_at_a_time() -> Option<&'static tokio::sync::Mutex<()>> {
        None
    }
}

/// Runs `job` signed in to `client`'s app, in its container's namespace, with Ctrl-C
/// registered to undo what the family leaves there.
pub async fn run_signed_in<A, F, Fut, T>(ctx: &RunContext, client: &str, what: &str, job: F) -> Result<T, Attempt>
where
    A: ClientApp,
    F: FnOnce(Rc<NsView>, A::Session) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, ApiError>> + 'static,
    T: Send + 'static,
{
    let _alone = match A::one_at_a_time() {
        Some(lock) => Some(lock.lock().await),
        None => None,
    };
    undo_on_ctrl_c::<A>(ctx, client);
    let app = A::for_client(ctx, client);
    let out = run_in(ctx, client, what, move |view| async move {
        let session = app.sign_in().await?;
        job(view, session).await
    })
    .await;
    crate::interrupt::hold_if_interrupted().await;
    out
}

fn undo_on_ctrl_c<A: ClientApp>(ctx: &RunContext, client: &str) {
    let Some(deployment) = ctx.deployment.clone() else { return };
    let (scenario, client, app) = (ctx.scenario.clone(), client.to_string(), A::for_client(ctx, client));
    crate::interrupt::on_interrupt(
        A::NAME,
        Arc::new(move || {
            let (deployment, scenario, client, app) =
                (deployment.clone(), scenario.clone(), client.clone(), app.clone());
            Box::pin(async move {
                let todo = A::take_pending();
                if todo.is_empty() {
                    return vec![];
                }
                let Ok(target) = client_target(&deployment.topology(), &scenario, &client) else {
                    return vec![format!("no running {} container to undo {} change(s) in", A::NAME, todo.len())];
                };
                match deployment.run_in(&target, "cleanup", move |_| async move { app.undo(todo).await }).await {
                    Ok(Ok(left)) => left,
                    Ok(Err(e)) => vec![format!("could not undo in {}: {e}", A::NAME)],
                    Err(_) => vec![format!("cannot enter the {} container", A::NAME)],
                }
            }) as BoxFuture<'static, Vec<String>>
        }),
    );
}

/// The evidence of one run through a client app: what was asked where and how it
/// answered, a line per tool the app ran, the model's reply (`who` says whose), and what
/// could not be undone.
pub fn run_evidence(asked: String, ran: Vec<String>, reply: Option<(&str, &str)>, left: Vec<String>) -> Vec<String> {
    let mut evidence = vec![asked];
    evidence.extend(ran);
    if let Some((who, reply)) = reply {
        evidence.push(format!("{who} {reply:?}"));
    }
    evidence.extend(warnings(left));
    evidence
}

/// What could not be undone, as evidence lines.
pub fn warnings(left: Vec<String>) -> Vec<String> {
    left.into_iter().map(|l| format!("warning: {l}")).collect()
}

pub fn api_attempt(what: &str, e: &ApiError) -> Attempt {
    let reason = format!("{what}: {e}");
    if e.is_not_ready() { Attempt::not_ready(reason, vec![]) } else { Attempt::fail(reason, vec![]) }
}

/// Runs `job` in the namespace of `client`'s running container.
pub async fn run_in<F, Fut, T>(ctx: &RunContext, client: &str, what: &str, job: F) -> Result<T, Attempt>
where
    F: FnOnce(Rc<NsView>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, ApiError>> + 'static,
    T: Send + 'static,
{
    let Some(deployment) = ctx.deployment.clone() else {
        return Err(Attempt::fail(format!("{what}: this family runs in compose mode only"), vec![]));
    };
    let target = client_target(&deployment.topology(), &ctx.scenario, client)?;
    match deployment.run_in(&target, &format!("client {client}"), job).await? {
        Ok(out) => Ok(out),
        Err(e) => Err(api_attempt(what, &e)),
    }
}

/// A redactor that knows only the scenario's credentials, by id: what is found in a
/// field through it is named by the credential, never shown.
pub fn credential_index(ctx: &RunContext) -> crate::secret::Redactor {
    let index = crate::secret::Redactor::new();
    for (id, secret) in &ctx.scenario.credentials {
        index.register(id, secret.expose().to_string());
    }
    index
}

/// What a run asks for: the prompt (Open WebUI's plain-language one, which any
/// tool-calling model follows, the scripted one included), and the nonce appended to the
/// read's echoed argument when the scenario names one.
pub struct RunAsk {
    pub prompt: String,
    pub nonce: Option<String>,
}

impl RunAsk {
    pub fn of(read: &crate::config::ReadSpec, nonce_argument: Option<&str>) -> RunAsk {
        let nonce = nonce_argument.map(|_| nonce());
        let arguments = match (nonce_argument, &nonce) {
            (Some(argument), Some(n)) => with_nonce(&read.arguments, argument, n),
            _ => read.arguments.clone(),
        };
        RunAsk { prompt: prompt(&read.tool, &arguments), nonce }
    }
}

/// The result a client recorded for the read meets its expectation, and carries the
/// nonce when one was sent: a result this call did not make cannot pass.
pub fn recorded_result_holds(output: &str, read: &crate::config::ReadSpec, nonce: Option<&str>) -> bool {
    meets(output, &read.expect) && nonce.is_none_or(|n| output.contains(n))
}

/// The model's reply carries the result back: the nonce, or the expectation.
pub fn reply_carries_result(reply: &str, read: &crate::config::ReadSpec, nonce: Option<&str>) -> bool {
    match nonce {
        Some(n) => reply.contains(n),
        None => meets(reply, &read.expect),
    }
}

/// What the scripted model (and a polite real one) answers when the prompt names a tool
/// it was not offered.
pub const NOT_OFFERED: &str = "names none of the tools I was offered";

/// `cordon-nonce-` and 16 random hex digits, fresh for each call.
pub fn nonce() -> String {
    crate::checks::kit::upstream::nonce()
}

/// The read's arguments with `nonce` appended to the value of `argument`.
pub fn with_nonce(arguments: &Value, argument: &str, nonce: &str) -> Value {
    let mut out = arguments.clone();
    if let Some(Value::String(v)) = out.get_mut(argument) {
        *v = format!("{v} {nonce}");
    }
    out
}

/// The user message: which tool, with exactly which arguments, and to answer with its
/// result verbatim.
pub fn prompt(function: &str, arguments: &Value) -> String {
    format!(
        "Call the tool `{function}` once, with exactly these arguments: {arguments}\n\
         Then answer with the tool's result, quoted verbatim, and nothing else."
    )
}

/// A tool's result as a client passed it on (text, or JSON wrapped in content items)
/// meets the read's expectation.
pub(crate) fn meets(text: &str, expect: &Expectation) -> bool {
    match expect {
        Expectation::TextContains(t) => text.contains(t.as_str()),
        Expectation::JsonSubset(subset) => json_values_in(text).iter().any(|v| contains_subset(v, subset)),
    }
}

/// Every JSON value in `text`: the whole, each line, and any embedded `{...}` object
/// (Open WebUI may wrap a tool's output).
fn json_values_in(text: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut push = |s: &str| {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(s.trim()) {
            if let Some(inner) = v.as_str().and_then(|s| serde_json::from_str(s).ok()) {
                out.push(inner);
            }
            if let Some(items) = v.as_array() {
                for item in items {
                    if let Some(inner) =
                        item.get("text").and_then(|t| t.as_str()).and_then(|t| serde_json::from_str(t).ok())
                    {
                        out.push(inner);
                    }
                }
            }
            out.push(v);
        }
    };
    push(text);
    for line in text.lines() {
        push(line);
    }
    if let (Some(a), Some(b)) = (text.find('{'), text.rfind('}'))
        && a < b
    {
        push(&text[a..=b]);
    }
    out
}

fn contains_subset(value: &serde_json::Value, subset: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (value, subset) {
        (Value::Object(v), Value::Object(s)) => {
            s.iter().all(|(k, sv)| v.get(k).is_some_and(|vv| contains_subset(vv, sv)))
        }
        (v, s) => v == s,
    }
}

/// Ends a finding with the read's expectation (`(text containing "hi")`) and, when the call
/// carried one, its nonce.
pub fn expecting(f: Finding, expect: &Expectation, nonce: Option<&str>) -> Finding {
    let f = match expect {
        Expectation::TextContains(t) => f.suffixed("(text containing {expected})").fact("expected", format!("{t:?}")),
        Expectation::JsonSubset(v) => f.suffixed("(JSON containing {expected})").fact("expected", v),
    };
    match nonce {
        Some(n) => f.suffixed(" with this call's nonce {nonce}").fact("nonce", n),
        None => f,
    }
}
