//! Chat-site adapters as data, and the browser-side decisions the extension asks the core for:
//! which adapter serves a page, when a streamed reply is complete, how a results message is
//! delivered, and what the selector doctor says. Pure: the extension passes in what it observed.
//!
//! The adapters ship in `core/data/sites.json`; a user may override any selector (or add a site)
//! with a JSON object of the same shape in the extension's options page, without a new release.

use crate::check::{checked, Checked};
use crate::config::{Mode, Settings};
use crate::diag::{Code, Diagnostic};
use crate::keyless_json::ConfigFileError;
use crate::policy::{decide, Decision, Tier};
use crate::reply::{Command, CommandKind, Control, SectionName};
use crate::text::edit_distance;
use serde::{Deserialize, Serialize};

/// The adapters that ship with keyless.
pub const DEFAULT_SITES_JSON: &str = include_str!("../data/sites.json");

/// How long the reply text must stay unchanged, after the site stopped generating and `@@eof`
/// arrived, before the reply counts as complete — only on a page whose stop signal was never
/// seen during this reply (a broken `streaming` selector, or a reply too quick to show it). Where
/// the stop signal was seen, `@@eof` and its end are decisive.
pub const QUIET_MS: u64 = 700;
/// No complete reply this long after the message was sent: KA_REPLY_TIMEOUT.
pub const DEFAULT_REPLY_TIMEOUT_SECONDS: u32 = 600;
/// `Browser.TruncationBudgetSeconds` when nobody set it.
pub const DEFAULT_TRUNCATION_BUDGET_SECONDS: u32 = 90;
/// The port `keyless-host serve` listens on unless told otherwise, on 127.0.0.1.
pub const DEFAULT_PORT: u16 = 7457;

/// The extension's settings as they start, decided here so the extension, the host and the
/// documentation agree (the worker asks the wasm core for them).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", ts(rename = "Settings"))]
pub struct ExtensionDefaults {
    pub host_url: String,
    pub mode: Mode,
    pub pace: crate::Pace,
    /// No piece: a plain session.
    pub piece: String,
    pub auto_send: bool,
    pub truncation_budget_seconds: u32,
    pub reply_timeout_seconds: u32,
    /// JSON text of selector overrides keyed by site id; empty for none.
    pub selector_overrides: String,
}

#[must_use]
pub fn extension_defaults() -> ExtensionDefaults {
    ExtensionDefaults {
        host_url: format!("http://127.0.0.1:{DEFAULT_PORT}"),
        mode: Mode::default(),
        pace: crate::Pace::default(),
        piece: String::new(),
        auto_send: true,
        truncation_budget_seconds: DEFAULT_TRUNCATION_BUDGET_SECONDS,
        reply_timeout_seconds: DEFAULT_REPLY_TIMEOUT_SECONDS,
        selector_overrides: String::new(),
    }
}

/// How the composer takes text.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComposerKind {
    /// ProseMirror `contenteditable` (ChatGPT, Claude): a paste event, then `insertText`.
    Prosemirror,
    /// Quill `contenteditable` (Gemini): the same input path.
    Quill,
    /// A plain `<textarea>` (AI Studio): the native value setter, then an `input` event.
    Textarea,
}

/// The CSS selectors of one site.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selectors {
    pub assistant_message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub assistant_content: Option<String>,
    pub user_message: String,
    pub streaming: String,
    pub composer: String,
    pub send_button: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub file_input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub attachment_chip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub ignore: Option<String>,
}

/// One chat site.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteAdapter {
    pub id: String,
    pub name: String,
    pub hosts: Vec<String>,
    pub composer_kind: ComposerKind,
    pub max_paste_chars: u32,
    pub selectors: Selectors,
    #[serde(default)]
    pub exhausted_phrases: Vec<String>,
}

/// When a selector is expected to match: what its absence on the page means to the doctor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// On the page at all times: no match means the selector broke.
    Always,
    /// Required, and present once the chat has the thing it finds: no match is
    /// KA_SELECTOR_NOT_FOUND, with when it should match.
    Expected,
    /// Required, but present only for moments (the stop button while the model answers): no
    /// match is not a problem by itself.
    Transient,
    /// Not required.
    Optional,
}

/// Every selector key, its presence, and when it is expected to match (for the doctor).
pub const SELECTOR_KEYS: &[(&str, Presence, &str)] = &[
    (
        "assistant_message",
        Presence::Expected,
        "once the model has answered in this chat",
    ),
    (
        "assistant_content",
        Presence::Optional,
        "inside each assistant message once the model has answered",
    ),
    (
        "user_message",
        Presence::Expected,
        "once a message has been sent in this chat",
    ),
    (
        "streaming",
        Presence::Transient,
        "only while the model is answering",
    ),
    ("composer", Presence::Always, "always"),
    (
        "send_button",
        Presence::Expected,
        "when the composer holds text",
    ),
    (
        "file_input",
        Presence::Optional,
        "always, on sites that take files",
    ),
    (
        "attachment_chip",
        Presence::Optional,
        "while a file is attached",
    ),
    (
        "ignore",
        Presence::Optional,
        "where the page has screen-reader text",
    ),
];

impl Selectors {
    /// The selector set for `key` (a key of [`SELECTOR_KEYS`]), if any.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        match key {
            "assistant_message" => Some(&self.assistant_message),
            "assistant_content" => self.assistant_content.as_deref(),
            "user_message" => Some(&self.user_message),
            "streaming" => Some(&self.streaming),
            "composer" => Some(&self.composer),
            "send_button" => Some(&self.send_button),
            "file_input" => self.file_input.as_deref(),
            "attachment_chip" => self.attachment_chip.as_deref(),
            "ignore" => self.ignore.as_deref(),
            _ => None,
        }
    }
}

/// Range of `max_paste_chars`.
pub const MAX_PASTE_RANGE: (u32, u32) = (1_000, 1_000_000);

fn invalid(source: &str, e: &serde_json::Error) -> ConfigFileError {
    let message = e.to_string();
    let message = message.split(" at line").next().unwrap_or("");
    if e.is_data() {
        // Well-formed JSON with a wrong key or value: name the key where serde does.
        return validation(
            source,
            format!("line {} column {}", e.line(), e.column()),
            explain_serde(message),
        );
    }
    ConfigFileError::Invalid {
        source_name: source.to_string(),
        line: e.line(),
        column: e.column(),
        message: message.to_string(),
    }
}

fn validation(source: &str, key: impl Into<String>, message: impl Into<String>) -> ConfigFileError {
    ConfigFileError::Validation {
        source_name: source.to_string(),
        key: key.into(),
        message: message.into(),
    }
}

/// Checks that a selector is non-empty and its brackets, parentheses and quotes balance. The
/// browser checks the full CSS syntax when it runs the selector.
fn check_selector(source: &str, key: &str, sel: &str) -> Result<(), ConfigFileError> {
    if sel.trim().is_empty() {
        return Err(validation(source, key, "selector is empty"));
    }
    let mut stack = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in sel.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(') => stack.push(c),
            (None, ']') if stack.pop() != Some('[') => {
                return Err(validation(source, key, "unbalanced \"]\" in selector"))
            }
            (None, ')') if stack.pop() != Some('(') => {
                return Err(validation(source, key, "unbalanced \")\" in selector"))
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err(validation(source, key, "unclosed quote in selector"));
    }
    if let Some(open) = stack.last() {
        return Err(validation(
            source,
            key,
            format!("unclosed \"{open}\" in selector"),
        ));
    }
    Ok(())
}

fn check_site(source: &str, site: &SiteAdapter) -> Result<(), ConfigFileError> {
    let at = |k: &str| format!("{}.{k}", site.id);
    if site.id.is_empty()
        || !site
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(validation(
            source,
            site.id.clone(),
            "site ids use letters, digits, - and _",
        ));
    }
    if site.name.trim().is_empty() {
        return Err(validation(source, at("name"), "must not be empty"));
    }
    if site.hosts.is_empty() {
        return Err(validation(source, at("hosts"), "list at least one host"));
    }
    for h in &site.hosts {
        let ok = !h.is_empty()
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
            && !h.starts_with('.')
            && !h.ends_with('.');
        if !ok {
            return Err(validation(
                source,
                at("hosts"),
                format!("\"{h}\" is not a host name (like chatgpt.com)"),
            ));
        }
    }
    let (lo, hi) = MAX_PASTE_RANGE;
    if !(lo..=hi).contains(&site.max_paste_chars) {
        return Err(validation(
            source,
            at("max_paste_chars"),
            format!("must be {lo}–{hi}, got {}", site.max_paste_chars),
        ));
    }
    for (k, _, _) in SELECTOR_KEYS {
        if let Some(v) = site.selectors.get(k) {
            check_selector(source, &format!("{}.selectors.{k}", site.id), v)?;
        }
    }
    if site.exhausted_phrases.iter().any(|p| p.trim().is_empty()) {
        return Err(validation(
            source,
            at("exhausted_phrases"),
            "phrases must not be empty",
        ));
    }
    Ok(())
}

/// Turns serde's "unknown field `composr`, expected one of …" into a did-you-mean.
#[must_use]
fn explain_serde(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let field = rest.split('`').next().unwrap_or("");
    let known: Vec<&str> = rest
        .split_once("expected ")
        .map(|(_, list)| list.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default();
    let best = known
        .iter()
        .map(|k| (edit_distance(field, k), *k))
        .min()
        .filter(|(d, _)| *d <= 3);
    match best {
        Some((_, k)) => format!("unknown key \"{field}\"; did you mean \"{k}\"?"),
        None => format!("unknown key \"{field}\"; known keys: {}", known.join(", ")),
    }
}

fn null_or_some<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Ok(Some(Option::<String>::deserialize(d)?))
}

/// One site as a JSON file gives it: every field optional, so an override may change one
/// selector. A selector set to `null` switches an optional selector off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SitePatch {
    pub name: Option<String>,
    pub hosts: Option<Vec<String>>,
    pub composer_kind: Option<ComposerKind>,
    pub max_paste_chars: Option<u32>,
    pub selectors: Option<SelectorsPatch>,
    pub exhausted_phrases: Option<Vec<String>>,
}

/// The selectors of a [`SitePatch`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectorsPatch {
    #[serde(default, deserialize_with = "null_or_some")]
    pub assistant_message: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub assistant_content: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub user_message: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub streaming: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub composer: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub send_button: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub file_input: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub attachment_chip: Option<Option<String>>,
    #[serde(default, deserialize_with = "null_or_some")]
    pub ignore: Option<Option<String>>,
}

/// Site patches keyed by site id, as a JSON file holds them.
pub type SitesPatch = std::collections::BTreeMap<String, SitePatch>;

fn over<T: Clone>(base: &mut Option<T>, patch: Option<&T>) {
    if let Some(v) = patch {
        *base = Some(v.clone());
    }
}

impl SelectorsPatch {
    fn apply(&mut self, o: &SelectorsPatch) {
        over(&mut self.assistant_message, o.assistant_message.as_ref());
        over(&mut self.assistant_content, o.assistant_content.as_ref());
        over(&mut self.user_message, o.user_message.as_ref());
        over(&mut self.streaming, o.streaming.as_ref());
        over(&mut self.composer, o.composer.as_ref());
        over(&mut self.send_button, o.send_button.as_ref());
        over(&mut self.file_input, o.file_input.as_ref());
        over(&mut self.attachment_chip, o.attachment_chip.as_ref());
        over(&mut self.ignore, o.ignore.as_ref());
    }
}

impl SitePatch {
    fn apply(&mut self, o: &SitePatch) {
        over(&mut self.name, o.name.as_ref());
        over(&mut self.hosts, o.hosts.as_ref());
        over(&mut self.composer_kind, o.composer_kind.as_ref());
        over(&mut self.max_paste_chars, o.max_paste_chars.as_ref());
        over(&mut self.exhausted_phrases, o.exhausted_phrases.as_ref());
        match (&mut self.selectors, &o.selectors) {
            (Some(b), Some(p)) => b.apply(p),
            (b, p) => over(b, p.as_ref()),
        }
    }

    fn complete(self, source: &str, id: &str) -> Result<SiteAdapter, ConfigFileError> {
        let missing = |k: &str| validation(source, format!("{id}.{k}"), "missing required field");
        let sel = self.selectors.ok_or_else(|| missing("selectors"))?;
        let required = |v: Option<Option<String>>, k: &str| {
            v.flatten()
                .ok_or_else(|| missing(&format!("selectors.{k}")))
        };
        Ok(SiteAdapter {
            id: id.to_string(),
            name: self.name.ok_or_else(|| missing("name"))?,
            hosts: self.hosts.ok_or_else(|| missing("hosts"))?,
            composer_kind: self.composer_kind.ok_or_else(|| missing("composer_kind"))?,
            max_paste_chars: self
                .max_paste_chars
                .ok_or_else(|| missing("max_paste_chars"))?,
            exhausted_phrases: self.exhausted_phrases.unwrap_or_default(),
            selectors: Selectors {
                assistant_message: required(sel.assistant_message, "assistant_message")?,
                assistant_content: sel.assistant_content.flatten(),
                user_message: required(sel.user_message, "user_message")?,
                streaming: required(sel.streaming, "streaming")?,
                composer: required(sel.composer, "composer")?,
                send_button: required(sel.send_button, "send_button")?,
                file_input: sel.file_input.flatten(),
                attachment_chip: sel.attachment_chip.flatten(),
                ignore: sel.ignore.flatten(),
            },
        })
    }
}

/// Name of the shipped adapters file in messages.
const DEFAULTS_SOURCE: &str = "sites.json";
/// Name of the user's overrides in messages.
const OVERRIDES_SOURCE: &str = "selector overrides";

/// Applies the user's `overrides` to the shipped `defaults` and validates every site: an existing
/// site is merged field by field (selectors one by one), a new id must be complete.
///
/// # Errors
/// KA_CONFIG_VALIDATION naming the key (`chatgpt.selectors.composer`) when a value is wrong or
/// missing.
pub fn resolve_sites(
    defaults: SitesPatch,
    overrides: Option<&SitesPatch>,
) -> Result<Vec<SiteAdapter>, ConfigFileError> {
    let mut all = defaults;
    let source = match overrides {
        Some(o) if !o.is_empty() => {
            for (id, patch) in o {
                all.entry(id.clone()).or_default().apply(patch);
            }
            OVERRIDES_SOURCE
        }
        _ => DEFAULTS_SOURCE,
    };
    let mut out = Vec::with_capacity(all.len());
    for (id, patch) in all {
        let site = patch.complete(source, &id)?;
        check_site(source, &site)?;
        out.push(site);
    }
    Ok(out)
}

/// [`resolve_sites`] from JSON texts (the shipped file and the user's overrides).
///
/// # Errors
/// KA_CONFIG_INVALID with line and column when a text is not JSON; KA_CONFIG_VALIDATION otherwise.
pub fn load_sites(
    defaults: &str,
    overrides: Option<&str>,
) -> Result<Vec<SiteAdapter>, ConfigFileError> {
    let base: SitesPatch =
        serde_json::from_str(defaults).map_err(|e| invalid(DEFAULTS_SOURCE, &e))?;
    let over: Option<SitesPatch> = match overrides.filter(|t| !t.trim().is_empty()) {
        Some(t) => Some(serde_json::from_str(t).map_err(|e| invalid(OVERRIDES_SOURCE, &e))?),
        None => None,
    };
    resolve_sites(base, over.as_ref())
}

/// The adapter serving a page's host name: the host itself or any subdomain of it.
#[must_use]
pub fn site_for_host<'a>(sites: &'a [SiteAdapter], host: &str) -> Option<&'a SiteAdapter> {
    let host = host.to_ascii_lowercase();
    sites.iter().find(|s| {
        s.hosts.iter().any(|h| {
            host == *h
                || host
                    .strip_suffix(h.as_str())
                    .is_some_and(|rest| rest.ends_with('.'))
        })
    })
}

/// What the extension observed about the reply it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WatchInput {
    /// The reply contains at least one AgentScript command line (`@@…`).
    pub has_command: bool,
    /// The reply ends with `@@eof` (as the parser sees it).
    pub has_eof: bool,
    /// The site shows it is still generating (stop button, streaming flag).
    pub site_streaming: bool,
    /// The site's stop signal was seen at least once during this reply.
    pub stop_signal_seen: bool,
    /// Milliseconds since the reply's text last changed.
    pub quiet_ms: u64,
    /// Milliseconds since the message this reply answers was sent.
    pub waited_ms: u64,
    /// The page shows one of the site's "chat is full" phrases.
    pub exhausted: bool,
    /// Whether a reply has appeared at all.
    pub has_reply: bool,
    pub truncation_budget_seconds: u32,
    pub reply_timeout_seconds: u32,
}

/// What to do with the reply now.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchVerdict {
    /// Keep following it.
    Waiting,
    /// `@@eof`, the site stopped, and the text was quiet: hand it to the host.
    Complete,
    /// The site stopped without `@@eof` and the text is not AgentScript at all: complete, and
    /// the parser's correction tells the model.
    CompleteWithoutEof,
    /// AgentScript without `@@eof` stayed that way longer than the budget: KA_REPLY_TRUNCATED.
    Truncated,
    /// No complete reply within the timeout: KA_REPLY_TIMEOUT.
    Timeout,
    /// The site says the chat is full: KA_CHAT_EXHAUSTED.
    Exhausted,
}

impl WatchVerdict {
    /// The code to show for a verdict that ends the wait with a problem.
    #[must_use]
    pub fn code(self) -> Option<Code> {
        match self {
            WatchVerdict::Truncated => Some(Code::ReplyTruncated),
            WatchVerdict::Timeout => Some(Code::ReplyTimeout),
            WatchVerdict::Exhausted => Some(Code::ChatExhausted),
            _ => None,
        }
    }
}

/// Completion needs the format's end marker and the site's own "stopped generating" signal; a
/// short quiet period too where the stop signal was never seen. A stall alone never completes a
/// reply.
#[must_use]
pub fn watch(i: &WatchInput) -> WatchVerdict {
    let budget_ms = u64::from(if i.truncation_budget_seconds == 0 {
        DEFAULT_TRUNCATION_BUDGET_SECONDS
    } else {
        i.truncation_budget_seconds
    }) * 1000;
    let timeout_ms = u64::from(if i.reply_timeout_seconds == 0 {
        DEFAULT_REPLY_TIMEOUT_SECONDS
    } else {
        i.reply_timeout_seconds
    }) * 1000;
    if i.exhausted && !i.site_streaming {
        return WatchVerdict::Exhausted;
    }
    if i.has_reply && !i.site_streaming {
        if i.has_eof && (i.stop_signal_seen || i.quiet_ms >= QUIET_MS) {
            return WatchVerdict::Complete;
        }
        if !i.has_command && i.quiet_ms >= QUIET_MS {
            return WatchVerdict::CompleteWithoutEof;
        }
    }
    if i.has_reply && i.has_command && !i.has_eof && i.quiet_ms >= budget_ms {
        return WatchVerdict::Truncated;
    }
    if i.waited_ms >= timeout_ms {
        return WatchVerdict::Timeout;
    }
    WatchVerdict::Waiting
}

/// How a message goes into the chat.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Delivery {
    /// Paste the text into the composer.
    Paste,
    /// Attach the text as a file and paste `note` in the composer; paste the whole text when the
    /// upload fails (KA_ATTACHMENT_UPLOAD_FAILED).
    Attach { file_name: String, note: String },
}

/// Paste when the site accepts the text's length, else attach it as a file (when the site takes
/// files). `header` is the first line of the message.
#[must_use]
pub fn delivery(text: &str, site: &SiteAdapter, turn: u32, batch: u32) -> Delivery {
    let chars = text.chars().count();
    if chars <= site.max_paste_chars as usize || site.selectors.file_input.is_none() {
        return Delivery::Paste;
    }
    let file_name = format!("keyless-results-t{turn}-b{batch}.txt");
    let header = text.lines().next().unwrap_or("");
    let note = format!(
        "{header}\nThe full results ({chars} characters) are in the attached file {file_name}. Read all of it, then continue in AgentScript v1 only."
    );
    Delivery::Attach { file_name, note }
}

/// The page-side facts `follow` takes besides the text (the text decides `@@eof` and commands).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PageObservation {
    pub site_streaming: bool,
    /// The site's stop signal was seen at least once during this reply.
    pub stop_signal_seen: bool,
    pub quiet_ms: u64,
    pub waited_ms: u64,
    pub exhausted: bool,
    pub truncation_budget_seconds: u32,
    pub reply_timeout_seconds: u32,
}

/// One command as the overlay shows it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OverlayCommand {
    pub number: u32,
    pub command: String,
    pub target: String,
    pub line: u32,
    /// Whether the batch runs it (`None` while the reply is still streaming).
    pub run: Option<bool>,
    pub skip_reason: Option<String>,
    /// The policy verdict of a runcommand: tier, decision (run/confirm/deny) and reason.
    pub tier: Option<Tier>,
    pub decision: Option<Decision>,
    pub reason: Option<String>,
}

/// Everything the overlay shows about the reply it follows, and what to do with it now.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FollowReport {
    pub verdict: WatchVerdict,
    /// The code of a verdict that ends the wait with a problem.
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub code: Option<Code>,
    /// `true` once the reply is complete and `diagnostics` are final.
    pub r#final: bool,
    pub ok: bool,
    pub diagnostics: Vec<Diagnostic>,
    pub commands: Vec<OverlayCommand>,
    pub control: Option<Control>,
    pub correction: Option<String>,
    /// Complete lines examined so far.
    pub lines: u32,
}

/// Whether the reply ends with `@@eof`, ignoring blank lines and a closing fence after it.
#[must_use]
pub fn ends_with_eof(text: &str) -> bool {
    text.lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .find(|l| !(l.starts_with("```") || l.starts_with("~~~")))
        .is_some_and(|l| l.eq_ignore_ascii_case("@@eof"))
}

/// The part of a reply a streaming parse may judge. While the site still writes, the last line
/// is unfinished, even when a closing fence line follows it (an open code block is rendered as a
/// closed one): a final fence-only line is dropped with the line break before it, and the partial
/// parse then leaves the line that is last unjudged.
#[must_use]
pub fn streaming_view(text: &str, site_streaming: bool) -> &str {
    if !site_streaming {
        return text;
    }
    let body = text.trim_end_matches(['\n', '\r', ' ', '\t']);
    let (before, last) = match body.rfind('\n') {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => ("", body),
    };
    let fence = last.trim();
    let is_fence =
        fence.len() >= 3 && (fence.bytes().all(|b| b == b'`') || fence.bytes().all(|b| b == b'~'));
    if is_fence {
        before
    } else {
        text
    }
}

fn has_command_line(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("@@"))
}

/// Follows a reply while it streams: what is certain so far (the partial parse) with each
/// command's policy tier, and the verdict on completion. Once the verdict completes the reply,
/// the report is the full check: the same verdict and correction the host will give.
#[must_use]
pub fn follow(
    text: &str,
    settings: &Settings,
    mode: Mode,
    allow: &[String],
    page: &PageObservation,
) -> FollowReport {
    Follower::new(*settings, mode, allow.to_vec()).update(text, page)
}

/// A reply followed update by update. Each update parses only what follows the last block the
/// previous update saw closed (when the text before it is unchanged), and decides the policy only
/// for commands it has not seen, so an update costs about the size of what streamed in since.
/// Pure: the extension's worker keeps one per tab.
#[derive(Debug, Clone)]
pub struct Follower {
    settings: Settings,
    mode: Mode,
    allow: Vec<String>,
    /// The text of the last update.
    text: String,
    checkpoint: Option<crate::parse::Checkpoint>,
    /// Policy verdicts by command number, with the command line they were decided for.
    verdicts: Vec<Option<(String, crate::policy::Verdict)>>,
}

impl Follower {
    #[must_use]
    pub fn new(settings: Settings, mode: Mode, allow: Vec<String>) -> Self {
        Self {
            settings,
            mode,
            allow,
            text: String::new(),
            checkpoint: None,
            verdicts: Vec::new(),
        }
    }

    fn verdict(&mut self, c: &Command) -> Option<crate::policy::Verdict> {
        if c.kind != CommandKind::RunCommand {
            return None;
        }
        let line = c.section_text(SectionName::Cmd).unwrap_or("");
        let slot = c.number as usize;
        if self.verdicts.len() <= slot {
            self.verdicts.resize(slot + 1, None);
        }
        if let Some((seen, v)) = &self.verdicts[slot] {
            if seen == line {
                return Some(v.clone());
            }
        }
        let v = decide(line, self.mode, &self.allow);
        self.verdicts[slot] = Some((line.to_string(), v.clone()));
        Some(v)
    }

    fn row(&mut self, c: &Command, run: Option<bool>, skip: Option<String>) -> OverlayCommand {
        let v = self.verdict(c);
        OverlayCommand {
            number: c.number,
            command: c.kind.name().to_string(),
            target: c.target(),
            line: c.line,
            run,
            skip_reason: skip,
            tier: v.as_ref().map(|v| v.tier),
            decision: v.as_ref().map(|v| v.decision),
            reason: v.map(|v| v.reason),
        }
    }

    /// The page's text now, and what the page shows about it.
    pub fn update(&mut self, text: &str, page: &PageObservation) -> FollowReport {
        let verdict = watch(&WatchInput {
            has_command: has_command_line(text),
            has_eof: ends_with_eof(text),
            site_streaming: page.site_streaming,
            stop_signal_seen: page.stop_signal_seen,
            quiet_ms: page.quiet_ms,
            waited_ms: page.waited_ms,
            exhausted: page.exhausted,
            has_reply: !text.trim().is_empty(),
            truncation_budget_seconds: page.truncation_budget_seconds,
            reply_timeout_seconds: page.reply_timeout_seconds,
        });
        let complete = matches!(
            verdict,
            WatchVerdict::Complete | WatchVerdict::CompleteWithoutEof | WatchVerdict::Truncated
        );
        if complete {
            let Checked {
                out,
                planned,
                correction,
            } = checked(text, &self.settings);
            let commands = out
                .reply
                .commands
                .iter()
                .map(|c| {
                    let e = planned.as_ref().and_then(|p| p.entry(c.number));
                    self.row(
                        c,
                        Some(e.is_some_and(|e| e.run)),
                        e.and_then(|e| e.skip).map(|s| s.to_string()),
                    )
                })
                .collect();
            return FollowReport {
                verdict,
                code: verdict.code(),
                r#final: true,
                ok: out.ok(),
                correction,
                control: planned.map(|p| p.control),
                commands,
                lines: u32::try_from(text.lines().count()).unwrap_or(u32::MAX),
                diagnostics: out.diagnostics,
            };
        }
        let view = streaming_view(text, page.site_streaming);
        // The checkpoint holds while the text before it is what the last update saw.
        let same = self.checkpoint.as_ref().is_some_and(|cp| {
            view.len() >= cp.offset
                && self.text.len() >= cp.offset
                && view.as_bytes()[..cp.offset] == self.text.as_bytes()[..cp.offset]
        });
        let from = self.checkpoint.take().filter(|_| same);
        let (out, next) = crate::parse::parse_partial_resumable(view, &self.settings.limits, from);
        self.checkpoint = next;
        self.text.clear();
        self.text.push_str(view);
        let commands = out
            .reply
            .commands
            .iter()
            .map(|c| self.row(c, None, None))
            .collect();
        FollowReport {
            verdict,
            code: verdict.code(),
            r#final: false,
            ok: out.diagnostics.is_empty(),
            commands,
            control: out.reply.control(),
            correction: None,
            lines: out.complete_lines,
            diagnostics: out.diagnostics,
        }
    }
}

/// What the doctor learned about one selector on the open page.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectorProbe {
    pub key: String,
    /// Elements matched; `None` when the browser rejected the selector's syntax.
    pub matches: Option<u32>,
}

/// One line of the doctor's report.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorLine {
    pub key: String,
    pub selector: Option<String>,
    pub status: &'static str,
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub code: Option<Code>,
    pub message: String,
}

/// The doctor's verdict on each selector of `site`, from what the page matched.
#[must_use]
pub fn doctor(site: &SiteAdapter, probes: &[SelectorProbe]) -> Vec<DoctorLine> {
    SELECTOR_KEYS
        .iter()
        .map(|&(key, presence, when)| {
            let selector = site.selectors.get(key).map(str::to_string);
            let probe = probes.iter().find(|p| p.key == key);
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
                    format!("{n} match{}", if n == 1 { "" } else { "es" }),
                ),
                (Some(_), Some(Some(_))) => match presence {
                    Presence::Always => (
                        "broken",
                        Some(Code::SelectorNotFound),
                        format!("no match, and the {} is always on the page: this selector broke; override it in the options page", key.replace('_', " ")),
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
            DoctorLine {
                key: key.to_string(),
                selector,
                status,
                code,
                message,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Vec<SiteAdapter> {
        load_sites(DEFAULT_SITES_JSON, None).unwrap()
    }

    /// The extension spreads these under the stored settings, with the names its `Settings` type
    /// (generated from this struct) uses.
    #[test]
    fn extension_defaults_serialise_as_the_extension_reads_them() {
        let v = serde_json::to_value(extension_defaults()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "hostUrl": "http://127.0.0.1:7457",
                "mode": "Ask",
                "pace": "Balanced",
                "piece": "",
                "autoSend": true,
                "truncationBudgetSeconds": 90,
                "replyTimeoutSeconds": 600,
                "selectorOverrides": "",
            })
        );
    }

    #[test]
    fn shipped_adapters_load() {
        let sites = defaults();
        let ids: Vec<&str> = sites.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["aistudio", "chatgpt", "claude", "gemini"]);
    }

    #[test]
    fn host_lookup_takes_subdomains_not_lookalikes() {
        let sites = defaults();
        assert_eq!(site_for_host(&sites, "chatgpt.com").unwrap().id, "chatgpt");
        assert_eq!(
            site_for_host(&sites, "www.chatgpt.com").unwrap().id,
            "chatgpt"
        );
        assert!(site_for_host(&sites, "evilchatgpt.com").is_none());
        assert!(site_for_host(&sites, "chatgpt.com.evil").is_none());
    }

    #[test]
    fn override_merges_one_selector() {
        let sites = load_sites(
            DEFAULT_SITES_JSON,
            Some(r#"{"chatgpt":{"selectors":{"composer":"div.new-composer"}}}"#),
        )
        .unwrap();
        let c = site_for_host(&sites, "chatgpt.com").unwrap();
        assert_eq!(c.selectors.composer, "div.new-composer");
        assert_eq!(
            c.selectors.send_button,
            "button[data-testid=\"send-button\"]"
        );
    }

    #[test]
    fn watch_needs_all_three_signals() {
        let base = WatchInput {
            has_reply: true,
            has_command: true,
            has_eof: true,
            site_streaming: false,
            quiet_ms: QUIET_MS,
            ..WatchInput::default()
        };
        assert_eq!(watch(&base), WatchVerdict::Complete);
        let streaming = WatchInput {
            site_streaming: true,
            ..base
        };
        assert_eq!(watch(&streaming), WatchVerdict::Waiting);
        let noisy = WatchInput {
            quiet_ms: 10,
            ..base
        };
        assert_eq!(watch(&noisy), WatchVerdict::Waiting);
        // Where the stop signal was seen, @@eof and its end are decisive: no quiet period.
        let signalled = WatchInput {
            quiet_ms: 0,
            stop_signal_seen: true,
            ..base
        };
        assert_eq!(watch(&signalled), WatchVerdict::Complete);
        let no_eof = WatchInput {
            has_eof: false,
            ..base
        };
        assert_eq!(watch(&no_eof), WatchVerdict::Waiting);
        let stuck = WatchInput {
            has_eof: false,
            quiet_ms: 90_000,
            ..base
        };
        assert_eq!(watch(&stuck), WatchVerdict::Truncated);
    }
}
