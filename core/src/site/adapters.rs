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
    /// A plain `<textarea>` (AI Studio, DeepSeek, Copilot, Qwen, OpenRouter): the native value
    /// setter, then an `input` event.
    Textarea,
    /// Lexical `contenteditable` (Perplexity, Kimi): select all, then a paste event with
    /// text/plain (Lexical handles it), `insertText` when it was ignored.
    Lexical,
    /// tiptap (ProseMirror underneath; Grok): the ProseMirror path.
    Tiptap,
}

/// One selector as the adapters give it: CSS selectors in order, the first that matches anything
/// on the page is the one used (a site's newest markup first, then what it had before or what
/// the facts leave open). JSON takes a string for one, or a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(transparent)]
pub struct Alternatives(pub Vec<String>);

impl<'de> Deserialize<'de> for Alternatives {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Alternatives;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a selector: a string, or a list of strings tried in order")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Alternatives, E> {
                Ok(Alternatives(vec![v.to_string()]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Alternatives, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(s);
                }
                Ok(Alternatives(v))
            }
        }
        d.deserialize_any(Visit)
    }
}

impl Alternatives {
    /// The alternatives, in order.
    #[must_use]
    pub fn all(&self) -> &[String] {
        &self.0
    }

    /// The first alternative (what the site has now, by the facts).
    #[must_use]
    pub fn first(&self) -> &str {
        self.0.first().map_or("", String::as_str)
    }
}

/// The CSS selectors of one site, each a list of alternatives.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selectors {
    #[cfg_attr(feature = "ts", ts(type = "string[]"))]
    pub assistant_message: Alternatives,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string[]"))]
    pub assistant_content: Option<Alternatives>,
    #[cfg_attr(feature = "ts", ts(type = "string[]"))]
    pub user_message: Alternatives,
    #[cfg_attr(feature = "ts", ts(type = "string[]"))]
    pub streaming: Alternatives,
    /// Matches the newest reply (or something inside it, or around it) once the site shows it is
    /// complete (AI Studio's footer with its thumb-up): until then the reply counts as streaming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string[]"))]
    pub reply_done: Option<Alternatives>,
    #[cfg_attr(feature = "ts", ts(type = "string[]"))]
    pub composer: Alternatives,
    #[cfg_attr(feature = "ts", ts(type = "string[]"))]
    pub send_button: Alternatives,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string[]"))]
    pub file_input: Option<Alternatives>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string[]"))]
    pub attachment_chip: Option<Alternatives>,
    /// Never read as reply text: author labels, screen-reader headings, "thinking" panels, the
    /// user's own message. Every alternative applies (with [`COMMON_IGNORE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string[]"))]
    pub ignore: Option<Alternatives>,
}

/// What no site's reply text includes, whatever the adapter says: screen-reader text, author and
/// model-name labels, reasoning ("thinking") panels, whose text may hold command lines the model
/// only considered, and citation chips. Each rule is about the element that holds such a thing:
/// a class token that begins with the word (`thinking-block`, `thoughts-container`) or names it
/// after a prefix (`ds-think-content`, `ms-thought-chunk`), never a flag on the answer's own
/// parents (`has-thoughts`, Gemini's, sits on every ancestor of a reply that had a thinking
/// phase; a rule matching it read such replies as empty).
pub const COMMON_IGNORE: &[&str] = &[
    ".sr-only",
    ".visually-hidden",
    ".cdk-visually-hidden",
    "[class*=\"author\" i]",
    "[class*=\"model-name\" i]",
    "[data-testid*=\"author\" i]",
    "[data-testid*=\"model-name\" i]",
    "[class^=\"think\" i]",
    "[class*=\" think\" i]",
    "[class*=\"-think\" i]:not([class*=\"has-think\" i])",
    "[class^=\"thought\" i]",
    "[class*=\" thought\" i]",
    "[class*=\"-thought\" i]:not([class*=\"has-thought\" i])",
    "[class^=\"reasoning\" i]",
    "[class*=\" reasoning\" i]",
    "[class*=\"-reasoning\" i]:not([class*=\"has-reasoning\" i])",
    "[data-testid*=\"thinking\" i]",
    "[data-testid*=\"reasoning\" i]",
    "model-thoughts",
    "ms-thought-chunk",
    "[data-testid*=\"citation\" i]",
    "span.citation",
    "[data-pplx-citation-url]",
    ".ds-markdown-cite",
];

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
    /// Text the site shows when the chat is full (its length limit), matched in the page's
    /// visible text outside the messages: KA_CHAT_EXHAUSTED.
    #[serde(default)]
    pub exhausted_phrases: Vec<String>,
    /// Text the site shows when the account's usage limit is reached, matched the same way:
    /// KA_CHAT_LIMITED.
    #[serde(default)]
    pub limited_phrases: Vec<String>,
    /// The size of a thread (the characters sent and read in one chat) past which keyless
    /// suggests continuing in a new chat, before the site says it is full: models lose track
    /// of the task in long threads. 0: never.
    #[serde(default)]
    pub long_thread_chars: u32,
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
    (
        "reply_done",
        Presence::Optional,
        "on the newest reply once it is complete",
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
    pub fn get(&self, key: &str) -> Option<&Alternatives> {
        match key {
            "assistant_message" => Some(&self.assistant_message),
            "assistant_content" => self.assistant_content.as_ref(),
            "user_message" => Some(&self.user_message),
            "streaming" => Some(&self.streaming),
            "reply_done" => self.reply_done.as_ref(),
            "composer" => Some(&self.composer),
            "send_button" => Some(&self.send_button),
            "file_input" => self.file_input.as_ref(),
            "attachment_chip" => self.attachment_chip.as_ref(),
            "ignore" => self.ignore.as_ref(),
            _ => None,
        }
    }
}

/// The most alternatives one selector may list.
pub const MAX_ALTERNATIVES: usize = 40;

/// Range of `max_paste_chars`.
pub const MAX_PASTE_RANGE: (u32, u32) = (1_000, 1_000_000);

/// The user's overrides as patches (none for an empty text).
///
/// # Errors
/// As [`load_sites`].
pub fn parse_overrides(text: Option<&str>) -> Result<SitesPatch, ConfigFileError> {
    match text.filter(|t| !t.trim().is_empty()) {
        Some(t) => parse_sites(OVERRIDES_SOURCE, t),
        None => Ok(SitesPatch::new()),
    }
}

/// Parses one sites file, keeping the path of the key a wrong value sits at.
fn parse_sites(source: &str, text: &str) -> Result<SitesPatch, ConfigFileError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        invalid(source, e.inner(), &path)
    })
}

fn invalid(source: &str, e: &serde_json::Error, path: &str) -> ConfigFileError {
    let message = e.to_string();
    let message = message.split(" at line").next().unwrap_or("");
    if e.is_data() {
        // Well-formed JSON with a wrong key or value: name the key (and where it is).
        let at = format!("line {} column {}", e.line(), e.column());
        let key = if path.is_empty() || path == "." {
            at
        } else {
            format!("{path} ({at})")
        };
        return validation(source, key, explain_serde(message));
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
            let at = format!("{}.selectors.{k}", site.id);
            if v.all().is_empty() {
                return Err(validation(source, at, "list at least one selector"));
            }
            if v.all().len() > MAX_ALTERNATIVES {
                return Err(validation(
                    source,
                    at,
                    format!("at most {MAX_ALTERNATIVES} alternatives"),
                ));
            }
            for sel in v.all() {
                check_selector(source, &at, sel)?;
            }
        }
    }
    for (key, phrases) in [
        ("exhausted_phrases", &site.exhausted_phrases),
        ("limited_phrases", &site.limited_phrases),
    ] {
        if phrases.iter().any(|p| p.trim().is_empty()) {
            return Err(validation(source, at(key), "phrases must not be empty"));
        }
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
) -> Result<Option<Option<Alternatives>>, D::Error> {
    Ok(Some(Option::<Alternatives>::deserialize(d)?))
}

/// One site as a JSON file gives it: every field optional, so an override may change one
/// selector. A selector set to `null` switches an optional selector off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SitePatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub composer_kind: Option<ComposerKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_paste_chars: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selectors: Option<SelectorsPatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exhausted_phrases: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_phrases: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_thread_chars: Option<u32>,
}

/// The selectors of a [`SitePatch`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectorsPatch {
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub assistant_message: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub assistant_content: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub user_message: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub streaming: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub reply_done: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub composer: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub send_button: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub file_input: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub attachment_chip: Option<Option<Alternatives>>,
    #[serde(
        default,
        deserialize_with = "null_or_some",
        skip_serializing_if = "Option::is_none"
    )]
    pub ignore: Option<Option<Alternatives>>,
}

/// Site patches keyed by site id, as a JSON file holds them.
pub type SitesPatch = std::collections::BTreeMap<String, SitePatch>;

fn over<T: Clone>(base: &mut Option<T>, patch: Option<&T>) {
    if let Some(v) = patch {
        *base = Some(v.clone());
    }
}

impl SelectorsPatch {
    /// Sets one selector by its key (a key of [`SELECTOR_KEYS`]); false for an unknown key.
    pub fn set(&mut self, key: &str, value: Alternatives) -> bool {
        let slot = match key {
            "assistant_message" => &mut self.assistant_message,
            "assistant_content" => &mut self.assistant_content,
            "user_message" => &mut self.user_message,
            "streaming" => &mut self.streaming,
            "reply_done" => &mut self.reply_done,
            "composer" => &mut self.composer,
            "send_button" => &mut self.send_button,
            "file_input" => &mut self.file_input,
            "attachment_chip" => &mut self.attachment_chip,
            "ignore" => &mut self.ignore,
            _ => return false,
        };
        *slot = Some(Some(value));
        true
    }

    fn apply(&mut self, o: &SelectorsPatch) {
        over(&mut self.assistant_message, o.assistant_message.as_ref());
        over(&mut self.assistant_content, o.assistant_content.as_ref());
        over(&mut self.user_message, o.user_message.as_ref());
        over(&mut self.streaming, o.streaming.as_ref());
        over(&mut self.reply_done, o.reply_done.as_ref());
        over(&mut self.composer, o.composer.as_ref());
        over(&mut self.send_button, o.send_button.as_ref());
        over(&mut self.file_input, o.file_input.as_ref());
        over(&mut self.attachment_chip, o.attachment_chip.as_ref());
        over(&mut self.ignore, o.ignore.as_ref());
    }
}

impl SitePatch {
    /// Merges `o` over this patch, field by field and selector by selector.
    pub fn apply(&mut self, o: &SitePatch) {
        over(&mut self.name, o.name.as_ref());
        over(&mut self.hosts, o.hosts.as_ref());
        over(&mut self.composer_kind, o.composer_kind.as_ref());
        over(&mut self.max_paste_chars, o.max_paste_chars.as_ref());
        over(&mut self.exhausted_phrases, o.exhausted_phrases.as_ref());
        over(&mut self.limited_phrases, o.limited_phrases.as_ref());
        over(&mut self.long_thread_chars, o.long_thread_chars.as_ref());
        match (&mut self.selectors, &o.selectors) {
            (Some(b), Some(p)) => b.apply(p),
            (b, p) => over(b, p.as_ref()),
        }
    }

    fn complete(self, source: &str, id: &str) -> Result<SiteAdapter, ConfigFileError> {
        let missing = |k: &str| validation(source, format!("{id}.{k}"), "missing required field");
        let sel = self.selectors.ok_or_else(|| missing("selectors"))?;
        let required = |v: Option<Option<Alternatives>>, k: &str| {
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
            limited_phrases: self.limited_phrases.unwrap_or_default(),
            long_thread_chars: self.long_thread_chars.unwrap_or_default(),
            selectors: Selectors {
                assistant_message: required(sel.assistant_message, "assistant_message")?,
                assistant_content: sel.assistant_content.flatten(),
                user_message: required(sel.user_message, "user_message")?,
                streaming: required(sel.streaming, "streaming")?,
                reply_done: sel.reply_done.flatten(),
                composer: required(sel.composer, "composer")?,
                send_button: required(sel.send_button, "send_button")?,
                file_input: sel.file_input.flatten(),
                attachment_chip: sel.attachment_chip.flatten(),
                ignore: Some(Alternatives(
                    sel.ignore
                        .flatten()
                        .map(|a| a.0)
                        .unwrap_or_default()
                        .into_iter()
                        .chain(COMMON_IGNORE.iter().map(|s| (*s).to_string()))
                        .collect(),
                )),
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
    let base = parse_sites(DEFAULTS_SOURCE, defaults)?;
    let over = match overrides.filter(|t| !t.trim().is_empty()) {
        Some(t) => Some(parse_sites(OVERRIDES_SOURCE, t)?),
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
