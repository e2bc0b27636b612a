//! `:handover` in `run --interactive`: what it prints is exactly what core makes of the session's
//! record (pasted within the budget, or written as a file to attach over it), and the loop goes
//! on with the next reply and the next numbers.

use super::*;
use keyless_core::diff::{file_diff, Side};
use keyless_core::handover::{
    handover, AskRecord, BatchRecord, CommandLine, CommitRecord, SessionRecord,
};
use keyless_core::message::ResultStatus;
use keyless_core::site::Delivery;
use keyless_core::turn::BatchStatus;
use keyless_core::CommandKind;

/// The text between `start` (excluded) and the next `end` (excluded).
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).expect(start) + start.len();
    let len = text[from..].find(end).expect(end);
    &text[from..from + len]
}

fn line(n: u32, kind: CommandKind, target: &str, status: ResultStatus) -> CommandLine {
    CommandLine {
        number: n,
        kind,
        target: target.into(),
        status,
        code: None,
    }
}

#[test]
fn handover_prints_what_core_makes_of_the_record_and_the_loop_goes_on() {
    use std::io::Write as _;
    let fx = Fixture::new();
    let r1 = reply(&[block("newfile a.txt", &[("CONTENT", "a")])]);
    let r2 = block("ask", &[("MSG", "Which name?\nOne word.")])
        + &block("ask", &[("MSG", "And the greeting?")])
        + "@@next\n@@end\n@@eof\n";
    let r3 = reply(&[block("commit", &[("MSG", "Add a")])]);
    let r4 = "@@done\n@@end\n@@eof\n";
    let mut child = fx
        .host()
        .args([
            "run",
            "--interactive",
            "--yes",
            "--answer",
            "Ada",
            "--task",
            "Say hello",
            "--workspace",
        ])
        .arg(fx.ws())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let input = format!("{r1}{r2}{r3}:handover\n  :handover 3000\n:nonsense\n{r4}");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The loop went on after :handover with the next numbers, and told what :nonsense is not.
    assert!(
        text.contains("=== reply 4: stdin #4 (turn 1, batch 4"),
        "{text}"
    );
    assert!(
        text.contains("unknown command :nonsense\nCommands"),
        "{text}"
    );

    // The record, as the test knows the session went.
    let head = git(&fx.ws(), &["rev-parse", "HEAD"]);
    let first = between(
        &text,
        "Paste this first message into your chat:\n\n",
        "\n\n# Task\nSay hello\n",
    );
    let last = format!(
        "[KEYLESSAGENT RESULTS] turn=1 batch=3{}",
        between(
            &text,
            "[KEYLESSAGENT RESULTS] turn=1 batch=3",
            "Reply in AgentScript v1 only.\n"
        )
    ) + "Reply in AgentScript v1 only.";
    let done = |turn, batch, commands| BatchRecord {
        turn,
        batch,
        status: BatchStatus::Done,
        commands,
    };
    let record = SessionRecord {
        session: common::session_of(&text),
        system_prompt: first.to_string(),
        task: Some("Say hello".into()),
        batches: vec![
            done(
                1,
                1,
                vec![
                    line(1, CommandKind::NewFile, "a.txt", ResultStatus::Ok),
                    line(2, CommandKind::Next, "", ResultStatus::Ok),
                ],
            ),
            done(
                1,
                2,
                vec![
                    line(1, CommandKind::Ask, "Which name?", ResultStatus::Ok),
                    CommandLine {
                        code: Some("KA_COMMAND_DECLINED".into()),
                        ..line(
                            2,
                            CommandKind::Ask,
                            "And the greeting?",
                            ResultStatus::Error,
                        )
                    },
                    line(3, CommandKind::Next, "", ResultStatus::Ok),
                ],
            ),
            done(
                1,
                3,
                vec![
                    line(1, CommandKind::Commit, "Add a", ResultStatus::Ok),
                    line(2, CommandKind::Next, "", ResultStatus::Ok),
                ],
            ),
        ],
        changed: vec![
            file_diff("a.txt", None, Side::of(None), Side::of(Some(b"a\n"))).expect("a change"),
        ],
        commits: vec![CommitRecord {
            turn: 1,
            batch: 3,
            summary: format!("committed {} on feature: Add a", &head[..8]),
            pushed: true,
        }],
        last_results: Some(last),
        asks: vec![
            AskRecord {
                turn: 1,
                batch: 2,
                question: "Which name?\nOne word.".into(),
                answer: Some("Ada".into()),
            },
            AskRecord {
                turn: 1,
                batch: 2,
                question: "And the greeting?".into(),
                answer: None,
            },
        ],
        movement: None,
        next_turn: 1,
        next_batch: 4,
    };

    // Within the default budget: printed whole, exactly as core makes it.
    let pasted = handover(&record, 30_000);
    assert_eq!(pasted.delivery, Delivery::Paste);
    let shown = between(
        &text,
        &format!(
            "--- handover: {} characters, within the paste budget of 30000 ---\n",
            pasted.text.chars().count()
        ),
        "\n--- end of handover ---",
    );
    assert_eq!(shown, pasted.text);

    // Over a budget of 3000: the file to attach holds it, and the note is core's.
    let attached = handover(&record, 3_000);
    let Delivery::Attach { file_name, note } = &attached.delivery else {
        panic!("expected an attachment: {:?}", attached.delivery);
    };
    let file = fx.ws().join(".agent/handover").join(file_name);
    assert_eq!(
        std::fs::read_to_string(&file).expect("the handover file"),
        attached.text
    );
    let shown_note = between(
        &text,
        "paste this note with it:\n",
        "\n--- end of handover ---",
    );
    assert_eq!(shown_note, note);
    assert!(
        text.contains(&format!("The handover is in {}.", file.display())),
        "{text}"
    );
}
