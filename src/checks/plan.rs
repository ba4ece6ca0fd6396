//! Every kind of plan a carrier may be sent, by name: the registry `cordon agent` reads a
//! plan through. A family writes its plan and observation types and their `observe`; this
//! list makes each a [`Plan`] of its own kind, so cordon's side of a carrier (the
//! deployment) needs no list of kinds at all.

use std::rc::Rc;

use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};

use super::contract::{arguments, calls, limits};
use super::kit::door;
use super::kit::refusal;
use super::sidecar::egress;
use super::{contract, disabled, reach, route, session, sidecar};
use crate::netns::plan::{Plan, ProcFacts, ProcPlan};
use crate::netns::{Interface, NsView};

macro_rules! plans {
    ($($variant:ident($plan:ty) -> $obs:ty),* $(,)?) => {
        /// One observation step, by kind, as a carrier reads it.
        #[derive(Serialize, Deserialize)]
        pub enum ProbePlan { $($variant($plan)),*, Proc(ProcPlan) }

        /// What a [`ProbePlan`] saw, by kind.
        #[derive(Debug, Serialize, Deserialize)]
        pub enum ProbeObservation { $($variant($obs)),*, Proc(Result<ProcFacts, String>) }

        impl ProbePlan {
            /// Runs in the namespace the view belongs to.
            pub async fn observe(self, view: Rc<NsView>) -> ProbeObservation {
                match self {
                    $(ProbePlan::$variant(p) => ProbeObservation::$variant(Plan::observe(p, view).await),)*
                    ProbePlan::Proc(p) => ProbeObservation::Proc(Plan::observe(p, view).await),
                }
            }
        }

        $(impl Plan for $plan {
            type Observation = $obs;
            const KIND: &'static str = stringify!($variant);
            fn observe(self, view: Rc<NsView>) -> LocalBoxFuture<'static, $obs> {
                Box::pin(<$plan>::observe(self, view))
            }
        })*
    };
}

plans! {
    Route(route::RoutePlan) -> Result<route::RouteObservation, String>,
    Knock(door::KnockPlan) -> Vec<door::Knock>,
    Outsiders(reach::outsiders::OutsiderPlan) -> Vec<reach::outsiders::OutsiderSeen>,
    Session(session::SessionCheckPlan) -> Result<session::SessionObservation, String>,
    Sessions(crate::checks::kit::sessions::SessionsPlan) -> Vec<crate::checks::kit::sessions::SessionRun>,
    Tools(contract::ToolsPlan) -> Vec<contract::ToolsObservation>,
    Refusal(refusal::RefusalPlan) -> Vec<refusal::ReplicaRefusal>,
    Look(disabled::LookPlan) -> Result<disabled::Look, String>,
    Interfaces(sidecar::InterfacesPlan) -> Result<Vec<Interface>, String>,
    Calls(calls::CallsPlan) -> Vec<calls::SessionCalls>,
    Arguments(arguments::ArgumentsPlan) -> Vec<arguments::ArgumentSession>,
    Limits(limits::LimitsPlan) -> Vec<limits::LimitsSeen>,
    Egress(egress::EgressPlan) -> egress::EgressSeen,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agent reads what the deployment writes: `{KIND: plan}` is the registry's form.
    #[test]
    fn the_registry_reads_what_a_plan_encodes() {
        let bytes = crate::netns::plan::encode(&ProcPlan { pid: 7 }).unwrap();
        let plan: ProbePlan = serde_json::from_slice(&bytes).unwrap();
        assert!(matches!(plan, ProbePlan::Proc(ProcPlan { pid: 7 })));
        let observed = serde_json::to_vec(&ProbeObservation::Proc(Err("gone".into()))).unwrap();
        assert_eq!(crate::netns::plan::decode::<ProcPlan>(&observed).unwrap(), Err("gone".to_string()));
    }
}
