//! keyless-core: everything that decides, in one pure library that builds for native and wasm32.
//!
//! - [`parse`]: the AgentScript v1 reply parser (full and streaming-partial);
//! - [`config`]: limits, pace and modes, validated;
//! - [`plan`]: which commands of a batch run, which are skipped and why;
//! - [`message`]: the correction, results and system-prompt texts, and the verified line;
//! - [`policy`]: command-line segmentation, risk tiers and run/confirm/deny decisions;
//! - [`path`]: the workspace path rules and keyless's own names in every spelling;
//! - [`gitcontrol`]: what a git directory a command touched may keep (configs, hooks, commondir);
//! - [`api`]: the host's `/v1` requests, answers and events;
//! - [`branch`]: the branch a task works on, and what the model is told about git;
//! - [`check`]: the `keyless-host check` report, shared by the CLI and the wasm build;
//! - [`piece`]: the piece YAML schema (strict and lenient), effective tools, the run state machine.
//! - [`site`]: chat-site adapters as data, reply completion, delivery and the selector doctor;
//! - [`handover`]: the message that carries a session to a fresh chat, from its record;
//! - [`turn`]: the turn engine: what a batch's outcome does to the session and its piece;
//! - [`secrets`]: which environment variables programs and commands may see;
//! - [`lang`]: `.as` programs: tokenizer, parser, analyzer and formatter.
//!
//! No I/O, no clock, no randomness.

pub mod api;
pub mod branch;
pub mod check;
pub mod config;
pub mod diag;
pub mod diff;
pub mod elicit;
pub mod environment;
pub mod gitcontrol;
pub mod handover;
pub mod keyless_json;
pub mod lang;
pub mod mcp;
pub mod message;
pub mod narrate;
pub mod pairing;
pub mod parse;
pub mod path;
pub mod piece;
pub mod plan;
pub mod policy;
pub mod render;
pub mod reply;
pub mod repomap;
pub mod secrets;
pub mod site;
pub mod ssh;
pub mod text;
pub mod textfile;
pub mod turn;

pub use config::{BatchFailureMode, ConfigError, Limits, Mode, Pace, Settings};
pub use diag::{Code, Diagnostic};
pub use parse::{parse, parse_partial, ParseOutput, PartialOutput};
pub use reply::{Command, CommandKind, Control, Reply, Section, SectionName};

/// The TypeScript declarations of the wire types the extension and the web pages read: one
/// definition, in Rust. `cargo xtask contract` writes them to `extension/src/generated/core.ts`,
/// and a test fails when that file differs from a fresh generation.
#[cfg(feature = "ts")]
#[must_use]
pub fn typescript() -> String {
    use ts_rs::{Config, TS};
    // JSON numbers: every integer on the wire is a JavaScript number.
    let cfg = Config::new().with_large_int("number");
    let decls = [
        Mode::decl(&cfg),
        Pace::decl(&cfg),
        site::ExtensionDefaults::decl(&cfg),
        site::Selectors::decl(&cfg),
        site::ComposerKind::decl(&cfg),
        site::SiteAdapter::decl(&cfg),
        diag::Severity::decl(&cfg),
        diag::Pos::decl(&cfg),
        Diagnostic::decl(&cfg),
        diag::WireError::decl(&cfg),
        policy::Tier::decl(&cfg),
        policy::Decision::decl(&cfg),
        policy::SegmentVerdict::decl(&cfg),
        policy::Verdict::decl(&cfg),
        policy::Untrusted::decl(&cfg),
        policy::PathDir::decl(&cfg),
        policy::always::RuleKind::decl(&cfg),
        policy::always::AllowRule::decl(&cfg),
        policy::always::AllowOffer::decl(&cfg),
        policy::Context::decl(&cfg),
        diff::Change::decl(&cfg),
        diff::FileDiff::decl(&cfg),
        check::CheckCommand::decl(&cfg),
        check::CheckReport::decl(&cfg),
        Control::decl(&cfg),
        check::CommandView::decl(&cfg),
        site::WatchVerdict::decl(&cfg),
        site::FollowReport::decl(&cfg),
        site::PageObservation::decl(&cfg),
        site::Delivery::decl(&cfg),
        site::DoctorLine::decl(&cfg),
        site::SelectorProbe::decl(&cfg),
        site::PickedNode::decl(&cfg),
        site::Picked::decl(&cfg),
        site::CandidateFacts::decl(&cfg),
        turn::BatchStatus::decl(&cfg),
        turn::TurnEnd::decl(&cfg),
        Limits::decl(&cfg),
        CommandKind::decl(&cfg),
        piece::Rule::decl(&cfg),
        piece::Movement::decl(&cfg),
        piece::Piece::decl(&cfg),
        piece::Validation::decl(&cfg),
        piece::tools::Source::decl(&cfg),
        piece::tools::ToolEntry::decl(&cfg),
        piece::tools::Dropped::decl(&cfg),
        piece::tools::EffectiveTools::decl(&cfg),
        mcp::McpTool::decl(&cfg),
        piece::run::RunState::decl(&cfg),
        piece::graph::NodeKind::decl(&cfg),
        piece::graph::GraphNode::decl(&cfg),
        piece::graph::GraphEdge::decl(&cfg),
        piece::graph::Graph::decl(&cfg),
        text::Utf16Span::decl(&cfg),
        lang::CheckReport::decl(&cfg),
        api::ErrorBody::decl(&cfg),
        api::PairRequest::decl(&cfg),
        api::Paired::decl(&cfg),
        api::Status::decl(&cfg),
        api::SettingsRequest::decl(&cfg),
        api::CheckRequest::decl(&cfg),
        api::PolicyRequest::decl(&cfg),
        api::SessionRequest::decl(&cfg),
        api::SessionStarted::decl(&cfg),
        api::SessionSummary::decl(&cfg),
        api::SessionMove::decl(&cfg),
        api::HandoverRequest::decl(&cfg),
        api::HandoverAnswer::decl(&cfg),
        api::BatchSummary::decl(&cfg),
        api::SessionDetail::decl(&cfg),
        api::SessionSettingsRequest::decl(&cfg),
        api::SessionSettings::decl(&cfg),
        api::ReplyRequest::decl(&cfg),
        api::PieceProgress::decl(&cfg),
        message::BatchCounts::decl(&cfg),
        message::CommandEnd::decl(&cfg),
        api::ReplyAnswer::decl(&cfg),
        api::UndoState::decl(&cfg),
        api::BatchOutcome::decl(&cfg),
        api::CancelRequested::decl(&cfg),
        api::PieceSummary::decl(&cfg),
        api::PieceText::decl(&cfg),
        api::PieceWrite::decl(&cfg),
        api::PieceSaved::decl(&cfg),
        api::PieceDeleted::decl(&cfg),
        api::ResultStatus::decl(&cfg),
        api::CommandRecord::decl(&cfg),
        api::BatchCommand::decl(&cfg),
        api::BatchDetail::decl(&cfg),
        api::Undone::decl(&cfg),
        api::AuditEntry::decl(&cfg),
        elicit::Kind::decl(&cfg),
        elicit::Field::decl(&cfg),
        elicit::Form::decl(&cfg),
        api::PromptKind::decl(&cfg),
        api::PendingPrompt::decl(&cfg),
        api::PromptAnswer::decl(&cfg),
        api::Answered::decl(&cfg),
        lang::interp::Attempt::decl(&cfg),
        lang::interp::TraceEvent::decl(&cfg),
        lang::interp::Trace::decl(&cfg),
        api::AsRunState::decl(&cfg),
        api::HostEvent::decl(&cfg),
        api::AsRunRequest::decl(&cfg),
        api::AsRunSummary::decl(&cfg),
        api::AsRunDetail::decl(&cfg),
        api::GenerationRequest::decl(&cfg),
        api::GenerationState::decl(&cfg),
        api::Generation::decl(&cfg),
        api::GenerationAnswer::decl(&cfg),
        api::GenerationClaim::decl(&cfg),
        api::GenerationSeen::decl(&cfg),
        api::ChatTabReport::decl(&cfg),
        api::ChatTabState::decl(&cfg),
        lang::chat::GenerationReport::decl(&cfg),
        api::CoreOptions::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from keyless-core's Rust types by `cargo xtask contract`. Do not edit.\n",
    );
    // Every `KA_…` code, so a failure's code is checked where TypeScript handles it.
    let codes: Vec<String> = Code::ALL
        .iter()
        .map(|c| format!("\"{}\"", c.as_str()))
        .collect();
    out.push_str(&format!("\nexport type Code = {};\n", codes.join(" | ")));
    for d in decls {
        out.push_str("\nexport ");
        out.push_str(&d);
        out.push('\n');
    }
    // The values a settings menu offers, so the UI narrows a <select>'s string without a cast.
    let list = |name: &str, ty: &str, values: Vec<&str>| {
        let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
        format!(
            "\nexport const {name}: readonly {ty}[] = [{}];\n",
            quoted.join(", ")
        )
    };
    out.push_str(&list(
        "MODES",
        "Mode",
        Mode::ALL.iter().map(|m| m.as_str()).collect(),
    ));
    out.push_str(&list(
        "PACES",
        "Pace",
        Pace::ALL.iter().map(|p| p.as_str()).collect(),
    ));
    // The characters every view shows as their code point (`text::printable`).
    let ranges: Vec<String> = text::HIDDEN_RANGES
        .iter()
        .map(|(a, b)| format!("[0x{a:x}, 0x{b:x}]"))
        .collect();
    out.push_str(&format!(
        "\nexport const HIDDEN_RANGES: readonly (readonly [number, number])[] = [{}];\n",
        ranges.join(", ")
    ));
    out
}
