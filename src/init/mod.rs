//! `cordon init`: a first scenario drafted from a running deployment, as `goss autoadd`
//! drafts one for a host. Every listener of every container is asked whether it speaks
//! MCP (from its own namespace), every other container is asked what it reaches (from its
//! own), and the draft says which of it is observation awaiting review.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::config::{Mode, Scenario, Suite};
use crate::deployment::{Deployment, DiscoveryError};
use crate::engine::Target;
use crate::exit::Ending;
use crate::secret::Redactor;

pub mod draft;
pub mod survey;

use survey::{Auth, EndpointSeen, Identified, Survey, Unconfirmed, VantageSeen};

#[derive(clap::Args)]
pub struct InitArgs {
    /// The compose project to draft from (its `com.docker.compose.project` label)
    #[arg(long, required_unless_present = "stack", conflicts_with = "stack")]
    pub project: Option<String>,
    /// The swarm stack to draft from (its `com.docker.stack.namespace`)
    #[arg(long)]
    pub stack: Option<String>,
    /// The variable holding a service's bearer, as SERVICE=VAR (repeatable). Without it,
    /// the variable the service's own container holds with the value this shell holds,
    /// or SERVICE_TOKEN. A credential is only ever sent to its own service.
    #[arg(long = "credential", value_name = "SERVICE=VAR")]
    pub credentials: Vec<String>,
    /// Another path to ask for Streamable HTTP at every port (repeatable), before /mcp
    /// and /sse, e.g. --path /api/mcp
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// Write the draft here (refused if the file exists); the default is stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: InitArgs) -> Ending {
    let explicit = match parse_credentials(&args.credentials) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ending::Usage;
        }
    };
    if let Some(out) = &args.out
        && out.exists()
    {
        eprintln!(
            "error: {} exists; cordon init writes a new file only (remove it, or pick another --out)",
            out.display()
        );
        return Ending::Usage;
    }
    let (mode, project) = match (&args.project, &args.stack) {
        (_, Some(stack)) => (Mode::Swarm, stack.clone()),
        (Some(project), None) => (Mode::Compose, project.clone()),
        (None, None) => unreachable!("clap requires one"),
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime");
    let redactor = Redactor::new();
    if let Some(bad) = args.paths.iter().find(|p| !p.starts_with('/') || p.contains(char::is_whitespace)) {
        eprintln!("error: --path {}: expected an absolute URL path, e.g. /api/mcp", crate::text::echo(bad));
        return Ending::Usage;
    }
    let asked = Asked { explicit: &explicit, paths: &args.paths };
    let survey = runtime.block_on(gather(mode, &project, &asked, &redactor));
    let survey = match survey {
        Ok(s) => s,
        Err((ending, message)) => {
            eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&message)));
            return ending;
        }
    };
    if survey.endpoints.is_empty() {
        let mut message = format!(
            "no container of `{project}` completed an MCP handshake at /mcp or /sse on any port it listens on; nothing to draft"
        );
        for u in &survey.unconfirmed {
            message.push_str(&format!("\n  {}:{}{}: {}", u.service, u.port, u.path, u.why));
        }
        eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&message)));
        return Ending::Usage;
    }
    let command = match mode {
        Mode::Swarm => format!("cordon init --stack {project}"),
        _ => format!("cordon init --project {project}"),
    };
    let text = redactor.redact(&draft::draft(&survey, &command));
    for u in &survey.unconfirmed {
        eprintln!(
            "warning: {}:{}{} is left out: {}",
            u.service,
            u.port,
            u.path,
            crate::text::sanitize(&redactor.redact(&u.why))
        );
    }
    let pairs: usize = survey.vantages.iter().map(|v| v.reached.len()).sum();
    let summary = format!(
        "drafted {} provider(s), {} client(s) and {pairs} admitted pair(s) to review",
        survey.endpoints.len(),
        survey.vantages.len()
    );
    match &args.out {
        None => {
            print!("{text}");
            eprintln!("{summary}");
        }
        Some(out) => {
            if let Err(e) = std::fs::write(out, text) {
                eprintln!("error: cannot write {}: {e}", out.display());
                return Ending::Usage;
            }
            eprintln!("{summary}: {}", out.display());
        }
    }
    Ending::Passed
}

fn parse_credentials(given: &[String]) -> Result<Vec<(String, String)>, String> {
    given
        .iter()
        .map(|g| match g.split_once('=') {
            Some((service, var)) if !service.is_empty() && is_variable_name(var) => {
                Ok((service.to_string(), var.to_string()))
            }
            // The value may be a token pasted by mistake: only the service part is shown.
            Some((service, _)) => Err(format!(
                "--credential {}=…: expected SERVICE=VAR with VAR the name of an environment variable (letters, digits, _), e.g. gitea-mcp=GITEA_TOKEN",
                crate::text::echo(service)
            )),
            None => Err("--credential takes SERVICE=VAR, e.g. gitea-mcp=GITEA_TOKEN".into()),
        })
        .collect()
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

type Failure = (Ending, String);

/// Each service's environment: (name, value) pairs of its first running container.
type Environments = BTreeMap<String, Vec<(String, String)>>;

/// What the command line adds to the defaults: credentials by service, and paths.
struct Asked<'a> {
    explicit: &'a [(String, String)],
    paths: &'a [String],
}

async fn gather(mode: Mode, project: &str, asked: &Asked<'_>, redactor: &Redactor) -> Result<Survey, Failure> {
    let suite_file = if mode == Mode::Swarm { "suites/swarm.yaml" } else { "suites/compose.yaml" };
    let suite =
        Suite::load_or_built_in(std::path::Path::new(suite_file)).map_err(|e| (Ending::Usage, e.to_string()))?;
    let nothing = Scenario {
        name: project.to_string(),
        project: Some(project.to_string()),
        file: PathBuf::from("(cordon init)"),
        providers: Vec::new(),
        clients: Vec::new(),
        credentials: Default::default(),
        foreign_credentials: Vec::new(),
        sha256: String::new(),
    };
    eprintln!(
        "reading {} `{project}` through the Docker engine",
        if mode == Mode::Swarm { "stack" } else { "project" }
    );
    let deployment =
        crate::deployment::discover(mode, project, &nothing, &suite, Instant::now()).await.map_err(|e| match e {
            DiscoveryError::Infrastructure(m) => (Ending::Infrastructure, m),
            DiscoveryError::Scenario(m) => (Ending::Usage, m),
        })?;
    let topology = deployment.topology();
    if topology.services.is_empty() {
        return Err((
            Ending::Infrastructure,
            format!("no running container carries `{project}`: deploy it first, or pass the name it runs under"),
        ));
    }
    let mut survey = Survey { project: project.to_string(), swarm: mode == Mode::Swarm, ..Default::default() };
    for (name, facts) in &topology.networks {
        let key = topology.network_key(name).to_string();
        let mut members: Vec<String> = topology
            .services
            .iter()
            .filter(|(_, targets)| targets.iter().any(|t| t.attachment(name).is_some()))
            .map(|(s, _)| s.clone())
            .collect();
        members.dedup();
        survey.networks.insert(key, (facts.subnets.iter().map(|s| s.to_string()).collect(), members));
    }
    let services: Vec<(String, Vec<Target>)> = topology
        .services
        .iter()
        .map(|(s, ts)| (s.clone(), ts.iter().filter(|t| t.pid != 0).cloned().collect::<Vec<_>>()))
        .filter(|(_, ts)| !ts.is_empty())
        .collect();
    let held = environments(&deployment, &services).await;
    eprintln!("asking every listener of {} service(s) whether it speaks MCP", services.len());
    let asked =
        join_all(services.iter().map(|(service, targets)| {
            identify_service(&deployment, service, targets, (asked, &held), &suite, redactor)
        }))
        .await;
    let mut providers: Vec<Vec<Target>> = Vec::new();
    for ((_, targets), (found, unconfirmed, unprobed)) in services.iter().zip(asked) {
        if !found.is_empty() {
            providers.extend(found.iter().map(|_| targets.clone()));
        }
        survey.endpoints.extend(found);
        survey.unconfirmed.extend(unconfirmed);
        survey.unprobed.extend(unprobed);
    }
    let served: Vec<&str> = survey.endpoints.iter().map(|e| e.service.as_str()).collect();
    let vantages: Vec<&(String, Vec<Target>)> =
        services.iter().filter(|(s, _)| !served.contains(&s.as_str())).collect();
    eprintln!(
        "found {} MCP server(s); asking {} other service(s) what they reach",
        survey.endpoints.len(),
        vantages.len()
    );
    let aims: Vec<survey::Aim> = survey
        .endpoints
        .iter()
        .zip(&providers)
        .enumerate()
        .map(|(endpoint, (e, targets))| survey::Aim {
            endpoint,
            port: e.port,
            addrs: survey::addresses_of(&deployment, targets),
        })
        .collect();
    let timeout = suite.limits.connect_timeout;
    survey.vantages = join_all(
        vantages.iter().map(|(service, targets)| reach_of(&deployment, service, &targets[0], aims.clone(), timeout)),
    )
    .await;
    Ok(survey)
}

async fn reach_of(
    deployment: &Deployment,
    service: &str,
    target: &Target,
    aims: Vec<survey::Aim>,
    timeout: Duration,
) -> VantageSeen {
    let label = format!("service {service}");
    match deployment.run_in(target, &label, move |view| survey::reach_from(view, aims, timeout)).await {
        Ok(reached) => VantageSeen { service: service.to_string(), reached, unprobed: None },
        Err(attempt) => {
            VantageSeen { service: service.to_string(), reached: Vec::new(), unprobed: Some(attempt.into_reason()) }
        }
    }
}

/// Every listening port of `service` (its first replica's, not loopback), asked whether
/// it speaks MCP, with the service's own credential where one is at hand.
async fn identify_service(
    deployment: &Deployment,
    service: &str,
    targets: &[Target],
    (asked, held): (&Asked<'_>, &Environments),
    suite: &Suite,
    redactor: &Redactor,
) -> (Vec<EndpointSeen>, Vec<Unconfirmed>, Vec<String>) {
    let target = &targets[0];
    if let Some(of) = &target.netns_of {
        // Its listeners are those of the container whose namespace it shares, asked there.
        let of: String = of.chars().take(12).collect();
        return (
            vec![],
            vec![],
            vec![format!(
                "{} shares the network namespace of container {of}: its listeners are asked as that container's",
                target.name
            )],
        );
    }
    let listeners = match deployment.listeners(target).await {
        Ok(l) => l,
        Err(attempt) => {
            return (
                vec![],
                vec![],
                vec![format!("{}: its listeners could not be read: {}", target.name, attempt.into_reason())],
            );
        }
    };
    let Some(own) = target.addresses().into_iter().find(|a| !a.is_loopback()) else {
        return (vec![], vec![], vec![]);
    };
    // Each port once, asked at the address it is bound to (a listener bound to one
    // network's address refuses the others), or at the container's own for a wildcard.
    let mut ports: Vec<(u16, std::net::IpAddr)> = listeners
        .iter()
        .filter(|l| !l.addr.ip().is_loopback())
        .map(|l| (l.addr.port(), if l.addr.ip().is_unspecified() { own } else { l.addr.ip() }))
        .collect();
    ports.sort_by_key(|(port, addr)| (*port, *addr != own));
    ports.dedup_by_key(|(port, _)| *port);
    let (var, secret) = credential_for(service, held, asked.explicit, redactor);
    let mut found = Vec::new();
    let mut unconfirmed = Vec::new();
    let mut unprobed = Vec::new();
    for (port, addr) in ports {
        let (host, bearer, limits, paths) =
            (service.to_string(), secret.clone(), suite.limits.clone(), asked.paths.to_vec());
        let label = format!("service {service}");
        let asked = deployment
            .run_in(target, &label, move |_| survey::identify(host, (addr, port), paths, bearer, limits))
            .await;
        match asked {
            Ok(Identified::Mcp { transport, path, era, open, tools }) => found.push(EndpointSeen {
                service: service.to_string(),
                port,
                path,
                transport,
                replicas: targets.len(),
                era,
                auth: open.map_or(Auth::Open, |refused_status| Auth::Bearer { refused_status }),
                credential_var: var.clone(),
                tools,
            }),
            Ok(Identified::Refused { path, status, www_authenticate, after_bearer }) => unconfirmed.push(Unconfirmed {
                service: service.to_string(),
                port,
                path,
                status,
                www_authenticate,
                var: var.clone(),
                why: match after_bearer {
                    None => format!(
                        "no credential to try: set {var} (or pass --credential {service}=VAR) and run init again to read its tools"
                    ),
                    Some(e) => format!("the credential in {var} was refused too: {e}"),
                },
            }),
            Ok(Identified::NotMcp) => {}
            Err(attempt) => unprobed.push(format!("{}:{port}: {}", target.name, attempt.into_reason())),
        }
    }
    (found, unconfirmed, unprobed)
}

/// The variable holding `service`'s credential ([`survey::credential_var`]) and its
/// value, if set; the name said in messages when there is none.
fn credential_for(
    service: &str,
    held: &Environments,
    explicit: &[(String, String)],
    redactor: &Redactor,
) -> (String, Option<crate::secret::Secret>) {
    let own = |name: &str| std::env::var(name).ok();
    match survey::credential_var(service, held, explicit, own) {
        Some(var) => {
            let secret = own(&var).filter(|v| !v.is_empty()).map(|v| redactor.register(&var, v));
            (var, secret)
        }
        None => (format!("the variable --credential {service}=VAR names"), None),
    }
}

/// Each service's environment (its first running container's), for [`credential_for`].
async fn environments(deployment: &Deployment, services: &[(String, Vec<Target>)]) -> Environments {
    let reads = services.iter().map(|(service, targets)| async move {
        let env = match deployment.engine_of(&targets[0]) {
            Ok(engine) => engine.environment(&targets[0].id).await.unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        (service.clone(), env)
    });
    join_all(reads).await.into_iter().collect()
}
