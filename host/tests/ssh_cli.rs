//! `keyless-host ssh add | list | remove | grant`: the registry in a temp config folder (never the
//! real home), mode 0600, the seed's id form, ownership on grant.
#![allow(clippy::disallowed_methods)] // tests and benches start the programs under test
#![allow(clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn ssh(config: &Path, user: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyless-host"))
        .arg("ssh")
        .args(args)
        .env("XDG_CONFIG_HOME", config)
        .env("USER", user)
        .output()
        .expect("run")
}

#[test]
fn the_registry_adds_lists_grants_and_removes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cfg = tmp.path();
    let out = ssh(
        cfg,
        "alice",
        &[
            "add",
            "prod",
            "--host",
            "127.0.0.1",
            "--user",
            "deploy",
            "--port",
            "2222",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        keyless_core::ssh::is_connection_id(&id) && id.len() == 36,
        "{id}"
    );
    let file = cfg.join("keyless/ssh.json");
    assert_eq!(
        std::fs::metadata(&file)
            .expect("registry")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    // Names are unique; odd hosts are refused.
    let out = ssh(cfg, "alice", &["add", "prod", "--host", "h", "--user", "u"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("KA_CONFIG_VALIDATION"));
    let out = ssh(
        cfg,
        "alice",
        &["add", "x", "--host", "-oProxyCommand=sh", "--user", "u"],
    );
    assert!(!out.status.success());
    // Grants: by name or id; only the owner grants.
    assert!(ssh(cfg, "alice", &["grant", "prod", "--piece", "ssh-ops"])
        .status
        .success());
    let out = ssh(cfg, "mallory", &["grant", &id, "--piece", "*"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("KA_SSH_NOT_OWNER"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ssh(cfg, "alice", &["list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v,
        serde_json::json!([{"id": id, "name": "prod", "host": "127.0.0.1", "user": "deploy", "port": 2222, "owner": "alice", "grants": ["ssh-ops"]}])
    );
    // The decision core makes with it.
    let reg: Vec<keyless_core::ssh::Connection> = serde_json::from_value(v).expect("connections");
    let allowed = vec!["*".to_string()];
    assert!(
        keyless_core::ssh::permit(&reg, "ssh-ops", "ops", Some(&allowed), "prod", "alice").is_ok()
    );
    assert!(ssh(
        cfg,
        "alice",
        &["grant", "prod", "--piece", "ssh-ops", "--revoke"]
    )
    .status
    .success());
    assert!(ssh(cfg, "alice", &["remove", "prod"]).status.success());
    let out = ssh(cfg, "alice", &["remove", "prod"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("KA_SSH_UNKNOWN_CONNECTION"));
    assert_eq!(
        String::from_utf8_lossy(&ssh(cfg, "alice", &["list"]).stdout)
            .lines()
            .next(),
        Some("no SSH connections (keyless-host ssh add NAME --host H --user U)")
    );
}
