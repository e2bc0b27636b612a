//! The environment snapshot the system prompt carries, and the KA_TOOL_MISSING rule. The host
//! gathers the facts; what they mean lives here.

use serde::Serialize;
use std::fmt::Write as _;

/// Tools the host probes with `--version` (or `version`).
pub const PROBED_TOOLS: &[&str] = &[
    "git", "node", "npm", "npx", "yarn", "pnpm", "bun", "deno", "python3", "python", "pip3", "pip",
    "cargo", "rustc", "go", "java", "javac", "mvn", "gradle", "dotnet", "gcc", "cc", "clang",
    "make", "cmake", "docker", "ruby", "php", "perl", "rg", "jq", "curl",
];

/// One snapshot script's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ScriptOutcome {
    Output(String),
    /// KA_SNAPSHOT_MISSING: the script printed nothing.
    Missing,
    /// KA_SNAPSHOT_RUN_FAILED: the script failed; the text says how.
    Failed(String),
}

/// What the host found on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EnvSnapshot {
    pub os: String,
    pub arch: String,
    pub shell: String,
    /// Each probed tool and its version line, or `None` when it is missing.
    pub tools: Vec<(String, Option<String>)>,
    /// User scripts in `.agent/snapshot/`, by file name.
    pub scripts: Vec<(String, ScriptOutcome)>,
    pub sandbox: String,
    /// Environment variables withheld from commands (their names look like secrets, or their
    /// values like credentials): names only.
    pub withheld: Vec<String>,
}

impl EnvSnapshot {
    /// Tools that are not installed.
    #[must_use]
    pub fn missing(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// The text for the system prompt.
    #[must_use]
    pub fn text(&self) -> String {
        let mut t = format!("OS: {} ({})\nShell: {}\n", self.os, self.arch, self.shell);
        let found: Vec<String> = self
            .tools
            .iter()
            .filter_map(|(n, v)| v.as_ref().map(|v| format!("{n} ({v})")))
            .collect();
        let _ = writeln!(
            t,
            "Tools: {}",
            if found.is_empty() {
                "none found".into()
            } else {
                found.join(", ")
            }
        );
        let missing = self.missing();
        if !missing.is_empty() {
            let _ = writeln!(t, "Missing (not installed; commands using them are refused with KA_TOOL_MISSING, do not retry them): {}", missing.join(", "));
        }
        if !self.sandbox.is_empty() {
            let _ = writeln!(t, "Sandbox: {}", self.sandbox);
        }
        if !self.withheld.is_empty() {
            let _ = writeln!(
                t,
                "Environment variables withheld from commands (they look like secrets; the user can pass one by naming it in keyless.json's Programs.Env): {}",
                self.withheld.join(", ")
            );
        }
        for (name, outcome) in &self.scripts {
            match outcome {
                ScriptOutcome::Output(o) => {
                    let _ = writeln!(
                        t,
                        "{name}:\n{}",
                        crate::text::truncate_chars(o.trim_end(), 2_000)
                    );
                }
                ScriptOutcome::Missing => {
                    let _ = writeln!(
                        t,
                        "{name}: KA_SNAPSHOT_MISSING (the script printed nothing)"
                    );
                }
                ScriptOutcome::Failed(why) => {
                    let _ = writeln!(t, "{name}: KA_SNAPSHOT_RUN_FAILED ({why})");
                }
            }
        }
        t
    }
}

/// The first program of `line` that the snapshot lists as missing.
#[must_use]
pub fn missing_program(missing: &[String], line: &str) -> Option<String> {
    crate::policy::programs(line)
        .into_iter()
        .map(|p| p.to_ascii_lowercase())
        .find(|p| missing.iter().any(|m| m == p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tools_are_found_in_any_segment() {
        let missing = vec!["node".to_string(), "docker".to_string()];
        assert_eq!(
            missing_program(&missing, "npm ci && node build.js"),
            Some("node".into())
        );
        assert_eq!(
            missing_program(&missing, "FOO=1 /usr/bin/docker ps"),
            Some("docker".into())
        );
        assert_eq!(missing_program(&missing, "cargo test | tee log"), None);
        assert_eq!(
            missing_program(&missing, "echo node"),
            None,
            "arguments are not programs"
        );
    }

    #[test]
    fn text_lists_missing_and_script_failures() {
        let s = EnvSnapshot {
            os: "linux".into(),
            arch: "x86_64".into(),
            shell: "/bin/sh".into(),
            tools: vec![
                ("git".into(), Some("git version 2.47".into())),
                ("node".into(), None),
            ],
            scripts: vec![
                (
                    "deps.sh".into(),
                    ScriptOutcome::Failed("exit code 1".into()),
                ),
                ("empty.sh".into(), ScriptOutcome::Missing),
            ],
            sandbox: "Landlock enforced".into(),
            withheld: vec!["GITHUB_TOKEN".into()],
        };
        let t = s.text();
        assert!(t.contains("Tools: git (git version 2.47)"));
        assert!(t.contains("Missing (not installed; commands using them are refused with KA_TOOL_MISSING, do not retry them): node"));
        assert!(t.contains("deps.sh: KA_SNAPSHOT_RUN_FAILED (exit code 1)"));
        assert!(t.contains("empty.sh: KA_SNAPSHOT_MISSING"));
    }
}
