//! `openwebui::tool_call::<provider>`: Open WebUI's own MCP client runs the provider's
//! read for a user of the provider's group, in a chat, and the model gets the result back.
//!
//! Proof rests on what Open WebUI recorded, never on what the model wrote: the user's
//! `/specs` shows the tool Open WebUI can offer; the saved assistant message must hold a
//! `function_call` of `<provider>_<tool>` and the `function_call_output` Open WebUI got from
//! the provider, which must meet the read's expectation. Where the read can carry one (a
//! `nonce_arguments` entry: an argument its result echoes), a fresh nonce goes into the
//! arguments and must come back in that recorded result, so a result not made by this
//! call cannot pass. Last, the model's reply must carry the result (the nonce, or the
//! expectation): it got it back. A model that never calls the tool and writes the
//! expected text itself leaves no record and fails, even when that text is in the prompt.
//!
//! The prompt is plain language any model that does tool calling can follow (see
//! [`prompt`]); cordon's scripted model follows it the same way.

use std::rc::Rc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::Signin;
use super::probes::Site;
use crate::apps::clientapp::warnings;
use crate::apps::clientapp::{meets, nonce, prompt, with_nonce};
use crate::apps::openwebui::chat::{self, CallSeen, ChatSeen, ToolCallAsk};
use crate::apps::openwebui::ephemeral::Ephemeral;
use crate::apps::openwebui::gather::{self, group_ids};
use crate::check::{Probe, RunContext, settled};
use crate::config::{Expectation, ReadSpec};
use crate::model::{Attempt, Finding, FindingKind};
use crate::netns::NsView;

const CHAT_BUDGET: Duration = Duration::from_secs(60);

/// `openwebui::tool_call::<provider>`: a chat whose model calls the provider's read tool.
pub struct ToolCall {
    pub site: Site,
    pub provider: String,
    pub group: String,
    pub model: String,
    pub read: ReadSpec,
    /// The read's argument whose value the result echoes, if any.
    pub nonce_argument: Option<String>,
}

/// What cordon asked for: judged against what Open WebUI recorded.
#[derive(Clone, Debug)]
pub struct Asked {
    /// The function as the model sees it, `<provider>_<tool>`.
    pub function: String,
    /// The tool as the provider serves it.
    pub tool: String,
    pub nonce: Option<String>,
    pub expect: Expectation,
}

impl Probe for ToolCall {
    fn run<'a>(&'a self, ctx: &'a RunContext) -> BoxFuture<'a, Attempt> {
        settled(async move {
            let _shared = self.site.turns.shared().await;
            let function = format!("{}_{}", self.provider, self.read.tool);
            let nonce = self.nonce_argument.as_ref().map(|_| nonce());
            let arguments = match (&self.nonce_argument, &nonce) {
                (Some(argument), Some(n)) => with_nonce(&self.read.arguments, argument, n),
                _ => self.read.arguments.clone(),
            };
            let asked = Asked {
                function: function.clone(),
                tool: self.read.tool.clone(),
                nonce: nonce.clone(),
                expect: self.read.expect.clone(),
            };
            let (provider, group, model) = (self.provider.clone(), self.group.clone(), self.model.clone());
            let (tool, prompt) = (self.read.tool.clone(), prompt(&function, &arguments));
            let job = move |_: Rc<NsView>, signin: Signin| async move {
                let (api, admin) = signin.open().await?;
                let eph = Ephemeral::new(&api, &admin);
                let seen = async {
                    let user = eph.user(&format!("call-{provider}")).await?;
                    let label = format!("{} in `{group}`", user.label);
                    let mut seen = ChatSeen::new(&label, &function);
                    let Some(gid) = group_ids(&gather::groups(&api, &admin).await?, &group).first().cloned() else {
                        seen.error = Some(format!("group `{group}` does not exist in Open WebUI"));
                        return Ok(seen);
                    };
                    gather::add_member(&api, &admin, &gid, &user.id).await?;
                    let offered = gather::specs(&api, &user.token, &provider).await?;
                    let offers = offered.tools.as_ref().is_some_and(|t| t.contains(&tool));
                    seen.offered = Some(offered);
                    if offers {
                        let ask = ToolCallAsk { model, server: provider, prompt };
                        chat::chat_tool_call(&api, &user.token, &ask, CHAT_BUDGET, &mut seen).await;
                    }
                    Ok(seen)
                }
                .await;
                let left = eph.cleanup().await;
                seen.map(|s| (s, left))
            };
            let (seen, left) = self.site.run(ctx, "running a chat with a tool call", job).await?;
            let mut evidence = evidence(&seen, &self.model, nonce.as_deref());
            evidence.extend(warnings(left));
            Ok(Attempt::from_findings(judge_tool_call(&self.provider, &seen, &asked), evidence))
        })
    }
}

fn evidence(seen: &ChatSeen, model: &str, nonce: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(o) = &seen.offered {
        let tools = o.tools.as_ref().map_or(o.detail.clone(), |t| format!("[{}]", t.join(", ")));
        out.push(format!("{}: /specs answered {} {tools}", seen.user, o.status));
    }
    out.push(format!(
        "{} asked {model} to call {}{}: {} after {} ms{}",
        seen.user,
        seen.tool,
        nonce.map_or(String::new(), |n| format!(" with nonce {n}")),
        seen.reply.as_deref().map_or("no reply".to_string(), |r| format!("reply {r:?}")),
        seen.waited_ms,
        seen.error.as_deref().map_or(String::new(), |e| format!(" ({e})"))
    ));
    for c in &seen.calls {
        out.push(format!(
            "Open WebUI recorded a call of {} with {}: {}",
            c.name,
            c.arguments,
            c.result.as_deref().map_or("no result".to_string(), |r| format!("result {r:?}"))
        ));
    }
    if seen.done && seen.calls.is_empty() {
        out.push("Open WebUI recorded no tool call".into());
    }
    out
}

/// Pure: the record proves the provider ran the call and the model got its result.
pub fn judge_tool_call(provider: &str, seen: &ChatSeen, asked: &Asked) -> Vec<Finding> {
    let fail = |step: &str, template: &'static str| {
        Finding::new(FindingKind::ToolCallFailed, template)
            .fact("provider", provider)
            .fact("step", step)
            .fact("function", &asked.function)
    };
    if let Some(failed) = not_offered(seen, asked, &fail) {
        return vec![failed];
    }
    let Some(reply) = &seen.reply else {
        let failed = match &seen.error {
            Some(e) => fail("reply", "no reply to a chat asking for `{function}` after {waited_ms} ms: {error}")
                .fact("error", e),
            None => {
                fail("reply", "no reply to a chat asking for `{function}` after {waited_ms} ms: no reply was saved")
            }
        };
        return vec![failed.fact("waited_ms", seen.waited_ms)];
    };
    let call = match the_call(seen, asked, reply, &fail) {
        Ok(call) => call,
        Err(failed) => return vec![failed],
    };
    let Some(result) = &call.result else {
        return vec![fail("result", "Open WebUI recorded no result of its call of `{function}`")];
    };
    if let Some(n) = &asked.nonce
        && !result.contains(n.as_str())
    {
        return vec![
            fail(
                "result",
                "the result Open WebUI recorded for `{function}` does not carry the nonce sent in its arguments, so this call did not make it: {result}",
            )
            .fact("result", format!("{result:?}")),
        ];
    }
    if !meets(result, &asked.expect) {
        return vec![
            fail(
                "result",
                "the result of `{function}` that Open WebUI recorded does not meet the read's expectation: {result}",
            )
            .fact("result", format!("{result:?}")),
        ];
    }
    let got_back = match &asked.nonce {
        Some(n) => reply.contains(n.as_str()),
        None => meets(reply, &asked.expect),
    };
    if !got_back {
        return vec![
            fail("reply", "the model never got the result of `{function}` back: its reply was {reply}")
                .fact("reply", format!("{reply:?}")),
        ];
    }
    vec![]
}

/// A step's finding: `step` and the template, with the provider and function as facts.
type Fail<'a> = dyn Fn(&str, &'static str) -> Finding + 'a;

/// Open WebUI did not offer the function to the model (its `/specs` for the user).
fn not_offered(seen: &ChatSeen, asked: &Asked, fail: &Fail) -> Option<Finding> {
    let offered = seen.offered.as_ref()?;
    let tools = offered.tools.as_deref().unwrap_or_default();
    if offered.status == 200 && tools.contains(&asked.tool) {
        return None;
    }
    let failed = if offered.status == 200 {
        fail("offered", "Open WebUI did not offer `{function}` to the model: for {user}, its tools are [{tools}]")
            .fact("tools", tools.join(", "))
    } else {
        fail(
            "offered",
            "Open WebUI did not offer `{function}` to the model: for {user}, /specs answered {status}: {detail}",
        )
        .fact("status", offered.status)
        .fact("detail", &offered.detail)
    };
    Some(failed.fact("user", &seen.user))
}

/// The recorded call of the function this chat asked for: the one carrying the nonce when
/// there is one.
fn the_call<'s>(seen: &'s ChatSeen, asked: &Asked, reply: &str, fail: &Fail) -> Result<&'s CallSeen, Finding> {
    let f = &asked.function;
    let calls: Vec<&CallSeen> = seen.calls.iter().filter(|c| c.name == *f).collect();
    if calls.is_empty() {
        let others: Vec<&str> = seen.calls.iter().map(|c| c.name.as_str()).collect();
        let failed = if others.is_empty() {
            fail(
                "call",
                "the model never called `{function}`: Open WebUI recorded no tool call, so nothing ran at the provider (the model answered {reply})",
            )
        } else {
            fail(
                "call",
                "the model never called `{function}`: Open WebUI recorded calls of [{calls}] only, so nothing ran at the provider (the model answered {reply})",
            )
            .fact("calls", others.join(", "))
        };
        return Err(failed.fact("reply", format!("{reply:?}")));
    }
    match &asked.nonce {
        Some(n) => calls.iter().find(|c| c.arguments.contains(n.as_str())).copied().ok_or_else(|| {
            fail(
                "arguments",
                "the model called `{function}` with other arguments than asked ({arguments}): the nonce is not in them",
            )
            .fact("arguments", &calls[0].arguments)
        }),
        None => Ok(calls[0]),
    }
}
