//! The Open WebUI reference stack (docker/openwebui/) for end-to-end tests, as a kind of
//! [`super::clients::ClientStack`]: a real Open WebUI 0.12.4 from PyPI
//! (tests/openwebui/setup.sh), deployed with docker/openwebui/deploy.sh.
#![allow(dead_code)]

use std::path::PathBuf;

use super::clients::{Kind, Leftovers};
use super::stack::{fixture_image, repo};

pub fn owui_dir() -> PathBuf {
    std::env::var_os("CORDON_OWUI_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join(".owui"))
}

/// The Open WebUI rootfs image, tagged like the fixture image (so checkouts do not
/// overwrite each other's).
pub fn owui_image() -> String {
    let fixture = fixture_image();
    let tag = fixture.rsplit_once(':').map_or("dev", |(_, t)| t);
    format!("cordon-openwebui:{tag}")
}

/// The Open WebUI stack for [`ClientStack`]: a real Open WebUI 0.12.4 from PyPI.
pub const OPENWEBUI: Kind = Kind {
    name: "openwebui",
    setup: ("tests/openwebui/setup.sh", "Open WebUI 0.12.4"),
    image: ("CORDON_OWUI_IMAGE", owui_image),
    // NATIVE_ROTATED_TOKEN is no variable of the stack: see `never_printed`.
    secrets: &[
        "NATIVE_TOKEN",
        "FILES_TOKEN",
        "WIKI_TOKEN",
        "MODEL_KEY",
        "OIDC_CLIENT_SECRET",
        "IDP_CONTROL_TOKEN",
        "OWUI_SECRET_KEY",
        "OWUI_ADMIN_PASSWORD",
        "KC_ADMIN_PASSWORD",
    ],
    password_suffix: "",
    never_printed: &[("NATIVE_ROTATED_TOKEN", "rotated-key-open-webui-does-not-hold")],
    // Users and groups in Open WebUI whose name carries cordon's ephemeral prefix.
    leftovers: Leftovers::Python(LIST),
};

const LIST: &str = r#"
import json, os, urllib.request
def call(path, token=None, body=None):
    req = urllib.request.Request("http://127.0.0.1:8080" + path, data=None if body is None else json.dumps(body).encode(), method="GET" if body is None else "POST")
    req.add_header("Content-Type", "application/json")
    if token: req.add_header("Authorization", "Bearer " + token)
    return json.loads(urllib.request.urlopen(req, timeout=30).read())
token = os.environ.get("TOKEN")
if not token:
    token = call("/api/v1/auths/signin", body={"email": "admin@cordon.test", "password": os.environ["PW"]})["token"]
    print("token", token)
for u in call("/api/v1/users/all", token)["users"]:
    if u["email"].startswith("cordon-eph-"): print("user", u["email"])
for g in call("/api/v1/groups/", token):
    if g["name"].startswith("cordon-eph-"): print("group", g["name"])
for c in call("/api/v1/configs/tool_servers", token)["TOOL_SERVER_CONNECTIONS"]:
    if ((c.get("info") or {}).get("id") or "").startswith("cordon-eph-"): print("connection", c["info"]["id"])
"#;
