//! Requests whose size matters: a request padded to an exact number of bytes (to prove a
//! request-size limit), a listing read page by page with each page's item count and
//! bytes, and a tool call with the size of its reply. The same sessions, eras and hard
//! limits as every other request of [`McpClient`].

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::tools::{self, Page};
use super::{Era, McpClient, McpError, Session, ToolResult, jsonrpc, streamable};

/// The `_meta` key that carries the padding: servers ignore `_meta` keys they do not know.
pub const PADDING_KEY: &str = "cordon/padding";

/// One page of a listing as it arrived.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageSeen {
    pub items: usize,
    /// Bytes of the reply (the JSON body, or the SSE event's data).
    pub bytes: usize,
}

impl McpClient {
    /// Sends `method` in the session's era with a JSON-RPC body of exactly `body_bytes`
    /// bytes (the padding sits in `params._meta`), and returns its `result`. The client
    /// must send nothing else meanwhile: the request id is part of the size.
    pub async fn request_padded(
        &self,
        session: &Session,
        method: &str,
        params: Value,
        body_bytes: usize,
    ) -> Result<Value, McpError> {
        let id = self.next_id.load(Ordering::Relaxed);
        let era = session.era.clone();
        let size = |pad: usize| body_len(&era, id, method, padded(params.clone(), pad));
        let bare = size(0);
        let Some(pad) = body_bytes.checked_sub(bare) else {
            return Err(McpError::Protocol {
                detail: format!("a {method} request cannot be as small as {body_bytes} bytes (it takes {bare})"),
            });
        };
        debug_assert_eq!(size(pad), body_bytes);
        self.request(session, method, padded(params, pad)).await
    }

    /// `tools/list` page by page, as [`McpClient::list_tools`] reads it (same caps), with
    /// every page's item count and size.
    pub async fn list_pages(&self, session: &Session) -> Result<Vec<PageSeen>, McpError> {
        self.listing_bytes.store(0, Ordering::Relaxed);
        let seen = RefCell::new(Vec::new());
        tools::paginate(self.limits.max_pages, self.limits.max_tools, |cursor, room| {
            let seen = &seen;
            async move {
                let params = match cursor {
                    Some(c) => json!({ "cursor": c }),
                    None => json!({}),
                };
                let reply = self.reply(session, "tools/list", params).await?;
                let bytes = reply.text.len();
                let page = Page::from_large_reply(reply.text, reply.id, room).await?;
                seen.borrow_mut().push(PageSeen { items: page.tools.len(), bytes });
                Ok(page)
            }
        })
        .await?;
        Ok(seen.into_inner())
    }

    /// [`McpClient::call_tool`], with the size of the reply that carried the result.
    pub async fn call_tool_sized(
        &self,
        session: &Session,
        name: &str,
        arguments: Value,
    ) -> Result<(ToolResult, usize), McpError> {
        let reply = self.reply(session, "tools/call", json!({ "name": name, "arguments": arguments })).await?;
        let bytes = reply.text.len();
        Ok((tools::parse_tool_result(reply.result("tools/call")?)?, bytes))
    }
}

fn padded(mut params: Value, pad: usize) -> Value {
    if !params.is_object() {
        params = json!({});
    }
    let meta = params.as_object_mut().expect("an object").entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(PADDING_KEY.into(), Value::String("x".repeat(pad)));
    }
    params
}

/// The size of the body a request of this era carries (the 2026-07-28 era adds its
/// `_meta` envelope).
fn body_len(era: &Era, id: u64, method: &str, params: Value) -> usize {
    let params = match era {
        Era::Stateless2026 => streamable::modern(method, params).0,
        _ => params,
    };
    serde_json::to_vec(&jsonrpc::request(id, method, params)).map(|b| b.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_reaches_the_exact_size_in_every_era() {
        for era in [Era::Stateless2026, Era::Stateful { protocol_version: "2025-06-18".into() }, Era::LegacySse] {
            for target in [400usize, 65_537, 1_048_577] {
                let params = json!({ "cursor": null });
                let bare = body_len(&era, 12, "tools/list", padded(params.clone(), 0));
                let body = body_len(&era, 12, "tools/list", padded(params, target - bare));
                assert_eq!(body, target, "{era:?}");
            }
        }
    }
}
