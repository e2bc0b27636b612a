//! The policy table: every line of `policy_table.txt` classified, and decided in every mode; the
//! bypass corpus (`policy_bypass.txt`) never rated below its floor.
#![allow(clippy::expect_used)] // a malformed corpus line must fail the test

use keyless_core::policy::{decide, Decision, Tier};
use keyless_core::Mode;

const ALLOW: &[&str] = &["npm test", "npm run test *", "cargo test *", "pytest *"];

#[allow(clippy::panic)] // a typo in the table must fail the test
fn tier(name: &str) -> Tier {
    match name {
        "ReadOnly" => Tier::ReadOnly,
        "Build" => Tier::Build,
        "Execute" => Tier::Execute,
        "Risky" => Tier::Risky,
        "Denied" => Tier::Denied,
        other => panic!("unknown tier {other}"),
    }
}

fn expected_decision(t: Tier, mode: Mode, pinned: Option<&str>) -> Decision {
    match (t, mode) {
        (Tier::Denied, _) => Decision::Deny,
        (_, Mode::Auto) | (Tier::ReadOnly | Tier::Build, _) => Decision::Run,
        (Tier::Execute, Mode::AutoSafe) => match pinned {
            Some("run") => Decision::Run,
            _ => Decision::Confirm,
        },
        _ => Decision::Confirm,
    }
}

#[test]
fn policy_table() {
    let table = include_str!("policy_table.txt");
    let allow: Vec<String> = ALLOW.iter().map(ToString::to_string).collect();
    let mut rows = 0;
    let mut failures = Vec::new();
    let mut per_tier = std::collections::BTreeMap::new();
    for line in table
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (tier_name, rest) = line.split_once(" | ").expect("tier | command");
        let (command, pinned) = match rest.rsplit_once("  => ") {
            Some((c, p)) => (c.trim(), Some(p.trim())),
            None => (rest.trim(), None),
        };
        let want_tier = tier(tier_name.trim());
        *per_tier.entry(want_tier).or_insert(0) += 1;
        rows += 1;
        for mode in [Mode::Ask, Mode::AutoSafe, Mode::Auto] {
            let v = decide(command, mode, &allow);
            let want = expected_decision(want_tier, mode, pinned);
            if v.tier != want_tier || v.decision != want {
                failures.push(format!(
                    "{command:?} in {mode}: got {} / {} ({}), want {want_tier} / {want}",
                    v.tier, v.decision, v.reason
                ));
            }
        }
    }
    assert!(rows >= 150, "only {rows} rows");
    assert!(
        per_tier.len() == 5 && per_tier.values().all(|n| *n >= 10),
        "{per_tier:?}"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn reasons_name_the_segment() {
    let v = decide("git status && echo hi > out.txt", Mode::Ask, &[]);
    assert_eq!(
        v.reason,
        "`echo hi > out.txt`: redirection writes a file (out.txt)"
    );
    assert_eq!(v.segments.len(), 2);
    assert_eq!(v.segments[0].text, "git status");
    let v = decide("npm run build", Mode::AutoSafe, &["npm test".into()]);
    assert_eq!(
        v.reason,
        "npm run runs the project's scripts and is not in Commands.AllowList"
    );
}

#[test]
fn quoted_operators_do_not_split() {
    let v = decide("echo 'a && b; c | d > e'", Mode::Ask, &[]);
    assert_eq!(v.segments.len(), 1);
    assert_eq!(v.tier, Tier::ReadOnly);
    let v = decide("grep -E \"x|y\" file", Mode::Ask, &[]);
    assert_eq!(v.segments.len(), 1);
}

#[test]
fn newlines_and_heredocs() {
    let v = decide("cargo build\ncargo test\n", Mode::Ask, &[]);
    assert_eq!(v.segments.len(), 2);
    // A here-document's body is data for cat, but a here-document is never proven read-only:
    // with an unquoted delimiter its body is expanded like a double-quoted string.
    let v = decide(
        "cat <<EOF\nrm -rf /\nshutdown now\nEOF\necho done",
        Mode::Ask,
        &[],
    );
    assert_eq!(v.tier, Tier::Execute, "{v:?}");
    assert_eq!(v.segments.len(), 2);
    let v = decide("cat <<EOF\n$(shutdown now)\nEOF", Mode::Auto, &[]);
    assert_eq!(v.tier, Tier::Denied, "{v:?}");
    let v = decide("cat <<'EOF'\n$(shutdown now)\nEOF", Mode::Auto, &[]);
    assert_eq!(v.tier, Tier::Execute, "{v:?}");
    let v = decide("cat <<EOF | bash\nshutdown now\nEOF", Mode::Auto, &[]);
    assert_eq!(v.tier, Tier::Denied, "{v:?}");
    let v = decide("bash <<'EOF'\ngit push --force\nEOF", Mode::Auto, &[]);
    assert_eq!(v.tier, Tier::Denied, "{v:?}");
    let v = decide("python3 <<EOF\nprint(1)\nEOF", Mode::Ask, &[]);
    assert_eq!(v.decision, Decision::Confirm, "{v:?}");
}

/// `\n` and `\u{XXXX}` escapes in the corpus files.
fn unescape(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(t) = tail.strip_prefix("\\n") {
            out.push('\n');
            rest = t;
        } else if let Some(t) = tail.strip_prefix("\\r") {
            out.push('\r');
            rest = t;
        } else if let Some(t) = tail.strip_prefix("\\u{") {
            let (hex, after) = t.split_once('}').expect("\\u{…}");
            out.push(char::from_u32(u32::from_str_radix(hex, 16).expect("hex")).expect("char"));
            rest = after;
        } else {
            out.push('\\');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn bypass_corpus_is_never_underrated() {
    let table = include_str!("policy_bypass.txt");
    let mut failures = Vec::new();
    let mut rows = 0;
    for line in table
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (tier_name, rest) = line.split_once(" | ").expect("tier | command");
        let min = tier(tier_name.trim());
        let command = unescape(rest.trim_end());
        rows += 1;
        let v = decide(&command, Mode::AutoSafe, &[]);
        if v.tier < min {
            failures.push(format!(
                "{command:?}: {} ({}), want at least {min}",
                v.tier, v.reason
            ));
        }
        if min >= Tier::Execute && v.decision == Decision::Run {
            failures.push(format!(
                "{command:?} runs unconfirmed in AutoSafe ({})",
                v.reason
            ));
        }
    }
    assert!(rows >= 150, "only {rows} rows");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// @@deletefile and @@commit follow the tier table as Risky (deletes, git writes): confirmed in Ask
/// and AutoSafe, run in Auto; the other non-runcommand commands have no verdict and run unasked.
#[test]
fn deletefile_and_commit_are_risky() {
    use keyless_core::policy::{file_command_verdict, Decision, Tier};
    use keyless_core::{CommandKind, Mode};
    for kind in [CommandKind::DeleteFile, CommandKind::Commit] {
        for (mode, want) in [
            (Mode::Ask, Decision::Confirm),
            (Mode::AutoSafe, Decision::Confirm),
            (Mode::Auto, Decision::Run),
        ] {
            let v = file_command_verdict(kind, "x", mode).expect("verdict");
            assert_eq!((v.tier, v.decision), (Tier::Risky, want), "{kind} {mode}");
        }
    }
    for kind in CommandKind::ALL {
        if !matches!(kind, CommandKind::DeleteFile | CommandKind::Commit) {
            assert!(
                file_command_verdict(kind, "x", Mode::Ask).is_none(),
                "{kind}"
            );
        }
    }
}
