//! keyless-abi: JSON in, JSON out. [`call_json`] is the same function natively and in the wasm32
//! build; the wasm build exports it through three C-ABI functions (`keyless_alloc`,
//! `keyless_free`, `keyless_call`) so a host such as wasmtime can load the core with no JS glue.
//! The differential test (`tests/tests/wasm_differential.rs`) holds native and wasm to identical
//! bytes.

use keyless_core::check::check;
use keyless_core::piece::{graph, tools::effective, validate, Strictness};
use keyless_core::policy::decide;
use keyless_core::site::{follow, load_sites, PageObservation, DEFAULT_SITES_JSON};
use keyless_core::{parse_partial, Mode, Pace, Settings};
use serde::Deserialize;

/// Operation codes of [`call_json`].
pub mod op {
    pub const CHECK: u32 = 1;
    pub const PARTIAL: u32 = 2;
    pub const POLICY: u32 = 3;
    pub const PIECE: u32 = 4;
    /// The overlay's view of a (possibly streaming) reply and the completion verdict.
    pub const FOLLOW: u32 = 5;
    /// The site adapters with the user's overrides (`text`) applied.
    pub const SITES: u32 = 6;
    /// An `.as` program (`text`): its check report and its formatted text (or the syntax error).
    pub const AS_PROGRAM: u32 = 7;
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Input {
    text: String,
    pace: Option<String>,
    mode: Option<String>,
    allow: Vec<String>,
    lenient: bool,
    page: PageObservation,
}

fn settings(i: &Input) -> Result<Settings, String> {
    let pace = match &i.pace {
        Some(p) => p.parse::<Pace>().map_err(|e| e.to_string())?,
        None => Pace::default(),
    };
    Ok(Settings {
        pace,
        ..Settings::default()
    })
}

fn run(op: u32, input: &str) -> Result<serde_json::Value, String> {
    let i: Input = serde_json::from_str(input).map_err(|e| format!("bad input: {e}"))?;
    let v = match op {
        op::CHECK => serde_json::to_value(check(&i.text, &settings(&i)?)),
        op::PARTIAL => serde_json::to_value(parse_partial(&i.text, &settings(&i)?.limits)),
        op::POLICY => {
            let mode = match &i.mode {
                Some(m) => m.parse::<Mode>().map_err(|e| e.to_string())?,
                None => Mode::default(),
            };
            serde_json::to_value(decide(&i.text, mode, &i.allow))
        }
        op::PIECE => {
            let v = validate(
                &i.text,
                if i.lenient {
                    Strictness::Lenient
                } else {
                    Strictness::Strict
                },
            );
            let extra = v.piece.as_ref().map(|p| {
                let tools: Vec<_> = p.movements.iter().map(|m| effective(p, m)).collect();
                serde_json::json!({ "tools": tools, "mermaid": graph::mermaid(p), "dot": graph::dot(p) })
            });
            Ok(serde_json::json!({ "validation": v, "extra": extra }))
        }
        op::FOLLOW => {
            let mode = match &i.mode {
                Some(m) => m.parse::<Mode>().map_err(|e| e.to_string())?,
                None => Mode::default(),
            };
            let judge = keyless_core::policy::verdict::Judge::new(mode, i.allow.clone());
            serde_json::to_value(follow(&i.text, &settings(&i)?, &judge, &i.page))
        }
        op::SITES => Ok(match load_sites(DEFAULT_SITES_JSON, Some(&i.text)) {
            Ok(sites) => serde_json::json!({ "sites": sites }),
            Err(e) => serde_json::json!({ "code": e.code(), "error": e.to_string() }),
        }),
        op::AS_PROGRAM => Ok(serde_json::json!({
            "check": keyless_core::lang::check(&i.text),
            "format": match keyless_core::lang::format::format_source(&i.text) {
                Ok(text) => serde_json::json!({ "text": text }),
                Err(d) => serde_json::json!({ "error": d }),
            },
        })),
        other => return Err(format!("unknown operation {other}")),
    };
    v.map_err(|e| e.to_string())
}

/// Runs operation `op` on a JSON input and answers JSON: `{"ok": …}` or `{"error": "…"}`.
#[must_use]
pub fn call_json(op: u32, input: &str) -> String {
    let out = match run(op, input) {
        Ok(v) => serde_json::json!({ "ok": v }),
        Err(e) => serde_json::json!({ "error": e }),
    };
    out.to_string()
}

#[cfg(target_arch = "wasm32")]
mod exports {
    #![allow(unsafe_code)] // the C ABI hands raw pointers across the wasm boundary

    /// Allocates `len` bytes for the host to write an input into.
    #[unsafe(no_mangle)]
    pub extern "C" fn keyless_alloc(len: usize) -> *mut u8 {
        let mut buf = Vec::<u8>::with_capacity(len.max(1));
        let ptr = buf.as_mut_ptr();
        std::mem::forget(buf);
        ptr
    }

    /// Frees a buffer from `keyless_alloc` or an answer from `keyless_call`.
    ///
    /// # Safety
    /// `ptr` and `cap` must come from one of those calls, once.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn keyless_free(ptr: *mut u8, cap: usize) {
        // SAFETY: the caller passes back a pointer and capacity this module allocated.
        drop(unsafe { Vec::from_raw_parts(ptr, 0, cap.max(1)) });
    }

    /// Runs `op` on the UTF-8 JSON at `ptr..ptr+len`; returns `(answer ptr << 32) | answer len`.
    /// The answer's capacity equals its length; free it with `keyless_free`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be readable memory of this module.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn keyless_call(op: u32, ptr: *const u8, len: usize) -> u64 {
        // SAFETY: the host wrote `len` bytes at `ptr`, inside a buffer from keyless_alloc.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        let answer = match std::str::from_utf8(bytes) {
            Ok(input) => super::call_json(op, input),
            Err(_) => r#"{"error":"input is not UTF-8"}"#.to_string(),
        };
        let mut out = answer.into_bytes().into_boxed_slice();
        let (p, n) = (out.as_mut_ptr(), out.len());
        std::mem::forget(out);
        ((p as u64) << 32) | n as u64
    }

    /// Parses the UTF-8 reply at `ptr..ptr+len` with the default limits, no JSON around it:
    /// `(commands << 32) | diagnostics`, or `u64::MAX` when it is not UTF-8. For throughput
    /// figures of the same module in wasmtime and in a browser.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be readable memory of this module.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn keyless_parse(ptr: *const u8, len: usize) -> u64 {
        // SAFETY: the host wrote `len` bytes at `ptr`, inside a buffer from keyless_alloc.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        match std::str::from_utf8(bytes) {
            Ok(text) => super::parse_counts(text),
            Err(_) => u64::MAX,
        }
    }
}

/// `(commands << 32) | diagnostics` of a reply parsed with the default limits.
#[must_use]
pub fn parse_counts(text: &str) -> u64 {
    let out = keyless_core::parse(text, &keyless_core::Limits::default());
    ((out.reply.commands.len() as u64) << 32) | out.diagnostics.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_every_operation() {
        let check = call_json(op::CHECK, r#"{"text":"@@next\n@@end\n@@eof\n"}"#);
        assert!(check.starts_with(r#"{"ok":{"commands":"#), "{check}");
        assert!(
            call_json(op::POLICY, r#"{"text":"git push -f","mode":"Auto"}"#)
                .contains(r#""decision":"deny""#)
        );
        assert!(call_json(op::PIECE, r#"{"text":"name: x"}"#).contains("KA_PIECE_MISSING_FIELD"));
        assert!(call_json(op::PARTIAL, r#"{"text":"@@say\n"}"#).contains("in_block"));
        assert_eq!(call_json(9, "{}"), r#"{"error":"unknown operation 9"}"#);
        assert!(call_json(op::CHECK, "nope").starts_with(r#"{"error":"bad input"#));
    }
}
