//! The selector picker: from an element the user clicked on the chat page, the selectors that
//! could find it again (stable ids, `data-testid`, `aria-label`, roles and names before classes;
//! build hashes never), which of them to keep once the page has been asked what each matches,
//! and the user override that keeps it.

use super::*;
use crate::keyless_json::ConfigFileError;
use serde::Deserialize;

/// The keys a user can pick on the page, with what to click.
pub const PICKABLE: &[(&str, &str)] = &[
    ("composer", "the box where you type your message"),
    ("send_button", "the button that sends your message"),
    ("assistant_message", "the model's last reply"),
];

/// One element as the page describes it to the picker.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PickedNode {
    /// Lower-case tag name.
    pub tag: String,
    pub id: String,
    pub classes: Vec<String>,
    /// Attribute names and values (the page sends at most a few dozen).
    pub attrs: Vec<(String, String)>,
}

/// What the user clicked: the element (already moved to the composer or the button around the
/// click), and its ancestors, nearest first.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Picked {
    pub key: String,
    pub node: PickedNode,
    pub ancestors: Vec<PickedNode>,
}

/// What one candidate matched on the page.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CandidateFacts {
    /// Elements it matches (0 when the browser refused it).
    pub count: u32,
    /// The picked element is among them.
    pub has_picked: bool,
    /// It also matches a user message (or something inside one).
    pub hits_user: bool,
}

/// Attributes that name an element for people or tests, best first.
const NAMING_ATTRS: &[&str] = &[
    "data-testid",
    "data-test-id",
    "data-qa",
    "aria-label",
    "name",
    "formcontrolname",
    "placeholder",
    "title",
];

/// Attributes that say what an element is, used with the tag when nothing names it.
const KIND_ATTRS: &[&str] = &[
    "role",
    "contenteditable",
    "type",
    "data-message-author-role",
];

fn cap(s: &str) -> bool {
    !s.is_empty() && s.len() <= 80 && !s.contains(['\n', '\r'])
}

/// An id or class a build will not rename: no digit runs, no React `:r1:` ids, no CSS-module or
/// CSS-in-JS hashes.
fn stable_name(s: &str) -> bool {
    if !cap(s) || s.len() > 48 {
        return false;
    }
    let first_ok = s.starts_with(|c: char| c.is_ascii_alphabetic());
    let chars_ok = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !first_ok || !chars_ok {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let hashed_prefix = [
        "css-",
        "sc-",
        "jsx-",
        "svelte-",
        "emotion-",
        "radix-",
        "headlessui-",
    ]
    .iter()
    .any(|p| lower.starts_with(p));
    // A run of 3 or more digits, or a segment after `--`/`__` with mixed case and digits.
    let digit_run = s
        .as_bytes()
        .windows(3)
        .any(|w| w.iter().all(u8::is_ascii_digit));
    let hashed_segment = s.split(['-', '_']).any(|seg| {
        seg.len() >= 5
            && seg.chars().any(|c| c.is_ascii_digit())
            && seg.chars().any(|c| c.is_ascii_alphabetic())
    }) || s
        .split("--")
        .skip(1)
        .chain(s.split("__").skip(1))
        .any(|seg| {
            seg.len() >= 4
                && seg.chars().any(|c| c.is_ascii_uppercase())
                && seg.chars().any(|c| c.is_ascii_lowercase())
        });
    !(hashed_prefix || digit_run || hashed_segment)
}

/// A tag name as a selector: only plain names.
fn tag_ok(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 40
        && t.starts_with(|c: char| c.is_ascii_alphabetic())
        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// `[name="value"]` with the value quoted for CSS.
fn attr_sel(name: &str, value: &str) -> String {
    let mut v = String::with_capacity(value.len() + 2);
    for c in value.chars() {
        match c {
            '"' => v.push_str("\\\""),
            '\\' => v.push_str("\\\\"),
            c if c.is_control() => v.push(' '),
            c => v.push(c),
        }
    }
    format!("[{name}=\"{v}\"]")
}

fn attr<'a>(n: &'a PickedNode, name: &str) -> Option<&'a str> {
    n.attrs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .filter(|v| cap(v))
}

/// An attribute value that names a kind of element, not one of them: no digit run (per-message
/// ids such as `conversation-turn-12`, counters, hashes). For the replies, no digit at all.
fn stable_value(v: &str, single: bool) -> bool {
    let run = if single { 3 } else { 1 };
    !v.as_bytes()
        .windows(run)
        .any(|w| w.iter().all(u8::is_ascii_digit))
}

/// The selectors that name `n` by itself, best first. `single` is false for a key that must
/// match every element of its kind (the replies): then nothing that names one element (an id,
/// a label) is offered.
fn own(n: &PickedNode, single: bool) -> Vec<String> {
    let mut out = Vec::new();
    if !tag_ok(&n.tag) {
        return out;
    }
    let tag = n.tag.as_str();
    if single && stable_name(&n.id) {
        out.push(format!("{tag}#{}", n.id));
    }
    for a in NAMING_ATTRS {
        if !single && matches!(*a, "aria-label" | "title" | "name" | "placeholder") {
            continue;
        }
        if let Some(v) = attr(n, a).filter(|v| stable_value(v, single)) {
            out.push(format!("{tag}{}", attr_sel(a, v)));
        }
    }
    for a in KIND_ATTRS {
        if let Some(v) = attr(n, a).filter(|v| stable_value(v, single)) {
            out.push(format!("{tag}{}", attr_sel(a, v)));
        }
    }
    if tag.contains('-') {
        // A custom element (model-response, ms-chat-turn) is a name of its own.
        out.push(tag.to_string());
    }
    let classes: Vec<&str> = n
        .classes
        .iter()
        .map(String::as_str)
        .filter(|c| stable_name(c))
        .take(3)
        .collect();
    if !classes.is_empty() {
        out.push(format!("{tag}.{}", classes.join(".")));
        if classes.len() > 1 {
            out.push(format!("{tag}.{}", classes[0]));
        }
    }
    out
}

/// The selectors that could find the picked element again, best first: its own names, then its
/// tag or kind under an ancestor that has a name, then its tag alone.
#[must_use]
pub fn pick_candidates(p: &Picked) -> Vec<String> {
    let single = p.key != "assistant_message";
    let mut out = own(&p.node, single);
    if tag_ok(&p.node.tag) {
        let tail: Vec<String> = {
            let mut t = Vec::new();
            for a in KIND_ATTRS {
                if let Some(v) = attr(&p.node, a).filter(|v| stable_value(v, single)) {
                    t.push(format!("{}{}", p.node.tag, attr_sel(a, v)));
                }
            }
            // A bare tag under a named ancestor finds the composer; for the replies it would
            // find every block of the page.
            if single || p.node.tag.contains('-') {
                t.push(p.node.tag.clone());
            }
            t
        };
        for anc in p.ancestors.iter().take(6) {
            for a in own(anc, single).into_iter().take(2) {
                for t in &tail {
                    out.push(format!("{a} {t}"));
                }
            }
        }
        if single {
            out.extend(tail);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out.truncate(40);
    out
}

/// The candidate to keep, given what each matched: it must match the picked element and no
/// user message; for the composer and the send button only that element; for the replies the
/// first in the order of preference (names and kinds before classes; no ids, no per-message
/// values, no bare tags).
#[must_use]
pub fn choose_pick(key: &str, candidates: &[String], facts: &[CandidateFacts]) -> Option<usize> {
    let ok = |f: &CandidateFacts| f.has_picked && !f.hits_user && f.count > 0;
    if key == "assistant_message" {
        return facts.iter().take(candidates.len()).position(ok);
    }
    facts
        .iter()
        .take(candidates.len())
        .position(|f| ok(f) && f.count == 1)
}

/// The user's overrides with `selector` first for `key` of site `id`, before what the adapter
/// had (`current`), as the JSON text the options page shows; checked like any override.
///
/// # Errors
/// KA_CONFIG_INVALID when the overrides are not JSON; KA_CONFIG_VALIDATION when the result is
/// not a valid set of adapters (an unknown key, a bad selector).
pub fn add_override(
    defaults: &str,
    overrides: Option<&str>,
    id: &str,
    key: &str,
    selector: &str,
    current: &[String],
) -> Result<String, ConfigFileError> {
    let mut mine = parse_overrides(overrides)?;
    let mut list = vec![selector.to_string()];
    list.extend(current.iter().filter(|c| *c != selector).cloned());
    list.truncate(MAX_ALTERNATIVES);
    let site = mine.entry(id.to_string()).or_default();
    if !site
        .selectors
        .get_or_insert_with(SelectorsPatch::default)
        .set(key, Alternatives(list))
    {
        return Err(ConfigFileError::Validation {
            source_name: "selector overrides".into(),
            key: format!("{id}.selectors.{key}"),
            message: "not a selector key".into(),
        });
    }
    checked(defaults, &mine)
}

fn checked(defaults: &str, patch: &SitesPatch) -> Result<String, ConfigFileError> {
    let text = serde_json::to_string_pretty(patch).unwrap_or_default();
    load_sites(defaults, Some(&text))?;
    Ok(text)
}

/// What the options page's import does with a file of overrides: checked as overrides, then
/// merged over the user's own (the file wins where both set a selector).
///
/// # Errors
/// As [`load_sites`], naming the file's problem.
pub fn import_overrides(
    defaults: &str,
    mine: Option<&str>,
    file: &str,
) -> Result<String, ConfigFileError> {
    load_sites(defaults, Some(file))?;
    let theirs = parse_overrides(Some(file))?;
    let mut mine = parse_overrides(mine)?;
    for (id, patch) in &theirs {
        mine.entry(id.clone()).or_default().apply(patch);
    }
    checked(defaults, &mine)
}
