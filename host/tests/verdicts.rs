//! One verdict for what is shown and what runs: the same batch, judged by the preview
//! (core's `command_views`, which the overlay, the dashboard and the playground use) and carried
//! out by the executor, meets the same tier and decision for every command the executor reached,
//! under every mode, allow-list and workspace context.
#![allow(clippy::expect_used)]

mod common;

use keyless_core::policy::verdict::Judge;
use keyless_core::policy::{Decision, Tier, Verdict};
use keyless_core::{Command, Mode, Settings};
use keyless_host::exec::batch::{ExecSettings, Executor, Prompter};
use keyless_host::exec::workspace::Workspace;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Declines every confirmation and keeps the verdict the executor met for each command.
#[derive(Default)]
struct Recorder {
    judged: BTreeMap<u32, (Tier, Decision)>,
}

impl Prompter for Recorder {
    fn confirm(&mut self, _command: &str, _verdict: &Verdict) -> bool {
        false
    }
    fn ask(&mut self, _question: &str) -> Option<String> {
        None
    }
    fn say(&mut self, _message: &str) {}
    fn judged(&mut self, command: &Command, verdict: &Verdict) {
        self.judged
            .insert(command.number, (verdict.tier, verdict.decision));
    }
}

/// Command lines of every tier that are harmless to run in a temp folder whatever is decided
/// (unconfined: the test drives the executor in-process).
const LINES: &[&str] = &[
    "echo hi",
    "ls",
    "cat a.txt",
    "git status --short",
    "rg foo -- *",
    "cargo --version",
    "npm --version",
    "make -n",
    "rg foo *",
    "node missing.js",
    "echo hi > out.txt",
    "touch b.txt",
    "rm -f nothing.txt",
    "git push --force",
    "git -C . push --force",
    "curl http://127.0.0.1:9/x | sh",
    "git stash list --output=o.txt",
];

const ALLOW: &[&[&str]] = &[&[], &["make *"], &["node *", "rg *"], &["echo *"]];

fn block(kind: usize, line: &str) -> String {
    match kind {
        0 => common::block("runcommand", &[("CMD", line)]),
        1 => common::block("newfile n.txt", &[("CONTENT", "n")]),
        2 => common::block("updatefile a.txt", &[("CONTENT", "u")]),
        3 => common::block("deletefile a.txt", &[]),
        4 => common::block("readfile a.txt", &[]),
        _ => common::block("commit", &[("MSG", "c")]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn the_preview_and_the_executor_meet_the_same_verdict(
        commands in prop::collection::vec((0usize..6, 0usize..LINES.len()), 1..6),
        mode in 0usize..3,
        allow in 0usize..ALLOW.len(),
        steering in 0usize..3,
    ) {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path();
        common::git(root, &["init", "-q", "-b", "feature"]);
        std::fs::write(root.join("a.txt"), "a\n").expect("a");
        match steering {
            1 => std::fs::write(root.join(".npmrc"), "script-shell=/x\n").expect("npmrc"),
            2 => std::fs::write(root.join("rust-toolchain.toml"), "not toml [\n").expect("tc"),
            _ => {}
        }
        let reply = common::reply(
            &commands.iter().map(|(k, l)| block(*k, LINES[*l])).collect::<Vec<_>>(),
        );
        let mode = [Mode::Ask, Mode::AutoSafe, Mode::Auto][mode];
        let allow: Vec<String> = ALLOW[allow].iter().map(ToString::to_string).collect();
        // The preview, as the views compute it, with the context the host gives them.
        let context = keyless_host::exec::policy_context::context(root, None);
        let judge = Judge { mode, allow: allow.clone(), gate: None, context };
        let settings = Settings::default();
        let shown = keyless_core::check::command_views(&reply, &settings, &judge);
        // The executor, on the same batch.
        let ws = Workspace::open(root).expect("ws");
        let cfg = ExecSettings { mode, allow, timeout_seconds: 20, ..ExecSettings::default() };
        let repo = keyless_host::exec::git::RepoRecord::capture(root);
        let exec = Executor { ws: &ws, cfg: &cfg, session: "s", gate: None, repo: &repo, ext: None };
        let mut rec = Recorder::default();
        exec.execute(&reply, 1, 1, &mut rec);
        for view in &shown {
            let Some(&(tier, decision)) = rec.judged.get(&view.number) else { continue };
            prop_assert_eq!(Some(tier), view.tier, "tier of #{} {}: {}", view.number, view.target, reply);
            prop_assert_eq!(Some(decision), view.decision, "decision of #{} {}: {}", view.number, view.target, reply);
        }
        // Every command with a verdict that the executor reached was compared; the first one always is.
        let first = &shown[0];
        prop_assert!(first.tier.is_none() || rec.judged.contains_key(&first.number), "{reply}");
    }
}
