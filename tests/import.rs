//! `cordon import infinito` on real metadata: the platform's 26 roles (`tests/import/infinito`,
//! a copy of the files the importer reads, with their provenance in MANIFEST.tsv) and the
//! reference stack's roles (`docker/reference/roles`). Every role is imported or listed
//! with its code; what is written loads with the real loader and means what the import
//! meant; `scenarios/reference.yaml` is exactly what the metadata gives.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use cordon::config::Scenario;
use cordon::import::model::Subject;
use cordon::import::{Import, Request, import};
use cordon::secret::Redactor;

#[path = "import/contract.rs"]
mod contract;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus_roles() -> PathBuf {
    repo().join("tests/import/infinito/roles")
}

fn every_role(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect()
}

/// Credentials are read when a scenario loads: every variable an import names gets a
/// value of its own, set once before any test reads the environment.
fn credentials_set() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        let request = corpus_request(every_role(&corpus_roles()));
        let corpus = import(&request).unwrap();
        let reference = import(&reference_request()).unwrap();
        for (i, c) in corpus.credentials.values().chain(reference.credentials.values()).enumerate() {
            // SAFETY: runs once, before any test of this binary reads the environment
            // (each waits on this `Once` first); nothing else in the process sets it.
            unsafe { std::env::set_var(&c.env, format!("import-test-secret-{i:03}")) };
        }
        // SAFETY: as above.
        unsafe { std::env::set_var("OPENWEBUI_ADMIN_PASSWORD", "import-test-owui-password") };
    });
}

fn corpus_request(deployed: BTreeSet<String>) -> Request {
    Request {
        roles_dir: corpus_roles(),
        deployed,
        project: Some("platform".into()),
        scenario_dir: repo().join("tests/import"),
        ..Request::default()
    }
}

fn reference_request() -> Request {
    Request {
        roles_dir: repo().join("docker/reference/roles"),
        deployed: cordon::import::inventory::from_inventory(&repo().join("docker/reference/inventory.yml")).unwrap(),
        project: Some("cordon-reference".into()),
        scenario_dir: repo().join("scenarios"),
        ..Request::default()
    }
}

/// What the checks read of one provider, comparable across a loaded scenario and an import.
#[derive(Debug, PartialEq)]
struct ProviderView {
    url: String,
    transport: String,
    service: String,
    credential: String,
    refusal: String,
    consumers: BTreeSet<String>,
    allowlist: BTreeSet<String>,
    schema: Option<String>,
    mutating: BTreeSet<String>,
    mutating_enabled: bool,
    read: Option<String>,
    disabled: bool,
    app_ports: Vec<u16>,
    sidecar: Option<Vec<String>>,
    app: Option<String>,
    networks: Vec<String>,
    denied_tools: BTreeSet<String>,
    strict_arguments: bool,
    limits: Vec<(&'static str, u64)>,
    retired: Vec<String>,
    /// Where the specification is, resolved.
    specification: Option<PathBuf>,
}

/// The same of a whole scenario: providers, clients (service, credentials held, Open
/// WebUI block), credential ids and project.
#[derive(Debug, PartialEq)]
struct Essence {
    providers: BTreeMap<String, ProviderView>,
    clients: BTreeMap<String, String>,
    credentials: Vec<String>,
    project: Option<String>,
}

fn set(items: &[String]) -> BTreeSet<String> {
    items.iter().cloned().collect()
}

fn read_view(tool: &str, arguments: &serde_json::Value, expect: &cordon::config::Expectation) -> String {
    format!("{tool} {arguments} {expect:?}")
}

fn client_view(
    service: &str,
    credentials: &BTreeMap<String, String>,
    revoked: &BTreeMap<String, String>,
    openwebui: Option<String>,
) -> String {
    format!("service={service} credentials={credentials:?} revoked={revoked:?} openwebui={openwebui:?}")
}

fn resolved(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn essence(s: &Scenario) -> Essence {
    let providers = s.providers.iter().map(|p| {
        let view = ProviderView {
            url: p.url.to_string(),
            transport: format!("{:?}", p.transport),
            service: p.service.clone(),
            credential: p.credential.clone(),
            refusal: format!("{:?}", p.refusal),
            consumers: set(&p.allowed_consumers),
            allowlist: set(&p.tools.allowlist),
            schema: p.tools.schema_sha256.clone(),
            mutating: set(&p.tools.mutating),
            mutating_enabled: p.tools.mutating_enabled,
            read: p.read.as_ref().map(|r| read_view(&r.tool, &r.arguments, &r.expect)),
            disabled: p.disabled,
            app_ports: p.app_ports.clone(),
            sidecar: p.sidecar_networks.clone(),
            app: p.app.as_ref().map(|a| format!("{} {:?}", a.service, a.ports)),
            networks: p.networks.clone(),
            denied_tools: set(&p.boundary.denied_tools),
            strict_arguments: p.boundary.strict_arguments,
            limits: p.boundary.limits.as_ref().map_or(Vec::new(), cordon::import::model::limit_entries),
            retired: p.boundary.retired.clone(),
            specification: p.boundary.specification.as_ref().map(|s| resolved(&s.file)),
        };
        (p.id.clone(), view)
    });
    let clients = s.clients.iter().map(|c| {
        let openwebui = c.openwebui.as_ref().map(|o| format!("{} {} {:?}", o.admin_email, o.admin_password, o.groups));
        (c.id.clone(), client_view(&c.service, &c.credentials, &c.revoked, openwebui))
    });
    Essence {
        providers: providers.collect(),
        clients: clients.collect(),
        credentials: s.credentials.keys().cloned().collect(),
        project: s.project.clone(),
    }
}

/// The import's own view, in the same form (`dir`: where the scenario was written for).
fn expected_essence(i: &Import, dir: &Path) -> Essence {
    let providers = i.providers.values().map(|p| {
        let view = ProviderView {
            url: url::Url::parse(&p.url).unwrap().to_string(),
            transport: format!("{:?}", p.transport),
            service: p.service.clone(),
            credential: p.credential.clone(),
            refusal: "HttpStatus".into(),
            consumers: set(&p.allowed_consumers),
            allowlist: set(&p.allowlist),
            schema: p.schema_sha256.clone(),
            mutating: set(&p.mutating),
            mutating_enabled: p.mutating_enabled,
            read: p.read.as_ref().map(|r| read_view(&r.tool, &r.arguments, &r.expect)),
            disabled: p.disabled,
            app_ports: p.app_ports.clone(),
            sidecar: p.sidecar_networks.clone(),
            app: p.app.as_ref().map(|a| format!("{} {:?}", a.service, a.ports)),
            networks: p.networks.clone(),
            denied_tools: set(&p.boundary.denied_tools),
            strict_arguments: p.boundary.strict_arguments,
            limits: cordon::import::model::limit_entries(&p.boundary.limits),
            retired: p.boundary.retired.clone(),
            specification: p.boundary.specification.as_ref().map(|s| resolved(&dir.join(s))),
        };
        (p.id.clone(), view)
    });
    let clients = i.clients.values().map(|c| {
        let openwebui = c.openwebui.as_ref().map(|o| format!("{} {} {:?}", o.admin_email, o.admin_password, o.groups));
        (c.id.clone(), client_view(&c.service, &c.credentials, &c.revoked, openwebui))
    });
    Essence {
        providers: providers.collect(),
        clients: clients.collect(),
        credentials: i.credentials.keys().cloned().collect(),
        project: i.project.clone(),
    }
}

/// Imports for a scenario written into a directory of its own, loads what was written
/// with the real loader, and compares the two views.
fn round_trip(mut request: Request) -> Import {
    credentials_set();
    let dir = tempfile::tempdir().unwrap();
    request.scenario_dir = dir.path().to_path_buf();
    let i = import(&request).unwrap_or_else(|e| panic!("{e}"));
    let text = cordon::import::emit::scenario(&i);
    let path = dir.path().join("scenario.yaml");
    std::fs::write(&path, &text).unwrap();
    let scenario = Scenario::load(&path, &Redactor::new())
        .unwrap_or_else(|e| panic!("the generated scenario does not load:\n{e}\n{text}"));
    assert_eq!(essence(&scenario), expected_essence(&i, dir.path()), "deployed: {:?}", request.deployed);
    i
}

#[test]
fn every_role_of_the_platform_is_imported_or_listed_with_its_code() {
    let roles = every_role(&corpus_roles());
    assert_eq!(roles.len(), 26, "the corpus holds 26 roles");
    let i = import(&corpus_request(roles.clone())).unwrap_or_else(|e| panic!("{e}"));
    for role in &roles {
        let imported = i.providers.contains_key(role) || i.clients.contains_key(role);
        let listed = i.rejections.iter().any(|r| &r.role == role && !matches!(r.subject, Subject::PairWith(_)));
        assert!(imported || listed, "{role} is neither imported nor listed");
    }
    let codes: BTreeMap<&str, &str> = i
        .rejections
        .iter()
        .filter(|r| !matches!(r.subject, Subject::PairWith(_)))
        .map(|r| (r.role.as_str(), r.code.as_str()))
        .collect();
    let expected = BTreeMap::from([
        ("svc-ai-mcp-adapter", "no_metadata"),
        ("sys-svc-mcp-reconcile", "no_metadata"),
        ("web-app-baserow", "auth_unsupported"),
        ("web-app-homeassistant", "not_enabled"),
        ("web-app-jenkins", "auth_unsupported"),
        ("web-app-n8n", "not_enabled"),
        ("web-app-nextcloud", "auth_unsupported"),
        ("web-app-prometheus", "not_enabled"),
    ]);
    assert_eq!(codes, expected);
    let live: Vec<&str> = i.providers.values().filter(|p| !p.disabled).map(|p| p.id.as_str()).collect();
    assert_eq!(live, ["web-app-gitea", "web-app-gitlab", "web-app-mattermost", "web-app-moodle"]);
    let dark = i.providers.values().filter(|p| p.disabled).count();
    assert_eq!(
        dark, 11,
        "the switched-off adapters are checked dark, and n8n's and WordPress's surfaces at their path"
    );
    for app in ["web-app-n8n", "web-app-wordpress"] {
        assert!(i.providers[app].served_by_app, "{app} keeps running: only its MCP path goes dark");
    }
    // Open WebUI's role has no `enabled`: a client the platform carries whenever it is
    // deployed, so it is wired.
    let clients: Vec<&String> = i.clients.keys().collect();
    assert_eq!(clients, ["web-app-flowise", "web-app-hermes", "web-app-openclaw", "web-app-openwebui"]);
    // The real metadata breaks its own requirement in these places (each one reported
    // with its code, so `cordon import` of this tree exits 1 and writes nothing).
    let lint: BTreeSet<(String, String, &str)> = i
        .lint
        .iter()
        .map(|e| {
            let role =
                e.file.strip_prefix(corpus_roles()).unwrap().iter().next().unwrap().to_string_lossy().into_owned();
            (role, e.key.clone(), e.code.unwrap())
        })
        .collect();
    let unpinned =
        ["gitea", "gitlab", "homeassistant", "jenkins", "mattermost", "moodle", "nextcloud", "openwebui", "prometheus"]
            .map(|r| (format!("web-app-{r}"), "supported_version".to_string(), "source_unpinned"));
    let unpinned_adapters = ["gitlab", "mattermost"].into_iter().flat_map(|r| {
        ["adapter.image", "adapter.version", "adapter.digest", "adapter.upstream_api_version"]
            .map(|k| (format!("web-app-{r}"), k.to_string(), "missing_field"))
    });
    let expected: BTreeSet<(String, String, &str)> = unpinned
        .into_iter()
        .chain(unpinned_adapters)
        .chain([("web-app-nextcloud".to_string(), "tools.allowlist".to_string(), "missing_field")])
        .collect();
    assert_eq!(lint, expected);
}

#[test]
fn the_platform_scenario_is_the_golden_file() {
    let i = import(&corpus_request(every_role(&corpus_roles()))).unwrap();
    let text = cordon::import::emit::scenario(&i);
    let golden = repo().join("tests/import/infinito.yaml");
    if std::env::var_os("CORDON_BLESS").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).expect("tests/import/infinito.yaml (CORDON_BLESS=1 writes it)");
    assert!(text == expected, "the import of the corpus changed; review, then CORDON_BLESS=1 cargo test --test import");
}

#[test]
fn what_is_written_loads_and_means_what_was_imported() {
    let everything = every_role(&corpus_roles());
    let one_pair: BTreeSet<String> = ["web-app-gitea", "web-app-hermes"].iter().map(|s| s.to_string()).collect();
    let no_client: BTreeSet<String> = ["web-app-gitlab", "svc-db-qdrant"].iter().map(|s| s.to_string()).collect();
    for deployed in [everything, one_pair, no_client] {
        round_trip(corpus_request(deployed));
    }
    let reference = round_trip(reference_request());
    let gitea = &reference.providers["gitea"].boundary;
    assert!(
        gitea.strict_arguments && gitea.specification.is_some(),
        "the adapter's boundary keys are written and read"
    );
}

#[test]
fn open_webui_gets_a_group_per_provider_that_loads() {
    let dir = tempfile::tempdir().unwrap();
    let roles = dir.path().join("roles");
    copy_dir(&corpus_roles(), &roles);
    let mcp = roles.join("web-app-openwebui/meta/mcp.yml");
    let text = std::fs::read_to_string(&mcp).unwrap().replacen("---\n", "---\nenabled: true\nshared: true\n", 1);
    std::fs::write(&mcp, text).unwrap();
    let request = Request {
        roles_dir: roles.clone(),
        openwebui_admin: Some("openwebui-api-bot@example.test".into()),
        ..corpus_request(every_role(&roles))
    };
    let i = round_trip(request);
    let block = i.clients["web-app-openwebui"].openwebui.as_ref().unwrap();
    let groups: Vec<(&str, &str)> = block.groups.iter().map(|(p, g)| (p.as_str(), g.as_str())).collect();
    assert_eq!(
        groups,
        [
            ("web-app-gitea", "roles/web-app-gitea/mcp"),
            ("web-app-gitlab", "roles/web-app-gitlab/mcp"),
            ("web-app-mattermost", "roles/web-app-mattermost/mcp"),
            ("web-app-moodle", "roles/web-app-moodle/mcp"),
        ]
    );
}

#[test]
fn the_checked_in_reference_scenario_is_what_its_metadata_gives() {
    let mut i = import(&reference_request()).unwrap();
    cordon::import::args::apply(&mut i, &cordon::demo::reference::pins()).unwrap();
    let text = cordon::import::emit::scenario(&i);
    let checked_in = std::fs::read_to_string(repo().join("scenarios/reference.yaml")).unwrap();
    assert!(
        text == checked_in,
        "scenarios/reference.yaml drifted from docker/reference/roles: regenerate it (README, \"Scenarios from the platform's metadata\")"
    );
}

/// Values of the reference stack's credentials in the importer's environment: it names
/// them and must never show one.
const SECRETS: [(&str, &str); 5] = [
    ("NATIVE_TOKEN", "native-secret-3f9a1c"),
    ("LEGACY_TOKEN", "legacy-secret-7b2e4d"),
    ("MODERN_TOKEN", "modern-secret-c81f06"),
    ("GITEA_TOKEN", "gitea-secret-5d3a9e"),
    ("WIKI_TOKEN", "wiki-secret-0e6b72"),
];

fn cordon(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cordon")).args(args).envs(SECRETS).current_dir(repo()).output().unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    for (_, value) in SECRETS {
        assert!(!stdout.contains(value) && !stderr.contains(value), "a credential's value was shown");
    }
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

const REFERENCE: &[&str] = &[
    "import",
    "infinito",
    "--roles",
    "docker/reference/roles",
    "--inventory",
    "docker/reference/inventory.yml",
    "--project",
    "cordon-reference",
    "--image-digest-env",
    "gitea=CORDON_FIXTURE_DIGEST",
];

#[test]
fn check_passes_on_the_reference_and_fails_with_a_diff_on_drift() {
    let (code, stdout, stderr) = cordon(&[REFERENCE, &["--check", "scenarios/reference.yaml"]].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains("scenarios/reference.yaml matches the role metadata"), "{stderr}");

    // A directory beside scenarios/: the specification's relative path is the same from both.
    let dir = tempfile::tempdir_in(repo()).unwrap();
    let drifted = dir.path().join("reference.yaml");
    let text = std::fs::read_to_string(repo().join("scenarios/reference.yaml")).unwrap();
    std::fs::write(
        &drifted,
        text.replace("allowed_consumers: [flowise, webui]", "allowed_consumers: [flowise, n8n, webui]"),
    )
    .unwrap();
    let (code, stdout, stderr) = cordon(&[REFERENCE, &["--check", drifted.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("-    allowed_consumers: [flowise, n8n, webui]"), "{stdout}");
    assert!(stdout.contains("+    allowed_consumers: [flowise, webui]"), "{stdout}");
    assert!(stderr.contains("no longer matches the role metadata"), "{stderr}");

    let out = dir.path().join("written.yaml");
    let (code, _, stderr) = cordon(&[REFERENCE, &["--out", out.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{stderr}");
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(written, text, "--out writes what --check compares");
    assert!(SECRETS.iter().all(|(_, v)| !written.contains(v)), "the scenario names credentials, never their values");
}

#[test]
fn usage_and_metadata_errors_exit_2_naming_the_place() {
    let (code, _, stderr) = cordon(&["import", "infinito", "--roles", "docker/reference/roles"]);
    assert_eq!(code, 2, "--deployed or --inventory is required: {stderr}");
    let (code, _, stderr) = cordon(&["import", "infinito", "--roles", "nowhere", "--deployed", "a"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("nowhere: cannot read the roles directory"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let roles = dir.path().join("roles");
    copy_dir(&repo().join("docker/reference/roles"), &roles);
    let mcp = roles.join("native/meta/mcp.yml");
    let text =
        std::fs::read_to_string(&mcp).unwrap().replace("classification: native_server", "classification: native_servr");
    std::fs::write(&mcp, text).unwrap();
    let (code, stdout, stderr) =
        cordon(&["import", "infinito", "--roles", roles.to_str().unwrap(), "--deployed", "native,webui"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "no scenario is written from wrong metadata: {stdout}");
    assert!(
        stderr.contains("native/meta/mcp.yml:4:17: classification: unknown classification `native_servr`"),
        "{stderr}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
