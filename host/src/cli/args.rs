//! The flags shared by several subcommands, each declared once and flattened where it is used:
//! the workspace folder, the mode, pace, failure mode and the limits.

use crate::error::HostError;
use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::Args;
use keyless_core::keyless_json::KeylessConfig;
use keyless_core::{BatchFailureMode, ConfigError, Limits, Mode, Pace, Settings};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::str::FromStr;

/// A keyword flag (mode, pace, failure mode) read by core's own parser, so the command line accepts
/// exactly the spellings keyless.json accepts; `--help` lists core's values.
#[derive(Clone)]
pub(super) struct Keyword<T: 'static> {
    all: &'static [T],
    name: fn(T) -> &'static str,
}

pub(super) const MODE: Keyword<Mode> = Keyword {
    all: Mode::ALL,
    name: Mode::as_str,
};
pub(super) const PACE: Keyword<Pace> = Keyword {
    all: Pace::ALL,
    name: Pace::as_str,
};
pub(super) const FAILURE_MODE: Keyword<BatchFailureMode> = Keyword {
    all: BatchFailureMode::ALL,
    name: BatchFailureMode::as_str,
};

impl<T> TypedValueParser for Keyword<T>
where
    T: FromStr<Err = ConfigError> + Copy + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        value.to_string_lossy().parse::<T>().map_err(|e| {
            let flag = arg
                .and_then(clap::Arg::get_long)
                .map(|l| format!("--{l}: "))
                .unwrap_or_default();
            clap::Error::raw(ErrorKind::InvalidValue, format!("{flag}{} {e}\n", e.code()))
                .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.all.iter().map(|v| PossibleValue::new((self.name)(*v))),
        ))
    }
}

#[derive(Debug, Args)]
pub(super) struct LimitArgs {
    /// Agent.Pace: how many non-say commands one reply may carry (default balanced).
    #[arg(long, value_parser = PACE)]
    pace: Option<Pace>,
    /// Limits.MaxCommandsPerResponse.
    #[arg(long, value_name = "N")]
    max_commands: Option<u32>,
    /// Limits.MaxResponseChars.
    #[arg(long, value_name = "N")]
    max_response_chars: Option<u32>,
    /// Limits.MaxFileContentChars.
    #[arg(long, value_name = "N")]
    max_file_content_chars: Option<u32>,
}

impl LimitArgs {
    pub(super) fn settings(&self) -> Result<Settings, HostError> {
        let d = Limits::default();
        let limits = Limits {
            max_commands_per_response: self.max_commands.unwrap_or(d.max_commands_per_response),
            max_response_chars: self.max_response_chars.unwrap_or(d.max_response_chars),
            // Only the default follows a smaller --max-response-chars; a value the user gave is
            // checked by core, which refuses one larger than the whole reply.
            max_file_content_chars: self.max_file_content_chars.unwrap_or(
                d.max_file_content_chars
                    .min(self.max_response_chars.unwrap_or(u32::MAX)),
            ),
            ..d
        };
        let settings = Settings {
            limits,
            pace: self.pace.unwrap_or_default(),
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Applies the flags that were given on top of a loaded configuration.
    pub(super) fn apply(&self, cfg: &mut KeylessConfig) -> Result<(), HostError> {
        let src = "command line";
        let pairs = [
            ("Limits.MaxCommandsPerResponse", self.max_commands),
            ("Limits.MaxResponseChars", self.max_response_chars),
            ("Limits.MaxFileContentChars", self.max_file_content_chars),
        ];
        for (key, value) in pairs {
            if let Some(v) = value {
                cfg.set(key, &serde_json::json!(v), src)?;
            }
        }
        if let Some(p) = self.pace {
            cfg.set("Agent.Pace", &serde_json::json!(p.as_str()), src)?;
        }
        cfg.check(src)?;
        Ok(())
    }
}

/// `--workspace DIR` for a subcommand that reads or changes a workspace folder.
#[derive(Debug, Args)]
pub(super) struct WorkspaceDir {
    /// The workspace folder.
    #[arg(long = "workspace", default_value = ".", value_name = "DIR")]
    pub(super) dir: PathBuf,
}

/// `--unsafe-workspace`, for the subcommands that let a model or a program work in a workspace.
#[derive(Debug, Args)]
pub(super) struct UnsafeWorkspace {
    /// Allow a workspace that holds your home, your keyless config folder or / (for testing
    /// keyless's own protections; keyless still never writes its own files there).
    #[arg(long)]
    pub(super) unsafe_workspace: bool,
}

/// `--workspace` and `--unsafe-workspace` for the subcommands that start a model's session:
/// without `--workspace`, the current folder only when it is a project (see
/// [`crate::workspace_choice::choose`]).
#[derive(Debug, Args)]
pub(super) struct ChosenWorkspace {
    /// The workspace folder (default: the current folder, when it is a git repository other than
    /// keyless's own checkout; otherwise keyless asks).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    unsafe_ok: UnsafeWorkspace,
}

impl ChosenWorkspace {
    /// The workspace the session runs in: the one given, or the current folder when the user
    /// agrees.
    pub(super) fn choose(&self) -> Result<PathBuf, HostError> {
        crate::workspace_choice::choose(self.workspace.as_deref(), self.unsafe_ok.unsafe_workspace)
    }
}

/// `--mode` over keyless.json's Commands.Mode.
#[derive(Debug, Args)]
pub(super) struct ModeOverride {
    /// Commands.Mode (default: keyless.json, else ask).
    #[arg(long, value_parser = MODE)]
    pub(super) mode: Option<Mode>,
}

/// `--mode` for a judgement made without a workspace's configuration.
#[derive(Debug, Args)]
pub(super) struct ModeFlag {
    /// Commands.Mode.
    #[arg(long, value_parser = MODE, default_value = "Ask")]
    pub(super) mode: Mode,
}
