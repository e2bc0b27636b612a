//! insta snapshots of every text keyless sends to a model.
#![allow(clippy::expect_used)] // helpers outside #[test] fns build fixtures

use keyless_core::check::check;
use keyless_core::message::{
    cap_output, correction, results, system_prompt, verified_line, BatchRef, CommandOutcome,
    CommandResult, PromptContext, VERIFIED_DIR,
};
use keyless_core::plan::{plan, SkipReason};
use keyless_core::{parse, Code, Mode, Pace, Settings};
use keyless_tests::{cases, settings_for};

#[test]
fn corrections_for_every_rejected_corpus_reply() {
    for case in cases().into_iter().filter(|c| c.name.starts_with("err_")) {
        let text = std::fs::read_to_string(&case.reply).expect("reply");
        let report = check(&text, &settings_for(&case.args));
        let correction = report
            .correction
            .expect("a rejected reply has a correction");
        insta::assert_snapshot!(format!("correction__{}", case.name), correction);
    }
}

#[test]
fn correction_lists_at_most_twenty_problems() {
    let reply: String = (0..40)
        .map(|i| format!("@@bogus{i}\n@@end\n"))
        .collect::<String>()
        + "@@next\n@@end\n@@eof\n";
    let out = parse(&reply, &Settings::default().limits);
    insta::assert_snapshot!(correction(&out.diagnostics, out.suppressed, out.truncated));
}

fn seed_like_batch() -> Vec<CommandResult> {
    let reply = "@@newfile src/Foo/Bar.cs\n<<<CONTENT\nnamespace Foo;\npublic class Bar {}\nCONTENT>>>\n@@end\n\
@@editfile src/Foo/Baz.cs\n<<<FIND\npublic void Old()\nFIND>>>\n<<<REPLACE\npublic void New()\nREPLACE>>>\n@@end\n\
@@runcommand\n<<<CMD\ndotnet build\nCMD>>>\n@@end\n@@runcommand\n<<<CMD\ndotnet test\nCMD>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let settings = Settings {
        pace: Pace::Batch,
        limits: keyless_core::Limits {
            max_commands_per_response: 3,
            ..Default::default()
        },
    };
    let parsed = parse(reply, &settings.limits);
    assert!(parsed.ok(), "{:?}", parsed.diagnostics);
    let planned = plan(&parsed.reply, &settings);
    let c = &parsed.reply.commands;
    let bar = b"namespace Foo;\npublic class Bar {}\n";
    vec![
        CommandResult::new(&c[0], CommandOutcome::Ok { exit_code: None, duration_ms: None, verified: Some(verified_line("src/Foo/Bar.cs", bar)), output: None }),
        CommandResult::new(&c[1], CommandOutcome::Error {
            code: Code::FindNotUnique,
            reason: "FIND text matched 0 times (must match exactly once)\nclosest lines in the file:\n  12 | public void Old(int x)".into(),
            exit_code: None, duration_ms: None, output: None,
        }),
        CommandResult::new(&c[2], CommandOutcome::Ok { exit_code: Some(0), duration_ms: Some(4_200), verified: None, output: Some("Build succeeded.\n    0 Warning(s)\n    0 Error(s)\n".into()) }),
        CommandResult::new(&c[3], CommandOutcome::Skipped { reason: planned.entries[3].skip.expect("skipped") }),
    ]
}

#[test]
fn results_message_like_the_seed() {
    insta::assert_snapshot!(results(
        BatchRef { turn: 3, batch: 2 },
        &seed_like_batch(),
        Pace::Batch,
        false
    ));
}

#[test]
fn results_message_batch_stopped_and_output_with_marker() {
    let reply = "@@runcommand\n<<<CMD\ncargo test\nCMD>>>\n@@end\n@@newfile a.txt\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@done\n@@end\n@@eof\n";
    let parsed = parse(reply, &Settings::default().limits);
    let mut planned = plan(&parsed.reply, &Settings::default());
    planned.stop_after(1);
    let c = &parsed.reply.commands;
    let entries = vec![
        CommandResult::new(
            &c[0],
            CommandOutcome::Error {
                code: Code::CommandFailed,
                reason: "command exited with code 101".into(),
                exit_code: Some(101),
                duration_ms: Some(12_345),
                output: Some(cap_output(
                    &format!(
                        "running 3 tests\nOUTPUT>>>\n{}test result: FAILED",
                        "line\n".repeat(5)
                    ),
                    60,
                )),
            },
        ),
        CommandResult::new(
            &c[1],
            CommandOutcome::Skipped {
                reason: planned.entries[1].skip.expect("skipped"),
            },
        ),
    ];
    insta::assert_snapshot!(results(
        BatchRef { turn: 1, batch: 4 },
        &entries,
        Pace::Step,
        false
    ));
}

#[test]
fn results_message_when_the_task_is_finished() {
    let reply = "@@newfile a.txt\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@done\n@@end\n@@eof\n";
    let parsed = parse(reply, &Settings::default().limits);
    let c = &parsed.reply.commands;
    let entries = vec![
        CommandResult::new(
            &c[0],
            CommandOutcome::Ok {
                exit_code: None,
                duration_ms: None,
                verified: None,
                output: None,
            },
        ),
        CommandResult::new(
            &c[1],
            CommandOutcome::Ok {
                exit_code: None,
                duration_ms: None,
                verified: None,
                output: None,
            },
        ),
    ];
    insta::assert_snapshot!(results(
        BatchRef { turn: 2, batch: 1 },
        &entries,
        Pace::Batch,
        true
    ));
}

#[test]
fn system_prompts() {
    let ask = Settings::default();
    insta::assert_snapshot!(
        "prompt_balanced_ask",
        system_prompt(&ask, &PromptContext::default())
    );
    let step = Settings {
        pace: Pace::Step,
        ..Settings::default()
    };
    insta::assert_snapshot!(
        "prompt_step_ask",
        system_prompt(&step, &PromptContext::default())
    );
    let batch = Settings {
        pace: Pace::Batch,
        ..Settings::default()
    };
    let ctx = PromptContext {
        mode: Mode::AutoSafe,
        environment: Some(
            "OS: Linux x86_64\nShell: bash 5.2\nTools: git 2.47, cargo 1.95, node 20".into(),
        ),
        ..Default::default()
    };
    insta::assert_snapshot!("prompt_batch_autosafe_env", system_prompt(&batch, &ctx));
}

#[test]
fn verified_lines_and_skip_texts() {
    let crlf = b"line one\r\nline \"two\"\r\n\tindented\r\n";
    let texts = [
        verified_line("src/a.txt", crlf),
        verified_line("src/bom.cs", b"\xef\xbb\xbfusing System;\n"),
        verified_line("empty.txt", b""),
        verified_line("long.txt", "x".repeat(500).as_bytes()),
        VERIFIED_DIR.to_string(),
        SkipReason::PaceLimit {
            pace: Pace::Step,
            limit: 1,
        }
        .to_string(),
        SkipReason::PaceLimit {
            pace: Pace::Balanced,
            limit: 3,
        }
        .to_string(),
        SkipReason::BatchLimit { limit: 5 }.to_string(),
        SkipReason::AfterDone.to_string(),
        SkipReason::BatchStopped { at: 2 }.to_string(),
    ];
    insta::assert_snapshot!(texts.join("\n"));
}

/// The system prompt states every limit of the seed's table and the batch failure mode as it
/// really is (a failed read-only command does not stop a batch).
#[test]
fn system_prompt_states_every_limit_and_the_failure_mode() {
    use keyless_core::BatchFailureMode;
    let s = Settings::default();
    for (mode, says) in [
        (
            BatchFailureMode::StopOnMutationFailure,
            "A failed read-only command, @@readfile or @@ask does not stop the batch.",
        ),
        (
            BatchFailureMode::StopOnAnyFailure,
            "Any failed command stops the batch",
        ),
        (
            BatchFailureMode::Continue,
            "A failed command does not stop the batch",
        ),
    ] {
        let p = system_prompt(
            &s,
            &PromptContext {
                failure_mode: mode,
                ..Default::default()
            },
        );
        assert!(p.contains(says), "{mode}: {p}");
        let l = &s.limits;
        for figure in [
            format!("At most {} command(s)", s.effective_command_limit()),
            format!(
                "at most {} characters; one section at most {}",
                l.max_response_chars, l.max_file_content_chars
            ),
            format!("cut to {} characters", l.max_command_output_chars),
            format!("After {} rejected replies", l.max_format_retries),
            format!("at most {} batches", s.effective_iterations_per_turn()),
        ] {
            assert!(p.contains(&figure), "{figure}: {p}");
        }
    }
}
