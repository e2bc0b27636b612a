//! The TypeScript the extension and the web pages use for the core's wire types is generated from
//! the Rust types (`keyless_core::typescript`, ts-rs). This fails when the committed file differs
//! from a fresh generation: run `cargo xtask contract` (or `KEYLESS_BLESS=1`) after changing a type.

use keyless_tests::wasm::workspace_root;

#[test]
fn the_committed_typescript_is_generated_from_the_rust_types() {
    let path = workspace_root().join("extension/src/generated/core.ts");
    let fresh = keyless_core::typescript();
    if std::env::var_os("KEYLESS_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("create the folder");
        std::fs::write(&path, &fresh).expect("write");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is not what the Rust types generate; run `cargo xtask contract`.\n--- fresh\n{fresh}",
        path.display()
    );
}
