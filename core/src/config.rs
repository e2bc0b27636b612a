//! Limits, pacing and policy settings as one validated type. The host reads them from
//! `keyless.json`; the overlay gets them from the host. Validation lives here so every layer agrees.

use crate::diag::Code;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Errors of the configuration layer. Each carries its KA_ code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{setting} = {value} is out of range ({min}..={max})")]
    OutOfRange {
        setting: &'static str,
        value: u64,
        min: u64,
        max: u64,
    },
    #[error("{setting}: {}", unknown_value(.value, .expected))]
    UnknownValue {
        setting: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("{setting}: {reason}")]
    Inconsistent {
        setting: &'static str,
        reason: String,
    },
}

impl ConfigError {
    #[must_use]
    pub fn code(&self) -> Code {
        Code::ConfigValidation
    }

    /// The setting the error is about, e.g. `Commands.Mode`.
    #[must_use]
    pub fn setting(&self) -> &'static str {
        match self {
            ConfigError::OutOfRange { setting, .. }
            | ConfigError::UnknownValue { setting, .. }
            | ConfigError::Inconsistent { setting, .. } => setting,
        }
    }

    /// The message without the setting's name, for a caller that names the setting itself (a
    /// keyless.json error is `file: Setting: detail`, never `Setting: Setting: detail`).
    #[must_use]
    pub fn detail(&self) -> String {
        match self {
            ConfigError::OutOfRange {
                value, min, max, ..
            } => format!("{value} is out of range ({min}..={max})"),
            ConfigError::UnknownValue {
                value, expected, ..
            } => unknown_value(value, expected),
            ConfigError::Inconsistent { reason, .. } => reason.clone(),
        }
    }
}

/// `unknown value "autosave" (expected one of: Ask, AutoSafe, Auto; did you mean AutoSafe?)`: the
/// hint names the keyword within one edit of what was typed, or one per four letters of a longer
/// keyword (case, `-` and `_` aside), if any: `fast` suggests nothing, not `Ask`.
fn unknown_value(value: &str, expected: &str) -> String {
    let key = |t: &str| {
        t.chars()
            .filter(|c| *c != '-' && *c != '_')
            .collect::<String>()
            .to_ascii_lowercase()
    };
    let given = key(value);
    let near = expected
        .split(", ")
        .map(|k| (crate::text::edit_distance(&given, &key(k)), k))
        .filter(|(d, k)| !given.is_empty() && *d <= (key(k).len() / 4).max(1))
        .min_by_key(|(d, _)| *d);
    match near {
        Some((_, k)) => {
            format!("unknown value \"{value}\" (expected one of: {expected}; did you mean {k}?)")
        }
        None => format!("unknown value \"{value}\" (expected one of: {expected})"),
    }
}

/// The seed's enforced limits, injected into the system prompt.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default, deny_unknown_fields)]
pub struct Limits {
    pub max_commands_per_response: u32,
    pub max_response_chars: u32,
    pub max_file_content_chars: u32,
    pub max_command_output_chars: u32,
    pub max_format_retries: u32,
    pub max_iterations_per_turn: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_commands_per_response: 5,
            max_response_chars: 60_000,
            max_file_content_chars: 40_000,
            max_command_output_chars: 8_000,
            max_format_retries: 3,
            max_iterations_per_turn: 25,
        }
    }
}

/// Allowed ranges, one row per limit: (name, min, max).
pub const LIMIT_RANGES: [(&str, u64, u64); 6] = [
    ("Limits.MaxCommandsPerResponse", 1, 100),
    ("Limits.MaxResponseChars", 1_000, 2_000_000),
    ("Limits.MaxFileContentChars", 100, 2_000_000),
    ("Limits.MaxCommandOutputChars", 200, 1_000_000),
    ("Limits.MaxFormatRetries", 1, 20),
    ("Limits.MaxIterationsPerTurn", 1, 1_000),
];

impl Limits {
    fn values(&self) -> [u32; 6] {
        [
            self.max_commands_per_response,
            self.max_response_chars,
            self.max_file_content_chars,
            self.max_command_output_chars,
            self.max_format_retries,
            self.max_iterations_per_turn,
        ]
    }

    /// Checks every value against its range and the limits against each other.
    ///
    /// # Errors
    /// The first out-of-range or inconsistent value, as KA_CONFIG_VALIDATION.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for ((setting, min, max), value) in LIMIT_RANGES.iter().zip(self.values()) {
            let value = u64::from(value);
            if value < *min || value > *max {
                return Err(ConfigError::OutOfRange {
                    setting,
                    value,
                    min: *min,
                    max: *max,
                });
            }
        }
        if self.max_file_content_chars > self.max_response_chars {
            return Err(ConfigError::Inconsistent {
                setting: "Limits.MaxFileContentChars",
                reason: format!(
                    "{} is larger than Limits.MaxResponseChars ({}); one payload cannot exceed the whole reply",
                    self.max_file_content_chars, self.max_response_chars
                ),
            });
        }
        Ok(())
    }
}

macro_rules! keyword_enum {
    ($(#[$meta:meta])* $name:ident, $setting:literal, $expected:literal { $($(#[$vmeta:meta])* $variant:ident => $text:literal $(| $alias:literal)*),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
        #[cfg_attr(feature = "ts", derive(ts_rs::TS))]
        pub enum $name { $($(#[$vmeta])* $variant),* }

        impl $name {
            /// Every value, in declaration order (the TypeScript contract lists them too).
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),* }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }

        impl FromStr for $name {
            type Err = ConfigError;
            fn from_str(s: &str) -> Result<Self, ConfigError> {
                // Case does not matter, nor one `-` or `_` between two letters: `AutoSafe`, `autosafe`,
                // `auto-safe`, `stop_on_any_failure`. A separator at an end (`auto-`) is no keyword:
                // a cut-off `auto-safe` must not read as `auto`.
                let key = |t: &str| -> String {
                    let t = t.trim();
                    let sep = |c: char| c == '-' || c == '_';
                    let joined = t.split(sep).all(|part| !part.is_empty());
                    if joined {
                        t.chars().filter(|c| !sep(*c)).collect::<String>().to_ascii_lowercase()
                    } else {
                        t.to_ascii_lowercase()
                    }
                };
                let given = key(s);
                $(if given == key($text) $(|| given == key($alias))* { return Ok($name::$variant); })*
                Err(ConfigError::UnknownValue { setting: $setting, value: s.to_string(), expected: $expected })
            }
        }
    };
}

keyword_enum! {
    /// Agent.Pace: how many non-say commands one reply may carry.
    Pace, "Agent.Pace", "Step, Balanced, Batch" {
        Step => "Step",
        #[default]
        Balanced => "Balanced",
        Batch => "Batch",
    }
}

keyword_enum! {
    /// Commands.Mode: what runs without asking.
    Mode, "Commands.Mode", "Ask, AutoSafe, Auto" {
        #[default]
        Ask => "Ask",
        AutoSafe => "AutoSafe",
        Auto => "Auto",
    }
}

keyword_enum! {
    /// Commands.BatchFailureMode: what a failed command does to the rest of the batch.
    BatchFailureMode, "Commands.BatchFailureMode", "StopOnMutationFailure, StopOnAnyFailure, Continue" {
        #[default]
        StopOnMutationFailure => "StopOnMutationFailure",
        StopOnAnyFailure => "StopOnAnyFailure",
        Continue => "Continue",
    }
}

/// In Step mode a turn may take at least this many iterations.
pub const STEP_ITERATION_FLOOR: u32 = 60;

/// The settings that decide how a reply is parsed and planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct Settings {
    pub limits: Limits,
    pub pace: Pace,
}

impl Settings {
    /// # Errors
    /// KA_CONFIG_VALIDATION when a limit is out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.limits.validate()
    }

    /// The pace's own cap on non-say commands per reply.
    #[must_use]
    pub fn pace_limit(&self) -> u32 {
        match self.pace {
            Pace::Step => 1,
            Pace::Balanced => 3,
            Pace::Batch => self.limits.max_commands_per_response,
        }
    }

    /// min(pace limit, MaxCommandsPerResponse).
    #[must_use]
    pub fn effective_command_limit(&self) -> u32 {
        self.pace_limit()
            .min(self.limits.max_commands_per_response)
            .max(1)
    }

    /// MaxIterationsPerTurn, raised to the Step floor in Step mode.
    #[must_use]
    pub fn effective_iterations_per_turn(&self) -> u32 {
        match self.pace {
            Pace::Step => self
                .limits
                .max_iterations_per_turn
                .max(STEP_ITERATION_FLOOR),
            _ => self.limits.max_iterations_per_turn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_seed_values_and_valid() {
        let s = Settings::default();
        assert_eq!(s.limits.max_commands_per_response, 5);
        assert_eq!(s.limits.max_response_chars, 60_000);
        assert_eq!(s.limits.max_file_content_chars, 40_000);
        assert_eq!(s.limits.max_command_output_chars, 8_000);
        assert_eq!(s.limits.max_format_retries, 3);
        assert_eq!(s.limits.max_iterations_per_turn, 25);
        assert_eq!(s.pace, Pace::Balanced);
        assert_eq!(s.validate(), Ok(()));
    }

    #[test]
    fn effective_limit_is_min_of_pace_and_max() {
        let mut s = Settings::default();
        assert_eq!(s.effective_command_limit(), 3);
        s.pace = Pace::Step;
        assert_eq!(s.effective_command_limit(), 1);
        assert_eq!(s.effective_iterations_per_turn(), 60);
        s.pace = Pace::Batch;
        assert_eq!(s.effective_command_limit(), 5);
        s.limits.max_commands_per_response = 2;
        s.pace = Pace::Balanced;
        assert_eq!(s.effective_command_limit(), 2);
    }

    #[test]
    fn out_of_range_is_config_validation() {
        let mut l = Limits {
            max_commands_per_response: 0,
            ..Limits::default()
        };
        let err = l.validate().unwrap_err();
        assert_eq!(err.code(), Code::ConfigValidation);
        assert_eq!(
            err.to_string(),
            "Limits.MaxCommandsPerResponse = 0 is out of range (1..=100)"
        );
        l.max_commands_per_response = 5;
        l.max_file_content_chars = 70_000;
        assert!(matches!(
            l.validate(),
            Err(ConfigError::Inconsistent { .. })
        ));
    }

    #[test]
    fn keywords_parse_case_insensitively() {
        assert_eq!("step".parse::<Pace>(), Ok(Pace::Step));
        assert_eq!("AUTOSAFE".parse::<Mode>(), Ok(Mode::AutoSafe));
        assert_eq!(
            "continue".parse::<BatchFailureMode>(),
            Ok(BatchFailureMode::Continue)
        );
        assert!("fast".parse::<Pace>().is_err());
    }

    #[test]
    fn an_unknown_keyword_names_the_nearest_one() {
        let e = "autosave".parse::<Mode>().expect_err("not a mode");
        assert_eq!(
            e.to_string(),
            "Commands.Mode: unknown value \"autosave\" (expected one of: Ask, AutoSafe, Auto; did you mean AutoSafe?)"
        );
        let e = "yolo".parse::<Mode>().expect_err("not a mode");
        assert_eq!(
            e.to_string(),
            "Commands.Mode: unknown value \"yolo\" (expected one of: Ask, AutoSafe, Auto)"
        );
    }

    #[test]
    fn keywords_ignore_dashes_and_underscores() {
        for s in ["auto-safe", "auto_safe", "Auto-Safe"] {
            assert_eq!(s.parse::<Mode>(), Ok(Mode::AutoSafe), "{s}");
        }
        assert_eq!(
            "stop-on-mutation-failure".parse::<BatchFailureMode>(),
            Ok(BatchFailureMode::StopOnMutationFailure)
        );
        for s in ["auto-", "-auto", "auto--safe", "-", "_"] {
            assert!(s.parse::<Mode>().is_err(), "{s}");
        }
    }
}
