//! Swarm: who may answer at a disabled surface's leftover addresses. A packet to an overlay
//! address the looking container is not on leaves through `docker_gwbridge` and may be
//! answered upstream, so a connect or an HTTP status there proves nothing: an answer
//! counts only when it is the one the task gives from its own namespace (as reach judges).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use crate::checks::kit::door::Answer;

/// Whose an address is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A task of the disabled service (its container name).
    Task(String),
    /// One of the service's virtual IPs: any task behind it may answer.
    Vip,
}

/// The leftover addresses' owners, and how each task answers from its own namespace.
#[derive(Clone, Debug, Default)]
pub struct Owners {
    /// (container, port) → its own answer.
    pub refs: BTreeMap<(String, u16), Answer>,
    pub of: BTreeMap<IpAddr, Owner>,
}

impl Owners {
    /// Whether what answered at `addr` is the owner: Ok with the evidence line when it is
    /// (or when no task owns the address: then nothing tells it apart, and it counts),
    /// Err with the evidence line when something else answered.
    pub fn attribute(&self, addr: SocketAddr, seen: Option<&Answer>) -> Result<String, String> {
        let Some(owner) = self.of.get(&addr.ip()) else {
            return Ok(format!("{addr} is no task's address"));
        };
        let own: Vec<(&String, &Answer)> = self
            .refs
            .iter()
            .filter(|((container, port), _)| {
                *port == addr.port()
                    && match owner {
                        Owner::Vip => true,
                        Owner::Task(task) => task == container,
                    }
            })
            .map(|((c, _), a)| (c, a))
            .collect();
        let shown = seen.map_or("no answer".to_string(), Answer::to_string);
        match own.iter().find(|(_, a)| Some(*a) == seen) {
            Some((container, _)) => Ok(format!("{addr}: the answer is {container}'s own ({shown})")),
            None => Err(format!(
                "{addr}: TCP opened, but the answer ({shown}) is {}: something else answered (upstream of docker_gwbridge), not the disabled service",
                match own.first() {
                    Some((c, a)) => format!("not {c}'s own ({a})"),
                    None => "not a task's (no task of the service runs)".to_string(),
                }
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: &str) -> Answer {
        Answer { status: Some(status.into()), headers: vec!["content-type".into()], body_sha256: "ab".repeat(32) }
    }

    #[test]
    fn only_the_tasks_own_answer_counts() {
        let owners = Owners {
            refs: BTreeMap::from([(("wiki_1".to_string(), 8000), answer("HTTP/1.1 401 Unauthorized"))]),
            of: BTreeMap::from([("10.9.0.5".parse().unwrap(), Owner::Task("wiki_1".into()))]),
        };
        let at: SocketAddr = "10.9.0.5:8000".parse().unwrap();
        assert!(owners.attribute(at, Some(&answer("HTTP/1.1 401 Unauthorized"))).is_ok());
        let upstream = owners.attribute(at, Some(&answer("HTTP/1.1 404 Not Found"))).unwrap_err();
        assert!(upstream.contains("something else answered"), "{upstream}");
        assert!(owners.attribute("10.9.0.6:8000".parse().unwrap(), None).is_ok(), "no task's: it counts");
    }

    #[test]
    fn a_vip_with_no_task_behind_it_is_never_the_service() {
        let owners = Owners { refs: BTreeMap::new(), of: BTreeMap::from([("10.9.0.2".parse().unwrap(), Owner::Vip)]) };
        let seen = owners.attribute("10.9.0.2:8000".parse().unwrap(), Some(&answer("HTTP/1.1 404 Not Found")));
        assert!(seen.unwrap_err().contains("no task of the service runs"));
    }
}
