//! The chat-site adapters: their selectors, the shipped set, the user's overrides and their checks.

use crate::keyless_json::ConfigFileError;
use crate::text::edit_distance;
use serde::{Deserialize, Serialize};

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
