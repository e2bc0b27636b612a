//! The selector doctor: what each selector of an adapter matches on the open page.

use super::*;
use crate::diag::Code;
use serde::{Deserialize, Serialize};

/// What the doctor learned about one selector on the open page.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectorProbe {
    pub key: String,
    /// Elements matched by the alternative in use; `None` when the browser rejected every
    /// alternative's syntax.
    pub matches: Option<u32>,
    /// Which alternative matched (0 for the first); `None` when none did.
    #[serde(default)]
    pub alternative: Option<u32>,
}

/// One line of the doctor's report.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorLine {
    pub key: String,
    pub selector: Option<String>,
    pub status: &'static str,
    #[cfg_attr(feature = "ts", ts(type = "Code | null"))]
    pub code: Option<Code>,
    pub message: String,
    /// For a selector that does not match and that the user can show on the page: what to click
    /// ("the box where you type your message"); the overlay offers "Pick it".
    pub pick: Option<String>,
}

/// The doctor's verdict on each selector of `site`, from what the page matched.
#[must_use]
pub fn doctor(site: &SiteAdapter, probes: &[SelectorProbe]) -> Vec<DoctorLine> {
    SELECTOR_KEYS
        .iter()
        .map(|&(key, presence, when)| {
            let alts = site.selectors.get(key);
            let probe = probes.iter().find(|p| p.key == key);
            let used = probe.and_then(|p| p.alternative).unwrap_or(0) as usize;
            let selector = alts.map(|a| {
                a.all()
                    .get(used)
                    .map_or_else(|| a.first().to_string(), String::clone)
            });
            let fallback = match (alts, probe.and_then(|p| p.alternative)) {
                (Some(a), Some(i)) if i > 0 => format!(
                    " (by fallback {} of {}: the first no longer matches)",
                    i + 1,
                    a.all().len()
                ),
                _ => String::new(),
            };
            let (status, code, message) = match (&selector, probe.map(|p| p.matches)) {
                (None, _) => ("unset", None, "not set for this site".to_string()),
                (Some(_), None) => ("unknown", None, "not probed".to_string()),
                (Some(_), Some(None)) => (
                    "broken",
                    Some(Code::ConfigValidation),
                    "the browser rejects this selector's syntax".to_string(),
                ),
                (Some(_), Some(Some(n))) if n > 0 => (
                    "ok",
                    None,
                    format!("{n} match{}{fallback}", if n == 1 { "" } else { "es" }),
                ),
                (Some(_), Some(Some(_))) => match presence {
                    Presence::Always => (
                        "broken",
                        Some(Code::SelectorNotFound),
                        format!("no match, and the {} is always on the page: this selector broke; pick it on the page, or override it in the options page", key.replace('_', " ")),
                    ),
                    Presence::Expected => (
                        "missing",
                        Some(Code::SelectorNotFound),
                        format!("no match (expected {when})"),
                    ),
                    Presence::Transient | Presence::Optional => {
                        ("missing", None, format!("no match (expected {when})"))
                    }
                },
            };
            let pick = PICKABLE
                .iter()
                .find(|(k, _)| *k == key)
                .filter(|_| code == Some(Code::SelectorNotFound))
                .map(|(_, what)| (*what).to_string());
            DoctorLine {
                key: key.to_string(),
                selector,
                status,
                code,
                message,
                pick,
            }
        })
        .collect()
}
