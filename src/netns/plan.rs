//! An observation as data: a [`Plan`] goes into a namespace and its observation comes
//! out, both serializable, so the same plan runs here after `setns` or in the carrier of
//! another node (`cordon agent`, fed [`CarriedPlan`] lines, answering
//! [`CarriedObservation`] lines). This layer knows plans only by this trait; the families
//! write them, and the agent's registry (`checks::plan`) names every kind.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::rc::Rc;

use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::NsView;
use super::listener::Listener;
use super::procfs;

/// A plan of one kind, and the observation it yields inside the namespace it runs in.
pub trait Plan: Serialize + DeserializeOwned + Send + 'static {
    type Observation: Serialize + DeserializeOwned + Send + 'static;
    /// The plan's name on the wire to a carrier: `{KIND: plan}` in, `{KIND: observation}` out.
    const KIND: &'static str;
    fn observe(self, view: Rc<NsView>) -> LocalBoxFuture<'static, Self::Observation>;
}

/// The plan as a carrier reads it.
pub fn encode<P: Plan>(plan: &P) -> Result<Vec<u8>, String> {
    serde_json::to_vec(&encode_value(plan)?).map_err(|e| format!("encoding the {} plan: {e}", P::KIND))
}

/// [`encode`], as the value a [`CarriedPlan`] holds (`{KIND: plan}`).
pub fn encode_value<P: Plan>(plan: &P) -> Result<serde_json::Value, String> {
    let value = serde_json::to_value(plan).map_err(|e| format!("encoding the {} plan: {e}", P::KIND))?;
    Ok(serde_json::Value::Object(serde_json::Map::from_iter([(P::KIND.to_string(), value)])))
}

/// The observation a carrier answered for a plan of kind `P`.
pub fn decode<P: Plan>(bytes: &[u8]) -> Result<P::Observation, String> {
    decode_value::<P>(serde_json::from_slice(bytes).map_err(|e| e.to_string())?)
}

/// [`decode`], from the observation as a carrier's answer holds it (`{KIND: observation}`).
pub fn decode_value<P: Plan>(tagged: serde_json::Value) -> Result<P::Observation, String> {
    let mut tagged: BTreeMap<String, serde_json::Value> = serde_json::from_value(tagged).map_err(|e| e.to_string())?;
    let value = tagged.remove(P::KIND).ok_or_else(|| {
        format!("another kind of observation ({})", tagged.keys().cloned().collect::<Vec<_>>().join(", "))
    })?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// One line cordon writes to a node's carrier: a plan (`{KIND: plan}`) for one container
/// of that node, named by its id and by its init as that node's host sees it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CarriedPlan {
    /// Pairs the answer with its plan: a carrier answers plans as they finish.
    pub ask: u64,
    pub container: String,
    pub pid: u32,
    /// Who the probe stands for, for the carrier's own errors ("client webui (…)").
    pub label: String,
    pub plan: serde_json::Value,
}

/// One line a carrier answers: the observation (`{KIND: observation}`), or why there is none.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CarriedObservation {
    pub ask: u64,
    pub observed: Result<serde_json::Value, CarriedError>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CarriedError {
    /// The container stopped or restarted (its pid is gone, or is no longer the
    /// container's): the caller re-reads the engine.
    Gone(String),
    /// Anything else: a plan the carrier cannot read, a namespace it cannot enter.
    Failed(String),
}

impl std::fmt::Display for CarriedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CarriedError::Gone(why) | CarriedError::Failed(why) => f.write_str(why),
        }
    }
}

/// What a namespace's own `/proc` says: read through `/proc/<pid>` from the host, or by
/// the agent at pid 1 of the task's pid namespace, which the carrier joins.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcPlan {
    pub pid: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcFacts {
    pub listeners: Vec<Listener>,
    pub gateways: Vec<IpAddr>,
    /// Effective uid of the process, from `/proc/<pid>/status`.
    pub uid: Option<u32>,
}

impl ProcPlan {
    pub fn read(&self) -> Result<ProcFacts, String> {
        let listeners = procfs::listeners(self.pid).map_err(|e| e.to_string())?;
        let gateways = procfs::default_gateways(self.pid).unwrap_or_default();
        Ok(ProcFacts { listeners, gateways, uid: effective_uid(self.pid) })
    }
}

impl Plan for ProcPlan {
    type Observation = Result<ProcFacts, String>;
    const KIND: &'static str = "Proc";
    fn observe(self, _view: Rc<NsView>) -> LocalBoxFuture<'static, Self::Observation> {
        Box::pin(async move { self.read() })
    }
}

/// The effective uid of a process, from `/proc/<pid>/status`.
pub fn effective_uid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_crosses_tagged_with_its_kind_and_another_kind_is_refused() {
        let bytes = encode(&ProcPlan { pid: 1 }).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), r#"{"Proc":{"pid":1}}"#);
        let answer = br#"{"Proc":{"Ok":{"listeners":[],"gateways":[],"uid":0}}}"#;
        assert_eq!(decode::<ProcPlan>(answer).unwrap().unwrap().uid, Some(0));
        let err = decode::<ProcPlan>(br#"{"Route":{"Err":"x"}}"#).unwrap_err();
        assert!(err.contains("another kind of observation (Route)"), "{err}");
    }
}
