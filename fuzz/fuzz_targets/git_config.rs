//! The git guard's strict config reader (core::gitcontrol): never panics, and whatever it vets as
//! harmless reads back, entry by entry, as only settings on its list.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = keyless_core::gitcontrol::parse_config(text);
    let vetted = keyless_core::gitcontrol::vet_config(text, &|_| true);
    if vetted.is_ok() {
        // A config proven harmless was read whole, and names no program-running key.
        let entries = parsed.expect("a vetted config parses");
        for e in entries {
            assert!(
                !matches!(
                    (e.section.as_str(), e.key.as_str()),
                    ("core", "fsmonitor" | "hookspath" | "pager" | "editor" | "sshcommand")
                        | ("alias", _)
                        | ("include" | "includeif", _)
                        | ("diff" | "merge" | "credential" | "gpg", _)
                ),
                "{e:?}"
            );
        }
    }
});
