//! keyless-wasm: a thin wasm-bindgen adapter over keyless-core. It converts between JS values and
//! core types and does no logic of its own.

use keyless_core::api::CoreOptions;
use keyless_core::check::check as core_check;
use keyless_core::diag::WireError;
use keyless_core::message::{system_prompt as core_prompt, PromptContext};
use keyless_core::piece::tools::effective;
use keyless_core::piece::{graph, validate, Strictness};
use keyless_core::policy::decide_with;
use keyless_core::policy::verdict::Judge;
use keyless_core::site::{
    delivery, doctor, follow, load_sites, site_for_host, CandidateFacts, PageObservation, Picked,
    SelectorProbe, SiteAdapter, DEFAULT_SITES_JSON,
};
use keyless_core::{parse_partial, Mode, Pace, Settings};
use wasm_bindgen::prelude::*;

// The exports' TypeScript: each argument and answer names its type from the core's generated
// contract (`extension/src/generated/core.ts`, written by `cargo xtask contract`), so the
// extension and the web pages read the answers without casting them. `target/wasm-pkg` is where
// `cargo xtask build` writes this package; the path is relative to it.
#[wasm_bindgen(typescript_custom_section)]
const CONTRACT: &str = r#"import type { AsCheckReport, CheckReport, Graph, CommandView, CandidateFacts, CoreOptions, Delivery, DoctorLine, EffectiveTools, FollowReport, GenerationReport, PageObservation, Picked, SelectorProbe, Settings, SiteAdapter, Utf16Span, Validation, Verdict } from "../../extension/src/generated/core.js";"#;

/// The one error shim: every failure becomes a JS `Error` whose message is `KA_… message` (what
/// the pages show), with the same failure as a `WireError` in its `wire` property, so the
/// extension takes the code from there and never parses it out of the message.
fn into_error(code: keyless_core::Code, message: impl std::fmt::Display) -> JsValue {
    let wire = WireError::new(code, message.to_string());
    let error = js_sys::Error::new(&wire.to_string());
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    if let Ok(body) = serde::Serialize::serialize(&wire, &serializer) {
        // Setting a property on a fresh Error cannot fail; the message carries the code anyway.
        let _ = js_sys::Reflect::set(&error, &JsValue::from_str("wire"), &body);
    }
    error.into()
}

fn settings(value: JsValue) -> Result<(Settings, Judge), JsValue> {
    let dto: CoreOptions = if value.is_undefined() || value.is_null() {
        CoreOptions::default()
    } else {
        serde_wasm_bindgen::from_value(value)
            .map_err(|e| into_error(keyless_core::Code::ConfigInvalid, e))?
    };
    let pace = match dto.pace.as_deref() {
        Some(p) => p.parse::<Pace>().map_err(|e| into_error(e.code(), e))?,
        None => Pace::default(),
    };
    let mode = match dto.mode.as_deref() {
        Some(m) => m.parse::<Mode>().map_err(|e| into_error(e.code(), e))?,
        None => Mode::default(),
    };
    let s = Settings {
        limits: dto.limits.unwrap_or_default(),
        pace,
    };
    s.validate().map_err(|e| into_error(e.code(), e))?;
    Ok((
        s,
        Judge {
            mode,
            allow: dto.allow,
            gate: dto.gate,
            context: dto.context.unwrap_or_default(),
        },
    ))
}

fn to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| into_error(keyless_core::Code::Internal, e))
}

/// Runs once when the module starts: a Rust panic shows its message in the browser console.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// The `keyless-host check --json` report for a complete reply.
#[wasm_bindgen(js_name = checkReply, unchecked_return_type = "CheckReport")]
pub fn check_reply(
    text: &str,
    #[wasm_bindgen(unchecked_param_type = "CoreOptions | undefined")] settings_js: JsValue,
) -> Result<JsValue, JsValue> {
    let (s, _) = settings(settings_js)?;
    to_js(&core_check(text, &s))
}

/// Every command of a complete reply as the overlay and the dashboard show it: whether the batch
/// runs it, and the policy's verdict on a runcommand under the options' mode.
#[wasm_bindgen(js_name = commandViews, unchecked_return_type = "CommandView[]")]
pub fn command_views(
    text: &str,
    #[wasm_bindgen(unchecked_param_type = "CoreOptions | undefined")] settings_js: JsValue,
) -> Result<JsValue, JsValue> {
    let (s, judge) = settings(settings_js)?;
    to_js(&keyless_core::check::command_views(text, &s, &judge))
}

/// What is already certain about a reply that is still streaming.
#[wasm_bindgen(js_name = parsePartial)]
pub fn parse_partial_reply(
    text: &str,
    #[wasm_bindgen(unchecked_param_type = "CoreOptions | undefined")] settings_js: JsValue,
) -> Result<JsValue, JsValue> {
    let (s, _) = settings(settings_js)?;
    to_js(&parse_partial(text, &s.limits))
}

/// Tier and run/confirm/deny decision for a command line.
#[wasm_bindgen(js_name = classifyCommand, unchecked_return_type = "Verdict")]
pub fn classify_command(
    line: &str,
    #[wasm_bindgen(unchecked_param_type = "CoreOptions | undefined")] settings_js: JsValue,
) -> Result<JsValue, JsValue> {
    let (_, judge) = settings(settings_js)?;
    to_js(&decide_with(
        line,
        judge.mode,
        judge.allow_list(),
        &judge.context,
    ))
}

/// The system prompt for the settings.
#[wasm_bindgen(js_name = systemPrompt)]
pub fn system_prompt(
    #[wasm_bindgen(unchecked_param_type = "CoreOptions | undefined")] settings_js: JsValue,
) -> Result<String, JsValue> {
    let (s, judge) = settings(settings_js)?;
    Ok(core_prompt(
        &s,
        &PromptContext {
            mode: judge.mode,
            environment: None,
            ..Default::default()
        },
    ))
}

/// Validates a piece: `{ piece, errors, warnings }` (strict unless `lenient`).
#[wasm_bindgen(js_name = validatePiece, unchecked_return_type = "Validation")]
pub fn validate_piece(yaml: &str, lenient: bool) -> Result<JsValue, JsValue> {
    let mode = if lenient {
        Strictness::Lenient
    } else {
        Strictness::Strict
    };
    to_js(&validate(yaml, mode))
}

/// Validates a piece as it would be stored under `name` (strict, and its name must be `name`):
/// what `PUT /v1/pieces/{name}` checks, live in the piece editor.
#[wasm_bindgen(js_name = validatePieceAs, unchecked_return_type = "Validation")]
pub fn validate_piece_as(yaml: &str, name: &str) -> Result<JsValue, JsValue> {
    to_js(&keyless_core::piece::validate_as(yaml, name))
}

/// Each movement's effective tools, for a piece that loads (leniently).
#[wasm_bindgen(js_name = pieceTools, unchecked_return_type = "EffectiveTools[]")]
pub fn piece_tools(yaml: &str) -> Result<JsValue, JsValue> {
    let piece = loaded(yaml)?;
    let all: Vec<_> = piece
        .movements
        .iter()
        .map(|m| effective(&piece, m))
        .collect();
    to_js(&all)
}

/// Checks an `.as` program on its own (`keyless-host as check` without following imports).
#[wasm_bindgen(js_name = asCheck, unchecked_return_type = "AsCheckReport")]
pub fn as_check(src: &str) -> Result<JsValue, JsValue> {
    to_js(&keyless_core::lang::check(src))
}

/// The canonical form of an `.as` program (`keyless-host as fmt`); a syntax error is thrown as
/// `KA_AS_SYNTAX line L, column C: …`.
#[wasm_bindgen(js_name = asFormat)]
pub fn as_format(src: &str) -> Result<String, JsValue> {
    keyless_core::lang::format::format_source(src).map_err(|d| JsError::new(&d.to_string()).into())
}

/// The movement graph's nodes (with their layers) and edges, for an SVG view.
#[wasm_bindgen(js_name = pieceGraphModel, unchecked_return_type = "Graph")]
pub fn piece_graph_model(yaml: &str) -> Result<JsValue, JsValue> {
    to_js(&graph::model(&loaded(yaml)?))
}

/// The movement graph as Mermaid (`"mermaid"`) or Graphviz dot (`"dot"`).
#[wasm_bindgen(js_name = pieceGraph)]
pub fn piece_graph(yaml: &str, format: &str) -> Result<String, JsValue> {
    let piece = loaded(yaml)?;
    match format {
        "dot" => Ok(graph::dot(&piece)),
        "mermaid" => Ok(graph::mermaid(&piece)),
        other => Err(into_error(
            keyless_core::Code::ConfigValidation,
            format!("unknown graph format \"{other}\" (mermaid or dot)"),
        )),
    }
}

fn loaded(yaml: &str) -> Result<keyless_core::piece::Piece, JsValue> {
    let v = validate(yaml, Strictness::Lenient);
    match (v.piece, v.errors.first()) {
        (Some(p), _) => Ok(p),
        (None, Some(e)) => Err(into_error(
            e.code,
            format!("{}: {}", e.key.as_deref().unwrap_or(""), e.message),
        )),
        (None, None) => Err(into_error(
            keyless_core::Code::Internal,
            "the piece did not load",
        )),
    }
}

/// The shipped adapters with the user's overrides: the core's own loader (the same JSON parser
/// and the same errors as native; serde-wasm-bindgen would ignore unknown keys).
fn sites(overrides: Option<String>) -> Result<Vec<SiteAdapter>, JsValue> {
    load_sites(DEFAULT_SITES_JSON, overrides.as_deref()).map_err(|e| into_error(e.code(), e))
}

fn from_js<T: serde::de::DeserializeOwned>(value: JsValue) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(value)
        .map_err(|e| into_error(keyless_core::Code::ConfigInvalid, e))
}

/// What the user typed for a pairing code, as the code (`k7qm 2xd9` → `K7QM-2XD9`); throws
/// `KA_CONFIG_VALIDATION …` with what is wrong, before anything is sent.
#[wasm_bindgen(js_name = readPairingCode)]
pub fn read_pairing_code(typed: &str) -> Result<String, JsValue> {
    keyless_core::pairing::read_code(typed)
        .map_err(|why| into_error(keyless_core::Code::ConfigValidation, why))
}

/// The site adapters that ship with keyless, as JSON text (what the options page shows).
#[wasm_bindgen(js_name = defaultSitesJson)]
#[must_use]
pub fn default_sites_json() -> String {
    DEFAULT_SITES_JSON.to_string()
}

/// Every site adapter: the shipped ones with the user's overrides (JSON text) applied.
#[wasm_bindgen(js_name = loadSites, unchecked_return_type = "SiteAdapter[]")]
pub fn load_sites_js(overrides: Option<String>) -> Result<JsValue, JsValue> {
    to_js(&sites(overrides)?)
}

/// The adapter for a page's host name, or `null`.
#[wasm_bindgen(js_name = siteForHost, unchecked_return_type = "SiteAdapter | null")]
pub fn site_for_host_js(overrides: Option<String>, host: &str) -> Result<JsValue, JsValue> {
    let all = sites(overrides)?;
    to_js(&site_for_host(&all, host))
}

/// The overlay's view of a reply that may still be streaming, and whether it is complete.
#[wasm_bindgen(js_name = followReply, unchecked_return_type = "FollowReport")]
pub fn follow_reply(
    text: &str,
    #[wasm_bindgen(unchecked_param_type = "CoreOptions | undefined")] settings_js: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Partial<PageObservation>")] page: JsValue,
) -> Result<JsValue, JsValue> {
    let (s, judge) = settings(settings_js)?;
    let page: PageObservation = from_js(page)?;
    to_js(&follow(text, &s, &judge, &page))
}

/// A `keyless://chat` generation's reply: complete or not, and whether its JSON fits `shape`
/// (the generation's shape, as the host sent it).
#[wasm_bindgen(js_name = followGeneration, unchecked_return_type = "GenerationReport")]
pub fn follow_generation(
    text: &str,
    shape_json: &str,
    #[wasm_bindgen(unchecked_param_type = "Partial<PageObservation>")] page: JsValue,
) -> Result<JsValue, JsValue> {
    let shape = keyless_core::lang::chat::wire_shape(shape_json)
        .ok_or_else(|| into_error(keyless_core::Code::ConfigInvalid, "not a shape"))?;
    let page: PageObservation = from_js(page)?;
    to_js(&keyless_core::lang::chat::follow_generation(
        text, &shape, &page,
    ))
}

/// A reply followed update by update (see `keyless_core::site::Follower`): the worker keeps one
/// per tab, so each update parses only what streamed in since the last closed block.
#[wasm_bindgen(js_name = ReplyFollower)]
#[derive(Debug)]
pub struct ReplyFollower {
    inner: keyless_core::site::Follower,
}

#[wasm_bindgen(js_class = ReplyFollower)]
impl ReplyFollower {
    /// A follower for these settings (`{pace, limits, mode, allow}`, as `followReply` takes).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "CoreOptions | undefined")] settings_js: JsValue,
    ) -> Result<ReplyFollower, JsValue> {
        let (s, judge) = settings(settings_js)?;
        Ok(Self {
            inner: keyless_core::site::Follower::new(s, judge),
        })
    }

    /// The report for the page's text now.
    #[wasm_bindgen(unchecked_return_type = "FollowReport")]
    pub fn update(
        &mut self,
        text: &str,
        #[wasm_bindgen(unchecked_param_type = "Partial<PageObservation>")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageObservation = from_js(page)?;
        to_js(&self.inner.update(text, &page))
    }
}

/// Paste or attach a message, for a site.
#[wasm_bindgen(js_name = deliveryFor, unchecked_return_type = "Delivery")]
pub fn delivery_for(
    text: &str,
    #[wasm_bindgen(unchecked_param_type = "SiteAdapter")] site: JsValue,
    turn: u32,
    batch: u32,
) -> Result<JsValue, JsValue> {
    let site: SiteAdapter = from_js(site)?;
    to_js(&delivery(text, &site, turn, batch))
}

/// Whether to suggest a new chat: the thread's size so far, the size at the last suggestion (0:
/// none), the adapter's `long_thread_chars`.
#[wasm_bindgen(js_name = suggestNewChat)]
#[must_use]
pub fn suggest_new_chat(chars: f64, suggested_at: f64, limit: u32) -> bool {
    // Whole character counts from JS, below 2^53: the conversion is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (chars, suggested_at) = (chars.max(0.0) as u64, suggested_at.max(0.0) as u64);
    keyless_core::site::suggest_new_chat(chars, suggested_at, limit)
}

/// The selector doctor's report from the page's probe results.
#[wasm_bindgen(js_name = doctorReport, unchecked_return_type = "DoctorLine[]")]
pub fn doctor_report(
    #[wasm_bindgen(unchecked_param_type = "SiteAdapter")] site: JsValue,
    #[wasm_bindgen(unchecked_param_type = "SelectorProbe[]")] probes: JsValue,
) -> Result<JsValue, JsValue> {
    let site: SiteAdapter = from_js(site)?;
    let probes: Vec<SelectorProbe> = from_js(probes)?;
    to_js(&doctor(&site, &probes))
}

/// The selectors that could find a picked element again, best first (the selector picker).
#[wasm_bindgen(js_name = pickCandidates)]
pub fn pick_candidates(
    #[wasm_bindgen(unchecked_param_type = "Picked")] picked: JsValue,
) -> Result<Vec<String>, JsValue> {
    let picked: Picked = from_js(picked)?;
    Ok(keyless_core::site::pick_candidates(&picked))
}

/// Which candidate the picker keeps, from what each matched on the page; `undefined` for none.
#[wasm_bindgen(js_name = choosePick)]
pub fn choose_pick(
    key: &str,
    candidates: Vec<String>,
    #[wasm_bindgen(unchecked_param_type = "CandidateFacts[]")] facts: JsValue,
) -> Result<Option<u32>, JsValue> {
    let facts: Vec<CandidateFacts> = from_js(facts)?;
    Ok(keyless_core::site::choose_pick(key, &candidates, &facts)
        .and_then(|i| u32::try_from(i).ok()))
}

/// The user's overrides with `selector` first for `key` of site `id` (before `current`), checked.
#[wasm_bindgen(js_name = addOverride)]
pub fn add_override(
    overrides: Option<String>,
    id: &str,
    key: &str,
    selector: &str,
    current: Vec<String>,
) -> Result<String, JsValue> {
    keyless_core::site::add_override(
        DEFAULT_SITES_JSON,
        overrides.as_deref(),
        id,
        key,
        selector,
        &current,
    )
    .map_err(|e| into_error(e.code(), e))
}

/// The user's overrides merged with an imported file of overrides (the file wins), checked.
#[wasm_bindgen(js_name = importOverrides)]
pub fn import_overrides(mine: Option<String>, file: &str) -> Result<String, JsValue> {
    keyless_core::site::import_overrides(DEFAULT_SITES_JSON, mine.as_deref(), file)
        .map_err(|e| into_error(e.code(), e))
}

/// The extension's settings as they start (`Settings` in extension/src/protocol.ts): host address,
/// mode, pace, budgets.
#[wasm_bindgen(js_name = extensionDefaults, unchecked_return_type = "Settings")]
pub fn extension_defaults() -> Result<JsValue, JsValue> {
    to_js(&keyless_core::site::extension_defaults())
}

/// JS string positions (UTF-16 code units) of 1-based lines: `[{line, start, end} | null]`, so a
/// diagnostic's line can be selected or highlighted in a textarea or editor.
#[wasm_bindgen(js_name = utf16Spans, unchecked_return_type = "(Utf16Span | null)[]")]
pub fn utf16_spans(text: &str, lines: Vec<u32>) -> Result<JsValue, JsValue> {
    to_js(&keyless_core::text::utf16_line_spans(text, &lines))
}
