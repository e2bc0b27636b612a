//! The extension commands of AgentScript v1 (`@@mcp`, `@@sshexec`, `@@sshupload`,
//! `@@sshdownload`): known only where a movement offers them, their arguments, their tiers, the
//! gate, the effective MCP tools resolved against the servers' real tools, and what the model is
//! told.
#![allow(clippy::expect_used)]

use keyless_core::mcp::McpTool;
use keyless_core::parse::{parse_with, ParseOutput};
use keyless_core::piece::run::PieceRun;
use keyless_core::piece::tools::Catalog;
use keyless_core::piece::{validate, Strictness};
use keyless_core::policy::verdict::{command_verdict, Judge};
use keyless_core::policy::{Decision, Tier};
use keyless_core::render::render_reply;
use keyless_core::ssh::Connection;
use keyless_core::{parse, CommandKind, Limits, Mode};
use proptest::prelude::*;

const ALL: [CommandKind; 4] = CommandKind::EXTENSIONS;

fn ext(text: &str) -> ParseOutput {
    parse_with(text, &Limits::default(), &ALL)
}

fn first_problem(out: &ParseOutput) -> String {
    out.diagnostics
        .first()
        .map(|d| format!("{} {}", d.code, d.message))
        .unwrap_or_default()
}

#[test]
fn extension_commands_are_unknown_unless_offered() {
    let text = "@@sshexec box\n<<<CMD\nuptime\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let plain = parse(text, &Limits::default());
    assert!(
        first_problem(&plain).starts_with("KA_PARSE_UNKNOWN_COMMAND"),
        "{plain:?}"
    );
    // The suggestion never points at an extension the movement does not offer.
    assert!(!first_problem(&plain).contains("did you mean"), "{plain:?}");
    let only_mcp = parse_with(text, &Limits::default(), &[CommandKind::Mcp]);
    assert!(first_problem(&only_mcp).starts_with("KA_PARSE_UNKNOWN_COMMAND"));
    let offered = ext(text);
    assert!(offered.ok(), "{offered:?}");
    let c = &offered.reply.commands[0];
    assert_eq!(c.kind, CommandKind::SshExec);
    assert_eq!(c.connection(), Some("box"));
    assert_eq!(c.target(), "box: uptime");
}

#[test]
fn arguments_are_checked_and_kept_canonical() {
    let up = ext("@@sshupload box ./dist//app.tar to /srv/app.tar\n@@end\n@@next\n@@end\n@@eof\n");
    assert!(up.ok(), "{up:?}");
    let t = up.reply.commands[0].transfer().expect("transfer");
    assert_eq!(
        (t.connection, t.from, t.to),
        ("box", "dist/app.tar", "/srv/app.tar")
    );
    let down =
        ext("@@sshdownload box /var/log/syslog TO logs/syslog\n@@end\n@@next\n@@end\n@@eof\n");
    let t = down.reply.commands[0].transfer().expect("transfer");
    assert_eq!((t.from, t.to), ("/var/log/syslog", "logs/syslog"));
    let mcp = ext("@@mcp files.read_text_file timeout=5\n<<<ARGS\n{\"path\": \"a\"}\nARGS>>>\n@@end\n@@next\n@@end\n@@eof\n");
    assert!(mcp.ok(), "{mcp:?}");
    assert_eq!(
        mcp.reply.commands[0].mcp_tool(),
        Some(("files", "read_text_file"))
    );
    assert_eq!(mcp.reply.commands[0].options.timeout_seconds, Some(5));
    // A confirmation shows the call with its arguments.
    assert_eq!(
        keyless_core::policy::verdict::confirm_text(&mcp.reply.commands[0]),
        "@@mcp files.read_text_file {\"path\": \"a\"}"
    );
    for (bad, why) in [
        (
            "@@sshexec\n<<<CMD\nls\nCMD>>>\n@@end\n",
            "name the connection",
        ),
        (
            "@@sshexec -oProxyCommand=x\n<<<CMD\nls\nCMD>>>\n@@end\n",
            "name the connection",
        ),
        (
            "@@sshexec box color=red\n<<<CMD\nls\nCMD>>>\n@@end\n",
            "unknown option",
        ),
        ("@@sshupload box a.txt /srv/a\n@@end\n", "LOCAL TO REMOTE"),
        (
            "@@sshupload box ../a.txt TO /srv/a\n@@end\n",
            "bad workspace path",
        ),
        (
            "@@sshupload box .git/config TO /srv/a\n@@end\n",
            "bad workspace path",
        ),
        (
            "@@sshdownload box -rf TO a.txt\n@@end\n",
            "may not start with -",
        ),
        (
            "@@sshdownload box /etc/passwd TO /abs\n@@end\n",
            "bad workspace path",
        ),
        ("@@mcp files\n@@end\n", "SERVER.TOOL"),
        ("@@mcp Files.read\n@@end\n", "not a server name"),
        ("@@mcp files.re$d\n@@end\n", "not a tool name"),
        (
            "@@mcp files.read\n<<<ARGS\n[1]\nARGS>>>\n@@end\n",
            "one JSON object",
        ),
        (
            "@@mcp files.read\n<<<ARGS\n{nope\nARGS>>>\n@@end\n",
            "not valid JSON",
        ),
        ("@@mcp files.read\n<<<CMD\nls\nCMD>>>\n@@end\n", "KA_PARSE"),
    ] {
        let out = ext(&format!("{bad}@@next\n@@end\n@@eof\n"));
        assert!(!out.ok(), "{bad}");
        assert!(
            first_problem(&out).contains(why),
            "{bad}: {}",
            first_problem(&out)
        );
    }
}

#[test]
fn tiers_put_other_machines_and_tools_at_risk() {
    let parsed = ext("@@sshexec box\n<<<CMD\nls -la\nCMD>>>\n@@end\n\
         @@sshexec box\n<<<CMD\nrm -rf /\nCMD>>>\n@@end\n\
         @@sshupload box a.txt TO /tmp/a\n@@end\n\
         @@sshdownload box /tmp/a TO a.txt\n@@end\n\
         @@mcp files.read_text_file\n@@end\n@@next\n@@end\n@@eof\n");
    assert!(parsed.ok(), "{parsed:?}");
    let c = &parsed.reply.commands;
    let v = |i: usize, mode: Mode| {
        command_verdict(&c[i], mode, &[], &Default::default()).expect("verdict")
    };
    // A read-only line is still Execute on another machine: confirmed in Ask.
    assert_eq!(
        (v(0, Mode::Ask).tier, v(0, Mode::Ask).decision),
        (Tier::Execute, Decision::Confirm)
    );
    assert_eq!(v(0, Mode::Auto).decision, Decision::Run);
    // AutoSafe runs it when the allow-list names the line.
    let allowed = command_verdict(
        &c[0],
        Mode::AutoSafe,
        &["ls *".to_string()],
        &Default::default(),
    )
    .expect("v");
    assert_eq!(allowed.decision, Decision::Run);
    assert_eq!(v(1, Mode::Auto).decision, Decision::Deny);
    assert_eq!(v(2, Mode::AutoSafe).tier, Tier::Risky);
    assert_eq!(v(3, Mode::Ask).tier, Tier::Execute);
    assert_eq!(
        (v(4, Mode::AutoSafe).tier, v(4, Mode::AutoSafe).decision),
        (Tier::Risky, Decision::Confirm)
    );
}

fn tool(server: &str, name: &str, read_only: bool) -> McpTool {
    McpTool {
        server: server.into(),
        name: name.into(),
        description: format!("{name} does things"),
        input_schema: "{\"type\":\"object\"}".into(),
        read_only,
    }
}

const PIECE: &str = "name: ext
description: extension tools
max_movements: 3
initial_movement: work
required_mcp: [files]
movements:
  - name: work
    edit: false
    persona: p
    instruction: i
    allowed_tools: [Read, SshExec, mcp__files__*]
    allowed_ssh_connections: ['*']
    rules: []
";

fn conn(name: &str, owner: &str, grants: &[&str]) -> Connection {
    Connection {
        id: format!("{name:0>8}-0000-4000-8000-000000000000"),
        name: name.into(),
        host: "10.0.0.1".into(),
        user: "ops".into(),
        port: 22,
        owner: owner.into(),
        grants: grants.iter().map(|g| (*g).to_string()).collect(),
    }
}

#[test]
fn a_movement_offers_the_tools_it_resolves_and_the_connections_it_may_use() {
    let piece = validate(PIECE, Strictness::Strict).piece.expect("valid");
    let mut run = PieceRun::start(piece);
    // Without the servers' tools (the editor), @@mcp is not offered.
    assert!(!run.tools().allows(CommandKind::Mcp));
    assert!(run.tools().allows(CommandKind::SshExec));
    run.set_catalog(Catalog {
        mcp: vec![
            tool("files", "read_text_file", true),
            tool("files", "write_file", false),
            tool("other", "secret", false),
        ],
        ssh: vec![
            conn("web", "alice", &["ext"]),
            conn("db", "alice", &[]),
            conn("theirs", "bob", &["*"]),
        ],
        user: "alice".into(),
    });
    let g = run.tools();
    assert_eq!(g.mcp, vec!["files.read_text_file", "files.write_file"]);
    assert_eq!(g.mcp_read_only, vec!["files.read_text_file"]);
    assert_eq!(g.offered(), vec![CommandKind::Mcp, CommandKind::SshExec]);
    let prompt = keyless_core::message::movement_prompt(&run);
    assert!(
        prompt.contains("files.read_text_file (read-only): read_text_file does things"),
        "{prompt}"
    );
    assert!(
        prompt.contains("ARGS schema: {\"type\":\"object\"}"),
        "{prompt}"
    );
    assert!(!prompt.contains("other.secret"), "{prompt}");
    // Only the user's own, granted connections are named.
    assert!(prompt.contains("web (ops@10.0.0.1:22"), "{prompt}");
    assert!(
        !prompt.contains("db (") && !prompt.contains("theirs ("),
        "{prompt}"
    );
    assert!(!prompt.contains("@@sshupload"), "{prompt}");
    // The judge: a read-only tool of a trusted server runs in Ask; others are confirmed; a tool
    // the movement does not offer is denied with the reason.
    let judge = Judge {
        mode: Mode::Ask,
        allow: Vec::new(),
        gate: Some(g),
        context: Default::default(),
    };
    let parsed = parse_with(
        "@@mcp files.read_text_file\n@@end\n@@mcp files.write_file\n@@end\n@@mcp other.secret\n@@end\n@@next\n@@end\n@@eof\n",
        &Limits::default(),
        &judge.offered(),
    );
    assert!(parsed.ok(), "{parsed:?}");
    let d: Vec<(Tier, Decision)> = parsed
        .reply
        .commands
        .iter()
        .filter(|c| c.kind == CommandKind::Mcp)
        .map(|c| {
            let v = judge.verdict(c).expect("verdict");
            (v.tier, v.decision)
        })
        .collect();
    assert_eq!(
        d,
        vec![
            (Tier::ReadOnly, Decision::Run),
            (Tier::Risky, Decision::Confirm),
            (Tier::Risky, Decision::Deny)
        ]
    );
}

#[test]
fn mcp_tool_names_are_checked_at_validation() {
    let bad_form = PIECE.replace("mcp__files__*", "mcp__files");
    let v = validate(&bad_form, Strictness::Strict);
    assert!(
        v.errors
            .iter()
            .any(|f| f.code.as_str() == "KA_PIECE_FORMAT"),
        "{:?}",
        v.errors
    );
    let not_required = PIECE.replace("mcp__files__*", "mcp__github__search");
    let v = validate(&not_required, Strictness::Strict);
    assert!(
        v.errors
            .iter()
            .any(|f| f.code.as_str() == "KA_PIECE_UNKNOWN_TOOL" && f.message.contains("github")),
        "{:?}",
        v.errors
    );
}

fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_-]{0,12}"
}

proptest! {
    /// Whatever the arguments, an extension command renders to text that parses back to it.
    #[test]
    fn extension_commands_round_trip(
        conn in word(),
        local in "[a-z]{1,8}(/[a-z0-9_-]{1,8}(\\.[a-z]{1,3})?){0,2}",
        remote in "/[A-Za-z0-9._/ -]{0,20}[A-Za-z0-9]",
        server in word(),
        tool_name in "[A-Za-z][A-Za-z0-9_./-]{0,20}",
        key in "[a-z]{1,6}",
        value in "[ -~]{0,20}",
    ) {
        let remote = remote.replace(' ', "_");
        let args = serde_json::json!({ key.clone(): value }).to_string();
        let text = format!(
            "@@sshupload {conn} {local} TO {remote}\n@@end\n@@sshdownload {conn} {remote} TO {local}\n@@end\n\
             @@mcp {server}.{tool_name}\n<<<ARGS\n{args}\nARGS>>>\n@@end\n@@sshexec {conn}\n<<<CMD\necho {key}\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n"
        );
        let first = ext(&text);
        prop_assert!(first.ok(), "{text}\n{:?}", first.diagnostics);
        let again = ext(&render_reply(&first.reply));
        prop_assert_eq!(&again.reply, &first.reply);
    }
}
