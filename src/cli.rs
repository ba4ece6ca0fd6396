//! Command line: arguments parsed once into requests for [`crate::app`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::app::{self, RunRequest};
use crate::config::credential::{self, Source};
use crate::config::duration::parse_duration;
use crate::config::scenario::endpoint_url;
use crate::config::{Expectation, Provider, ReadSpec, Refusal, Scenario, Suite, ToolsContract};
use crate::exit::Ending;
use crate::mcp::{Limits, Transport};
use crate::secret::Redactor;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use compare_args::CompareArgs;
use console_args::ConsoleArgs;
use libtest_mimic::Arguments;

mod compare_args;
mod console_args;
mod help;

#[derive(Parser)]
#[command(name = "cordon", about = "End-to-end contract and isolation checks for MCP deployments")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The command line as parsed, with its help and version finished ([`help::polish`]):
/// what `--help`, the shell completions and the man pages are made from.
pub fn command() -> clap::Command {
    help::polish(Cli::command())
}

#[derive(Subcommand)]
enum Command {
    /// Run any suite against a scenario: host mode (contract checks from here), compose or
    /// swarm, as the suite's `mode` says.
    Run {
        /// The suite file: mode, families, timeouts, baseline and outputs (suites/compose.yaml,
        /// suites/swarm.yaml and suites/local.yaml are built in)
        #[arg(long, value_name = "FILE")]
        suite: PathBuf,
        /// The scenario file: providers, clients, credential references, networks
        #[arg(long, value_name = "FILE")]
        scenario: Option<PathBuf>,
        /// Directory for the reports (JUnit, JSON, Markdown, HTML); overrides the suite's outputs.dir
        #[arg(long, value_name = "DIR")]
        results: Option<PathBuf>,
        /// The compose project or swarm stack (overrides the scenario's `project`)
        #[arg(long)]
        project: Option<String>,
        #[command(flatten)]
        history: CompareArgs,
        #[command(flatten)]
        console: ConsoleArgs,
        #[command(flatten)]
        tests: Arguments,
    },
    /// Run the compose suite against a deployed compose project, from inside each client
    /// container's network namespace (needs root, or the image's run line, and the engine).
    Compose {
        /// The scenario file: providers, clients, credential references, networks
        /// (required: write one by hand, or `cordon import` one from role metadata)
        #[arg(long, value_name = "FILE")]
        scenario: Option<PathBuf>,
        /// The suite file; the default is built in (a file at that path wins)
        #[arg(long, value_name = "FILE", default_value = "suites/compose.yaml")]
        suite: PathBuf,
        /// Directory for the reports (JUnit, JSON, Markdown, HTML); overrides the suite's outputs.dir
        #[arg(long, value_name = "DIR")]
        results: Option<PathBuf>,
        /// The compose project (its `com.docker.compose.project` label; overrides the scenario's `project`)
        #[arg(long)]
        project: Option<String>,
        #[command(flatten)]
        history: CompareArgs,
        #[command(flatten)]
        console: ConsoleArgs,
        #[command(flatten)]
        tests: Arguments,
    },
    /// Run the swarm suite against a swarm stack (`docker stack deploy`), from inside each
    /// task's network namespace: setns on this node, a carrier on other nodes.
    Swarm {
        /// The stack's name (its `com.docker.stack.namespace`)
        #[arg(long)]
        stack: String,
        /// The scenario file: providers, clients, credential references, networks
        /// (required: write one by hand, or `cordon import` one from role metadata)
        #[arg(long, value_name = "FILE")]
        scenario: Option<PathBuf>,
        /// The suite file; the default is built in (a file at that path wins)
        #[arg(long, value_name = "FILE", default_value = "suites/swarm.yaml")]
        suite: PathBuf,
        /// Directory for the reports (JUnit, JSON, Markdown, HTML); overrides the suite's outputs.dir
        #[arg(long, value_name = "DIR")]
        results: Option<PathBuf>,
        #[command(flatten)]
        history: CompareArgs,
        #[command(flatten)]
        console: ConsoleArgs,
        #[command(flatten)]
        tests: Arguments,
    },
    /// Print a completion script for a shell, e.g.
    /// `cordon completions bash > /etc/bash_completion.d/cordon`.
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Runs one probe plan (JSON on stdin) where it stands; what carrier containers run.
    #[command(hide = true)]
    Agent,
    /// Build the fixture images, deploy the reference stack, run the compose suite
    /// against it and tear it down (needs root and a running Docker engine).
    Demo {
        /// Leave the stack running afterwards.
        #[arg(long)]
        keep: bool,
        /// Show image builds and compose output instead of logging them to results/demo.log.
        #[arg(long)]
        verbose: bool,
        /// The swarm demo: a single-node swarm (set up and left as found), the reference
        /// stack deployed with `docker stack deploy`, and suites/swarm.yaml.
        #[arg(long)]
        swarm: bool,
        /// Deploy a broken variant of the reference stack (a directory name under
        /// docker/reference/broken/), to see a run fail.
        #[arg(long, conflicts_with = "swarm")]
        variant: Option<String>,
        /// Passed on to the suite's run, `cordon compose` or `cordon swarm` (a filter, --skip, --list …).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        extra: Vec<String>,
    },
    /// Check one endpoint's contract from here, without a scenario file.
    Probe(Box<ProbeArgs>),
    /// Generate a scenario from a platform's role metadata (or `--check` one for drift).
    #[command(subcommand)]
    Import(crate::import::Platform),
    /// Draft a scenario from a running compose project or swarm stack: its MCP servers,
    /// what they serve, and which containers reach them today, each admitted pair marked
    /// `# review` (reachability today is not a contract).
    Init(crate::init::InitArgs),
    /// What a check proves, from where, and what the last run saw (from report.json).
    Explain {
        /// A check name, e.g. `reach::n8n-/->legacy`.
        check: String,
        /// The directory the run wrote its reports to.
        #[arg(long, default_value = "results")]
        results: PathBuf,
    },
    /// Compare two saved runs offline: what changed from the first report.json to the
    /// second (new failures, fixed, still failing, other changes, and whether cordon, the
    /// scenario, the suite or the engine differ). Exits 1 when the second has new failures.
    Compare {
        /// The earlier run's report.json
        before: PathBuf,
        /// The later run's report.json
        after: PathBuf,
    },
}

/// The shells `cordon completions` writes a script for.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// How an endpoint speaks MCP.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum TransportArg {
    /// Streamable HTTP
    #[value(name = "streamable-http")]
    StreamableHttp,
    /// The legacy HTTP+SSE transport
    Sse,
}

#[derive(clap::Args)]
struct ProbeArgs {
    /// The MCP endpoint, e.g. http://127.0.0.1:8000/mcp (or the /sse URL with --transport sse).
    url: String,
    /// How the endpoint speaks MCP: streamable-http, or the legacy HTTP+SSE transport
    #[arg(long, value_enum, default_value_t = TransportArg::StreamableHttp)]
    transport: TransportArg,
    /// Environment variable holding the bearer the endpoint must accept.
    #[arg(long)]
    bearer_env: String,
    /// Environment variable holding another provider's valid bearer (for foreign_bearer).
    #[arg(long)]
    foreign_bearer_env: Option<String>,
    /// The exact tool names the endpoint must serve.
    #[arg(long, value_delimiter = ',', required = true)]
    expect_tools: Vec<String>,
    /// Tools that mutate; they must not be served.
    #[arg(long, value_delimiter = ',')]
    mutating: Vec<String>,
    /// The sha256 the served tools must hash to (canonical JSON of name, description, inputSchema)
    #[arg(long)]
    schema_sha256: Option<String>,
    /// The deterministic read tool to call.
    #[arg(long)]
    read: Option<String>,
    /// Its arguments, as JSON.
    #[arg(long, default_value = "{}")]
    read_args: String,
    /// The read's text must contain this.
    #[arg(long, conflicts_with = "expect_json")]
    expect_text: Option<String>,
    /// The read's structuredContent (or JSON text) must contain this JSON.
    #[arg(long)]
    expect_json: Option<String>,
    /// The endpoint refuses with a JSON-RPC error (no session, no tools) instead of 401/403.
    #[arg(long)]
    refusal_jsonrpc: bool,
    /// Longest wait for a TCP connection
    #[arg(long, default_value = "3s")]
    connect_timeout: String,
    /// Longest wait for an answer once connected
    #[arg(long, default_value = "10s")]
    read_timeout: String,
    /// How long to keep retrying while the endpoint is not ready.
    #[arg(long, default_value = "0s")]
    deadline: String,
    /// Directory for the reports (JUnit, JSON, Markdown, HTML)
    #[arg(long, value_name = "DIR")]
    results: Option<PathBuf>,
    #[command(flatten)]
    console: ConsoleArgs,
    #[command(flatten)]
    tests: Arguments,
}

pub fn main() -> Ending {
    let mut filters = Vec::new();
    let parsed = command().try_get_matches().and_then(|m| {
        filters = filters_of(&m);
        Cli::from_arg_matches(&m)
    });
    let cli = match parsed {
        Ok(cli) => cli,
        // Help and version go to stdout as clap writes them.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ending::Passed;
        }
        // An argument is echoed in the error: it may hold control characters.
        Err(e) => {
            let text = e.render().to_string();
            eprintln!("{}", text.trim_end().lines().map(crate::text::sanitize).collect::<Vec<_>>().join("\n"));
            return Ending::Usage;
        }
    };
    let redactor = Redactor::new();
    if let Some(tests) = tests_of(&cli.command) {
        let refused = help::refused_libtest_flags(tests);
        if !refused.is_empty() {
            for why in refused {
                eprintln!("error: {why}");
            }
            return Ending::Usage;
        }
    }
    let command = match cli.command {
        Command::Swarm { stack, scenario, suite, results, history, console, tests } => {
            Command::Run { suite, scenario, results, project: Some(stack), history, console, tests }
        }
        Command::Agent => return crate::agent::main(),
        Command::Completions { shell } => return completions(shell),
        other => other,
    };
    match command {
        Command::Run { suite, scenario, results, project, history, console, tests }
        | Command::Compose { suite, scenario, results, project, history, console, tests } => {
            let Some(scenario) = scenario else {
                eprintln!("{}", help::NO_SCENARIO);
                return Ending::Usage;
            };
            let load = if tests.list { Scenario::load_for_listing } else { Scenario::load };
            let scenario = match load(&scenario, &redactor) {
                Ok(s) => s,
                Err(e) => return app::report_config_errors("scenario", &e, &redactor),
            };
            let suite = match Suite::load_or_built_in(&suite) {
                Ok(s) => s,
                Err(e) => return app::report_config_errors("suite", &e, &redactor),
            };
            let compare = history.request();
            app::execute(RunRequest {
                scenario,
                suite,
                redactor,
                tests,
                filters,
                evidence: console.level(),
                results_dir: results,
                project,
                compare,
            })
        }
        Command::Demo { keep, verbose, swarm, variant, extra } => {
            crate::demo::run(crate::demo::DemoArgs { keep, verbose, swarm, variant, extra })
        }
        Command::Explain { check, results } => crate::explain::run(&check, &results),
        Command::Compare { before, after } => match crate::compare::offline(&before, &after) {
            Ok(since) => {
                print!("{}", crate::report::since::console(&since));
                if since.new_failures.is_empty() { Ending::Passed } else { Ending::ChecksFailed }
            }
            Err(e) => {
                eprintln!("error: {}", crate::text::sanitize(&e));
                Ending::Usage
            }
        },
        Command::Import(platform) => crate::import::run(platform),
        Command::Init(args) => crate::init::run(args),
        Command::Swarm { .. } | Command::Agent | Command::Completions { .. } => unreachable!("mapped above"),
        Command::Probe(args) => match probe_request(*args, filters, &redactor) {
            Ok(request) => app::execute(request),
            Err(message) => {
                eprintln!("error: {}", crate::text::sanitize(&redactor.redact(&message)));
                Ending::Usage
            }
        },
    }
}

/// Every positional filter of the subcommand (libtest-mimic's arguments keep the first).
fn filters_of(m: &clap::ArgMatches) -> Vec<String> {
    m.subcommand()
        .and_then(|(_, sub)| sub.try_get_many::<String>("filter").ok().flatten())
        .map(|v| v.cloned().collect())
        .unwrap_or_default()
}

/// The libtest arguments of a subcommand that runs checks.
fn tests_of(command: &Command) -> Option<&Arguments> {
    match command {
        Command::Run { tests, .. } | Command::Compose { tests, .. } | Command::Swarm { tests, .. } => Some(tests),
        Command::Probe(args) => Some(&args.tests),
        _ => None,
    }
}

fn probe_request(args: ProbeArgs, filters: Vec<String>, redactor: &Redactor) -> Result<RunRequest, String> {
    let url = endpoint_url(&args.url).map_err(|e| format!("the endpoint URL: {e}"))?;
    let read_secret = |flag: &str, var: &str| -> Result<String, String> {
        credential::load(Source::Env(var)).map_err(|e| format!("{flag}: {e}"))
    };
    let mut credentials = BTreeMap::new();
    credentials.insert("probe".to_string(), redactor.register("probe", read_secret("--bearer-env", &args.bearer_env)?));
    let mut foreign_credentials = Vec::new();
    if let Some(var) = &args.foreign_bearer_env {
        credentials
            .insert("foreign".to_string(), redactor.register("foreign", read_secret("--foreign-bearer-env", var)?));
        foreign_credentials.push("foreign".to_string());
    }
    let read = match &args.read {
        None => None,
        Some(tool) => {
            let arguments: serde_json::Value =
                serde_json::from_str(&args.read_args).map_err(|e| format!("--read-args: not JSON: {e}"))?;
            let expect = match (&args.expect_text, &args.expect_json) {
                (Some(t), _) => Expectation::TextContains(t.clone()),
                (None, Some(j)) => Expectation::JsonSubset(
                    serde_json::from_str(j).map_err(|e| format!("--expect-json: not JSON: {e}"))?,
                ),
                (None, None) => {
                    return Err(
                        "--read needs --expect-text or --expect-json: a read with no expectation proves nothing".into(),
                    );
                }
            };
            Some(ReadSpec { tool: tool.clone(), arguments, expect })
        }
    };
    let duration = |flag: &str, v: &str| parse_duration(v).map_err(|e| format!("{flag}: {e}"));
    let positive = |flag: &str, v: &str| match duration(flag, v)? {
        d if d.is_zero() => Err(format!("{flag}: must be longer than zero")),
        d => Ok(d),
    };
    let limits = Limits {
        connect_timeout: positive("--connect-timeout", &args.connect_timeout)?,
        read_timeout: positive("--read-timeout", &args.read_timeout)?,
        ..Limits::default()
    };
    let provider = Provider {
        id: "probe".into(),
        url: url.clone(),
        transport: match args.transport {
            TransportArg::Sse => Transport::Sse,
            TransportArg::StreamableHttp => Transport::StreamableHttp,
        },
        credential: "probe".into(),
        refusal: if args.refusal_jsonrpc { Refusal::JsonrpcError } else { Refusal::HttpStatus },
        allowed_consumers: vec![],
        tools: ToolsContract {
            allowlist: args.expect_tools.clone(),
            schema_sha256: args.schema_sha256.clone(),
            mutating: args.mutating.clone(),
            mutating_enabled: false,
        },
        read,
        disabled: false,
        served_by_app: false,
        app_ports: vec![],
        service: "probe".into(),
        sidecar_networks: None,
        sidecar_image: None,
        app: None,
        networks: vec![],
        boundary: Default::default(),
    };
    let scenario = Scenario {
        name: format!("probe {url}"),
        project: None,
        file: PathBuf::from("<probe>"),
        providers: vec![provider],
        clients: vec![],
        credentials,
        foreign_credentials,
        sha256: String::new(),
    };
    let suite = Suite::for_probe(limits, duration("--deadline", &args.deadline)?);
    Ok(RunRequest {
        scenario,
        suite,
        redactor: redactor.clone(),
        tests: args.tests,
        filters,
        evidence: args.console.level(),
        results_dir: args.results,
        project: None,
        compare: None,
    })
}

/// The command line without its hidden subcommands (`agent`): what completions offer.
fn visible_command() -> clap::Command {
    let full = command();
    let mut visible =
        clap::Command::new("cordon").version(help::VERSION).about(full.get_about().cloned().unwrap_or_default());
    for sub in full.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        visible = visible.subcommand(sub.clone());
    }
    visible
}

/// `cordon completions SHELL`: the script, from the same definitions as `--help`.
fn completions(shell: CompletionShell) -> Ending {
    use clap_complete::Shell;
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    clap_complete::generate(shell, &mut visible_command(), "cordon", &mut std::io::stdout());
    Ending::Passed
}
