//! The piece run state machine and the movement prompt.
#![allow(clippy::expect_used)] // fixture helpers fail the test loudly

use keyless_core::parse;
use keyless_core::piece::run::{Directive, Fallback, PieceRun, RunState};
use keyless_core::piece::{validate, Strictness};
use keyless_core::turn::{self, Position, TurnEnd};
use keyless_core::{CommandKind, Limits};

fn load(yaml: &str) -> keyless_core::piece::Piece {
    let v = validate(yaml, Strictness::Strict);
    assert!(v.ok(), "{:?}", v.errors);
    v.piece.expect("piece")
}

const FIX_LOOP: &str = include_str!("../../pieces/fix-loop.yaml");
const PLAN: &str = include_str!("../../pieces/plan-implement-review.yaml");

fn next(to: &str) -> Directive {
    Directive::Next(to.to_string())
}

fn running(name: &str) -> RunState {
    RunState::Running {
        movement: name.to_string(),
    }
}

#[test]
fn follows_rules_and_completes() {
    let mut run = PieceRun::start(load(PLAN));
    assert_eq!(run.state(), &running("plan"));
    assert_eq!(
        run.apply(&next("implement")).expect("allowed").state,
        running("implement")
    );
    assert_eq!(
        run.apply(&next("review")).expect("allowed").state,
        running("review")
    );
    assert_eq!(
        run.apply(&Directive::Complete).expect("allowed").state,
        RunState::Complete
    );
    assert_eq!(run.history(), ["plan", "implement", "review"]);
    assert!(
        run.apply(&Directive::Complete).is_err(),
        "a finished run takes no more directives"
    );
}

#[test]
fn refuses_a_transition_no_rule_allows_and_lists_the_allowed_ones() {
    let mut run = PieceRun::start(load(PLAN));
    let err = run
        .apply(&next("review"))
        .expect_err("plan has no rule to review");
    assert_eq!(err.code().as_str(), "KA_PIECE_TRANSITION");
    assert_eq!(
        err.to_string(),
        "movement \"plan\" has no rule leading to \"review\"; allowed: @@done next=implement, @@done, @@done status=aborted"
    );
    assert_eq!(
        run.state(),
        &running("plan"),
        "a refused directive changes nothing"
    );
}

fn ask(question: &str) -> Directive {
    Directive::Ask {
        question: question.to_string(),
    }
}

#[test]
fn abort_and_ask_resume() {
    let mut run = PieceRun::start(load(PLAN));
    assert_eq!(
        run.apply(&ask("Which database?")).expect("ask").state,
        RunState::NeedsUserInput {
            movement: "plan".into(),
            question: "Which database?".into(),
        }
    );
    // While the question waits, no directive raises another one (or moves the run).
    assert!(
        run.apply(&next("implement")).is_err(),
        "waiting for the user"
    );
    assert!(run.apply(&ask("Again?")).is_err(), "no second question");
    assert_eq!(run.question(), Some("Which database?"));
    assert!(run.answer());
    assert!(!run.answer(), "answered once");
    assert_eq!(run.state(), &running("plan"));
    // An empty question gets one that names the movement.
    let mut other = PieceRun::start(load(PLAN));
    other.apply(&ask("")).expect("ask");
    assert_eq!(
        other.question(),
        Some("The model needs your input to go on with movement \"plan\".")
    );
    assert!(matches!(
        run.apply(&Directive::Abort).expect("abort").state,
        RunState::Aborted { .. }
    ));
}

#[test]
fn revisit_limit_follows_default_next() {
    // fix-loop: verify -> fix -> verify …; fix and verify both send a loop past 3 rounds to ASK.
    let mut run = PieceRun::start(load(FIX_LOOP));
    run.apply(&next("fix")).expect("reproduce -> fix");
    run.apply(&next("verify")).expect("fix -> verify");
    // Each return to fix without a new movement is a revisit of fix; fix allows the default 3.
    for round in 1..=3 {
        let s = run.apply(&next("fix")).expect("verify -> fix");
        assert_eq!(s.state, running("fix"), "round {round}");
        let s = run.apply(&next("verify")).expect("fix -> verify");
        assert_eq!(s.state, running("verify"), "round {round}");
    }
    // The fourth revisit of fix exceeds its limit: its default_next asks the user, as the piece
    // promises ("loops at most three times before asking the user"), instead of aborting.
    let s = run.apply(&next("fix")).expect("directive is allowed");
    assert_eq!(
        s.state,
        RunState::NeedsUserInput {
            movement: "verify".into(),
            question: "Movement \"fix\" was revisited more than 3 times in a row. How should \
                       movement \"verify\" go on? Your answer is passed to the model."
                .into(),
        },
        "{s:?}"
    );
    assert!(
        s.note
            .as_deref()
            .is_some_and(|n| n
                .contains("\"fix\" was revisited more than 3 times in a row; default_next ASK")),
        "{s:?}"
    );
}

#[test]
fn default_next_redirects_and_max_movements_aborts() {
    let yaml = "name: loop\ndescription: d\nmax_movements: 6\ninitial_movement: a\nmovements:\n  - name: a\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: []\n    max_consecutive_revisits: 1\n    default_next: b\n    rules:\n      - condition: again\n        next: a\n  - name: b\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: []\n    rules:\n      - condition: back\n        next: a\n";
    let mut run = PieceRun::start(load(yaml));
    assert_eq!(
        run.apply(&next("a")).expect("first revisit").state,
        running("a")
    );
    let s = run.apply(&next("a")).expect("second revisit");
    assert_eq!(s.state, running("b"), "{s:?}");
    assert!(s
        .note
        .as_deref()
        .is_some_and(|n| n.contains("following default_next \"b\"")));
    assert_eq!(run.movement_runs(), 3);
    run.apply(&next("a")).expect("b -> a");
    run.apply(&next("a")).expect("a -> a");
    run.apply(&next("a")).expect("-> b via default");
    let s = run.apply(&next("a")).expect("directive ok");
    assert!(
        matches!(&s.state, RunState::Aborted { reason } if reason == "max_movements (6) reached"),
        "{s:?}"
    );
}

#[test]
fn movement_gates_commands_and_patterns() {
    let run = PieceRun::start(load(PLAN));
    let tools = run.tools();
    assert!(tools.allows(CommandKind::ReadFile) && tools.allows(CommandKind::RunCommand));
    assert!(
        !tools.allows(CommandKind::NewFile) && !tools.allows(CommandKind::EditFile),
        "plan has edit: false"
    );
    assert!(tools
        .check_command_line("git status && git log --oneline")
        .is_ok());
    let err = tools
        .check_command_line("git status && rm -rf src")
        .expect_err("rm is not allowed");
    assert!(
        err.starts_with("\"rm -rf src\" is not in this movement's allowed_commands"),
        "{err}"
    );
}

#[test]
fn directive_from_a_parsed_done_block() {
    let reply = "@@done next=implement\n@@end\n@@eof\n";
    let out = parse(reply, &Limits::default());
    let d = Directive::from_done(&out.reply.commands[0]).expect("done");
    assert_eq!(d, next("implement"));
    let out = parse("@@done status=aborted\n@@end\n@@eof\n", &Limits::default());
    assert_eq!(
        Directive::from_done(&out.reply.commands[0]),
        Some(Directive::Abort)
    );
}

#[test]
fn movement_prompt() {
    let mut run = PieceRun::start(load(PLAN));
    insta::assert_snapshot!(
        "movement_prompt_plan",
        keyless_core::message::movement_prompt(&run)
    );
    run.apply(&next("implement")).expect("ok");
    insta::assert_snapshot!(
        "movement_prompt_implement",
        keyless_core::message::movement_prompt(&run)
    );
}

#[test]
fn snapshots_restore_the_same_run() {
    let piece = load(FIX_LOOP);
    let mut run = PieceRun::start(piece.clone());
    run.apply(&next("fix")).expect("ok");
    run.apply(&next("verify")).expect("ok");
    run.apply(&next("fix")).expect("ok");
    let snap = run.snapshot();
    let json = serde_json::to_string(&snap).expect("json");
    let back: keyless_core::piece::run::RunSnapshot = serde_json::from_str(&json).expect("json");
    let mut restored = PieceRun::restore(piece, back);
    assert_eq!(restored.snapshot(), snap);
    // Both continue identically, revisit counters included.
    for _ in 0..6 {
        let a = run.apply(&next("verify")).map(|s| s.state);
        let b = restored.apply(&next("verify")).map(|s| s.state);
        assert_eq!(a, b);
        let a = run.apply(&next("fix")).map(|s| s.state);
        let b = restored.apply(&next("fix")).map(|s| s.state);
        assert_eq!(a, b);
    }
}

/// A piece whose `work` movement may send the run to WAIT_SUBTASKS, with `default_next` as given.
fn subtasks_piece(default_next: Option<&str>) -> String {
    let default = default_next.map_or(String::new(), |d| format!("    default_next: {d}\n"));
    format!(
        "name: subtasks\ndescription: d\nmax_movements: 9\ninitial_movement: work\nmovements:\n  - name: work\n    edit: true\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n{default}    rules:\n      - condition: split the work\n        next: WAIT_SUBTASKS\n  - name: check\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n    rules: []\n"
    )
}

/// WAIT_SUBTASKS is never a dead end: keyless runs no subtasks, so the seed's fallback for
/// "SpawnSubTask unavailable" (default_next) applies, or the run ends; the note says why.
#[test]
fn wait_subtasks_falls_back_to_default_next() {
    let mut run = PieceRun::start(load(&subtasks_piece(Some("check"))));
    let step = run.apply(&next("WAIT_SUBTASKS")).expect("allowed");
    assert_eq!(step.state, running("check"));
    assert_eq!(
        step.note.as_deref(),
        Some("WAIT_SUBTASKS: keyless runs no subtasks (SpawnSubTask is unavailable); following default_next \"check\"")
    );
    let mut run = PieceRun::start(load(&subtasks_piece(Some("COMPLETE"))));
    assert_eq!(
        run.apply(&next("WAIT_SUBTASKS")).expect("allowed").state,
        RunState::Complete
    );
    let mut run = PieceRun::start(load(&subtasks_piece(Some("ASK"))));
    let state = run.apply(&next("WAIT_SUBTASKS")).expect("allowed").state;
    assert!(
        matches!(&state, RunState::NeedsUserInput { movement, question } if movement == "work" && question.starts_with("WAIT_SUBTASKS: keyless runs no subtasks")),
        "{state:?}"
    );
    let mut run = PieceRun::start(load(&subtasks_piece(None)));
    let step = run.apply(&next("WAIT_SUBTASKS")).expect("allowed");
    assert_eq!(
        step.state,
        RunState::Aborted {
            reason: "WAIT_SUBTASKS: keyless runs no subtasks (SpawnSubTask is unavailable), and movement \"work\" has no other default_next".into()
        }
    );
    // What the model is told, through the turn engine.
    let mut run = PieceRun::start(load(&subtasks_piece(Some("check"))));
    let moved = turn::move_piece(
        &keyless_core::Settings::default(),
        at_batch(1),
        &mut run,
        keyless_core::Control::Done,
        Some(&next("WAIT_SUBTASKS")),
    )
    .expect("a move");
    assert!(moved.continues);
    assert!(
        moved
            .note
            .starts_with("[KEYLESSAGENT PIECE] WAIT_SUBTASKS: keyless runs no subtasks"),
        "{}",
        moved.note
    );
    assert!(
        moved.note.contains("[KEYLESSAGENT MOVEMENT] check"),
        "{}",
        moved.note
    );
}

/// Each shipped piece, scripted from its start to a terminal state (or to its question), the way
/// its description says it goes.
#[test]
fn every_shipped_piece_runs_to_its_end() {
    let done = |run: &mut PieceRun, d: Directive| run.apply(&d).expect("allowed").state;
    // plan-implement-review: plan, implement, review, complete.
    let mut run = PieceRun::start(load(PLAN));
    done(&mut run, next("implement"));
    done(&mut run, next("review"));
    assert_eq!(done(&mut run, Directive::Complete), RunState::Complete);
    // review-only: one movement that completes.
    let mut run = PieceRun::start(load(include_str!("../../pieces/review-only.yaml")));
    assert_eq!(run.state(), &running("review"));
    assert_eq!(done(&mut run, Directive::Complete), RunState::Complete);
    // ssh-ops: ops, then report, then complete.
    let mut run = PieceRun::start(load(include_str!("../../pieces/ssh-ops.yaml")));
    assert_eq!(done(&mut run, next("report")), running("report"));
    assert_eq!(done(&mut run, Directive::Complete), RunState::Complete);
    // fix-loop: reproduce, fix, verify; a passing verify completes…
    let mut run = PieceRun::start(load(FIX_LOOP));
    done(&mut run, next("fix"));
    done(&mut run, next("verify"));
    assert_eq!(done(&mut run, Directive::Complete), RunState::Complete);
    // …and a loop that never passes reaches its question, not an abort; the answer resumes it.
    let mut run = PieceRun::start(load(FIX_LOOP));
    done(&mut run, next("fix"));
    done(&mut run, next("verify"));
    let mut state = running("verify");
    for _ in 0..4 {
        state = done(&mut run, next("fix"));
        if !matches!(state, RunState::Running { .. }) {
            break;
        }
        done(&mut run, next("verify"));
    }
    assert!(
        matches!(state, RunState::NeedsUserInput { .. }),
        "{state:?}"
    );
    run.resume();
    assert!(
        matches!(run.state(), RunState::Running { .. }),
        "{:?}",
        run.state()
    );
}

fn at_batch(batch: u32) -> Position {
    Position {
        turn: 1,
        batch,
        invalid_in_a_row: 0,
    }
}

/// A piece of two movements: `work`, with the given `default_next`, and `check`.
fn fallback_piece(default_next: &str) -> keyless_core::piece::Piece {
    load(&format!(
        "name: fb\ndescription: d\nmax_movements: 9\ninitial_movement: work\nmovements:\n  - name: work\n    edit: true\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n    default_next: {default_next}\n    rules:\n      - condition: checked\n        next: check\n  - name: check\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: [Read]\n    rules: []\n"
    ))
}

/// ASK is a real question: `@@done status=needs_user_input` stops the run and ends
/// the turn unless the user answers; the answer continues the same movement and reaches the
/// model; a run waiting on its question raises no other.
#[test]
fn a_question_stops_the_run_and_the_answer_resumes_it() {
    let settings = keyless_core::Settings::default();
    let reply = parse(
        "@@done status=needs_user_input\n<<<MSG\nPostgres or SQLite?\nMSG>>>\n@@end\n@@eof\n",
        &Limits::default(),
    );
    assert!(reply.diagnostics.is_empty(), "{:?}", reply.diagnostics);
    let done = reply
        .reply
        .commands
        .last()
        .and_then(Directive::from_done)
        .expect("a directive");
    assert_eq!(done, ask("Postgres or SQLite?"));
    let mut run = PieceRun::start(load(PLAN));
    let mut mv = turn::move_piece(
        &settings,
        at_batch(2),
        &mut run,
        keyless_core::Control::Done,
        Some(&done),
    )
    .expect("a move");
    assert_eq!(mv.question.as_deref(), Some("Postgres or SQLite?"));
    assert!(!mv.continues);
    // Answered: the movement goes on and the model reads the answer, then the movement again.
    let mut answered = mv.clone();
    let mut run2 = run.clone();
    turn::answer_question(&mut run2, &mut answered, Some("  Postgres "));
    assert!(answered.continues);
    assert_eq!(answered.question, None);
    assert!(
        answered.note.starts_with(
            "[KEYLESSAGENT PIECE] The user answered: Postgres\n\n[KEYLESSAGENT MOVEMENT] plan"
        ),
        "{}",
        answered.note
    );
    assert_eq!(run2.state(), &running("plan"));
    let step = turn::after_batch(
        &settings,
        at_batch(2),
        turn::BatchReport::Executed {
            results: "[KEYLESSAGENT RESULTS]",
            control: keyless_core::Control::Done,
        },
        "",
        Some(&answered),
    );
    assert_eq!(
        step.turn_ended, None,
        "an answered question keeps the turn going"
    );
    // Not answered (the piece has no default_next): the run stays on its question, and the turn
    // ends as needs_user_input with the question in the text.
    turn::answer_question(&mut run, &mut mv, Some("   "));
    assert_eq!(run.question(), Some("Postgres or SQLite?"));
    let step = turn::after_batch(
        &settings,
        at_batch(2),
        turn::BatchReport::Executed {
            results: "[KEYLESSAGENT RESULTS]",
            control: keyless_core::Control::Done,
        },
        "",
        Some(&mv),
    );
    assert_eq!(step.turn_ended, Some(TurnEnd::NeedsUserInput));
    assert!(
        step.text.contains(
            "needs_user_input: the run waits for the user's answer to: Postgres or SQLite?"
        ),
        "{}",
        step.text
    );
    // Repeating the move while the question waits raises no second question.
    let again = turn::move_piece(
        &settings,
        at_batch(3),
        &mut run,
        keyless_core::Control::Done,
        Some(&done),
    )
    .expect("a move");
    assert_eq!(again.question, None, "{again:?}");
    assert!(again.note.contains("KA_PIECE_TRANSITION"), "{}", again.note);
    // The next reply after the user answered in the chat resumes it.
    run.resume();
    assert_eq!(run.state(), &running("plan"));
}

/// default_next fires on every trigger the seed names, as keyless maps them:
/// SpawnSubTask unavailable (WAIT_SUBTASKS, above), context overflow (the turn's batch budget
/// running out inside a movement) and the ASK limit (a question nobody answered).
#[test]
fn default_next_fires_on_the_turn_budget_and_an_unanswered_question() {
    let settings = keyless_core::Settings::default();
    let last = settings.effective_iterations_per_turn();
    // Context overflow: the last batch of the turn ends inside `work` → default_next `check`.
    let mut run = PieceRun::start(fallback_piece("check"));
    assert_eq!(
        turn::move_piece(
            &settings,
            at_batch(last - 1),
            &mut run,
            keyless_core::Control::Next,
            None
        ),
        None,
        "budget left: nothing moves"
    );
    let mv = turn::move_piece(
        &settings,
        at_batch(last),
        &mut run,
        keyless_core::Control::Next,
        None,
    )
    .expect("the budget ran out");
    assert_eq!(run.state(), &running("check"));
    assert!(mv.note.starts_with("[KEYLESSAGENT PIECE] the turn's batch budget (MaxIterationsPerTurn) ran out in movement \"work\" (keyless's context overflow); following default_next \"check\""), "{}", mv.note);
    assert!(
        mv.note.contains("[KEYLESSAGENT MOVEMENT] check"),
        "{}",
        mv.note
    );
    // …and with default_next COMPLETE / ABORT the run ends.
    for (default, ended) in [("COMPLETE", RunState::Complete), ("ABORT", RunState::Aborted { reason: "the turn's batch budget (MaxIterationsPerTurn) ran out in movement \"work\" (keyless's context overflow); default_next ABORT".into() })] {
        let mut run = PieceRun::start(fallback_piece(default));
        assert!(run.fall_back(Fallback::TurnBudget).is_some());
        assert_eq!(run.state(), &ended, "{default}");
    }
    // default_next ASK on the budget: a question.
    let mut run = PieceRun::start(fallback_piece("ASK"));
    let mv = turn::move_piece(
        &settings,
        at_batch(last),
        &mut run,
        keyless_core::Control::Next,
        None,
    )
    .expect("a move");
    assert!(
        mv.question
            .as_deref()
            .is_some_and(|q| q.starts_with("The turn's batch budget")),
        "{mv:?}"
    );
    // The ASK limit: unanswered, the movement's default_next applies…
    let mut run = PieceRun::start(fallback_piece("check"));
    let mut asked = turn::move_piece(
        &settings,
        at_batch(2),
        &mut run,
        keyless_core::Control::Done,
        Some(&ask("Go on?")),
    )
    .expect("a move");
    turn::answer_question(&mut run, &mut asked, None);
    assert_eq!(run.state(), &running("check"));
    assert!(asked.continues && asked.question.is_none(), "{asked:?}");
    assert!(asked.note.contains("the question of movement \"work\" was not answered (the ASK limit); following default_next \"check\""), "{}", asked.note);
    // …but a default_next of ASK again keeps the one question waiting (no pile-up), and a
    // movement without default_next too.
    let mut run = PieceRun::start(fallback_piece("ASK"));
    run.apply(&ask("Go on?")).expect("ask");
    assert!(run.fall_back(Fallback::Unanswered).is_none());
    assert_eq!(run.question(), Some("Go on?"));
    let mut run = PieceRun::start(load(PLAN));
    assert!(
        run.fall_back(Fallback::TurnBudget).is_none(),
        "no default_next: nothing moves"
    );
}

/// Runs stored by an older host, waiting in the old `asking` state, still load.
#[test]
fn an_old_asking_run_still_loads() {
    let snap: keyless_core::piece::run::RunSnapshot = serde_json::from_str(
        r#"{"state":{"state":"asking","movement":"plan"},"current":"plan","movement_runs":1,"visited":["plan"],"revisits":[],"history":["plan"]}"#,
    )
    .expect("an old snapshot");
    let mut run = PieceRun::restore(load(PLAN), snap);
    assert_eq!(run.question(), Some(""));
    run.resume();
    assert_eq!(run.state(), &running("plan"));
}

/// The views judge a command as the executor will: in a piece session the
/// movement's `allowed_commands` replaces the allow-list (an allowed `npm test` runs unasked in
/// AutoSafe), and what the movement does not offer is denied with its reason, in the dashboard's
/// `command_views` and the overlay's follower alike.
#[test]
fn views_judge_commands_with_the_movements_tools() {
    use keyless_core::check::command_views;
    use keyless_core::policy::verdict::Judge;
    use keyless_core::policy::Decision;
    let yaml = "name: t\ndescription: d\nmax_movements: 3\ninitial_movement: test\nmovements:\n  - name: test\n    edit: false\n    persona: p\n    instruction: i\n    allowed_tools: [Read, Bash]\n    allowed_commands: [\"npm test\"]\n    rules: []\n";
    let run = PieceRun::start(load(yaml));
    let reply = "@@runcommand\n<<<CMD\nnpm test\nCMD>>>\n@@end\n@@runcommand\n<<<CMD\nnpm install left-pad\nCMD>>>\n@@end\n@@newfile a.txt\n<<<CONTENT\nx\nCONTENT>>>\n@@end\n@@next\n@@end\n@@eof\n";
    let settings = keyless_core::Settings::default();
    let plain = Judge::new(keyless_core::Mode::AutoSafe, vec![]);
    let gated = Judge {
        gate: Some(run.tools()),
        ..plain.clone()
    };
    let decisions = |judge: &Judge| -> Vec<(Option<Decision>, Option<String>)> {
        command_views(reply, &settings, judge)
            .into_iter()
            .map(|v| (v.decision, v.reason))
            .collect()
    };
    let without = decisions(&plain);
    assert_eq!(without[0].0, Some(Decision::Confirm), "{without:?}");
    let with = decisions(&gated);
    assert_eq!(with[0].0, Some(Decision::Run), "{with:?}");
    assert_eq!(with[1].0, Some(Decision::Deny), "{with:?}");
    assert!(
        with[1]
            .1
            .as_deref()
            .is_some_and(|r| r.contains("is not in this movement's allowed_commands (npm test)")),
        "{with:?}"
    );
    assert_eq!(with[2].0, Some(Decision::Deny), "{with:?}");
    assert!(
        with[2]
            .1
            .as_deref()
            .is_some_and(|r| r.starts_with("@@newfile is not allowed in movement \"test\"")),
        "{with:?}"
    );
    // The overlay's follower agrees, row by row.
    let mut f = keyless_core::site::Follower::new(settings, gated.clone());
    let page = keyless_core::site::PageObservation::default();
    let followed: Vec<_> = f
        .update(reply, &page)
        .commands
        .into_iter()
        .map(|v| (v.decision, v.reason))
        .collect();
    assert_eq!(followed, with);
}
