//! Confirmations and questions of `run` on the terminal; `--yes` and `--answer` script them.

use super::form::terminal_form;
use super::terminal::{read_line, shown};
use crate::exec::batch::{Approval, Confirmation, Prompter};
use keyless_core::policy::always::AllowRule;
use keyless_core::policy::Verdict;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Confirmations and questions on the terminal; `--yes` and `--answer` script them.
#[derive(Debug)]
pub struct TerminalPrompter {
    pub yes: bool,
    pub answers: VecDeque<String>,
    pub interactive: bool,
    /// Set by the first Ctrl+C (see [`on_ctrl_c`]): the running command's group is ended and the
    /// rest of the run is cancelled.
    pub interrupted: Arc<AtomicBool>,
}

impl Prompter for TerminalPrompter {
    fn confirm_with(&mut self, c: &Confirmation<'_>) -> Approval {
        if !c.preview.is_empty() && (self.interactive || self.yes) {
            println!(
                "This will change:\n{}",
                keyless_core::diff::render(c.preview).trim_end()
            );
        }
        if !self.interactive && !self.yes {
            let _ = self.confirm(c.command, c.verdict);
            return Approval::NoOneToAsk;
        }
        let offer = c.offer.filter(|_| !self.yes);
        let Some(offer) = offer else {
            return if self.confirm(c.command, c.verdict) {
                Approval::Once
            } else {
                Approval::Declined
            };
        };
        let like = offer
            .like
            .as_ref()
            .map(|r| format!(", [l] always allow commands like `{}`", r.text))
            .unwrap_or_default();
        let answer = read_line(&format!(
            "Run `{}`? {} — {}\n  [y] yes once, [a] always allow this exact command here{like}, [N] no: ",
            shown(c.command),
            c.verdict.tier,
            shown(&c.verdict.reason)
        ));
        match answer
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "y" | "yes" => Approval::Once,
            "a" | "always" => Approval::Always(offer.exact.clone()),
            "l" | "like" => offer
                .like
                .clone()
                .map_or(Approval::Declined, Approval::Always),
            _ => Approval::Declined,
        }
    }

    fn remembered(&mut self, rule: &AllowRule, result: &Result<(), String>) {
        match result {
            Ok(()) => println!(
                "[always allowed here] `{}` (up to {}); `keyless-host allow list` shows the rules, `allow remove N` takes one back",
                shown(&rule.text),
                rule.tier
            ),
            Err(why) => println!("[rule {why}] `{}`", shown(&rule.text)),
        }
    }

    fn confirm(&mut self, command: &str, verdict: &Verdict) -> bool {
        if self.yes {
            println!(
                "[approved by --yes] {}  ({}: {})",
                shown(command),
                verdict.tier,
                shown(&verdict.reason)
            );
            return true;
        }
        if !self.interactive {
            println!(
                "[declined: no terminal to confirm; pass --yes to approve] {}  ({}: {})",
                shown(command),
                verdict.tier,
                shown(&verdict.reason)
            );
            return false;
        }
        let answer = read_line(&format!(
            "Run `{}`? {} — {} [y/N] ",
            shown(command),
            verdict.tier,
            shown(&verdict.reason)
        ));
        answer.is_some_and(|a| matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
    }

    fn ask(&mut self, question: &str) -> Option<String> {
        if let Some(a) = self.answers.pop_front() {
            println!(
                "[ask] {}\n[answer] {a}",
                keyless_core::text::printable(question)
            );
            return Some(a);
        }
        if !self.interactive {
            println!(
                "[ask] {}\n[no answer: no terminal; pass --answer TEXT]",
                keyless_core::text::printable(question)
            );
            return None;
        }
        read_line(&format!("{}\n> ", keyless_core::text::printable(question)))
            .filter(|a| !a.trim().is_empty())
    }

    fn say(&mut self, message: &str) {
        println!(
            "[say] {}",
            keyless_core::text::printable(message.trim_end())
        );
    }

    fn progress(&mut self, server: &str, line: &str) {
        println!("[{}] {}", shown(server), shown(line));
    }

    fn log_in_again(&mut self, server: &str, scope: Option<&str>) -> bool {
        let wants = scope.map_or_else(String::new, |s| {
            format!(
                " (it asks for: {})",
                shown(&keyless_core::text::truncate_chars(s.trim(), 200))
            )
        });
        if !self.interactive {
            println!(
                "[login] MCP server \"{}\" refused your login for this call{wants}; no terminal to ask: run `keyless-host mcp login {}`",
                shown(server),
                shown(server)
            );
            return false;
        }
        let answer = read_line(&format!(
            "MCP server \"{}\" refused your login for this call{wants}. Log in again in your browser now? [y/N] ",
            shown(server)
        ));
        answer.is_some_and(|a| matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
    }

    fn elicit(
        &mut self,
        server: &str,
        form: &keyless_core::elicit::Form,
    ) -> keyless_core::elicit::Answer {
        terminal_form(
            server,
            form,
            &mut self.answers,
            self.interactive,
            &mut io::stdout(),
        )
    }

    fn cancel_requested(&mut self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }
}
