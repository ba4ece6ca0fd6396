//! Every observation a check makes inside a namespace, as data: a plan goes in, an
//! observation comes out, both serializable. [`crate::deployment::Deployment::observe`]
//! runs a plan on this node's namespace worker (setns) or ships it as JSON to a carrier
//! container on the task's node, where `cordon agent` runs the very same code.

use std::net::IpAddr;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{arguments, calls, contract, disabled, egress, limits, reach, refusal, route, session, sidecar};
use crate::netns::procfs::{self, Listener};
use crate::netns::{Interface, NsView};

/// A plan of one kind, and the observation it yields.
pub trait Plan: Send + 'static {
    type Observation: Send + 'static;
    fn wrap(self) -> ProbePlan;
    fn unwrap(observation: ProbeObservation) -> Option<Self::Observation>;
}

macro_rules! plans {
    ($($variant:ident($plan:ty) -> $obs:ty),* $(,)?) => {
        /// One observation step, by kind.
        #[derive(Serialize, Deserialize)]
        pub enum ProbePlan { $($variant($plan)),* }

        /// What a [`ProbePlan`] saw, by kind.
        #[derive(Debug, Serialize, Deserialize)]
        pub enum ProbeObservation { $($variant($obs)),* }

        impl ProbePlan {
            /// Runs in the namespace the view belongs to.
            pub async fn observe(self, view: Rc<NsView>) -> ProbeObservation {
                match self { $(ProbePlan::$variant(p) => ProbeObservation::$variant(p.observe(view).await)),* }
            }

            pub fn kind(&self) -> &'static str {
                match self { $(ProbePlan::$variant(_) => stringify!($variant)),* }
            }
        }

        $(impl Plan for $plan {
            type Observation = $obs;
            fn wrap(self) -> ProbePlan { ProbePlan::$variant(self) }
            fn unwrap(o: ProbeObservation) -> Option<$obs> {
                #[allow(unreachable_patterns)]
                match o { ProbeObservation::$variant(x) => Some(x), _ => None }
            }
        })*
    };
}

plans! {
    Route(route::RoutePlan) -> Result<route::RouteObservation, String>,
    Knock(reach::KnockPlan) -> Vec<reach::Knock>,
    Session(session::SessionCheckPlan) -> Result<session::SessionObservation, String>,
    Sessions(session::SessionsPlan) -> Vec<session::SessionRun>,
    Tools(contract::ToolsPlan) -> Vec<contract::ToolsObservation>,
    Refusal(refusal::RefusalPlan) -> Vec<refusal::ReplicaRefusal>,
    Look(disabled::LookPlan) -> Result<disabled::Look, String>,
    Interfaces(sidecar::InterfacesPlan) -> Result<Vec<Interface>, String>,
    Proc(ProcPlan) -> Result<ProcFacts, String>,
    Calls(calls::CallsPlan) -> Vec<calls::SessionCalls>,
    Arguments(arguments::ArgumentsPlan) -> Vec<arguments::ArgumentSession>,
    Limits(limits::LimitsPlan) -> Vec<limits::LimitsSeen>,
    Egress(egress::EgressPlan) -> egress::EgressSeen,
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

    async fn observe(self, _view: Rc<NsView>) -> Result<ProcFacts, String> {
        self.read()
    }
}

/// The effective uid of a process, from `/proc/<pid>/status`.
pub fn effective_uid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// A not-ready attempt's reason, for an observation that crosses as data.
pub fn reason(attempt: crate::model::Attempt) -> String {
    match attempt {
        crate::model::Attempt::NotReady { reason, .. } => reason,
        other => format!("{other:?}"),
    }
}
