//! Property tests: the parser never panics, rendering round-trips, and the streaming partial parse
//! never reports anything the final parse will not (so the overlay never flickers).

use keyless_core::policy::{classify, decide};
use keyless_core::render::render_reply;
use keyless_core::reply::{DoneStatus, OnError, Options};
use keyless_core::{parse, parse_partial, Command, CommandKind, Limits, Mode, Reply, Section};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// Lines that exercise every branch of the state machine.
fn vocab_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("@@say".to_string()),
        Just("@@newfile src/a.rs".to_string()),
        Just("@@editfile a.txt".to_string()),
        Just("@@runcommand on_error=continue".to_string()),
        Just("@@movefile a.txt".to_string()),
        Just("@@deletefile ../x".to_string()),
        Just("@@readfile".to_string()),
        Just("@@done next=x".to_string()),
        Just("@@next".to_string()),
        Just("@@NEXT".to_string()),
        Just("@@end".to_string()),
        Just("@@eof".to_string()),
        Just("@@bogus".to_string()),
        Just("<<<MSG".to_string()),
        Just("MSG>>>".to_string()),
        Just("<<<CONTENT".to_string()),
        Just("CONTENT>>>".to_string()),
        Just("<<<CONTENT:n1".to_string()),
        Just("CONTENT:n1>>>".to_string()),
        Just("<<<FIND".to_string()),
        Just("FIND>>>".to_string()),
        Just("<<<REPLACE".to_string()),
        Just("REPLACE>>>".to_string()),
        Just("<<<CMD".to_string()),
        Just("CMD>>>".to_string()),
        Just("<<<TO".to_string()),
        Just("TO>>>".to_string()),
        Just("<<<".to_string()),
        Just("~~~~agentscript".to_string()),
        Just("~~~~".to_string()),
        Just("```".to_string()),
        Just(String::new()),
        Just("   ".to_string()),
        "[ -~]{0,20}",
        "\\PC{0,8}",
    ]
}

fn vocab_text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(vocab_line(), 0..40),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, trailing)| {
            let sep = if crlf { "\r\n" } else { "\n" };
            let mut t = lines.join(sep);
            if trailing {
                t.push_str(sep);
            }
            t
        })
}

fn key(d: &keyless_core::Diagnostic) -> (String, Option<u32>) {
    (d.code.as_str().to_string(), d.line)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
        let limits = Limits::default();
        let out = parse(&text, &limits);
        prop_assert_eq!(out.ok(), out.diagnostics.is_empty());
        let _ = parse_partial(&text, &limits);
    }

    #[test]
    fn never_panics_on_marker_soup(text in vocab_text()) {
        let limits = Limits::default();
        let out = parse(&text, &limits);
        let n_lines = u32::try_from(text.split('\n').count()).unwrap_or(u32::MAX);
        for d in &out.diagnostics {
            if let Some(line) = d.line {
                prop_assert!(line >= 1 && line <= n_lines, "line {} of {}", line, n_lines);
            }
        }
        // Diagnostics come sorted by line, line-less ones last.
        let order: Vec<(bool, Option<u32>)> = out.diagnostics.iter().map(|d| (d.line.is_none(), d.line)).collect();
        let mut sorted = order.clone();
        sorted.sort();
        prop_assert_eq!(order, sorted);
    }

    /// What a partial parse reports stays reported as more text arrives, and the final parse
    /// reports it too.
    #[test]
    fn partial_parse_is_monotonic_and_certain(text in vocab_text()) {
        let limits = Limits::default();
        let full = parse(&text, &limits);
        prop_assume!(full.suppressed == 0);
        let full_keys: BTreeSet<_> = full.diagnostics.iter().map(key).collect();
        let mut previous: BTreeSet<(String, Option<u32>)> = BTreeSet::new();
        for (idx, _) in text.match_indices('\n') {
            let partial = parse_partial(&text[..=idx], &limits);
            let keys: BTreeSet<_> = partial.diagnostics.iter().map(key).collect();
            prop_assert!(previous.is_subset(&keys), "retracted {:?} at byte {}", previous.difference(&keys).collect::<Vec<_>>(), idx);
            prop_assert!(keys.is_subset(&full_keys), "partial reported {:?} that the final parse does not", keys.difference(&full_keys).collect::<Vec<_>>());
            previous = keys;
        }
    }

    /// A partial parse resumed at the last closed block answers exactly like a fresh one, for
    /// every prefix of a reply fed in order (and after a prefix that changed).
    #[test]
    fn resumed_partial_parse_equals_a_fresh_one(text in vocab_text(), cuts in prop::collection::vec(0usize..4000, 1..12)) {
        let limits = Limits::default();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).filter(|c| text.is_char_boundary(*c)).collect();
        cuts.sort_unstable();
        cuts.push(text.len());
        let mut cp = None;
        for cut in cuts {
            let prefix = &text[..cut];
            let (out, next) = parse::parse_partial_resumable(prefix, &limits, &[], cp.take());
            prop_assert_eq!(&out, &parse_partial(prefix, &limits), "at {}", cut);
            cp = next;
        }
        // The follower, fed the same way, reports like a fresh follow.
        let page = keyless_core::site::PageObservation { site_streaming: true, ..Default::default() };
        let mut f = keyless_core::site::Follower::new(keyless_core::Settings::default(), keyless_core::policy::verdict::Judge::new(Mode::Ask, vec![]));
        for (i, _) in text.match_indices('\n') {
            let prefix = &text[..=i];
            let fresh = keyless_core::site::follow(prefix, &keyless_core::Settings::default(), &keyless_core::policy::verdict::Judge::new(Mode::Ask, vec![]), &page);
            prop_assert_eq!(f.update(prefix, &page), fresh);
        }
    }

    #[test]
    fn render_then_parse_round_trips(reply in reply_strategy()) {
        let text = render_reply(&reply);
        let out = parse(&text, &Limits::default());
        prop_assert!(out.ok(), "{:?}\n{}", out.diagnostics, text);
        prop_assert_eq!(strip(&out.reply), strip(&reply));
        // And a streaming parse of the whole text sees the same blocks.
        let partial = parse_partial(&text, &Limits::default());
        prop_assert_eq!(strip(&partial.reply), strip(&reply));
    }

    #[test]
    fn policy_never_panics(line in "\\PC{0,200}") {
        let c = classify(&line);
        prop_assert_eq!(c.tier, c.segments.iter().map(|s| s.tier).max().unwrap_or(keyless_core::policy::Tier::ReadOnly));
        let _ = decide(&line, Mode::AutoSafe, &["npm run test *".to_string()]);
    }

    /// No line holding a command substitution, a here-document or a process substitution (in a
    /// place the shell expands it) is ever ReadOnly, whatever surrounds it.
    #[test]
    fn substitutions_and_heredocs_are_never_read_only(
        before in prop::collection::vec(prop_oneof![
            Just("ls -la"), Just("git status"), Just("cat README.md"), Just("echo hi"), Just("grep -rn x src"),
            Just("wc -l f"), Just("pwd"), Just("true"), Just("sort f"), Just("head -n 3 f"),
        ], 0..3),
        program in prop_oneof![
            Just("ls"), Just("cat"), Just("echo"), Just("grep x"), Just("wc -l"), Just("git log"), Just("sed -n p"),
            Just("head"), Just("sort"), Just("printf %s"), Just("test -f"), Just("jq ."), Just("rg x"),
        ],
        inner in prop_oneof![Just("id"), Just("ls"), Just("cat /etc/passwd"), Just("echo x"), Just("true")],
        construct in 0usize..14,
        sep in prop_oneof![Just("; "), Just(" && "), Just(" | "), Just(" || "), Just("\n")],
    ) {
        let c = match construct {
            0 => format!("{program} $({inner})"),
            1 => format!("{program} \"$({inner})\""),
            2 => format!("{program} `{inner}`"),
            3 => format!("{program} \"a`{inner}`b\""),
            4 => format!("{program} <({inner})"),
            5 => format!("{program} >({inner})"),
            6 => format!("{program} <<EOF\nx\nEOF"),
            7 => format!("{program} <<'EOF'\n$({inner})\nEOF"),
            8 => format!("{program} < $({inner})"),
            9 => format!("{program} <<< \"$({inner})\""),
            10 => format!("{program} ${{X:-$({inner})}}"),
            11 => format!("{program} $((1 + $({inner})))"),
            12 => format!("{program} <<-EOF\n\t`{inner}`\n\tEOF"),
            _ => format!("X=$({inner}) {program}"),
        };
        let mut parts: Vec<String> = before.iter().map(ToString::to_string).collect();
        parts.push(c);
        let line = parts.join(sep);
        let v = decide(&line, Mode::AutoSafe, &[]);
        prop_assert!(v.tier > keyless_core::policy::Tier::ReadOnly, "{line:?} is {:?}: {}", v.tier, v.reason);
        prop_assert!(v.decision != keyless_core::policy::Decision::Run || v.tier == keyless_core::policy::Tier::Build, "{line:?} runs: {}", v.reason);
    }

    #[test]
    fn policy_never_panics_on_shell_soup(parts in prop::collection::vec(prop_oneof![
        Just("git"), Just("push"), Just("-f"), Just("rm"), Just("-rf"), Just("/"), Just("|"), Just("&&"), Just(";"),
        Just("&"), Just(">"), Just(">>"), Just("2>&1"), Just("<<EOF"), Just("EOF"), Just("\n"), Just("$("), Just(")"),
        Just("`"), Just("'"), Just("\""), Just("\\"), Just("sh"), Just("-c"), Just("curl"), Just("x"), Just("sudo"),
        Just("find"), Just("-exec"), Just(";"), Just("sed"), Just("-i"), Just("s/a/b/e"), Just("("), Just("<("),
        Just("FOO=1"), Just("env"), Just("xargs"), Just("*"), Just("~"), Just("#"),
    ], 0..30)) {
        let line = parts.join(" ");
        let _ = decide(&line, Mode::Ask, &[]);
    }
}

/// One command without its line number and nonces: kind, argument, options, (section, text).
type Stripped = (CommandKind, Option<String>, Options, Vec<(String, String)>);

/// A reply without line numbers and nonces, for comparison.
fn strip(reply: &Reply) -> Vec<Stripped> {
    reply
        .commands
        .iter()
        .map(|c| {
            (
                c.kind,
                c.argument.clone(),
                c.options.clone(),
                c.sections
                    .iter()
                    .map(|s| (s.name.as_str().to_string(), s.text.clone()))
                    .collect(),
            )
        })
        .collect()
}

fn path_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z0-9_][a-z0-9_.-]{0,7}", 1..4)
        .prop_map(|segs| segs.join("/"))
        .prop_filter("no reserved or dot-only segments", |p| {
            p.split('/').all(|s| {
                let bare = s.trim_end_matches('.');
                !bare.is_empty()
                    && !bare.eq_ignore_ascii_case(".git")
                    && !bare.eq_ignore_ascii_case(".agent")
            })
        })
}

fn payload_strategy(non_blank: bool) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[ -~]{0,30}",
            Just("CONTENT>>>".to_string()),
            Just("MSG>>>".to_string()),
            Just("CMD>>>".to_string()),
            Just("@@end".to_string()),
            Just("@@eof".to_string()),
            Just("<<<CONTENT".to_string()),
            Just("  indented".to_string()),
            Just(String::new()),
            "\\PC{0,10}".prop_map(|s| s.replace(['\r', '\n'], "")),
        ],
        usize::from(non_blank)..6,
    )
    .prop_map(|lines| lines.join("\n"))
    .prop_filter("required payloads are not blank", move |t| {
        !non_blank || !t.trim().is_empty()
    })
}

fn command_strategy() -> impl Strategy<Value = Command> {
    let kinds = prop::sample::select(
        CommandKind::ALL
            .into_iter()
            .filter(|k| !k.is_control())
            .collect::<Vec<_>>(),
    );
    (
        kinds,
        path_strategy(),
        path_strategy(),
        payload_strategy(true),
        payload_strategy(false),
        any::<u8>(),
        1u32..1000,
    )
        .prop_map(|(kind, path, to, required, free, flags, timeout)| {
            let mut options = Options::default();
            let sections: Vec<Section> =
                kind.sections()
                    .iter()
                    .map(|(name, _)| {
                        let text = match name {
                            keyless_core::SectionName::To => to.clone(),
                            keyless_core::SectionName::Content
                            | keyless_core::SectionName::Replace => free.clone(),
                            _ => required.clone(),
                        };
                        Section {
                            name: *name,
                            nonce: None,
                            text,
                            line: 0,
                        }
                    })
                    .collect();
            if kind == CommandKind::RunCommand {
                if flags & 1 == 1 {
                    options.on_error = Some(if flags & 2 == 2 {
                        OnError::Continue
                    } else {
                        OnError::Stop
                    });
                }
                if flags & 4 == 4 {
                    options.timeout_seconds = Some(timeout);
                }
            }
            Command {
                number: 0,
                kind,
                argument: kind.takes_path().then_some(path),
                options,
                sections,
                line: 0,
            }
        })
}

fn reply_strategy() -> impl Strategy<Value = Reply> {
    (
        prop::collection::vec(command_strategy(), 0..8),
        0u8..5,
        payload_strategy(false),
    )
        .prop_map(|(mut commands, control, msg)| {
            let control_cmd = |kind: CommandKind, options: Options| Command {
                number: 0,
                kind,
                argument: None,
                options,
                sections: if msg.is_empty() {
                    vec![]
                } else {
                    vec![Section {
                        name: keyless_core::SectionName::Msg,
                        nonce: None,
                        text: msg.clone(),
                        line: 0,
                    }]
                },
                line: 0,
            };
            match control {
                0 => commands.push(control_cmd(CommandKind::Next, Options::default())),
                1 => commands.push(control_cmd(CommandKind::Done, Options::default())),
                2 => commands.push(control_cmd(
                    CommandKind::Done,
                    Options {
                        next: Some("review".into()),
                        ..Options::default()
                    },
                )),
                3 => commands.push(control_cmd(
                    CommandKind::Done,
                    Options {
                        status: Some(DoneStatus::Aborted),
                        ..Options::default()
                    },
                )),
                _ => commands.push(control_cmd(
                    CommandKind::Done,
                    Options {
                        status: Some(DoneStatus::NeedsUserInput),
                        ..Options::default()
                    },
                )),
            }
            for (i, c) in commands.iter_mut().enumerate() {
                c.number = u32::try_from(i + 1).unwrap_or(u32::MAX);
            }
            Reply { commands }
        })
}

proptest! {
    /// editfile edits only when FIND starts at exactly one position of the file, overlapping
    /// positions counted (the seed: "fails unless FIND matches exactly once"); the edit then
    /// replaces exactly that span.
    #[test]
    fn editfile_edits_only_a_unique_find(text in "[ab\n]{0,24}", find in "[ab\n]{1,5}") {
        let positions: Vec<usize> = (0..text.len())
            .filter(|&i| text[i..].starts_with(find.as_str()))
            .collect();
        match keyless_core::textfile::apply_edit(&text, &find, "Z") {
            Ok(out) => {
                prop_assert_eq!(positions.len(), 1);
                let at = positions[0];
                prop_assert_eq!(out, format!("{}Z{}", &text[..at], &text[at + find.len()..]));
            }
            Err(_) => prop_assert_ne!(positions.len(), 1),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The span a diagnostic underlines (the terminal's caret, the language server's range) is
    /// always inside the text, on character boundaries, and never runs backwards, whatever the
    /// line, column and end (past the text, zero, inside a multi-byte character's line).
    #[test]
    fn a_diagnostics_span_is_always_inside_the_text(
        text in "([a-zé_ \\r\\t]{0,6}\\n?){0,6}",
        line in 0u32..9,
        column in proptest::option::of(0u32..12),
        end in proptest::option::of((0u32..9, 0u32..12)),
    ) {
        use keyless_core::diag::{Code, Diagnostic, Pos};
        let mut d = Diagnostic::new(Code::AsName, Some(line), "x");
        d.column = column;
        d.end = end.map(|(line, column)| Pos { line, column });
        if let Some(r) = d.byte_range(&text) {
            prop_assert!(r.start <= r.end && r.end <= text.len(), "{r:?} in {text:?}");
            prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
        }
        // A line that exists always has a span.
        let lines = text.split('\n').count();
        if line >= 1 && (line as usize) <= lines {
            prop_assert!(d.byte_range(&text).is_some());
        }
    }
}
