//! The handover message: one snapshot per shape (a plain task, a piece in its second movement,
//! an unanswered `@@ask`, a session too long for the paste budget), and the properties that hold
//! for every record: within the budget whenever it says it fits, the last results always whole.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::expect_used, clippy::panic)]

use keyless_core::branch::GitFacts;
use keyless_core::diff::{file_diff, Side};
use keyless_core::handover::{
    handover, handover_for_site, AskRecord, BatchRecord, CommandLine, CommitRecord, SessionRecord,
};
use keyless_core::message::{
    movement_prompt, results, system_prompt, BatchRef, CommandOutcome, CommandResult,
    PromptContext, ResultStatus,
};
use keyless_core::piece::run::{Directive, PieceRun};
use keyless_core::piece::{validate, Strictness};
use keyless_core::site::{load_sites, Delivery, DEFAULT_SITES_JSON};
use keyless_core::turn::BatchStatus;
use keyless_core::{parse, CommandKind, Limits, Pace, Settings};
use proptest::prelude::*;

fn prompt() -> String {
    system_prompt(
        &Settings::default(),
        &PromptContext {
            environment: Some("OS: Linux x86_64; shell: bash 5.2; git 2.43".into()),
            git: Some(GitFacts {
                repository: true,
                branch: Some("keyless/2026-05-01-add-a-greeting".into()),
                created_from: Some("main".into()),
                protected: vec!["main".into(), "master".into(), "release/*".into()],
                origin: Some("git@example.com:me/demo.git".into()),
            }),
            ..PromptContext::default()
        },
    )
}

fn cmd(number: u32, kind: CommandKind, target: &str, status: ResultStatus) -> CommandLine {
    CommandLine {
        number,
        kind,
        target: target.into(),
        status,
        code: None,
    }
}

fn failed(number: u32, kind: CommandKind, target: &str, code: &str) -> CommandLine {
    CommandLine {
        code: Some(code.into()),
        ..cmd(number, kind, target, ResultStatus::Error)
    }
}

fn batch(turn: u32, batch: u32, commands: Vec<CommandLine>) -> BatchRecord {
    BatchRecord {
        turn,
        batch,
        status: BatchStatus::Done,
        commands,
    }
}

/// The results message of `reply` (its commands in order, each with its outcome).
fn results_of(turn: u32, batch: u32, reply: &str, outcomes: Vec<CommandOutcome>) -> String {
    let parsed = parse(reply, &Limits::default());
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let reply = parsed.reply;
    let entries: Vec<CommandResult> = reply
        .commands
        .iter()
        .filter(|c| c.kind != CommandKind::Say)
        .zip(outcomes)
        .map(|(c, o)| CommandResult::new(c, o))
        .collect();
    results(BatchRef { turn, batch }, &entries, Pace::Batch, false)
}

fn ok(output: Option<&str>) -> CommandOutcome {
    CommandOutcome::Ok {
        exit_code: output.map(|_| 0),
        duration_ms: output.map(|_| 1200),
        verified: None,
        output: output.map(str::to_string),
    }
}

fn plain() -> SessionRecord {
    let last = results_of(
        1,
        3,
        "@@runcommand\n<<<CMD\ncargo test\nCMD>>>\n@@end\n@@commit\n<<<MSG\nAdd a greeting\nMSG>>>\n@@end\n@@next\n@@end\n@@eof\n",
        vec![
            ok(Some("test greets ... ok\ntest result: ok. 1 passed")),
            ok(Some("committed 1a2b3c4d on keyless/2026-05-01-add-a-greeting: Add a greeting\npushed to origin/keyless/2026-05-01-add-a-greeting")),
            ok(None),
        ],
    );
    SessionRecord {
        session: "run-1777600000-4242".into(),
        system_prompt: prompt(),
        task: Some("Add a greeting function to src/lib.rs, with a test.".into()),
        batches: vec![
            batch(
                1,
                1,
                vec![
                    cmd(1, CommandKind::ReadFile, "src/lib.rs", ResultStatus::Ok),
                    cmd(2, CommandKind::Next, "", ResultStatus::Ok),
                ],
            ),
            batch(
                1,
                2,
                vec![
                    cmd(1, CommandKind::EditFile, "src/lib.rs", ResultStatus::Ok),
                    failed(2, CommandKind::RunCommand, "cargo test", "KA_COMMAND_FAILED"),
                    cmd(3, CommandKind::Next, "", ResultStatus::Skipped),
                ],
            ),
            batch(
                1,
                3,
                vec![
                    cmd(1, CommandKind::RunCommand, "cargo test", ResultStatus::Ok),
                    cmd(2, CommandKind::Commit, "Add a greeting", ResultStatus::Ok),
                    cmd(3, CommandKind::Next, "", ResultStatus::Ok),
                ],
            ),
        ],
        changed: vec![file_diff(
            "src/lib.rs",
            None,
            Side::of(Some(b"pub fn one() -> u32 {\n    1\n}\n")),
            Side::of(Some(
                b"pub fn one() -> u32 {\n    1\n}\n\npub fn greet() -> &'static str {\n    \"hello\"\n}\n",
            )),
        )
        .expect("a change")],
        commits: vec![CommitRecord {
            turn: 1,
            batch: 3,
            summary: "committed 1a2b3c4d on keyless/2026-05-01-add-a-greeting: Add a greeting"
                .into(),
            pushed: true,
        }],
        last_results: Some(last),
        asks: Vec::new(),
        movement: None,
        next_turn: 1,
        next_batch: 4,
    }
}

#[test]
fn plain_task() {
    let h = handover(&plain(), 30_000);
    assert_eq!(h.delivery, Delivery::Paste);
    assert_eq!((h.brief, h.counted), (0, 0), "everything fits in full");
    insta::assert_snapshot!(h.text);
}

const PLAN: &str = include_str!("../../pieces/plan-implement-review.yaml");

#[test]
fn piece_in_its_second_movement() {
    let v = validate(PLAN, Strictness::Strict);
    let mut run = PieceRun::start(v.piece.expect("the shipped piece is valid"));
    run.apply(&Directive::Next("implement".into()))
        .expect("plan leads to implement");
    let mut r = plain();
    r.task = Some("Add a greeting function, planned and reviewed.".into());
    r.batches = vec![
        batch(
            1,
            1,
            vec![
                cmd(1, CommandKind::RunCommand, "ls src", ResultStatus::Ok),
                cmd(2, CommandKind::Done, "", ResultStatus::Ok),
            ],
        ),
        BatchRecord {
            turn: 1,
            batch: 2,
            status: BatchStatus::Rejected,
            commands: Vec::new(),
        },
    ];
    r.changed = Vec::new();
    r.commits = Vec::new();
    r.movement = Some(movement_prompt(&run));
    r.last_results = Some(results_of(
        1,
        1,
        "@@runcommand\n<<<CMD\nls src\nCMD>>>\n@@end\n@@done next=implement\n<<<MSG\nPlan: add greet() and a test.\nMSG>>>\n@@end\n@@eof\n",
        vec![ok(Some("lib.rs")), ok(None)],
    ));
    r.next_batch = 3;
    let h = handover(&r, 30_000);
    assert_eq!(h.delivery, Delivery::Paste);
    assert!(h.text.contains("implement (movement 2 of at most 12"));
    insta::assert_snapshot!(h.text);
}

#[test]
fn task_with_an_unanswered_ask() {
    let mut r = plain();
    r.batches.push(batch(
        1,
        4,
        vec![
            cmd(1, CommandKind::Ask, "Greet in English?", ResultStatus::Ok),
            failed(
                2,
                CommandKind::Ask,
                "Should greet() take a name?",
                "KA_COMMAND_DECLINED",
            ),
        ],
    ));
    r.asks = vec![
        AskRecord {
            turn: 1,
            batch: 4,
            question: "Greet in English?".into(),
            answer: Some("Yes, and in French too.".into()),
        },
        AskRecord {
            turn: 1,
            batch: 4,
            question: "Should greet() take a name?\nFor example greet(\"Ada\").".into(),
            answer: None,
        },
    ];
    r.last_results = Some(results_of(
        1,
        4,
        "@@ask\n<<<MSG\nGreet in English?\nMSG>>>\n@@end\n@@ask\n<<<MSG\nShould greet() take a name?\nMSG>>>\n@@end\n@@eof\n",
        vec![
            ok(Some("Yes, and in French too.")),
            CommandOutcome::Error {
                code: keyless_core::Code::CommandDeclined,
                reason: "the user did not answer".into(),
                exit_code: None,
                duration_ms: None,
                output: None,
            },
        ],
    ));
    r.next_batch = 5;
    let h = handover(&r, 30_000);
    assert_eq!(h.delivery, Delivery::Paste);
    insta::assert_snapshot!(h.text);
}

/// A long session: 40 batches and a last results message of 12,000 characters.
fn long() -> SessionRecord {
    let mut r = plain();
    r.batches = (1..=40)
        .map(|b| {
            batch(
                1 + (b - 1) / 20,
                1 + (b - 1) % 20,
                vec![
                    cmd(
                        1,
                        CommandKind::EditFile,
                        &format!("src/module_{b}.rs"),
                        ResultStatus::Ok,
                    ),
                    failed(
                        2,
                        CommandKind::RunCommand,
                        "cargo test --workspace",
                        "KA_COMMAND_FAILED",
                    ),
                    cmd(3, CommandKind::Next, "", ResultStatus::Skipped),
                ],
            )
        })
        .collect();
    let output = format!("error[E0308]: mismatched types {}\n", "=".repeat(570)).repeat(20);
    r.last_results = Some(results_of(
        2,
        20,
        "@@runcommand\n<<<CMD\ncargo test --workspace\nCMD>>>\n@@end\n@@eof\n",
        vec![CommandOutcome::Error {
            code: keyless_core::Code::CommandFailed,
            reason: "exit code 101".into(),
            exit_code: Some(101),
            duration_ms: Some(9000),
            output: Some(output),
        }],
    ));
    r.next_turn = 2;
    r.next_batch = 21;
    r
}

#[test]
fn too_long_for_the_paste_budget_goes_as_an_attachment() {
    let r = long();
    let sites = load_sites(DEFAULT_SITES_JSON, None).expect("shipped sites");
    let small = sites
        .iter()
        .find(|s| s.max_paste_chars == 10_000 && s.selectors.file_input.is_some())
        .expect("a site with a 10,000-character budget that takes files");
    let h = handover_for_site(&r, small);
    let Delivery::Attach { file_name, note } = &h.delivery else {
        panic!("expected an attachment, got {:?}", h.delivery);
    };
    assert_eq!(file_name, "keyless-handover-t2-b21.txt");
    assert_eq!((h.brief, h.counted), (0, 0), "the attachment is whole");
    assert!(h.text.contains(r.last_results.as_deref().expect("results")));
    insta::assert_snapshot!("attachment_note", note);
    insta::assert_snapshot!("attachment_text", h.text);
    // With a budget it can meet, the oldest batches go brief, then are counted.
    let budget = h.text.chars().count() - 3_000;
    let fits = handover(&r, budget);
    assert_eq!(fits.delivery, Delivery::Paste);
    assert!(fits.counted > 0 && fits.text.chars().count() <= budget);
    insta::assert_snapshot!("summarised", fits.text);
}

fn arb_command() -> impl Strategy<Value = CommandLine> {
    (
        1u32..9,
        prop::sample::select(vec![
            CommandKind::NewFile,
            CommandKind::EditFile,
            CommandKind::RunCommand,
            CommandKind::Commit,
            CommandKind::Ask,
        ]),
        "[a-z/._ ]{0,40}",
        prop::sample::select(vec![
            ResultStatus::Ok,
            ResultStatus::Error,
            ResultStatus::Skipped,
        ]),
    )
        .prop_map(|(number, kind, target, status)| CommandLine {
            number,
            kind,
            target,
            status,
            code: (status == ResultStatus::Error).then(|| "KA_COMMAND_FAILED".into()),
        })
}

fn arb_record() -> impl Strategy<Value = SessionRecord> {
    (
        prop::collection::vec(
            (
                prop::sample::select(vec![BatchStatus::Done, BatchStatus::Rejected]),
                prop::collection::vec(arb_command(), 0..6),
            ),
            0..60,
        ),
        "(.|\n){0,3000}",
        prop::collection::vec(("[a-z ?]{1,50}", prop::option::of("[a-z ]{1,50}")), 0..4),
        prop::option::of("[a-z ]{1,200}"),
    )
        .prop_map(|(batches, last, asks, task)| {
            let mut r = plain();
            r.task = task;
            r.batches = batches
                .into_iter()
                .enumerate()
                .map(|(i, (status, commands))| BatchRecord {
                    turn: 1,
                    batch: u32::try_from(i + 1).unwrap_or(u32::MAX),
                    status,
                    commands: if status == BatchStatus::Done {
                        commands
                    } else {
                        Vec::new()
                    },
                })
                .collect();
            r.last_results = Some(last);
            r.asks = asks
                .into_iter()
                .map(|(question, answer)| AskRecord {
                    turn: 1,
                    batch: 1,
                    question,
                    answer,
                })
                .collect();
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Pasted means within the budget; the last results are always there whole; and the
    /// handover is the same text every time it is made.
    #[test]
    fn within_budget_and_last_results_whole(r in arb_record(), budget in 3_000usize..40_000) {
        let h = handover(&r, budget);
        let last = r.last_results.as_deref().unwrap_or("");
        prop_assert!(h.text.contains(last));
        match &h.delivery {
            Delivery::Paste => prop_assert!(h.text.chars().count() <= budget),
            Delivery::Attach { .. } => prop_assert!(h.text.chars().count() > budget),
        }
        prop_assert_eq!(&handover(&r, budget), &h);
    }
}
