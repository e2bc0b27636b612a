//! The command policy: split a command line into segments, classify each into a risk tier, and
//! decide run / confirm / deny for a mode.
//!
//! A line is ReadOnly or Build only when that is proven: every segment is a program on the
//! known-safe list ([`known`]) with options on its list. An option the list does not know
//! (abbreviations included) makes the segment at least Execute; an option known to run another
//! program or write a file makes it Risky. The lexer ([`lexer`]) notices everything a shell could
//! do behind a reader's back (substitutions, redirections, here-documents, subshells, control
//! structures, odd characters); any construct it does not model makes the segment Risky.
//! Programs that run other programs (sudo, env, xargs, `sh -c`, `find -exec`, …) are unwrapped
//! and the inner command is classified too, so that `sudo shutdown` is Denied, not just Risky.
//!
//! - [`lexer`]: the shell lexer;
//! - [`args`]: option parsing against a known-safe spec;
//! - [`known`]: the known-safe lists (ReadOnly and Build);
//! - [`programs`]: everything else: wrappers, interpreters, package managers, git, deletions, the
//!   denied list;
//! - [`pattern`]: allow-list patterns;
//! - [`steering`]: the workspace files that steer programs (a toolchain file, `.npmrc`, …);
//! - [`persistence`]: the files the user's own tools run later (hooks, `.envrc`, editor tasks,
//!   CI workflows, install-time scripts): writing one is always confirmed but in Auto mode;
//! - [`verdict`]: the one verdict on a command of any kind ([`verdict::Judge`]), for the executor and
//!   every view.

mod args;
mod known;
mod lexer;
mod pattern;
pub mod persistence;
mod programs;
pub mod reads;
pub mod steering;
pub mod verdict;

use crate::config::Mode;
use crate::reply::CommandKind;
use serde::{Deserialize, Serialize};
use std::fmt;

pub use pattern::pattern_matches;
pub mod always;

/// Risk tiers, ordered from harmless to never-run.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Tier {
    ReadOnly,
    Build,
    Execute,
    Risky,
    Denied,
}

impl Tier {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Tier::ReadOnly => "ReadOnly",
            Tier::Build => "Build",
            Tier::Execute => "Execute",
            Tier::Risky => "Risky",
            Tier::Denied => "Denied",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens to a command.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Run,
    Confirm,
    Deny,
}

impl Decision {
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Decision::Run => "run",
            Decision::Confirm => "confirm",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One classified segment of a command line.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentVerdict {
    pub text: String,
    pub tier: Tier,
    pub reason: String,
}

/// A classified command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classification {
    pub tier: Tier,
    pub segments: Vec<SegmentVerdict>,
}

/// The decision for a command line under a mode.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub tier: Tier,
    pub decision: Decision,
    /// The deciding reason, e.g. "redirection writes a file (out.txt)", prefixed with the
    /// command it is about when the line has several (`` `echo hi > out.txt`: … ``).
    pub reason: String,
    pub segments: Vec<SegmentVerdict>,
}

/// A program the shell would take from a folder the model can write (`node_modules/.bin`,
/// `.venv/bin`, `.` in PATH): never a known one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Untrusted {
    pub name: String,
    /// Where the shell would find it.
    pub path: String,
}

/// What the host knows about the machine and the workspace that the policy cannot see. The host
/// computes it; every view (the overlay, the dashboard, `keyless-host policy`) and the executor
/// judge with the same one.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// Programs the shell would take from a folder the model can write.
    #[serde(default)]
    pub untrusted: Vec<Untrusted>,
    /// Workspace files (workspace-relative) that steer a program ([`steering`]): while one
    /// exists, that program is at least Execute.
    #[serde(default)]
    pub steering: Vec<String>,
    /// Workspace symlinks (workspace-relative) that lead out of the workspace: a path through
    /// one is read outside it ([`reads`]).
    #[serde(default)]
    pub links_out: Vec<String>,
    /// The host could not list or resolve every symlink of the workspace (too many, too deep,
    /// built to slow it down): every relative path a read names is then judged as possibly
    /// leading out.
    #[serde(default)]
    pub links_unknown: bool,
    /// The workspace holds symlinks (of any kind): a `..` after one climbs from where it leads,
    /// so a read whose path has a `..` is judged as possibly leading out.
    #[serde(default)]
    pub links_any: bool,
    /// What the user said to always allow in this workspace ([`always`]): the host reads it from
    /// the user's config folder.
    #[serde(default)]
    pub always: Vec<always::AllowRule>,
    /// The host's steering list is not whole (more files than it lists, or a workspace too deep
    /// or too large to look through): every program a file can steer is then at least Execute.
    #[serde(default)]
    pub steering_unknown: bool,
    /// The host could not list every program of the PATH folders the model can write: every
    /// program is then judged as possibly the model's.
    #[serde(default)]
    pub untrusted_unknown: bool,
    /// PATH folders the model can write: inside the workspace (workspace-relative), or relative
    /// entries (`node_modules/.bin`, `.`) that the shell looks up from whatever folder it is in.
    #[serde(default)]
    pub path_dirs: Vec<PathDir>,
    /// The folder git's `core.hooksPath` names, workspace-relative, when it is in the workspace.
    #[serde(default)]
    pub hooks_path: Option<String>,
    /// The host's git guard cannot look through the whole workspace (more entries than it
    /// reads): what a command does to git's files there goes unchecked, so every command is
    /// confirmed (at least Risky).
    #[serde(default)]
    pub unguarded: bool,
    /// The folders the guard cannot look into (their permissions keep it from listing them, or
    /// their names are not UTF-8), the first few: while one is there, every command is
    /// confirmed, and the reason names it.
    #[serde(default)]
    pub unguarded_folders: Vec<String>,
    /// The user's own configuration files (`~/.gitconfig`, `~/.bashrc`, …) that are links into
    /// the workspace, workspace-relative: a write to one is refused by the host, and judged here
    /// as a file the user's tools run.
    #[serde(default)]
    pub linked_config: Vec<String>,
}

/// A PATH folder the model can write.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PathDir {
    /// Workspace-relative (`.venv/bin`), or the entry as PATH holds it when `relative`.
    pub dir: String,
    /// A relative entry: the folder depends on where the shell is.
    pub relative: bool,
}

/// Nesting depth for `sh -c`, `$(…)` and wrappers.
const MAX_DEPTH: u32 = 4;
/// Command lines longer than this are classified Risky without analysis.
const MAX_ANALYSED_CHARS: usize = 16_384;

/// A tier with its reason.
pub(crate) type Rated = (Tier, String);

pub(crate) fn rated(tier: Tier, reason: impl Into<String>) -> Rated {
    (tier, reason.into())
}

/// The worse of two ratings (the first wins a tie).
pub(crate) fn worse(a: Rated, b: Rated) -> Rated {
    if b.0 > a.0 {
        b
    } else {
        a
    }
}

/// Classifies a whole line at nesting `depth`; the worst segment decides.
pub(crate) fn classify_line(line: &str, depth: u32, ctx: &Context) -> Rated {
    if depth > MAX_DEPTH {
        return rated(Tier::Risky, "too deeply nested to analyse");
    }
    let c = classify_at(line, depth, ctx);
    match c
        .segments
        .iter()
        .enumerate()
        .max_by_key(|(i, s)| (s.tier, std::cmp::Reverse(*i)))
    {
        Some((_, s)) => (s.tier, s.reason.clone()),
        None => rated(Tier::ReadOnly, "nothing to run"),
    }
}

fn classify_at(line: &str, depth: u32, ctx: &Context) -> Classification {
    if line.chars().count() > MAX_ANALYSED_CHARS {
        let seg = SegmentVerdict {
            text: crate::text::truncate_chars(line, 80),
            tier: Tier::Risky,
            reason: format!("the command line is longer than {MAX_ANALYSED_CHARS} characters"),
        };
        return Classification {
            tier: Tier::Risky,
            segments: vec![seg],
        };
    }
    if let Some(name) = fork_bomb(line) {
        let seg = SegmentVerdict {
            text: crate::text::truncate_chars(line.trim(), 80),
            tier: Tier::Denied,
            reason: format!(
                "a fork bomb (the function {name} starts itself twice, in the background)"
            ),
        };
        return Classification {
            tier: Tier::Denied,
            segments: vec![seg],
        };
    }
    let raw = lexer::segments(line);
    let segments = programs::classify_segments(&raw, depth, ctx);
    let tier = segments
        .iter()
        .map(|s| s.tier)
        .max()
        .unwrap_or(Tier::ReadOnly);
    Classification { tier, segments }
}

/// A function that pipes itself into itself in the background (`:(){ :|:& };:`), however it is
/// spaced or named.
fn fork_bomb(line: &str) -> Option<String> {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let calls_itself_twice = |name: &str, body: &str| {
        !name.is_empty()
            && (body.contains(&format!("{name}|{name}&"))
                || body.contains(&format!("{name}&{name}&")))
    };
    // `name(){ … }`
    let mut from = 0;
    while let Some(at) = compact[from..].find("(){") {
        let end = from + at;
        let name: String = compact[..end]
            .chars()
            .rev()
            .take_while(|c| !matches!(c, ';' | '&' | '|' | '(' | ')' | '{' | '}'))
            .collect::<Vec<char>>()
            .into_iter()
            .rev()
            .collect();
        let name = name.strip_prefix("function").unwrap_or(&name).to_string();
        let body = compact[end + 3..].split('}').next().unwrap_or("");
        if calls_itself_twice(&name, body) {
            return Some(name);
        }
        from = end + 3;
    }
    // `function name { … }`
    let mut from = 0;
    while let Some(at) = compact[from..].find("function") {
        let start = from + at + "function".len();
        let rest = &compact[start..];
        let name: String = rest
            .chars()
            .take_while(|c| !matches!(c, '{' | '('))
            .collect();
        if let Some(open) = rest.find('{') {
            let body = rest[open + 1..].split('}').next().unwrap_or("");
            if calls_itself_twice(&name, body) {
                return Some(name);
            }
        }
        from = start;
    }
    None
}

/// The program of each segment of a command line (after `VAR=value` prefixes), as written but
/// without its folder.
#[must_use]
pub fn programs(line: &str) -> Vec<String> {
    if line.chars().count() > MAX_ANALYSED_CHARS {
        return Vec::new();
    }
    lexer::segments(line)
        .iter()
        .filter_map(|seg| seg.program().map(|w| lexer::base_name(&w.text).to_string()))
        .collect()
}

/// Splits and classifies a command line.
#[must_use]
pub fn classify(line: &str) -> Classification {
    classify_at(line, 0, &Context::default())
}

/// Splits and classifies a command line, knowing which programs come from untrusted folders.
#[must_use]
pub fn classify_with(line: &str, ctx: &Context) -> Classification {
    classify_at(line, 0, ctx)
}

/// Decides what happens to a command line under a mode and an allow-list.
#[must_use]
pub fn decide(line: &str, mode: Mode, allow: &[String]) -> Verdict {
    decide_with(line, mode, allow, &Context::default())
}

/// The seed's tier table: what a tier does under a mode. `allow_listed` is asked only for an
/// Execute segment in AutoSafe.
pub fn tier_decision(tier: Tier, mode: Mode, allow_listed: impl FnOnce() -> bool) -> Decision {
    match (tier, mode) {
        (Tier::Denied, _) => Decision::Deny,
        (_, Mode::Auto) | (Tier::ReadOnly | Tier::Build, _) => Decision::Run,
        (Tier::Execute, Mode::AutoSafe) if allow_listed() => Decision::Run,
        (Tier::Execute | Tier::Risky, _) => Decision::Confirm,
    }
}

/// The verdict on a command that is not a command line but is as risky as one: `@@deletefile`
/// (the seed: "confirmed in Ask mode"; its tier table puts deletes in Risky) and `@@commit` (git
/// add, commit and push: the git writes the tier table puts in Risky). `None` for every other
/// non-runcommand command, which runs unasked.
#[must_use]
pub fn file_command_verdict(kind: CommandKind, target: &str, mode: Mode) -> Option<Verdict> {
    let (tier, reason) = match kind {
        CommandKind::DeleteFile => (
            Tier::Risky,
            "deletefile deletes a file (it is backed up first)",
        ),
        CommandKind::Commit => (
            Tier::Risky,
            "commit writes git history (add -A, commit) and pushes it when an origin is set",
        ),
        _ => return None,
    };
    Some(Verdict {
        tier,
        decision: tier_decision(tier, mode, || false),
        reason: reason.to_string(),
        segments: vec![SegmentVerdict {
            text: target.to_string(),
            tier,
            reason: reason.to_string(),
        }],
    })
}

/// [`decide`] with what the host knows about the machine.
#[must_use]
pub fn decide_with(line: &str, mode: Mode, allow: &[String], ctx: &Context) -> Verdict {
    let c = classify_with(line, ctx);
    let exact = ctx
        .always
        .iter()
        .find(|r| always::covers_line(r, line, c.tier));
    let mut worst: Option<(Decision, usize, String)> = None;
    let mut decided: Vec<(Decision, usize, String)> = Vec::with_capacity(c.segments.len());
    for (i, s) in c.segments.iter().enumerate() {
        let allow_listed = || allow.iter().any(|p| pattern_matches(p, &s.text));
        let user_rule = exact.or_else(|| {
            ctx.always
                .iter()
                .find(|r| always::covers_segment(r, &s.text, s.tier))
        });
        let decision = match user_rule {
            Some(_) if s.tier != Tier::Denied => Decision::Run,
            _ => tier_decision(s.tier, mode, allow_listed),
        };
        let why = match (s.tier, mode, decision) {
            (_, _, Decision::Run) if user_rule.is_some() && s.tier > Tier::Build => {
                format!(
                    "{} (you always allow `{}` here)",
                    s.reason,
                    user_rule.map_or("", |r| r.text.as_str())
                )
            }
            (Tier::Execute, Mode::AutoSafe, Decision::Run) => {
                format!("{} (allow-listed)", s.reason)
            }
            (Tier::Execute, Mode::AutoSafe, _) => {
                format!("{} and is not in Commands.AllowList", s.reason)
            }
            _ => s.reason.clone(),
        };
        if worst.as_ref().is_none_or(|(d, _, _)| decision > *d) {
            worst = Some((decision, i, why.clone()));
        }
        decided.push((decision, i, why));
    }
    let (decision, reason) = match worst {
        // In words: the reason alone for a line of one command; for a line of several, every
        // command that made it ask (or deny), each with its reason, so that a harmless first
        // command cannot hide a second one.
        Some((d, _, why)) if c.segments.len() == 1 => (d, why),
        Some((d, i, why)) if d == Decision::Run => (
            d,
            format!(
                "`{}`: {why}",
                crate::text::truncate_chars(c.segments[i].text.trim(), 80)
            ),
        ),
        Some((d, _, _)) => {
            let named: Vec<String> = decided
                .iter()
                .filter(|(x, _, _)| *x == d)
                .map(|(_, i, why)| {
                    format!(
                        "`{}`: {why}",
                        crate::text::truncate_chars(c.segments[*i].text.trim(), 80)
                    )
                })
                .collect();
            (d, named.join("; "))
        }
        None => (Decision::Run, "nothing to run".to_string()),
    };
    Verdict {
        tier: c.tier,
        decision,
        reason: crate::text::printable(&reason),
        segments: c.segments,
    }
}
