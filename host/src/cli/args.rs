//! Flag types shared by several subcommands: mode, pace, failure mode and the limits.

use crate::error::HostError;
use clap::{Args, ValueEnum};
use keyless_core::keyless_json::KeylessConfig;
use keyless_core::{Limits, Mode, Pace, Settings};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum FailureModeArg {
    StopOnMutationFailure,
    StopOnAnyFailure,
    Continue,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum PaceArg {
    Step,
    Balanced,
    Batch,
}

impl From<PaceArg> for Pace {
    fn from(p: PaceArg) -> Self {
        match p {
            PaceArg::Step => Pace::Step,
            PaceArg::Balanced => Pace::Balanced,
            PaceArg::Batch => Pace::Batch,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum ModeArg {
    Ask,
    Autosafe,
    Auto,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Ask => Mode::Ask,
            ModeArg::Autosafe => Mode::AutoSafe,
            ModeArg::Auto => Mode::Auto,
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct LimitArgs {
    /// Agent.Pace: how many non-say commands one reply may carry (default balanced).
    #[arg(long, value_enum)]
    pace: Option<PaceArg>,
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
            pace: self.pace.map_or_else(Pace::default, Into::into),
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
            cfg.set(
                "Agent.Pace",
                &serde_json::json!(Pace::from(p).as_str()),
                src,
            )?;
        }
        cfg.check(src)?;
        Ok(())
    }
}
