//! The executor through the library, with a scripted prompter: confirmations approved or declined
//! one by one, and @@ask answered.
#![allow(clippy::expect_used)]

use keyless_core::policy::Verdict;
use keyless_core::{Mode, Pace, Settings};
use keyless_host::exec::batch::{BatchRun, ExecSettings, Executor, Prompter};
use keyless_host::exec::workspace::Workspace;
use std::collections::VecDeque;

#[derive(Default)]
struct Scripted {
    approvals: VecDeque<bool>,
    answers: VecDeque<String>,
    asked: Vec<String>,
    confirmed: Vec<(String, String)>,
    said: Vec<String>,
}

impl Prompter for Scripted {
    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool {
        self.confirmed
            .push((command.to_string(), verdict.tier.to_string()));
        self.approvals.pop_front().unwrap_or(false)
    }
    fn ask(&mut self, question: &str) -> Option<String> {
        self.asked.push(question.to_string());
        self.answers.pop_front()
    }
    fn say(&mut self, message: &str) {
        self.said.push(message.to_string());
    }
}

#[test]
fn confirmations_and_questions_go_through_the_prompter() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ws = Workspace::open(tmp.path()).expect("ws");
    let cfg = ExecSettings {
        settings: Settings {
            pace: Pace::Batch,
            ..Settings::default()
        },
        mode: Mode::AutoSafe,
        allow: vec!["cargo --version".into()],
        failure_mode: keyless_core::BatchFailureMode::Continue,
        ..ExecSettings::default()
    };
    let exec = Executor {
        ws: &ws,
        cfg: &cfg,
        session: "s",
        gate: None,
        repo: &keyless_host::exec::git::RepoRecord::default(),
        ext: None,
    };
    let reply = "@@say\n<<<MSG\nhello\nMSG>>>\n@@end\n\
@@runcommand\n<<<CMD\necho one > one.txt\nCMD>>>\n@@end\n\
@@runcommand\n<<<CMD\necho two > two.txt\nCMD>>>\n@@end\n\
@@runcommand\n<<<CMD\nls\nCMD>>>\n@@end\n\
@@ask\n<<<MSG\nWhich port?\nMSG>>>\n@@end\n\
@@next\n@@end\n@@eof\n";
    let mut p = Scripted {
        approvals: VecDeque::from([true, false]),
        answers: VecDeque::from(["8080".to_string()]),
        ..Scripted::default()
    };
    let out = exec.execute(reply, 1, 1, &mut p);
    let BatchRun::Executed { results, .. } = out else {
        panic!("rejected")
    };
    assert_eq!(p.said, ["hello"]);
    // Only the Risky commands were confirmed; ls is ReadOnly and ran without asking.
    assert_eq!(
        p.confirmed,
        [
            ("echo one > one.txt".to_string(), "Risky".to_string()),
            ("echo two > two.txt".to_string(), "Risky".to_string())
        ]
    );
    assert!(tmp.path().join("one.txt").exists());
    assert!(!tmp.path().join("two.txt").exists());
    assert!(results.contains("code: KA_COMMAND_DECLINED\nreason: the user declined (redirection writes a file (two.txt))"), "{results}");
    assert_eq!(p.asked, ["Which port?"]);
    assert!(
        results.contains(
            "--- result 4/4 | #5 ask | Which port? ---\nstatus: ok\n<<<OUTPUT\n8080\nOUTPUT>>>"
        ),
        "{results}"
    );
}
