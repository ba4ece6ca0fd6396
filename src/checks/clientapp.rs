//! What the client-application families (`flowise`, `n8n`) share: running a job inside
//! the client's container namespace against its API, and turning an API error into a
//! verdict class (no answer or a 502-504 from a starting app: not ready; anything else:
//! failed).

use std::future::Future;
use std::rc::Rc;

use crate::check::RunContext;
use crate::checks::kit::vantage::client_target;
use crate::model::Attempt;
use crate::netns::NsView;
use crate::webapp::ApiError;

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
        let nonce = nonce_argument.map(|_| crate::checks::openwebui::nonce());
        let arguments = match (nonce_argument, &nonce) {
            (Some(argument), Some(n)) => crate::checks::openwebui::with_nonce(&read.arguments, argument, n),
            _ => read.arguments.clone(),
        };
        RunAsk { prompt: crate::checks::openwebui::prompt(&read.tool, &arguments), nonce }
    }
}

/// The result a client recorded for the read meets its expectation, and carries the
/// nonce when one was sent: a result this call did not make cannot pass.
pub fn recorded_result_holds(output: &str, read: &crate::config::ReadSpec, nonce: Option<&str>) -> bool {
    crate::checks::openwebui::meets(output, &read.expect) && nonce.is_none_or(|n| output.contains(n))
}

/// The model's reply carries the result back: the nonce, or the expectation.
pub fn reply_carries_result(reply: &str, read: &crate::config::ReadSpec, nonce: Option<&str>) -> bool {
    match nonce {
        Some(n) => reply.contains(n),
        None => crate::checks::openwebui::meets(reply, &read.expect),
    }
}

/// What the scripted model (and a polite real one) answers when the prompt names a tool
/// it was not offered.
pub const NOT_OFFERED: &str = "names none of the tools I was offered";
