//! The extension's `Settings` (extension/src/protocol.ts) and the core's defaults for them
//! (`keyless_core::site::extension_defaults`, the wasm export `extensionDefaults`) name the same
//! fields: the worker spreads the defaults under the stored settings, so a field missing on one
//! side would silently be `undefined` in the extension.

use keyless_tests::wasm::workspace_root;
use std::collections::BTreeSet;

#[test]
fn extension_settings_and_core_defaults_have_the_same_fields() {
    let ts = std::fs::read_to_string(workspace_root().join("extension/src/protocol.ts"))
        .unwrap_or_else(|e| panic!("protocol.ts: {e}"));
    let body = ts
        .split_once("export interface Settings {")
        .and_then(|(_, rest)| rest.split_once("\n}"))
        .map(|(body, _)| body)
        .unwrap_or_else(|| panic!("no `export interface Settings` in protocol.ts"));
    let ts_fields: BTreeSet<String> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.is_empty())
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, _)| k.trim().trim_end_matches('?').to_string())
        })
        .collect();
    let defaults = serde_json::to_value(keyless_core::site::extension_defaults())
        .unwrap_or_else(|e| panic!("defaults: {e}"));
    let rust_fields: BTreeSet<String> = defaults
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    assert_eq!(ts_fields, rust_fields);
    assert_eq!(defaults["hostUrl"], "http://127.0.0.1:7457");
    assert_eq!(defaults["mode"], "Ask");
    assert_eq!(defaults["pace"], "Balanced");
}
