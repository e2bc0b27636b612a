//! Fuzzes the site-adapter overrides loader and the reply follower that uses the adapters.
#![no_main]

use keyless_core::site::{follow, load_sites, site_for_host, PageObservation, DEFAULT_SITES_JSON};
use keyless_core::{Mode, Settings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sites) = load_sites(DEFAULT_SITES_JSON, Some(text)) {
        let _ = site_for_host(&sites, "chatgpt.com");
    }
    let page = PageObservation {
        site_streaming: data.first().is_some_and(|b| b & 1 == 1),
        quiet_ms: u64::from(data.len() as u32) * 10,
        ..PageObservation::default()
    };
    let _ = follow(
        text,
        &Settings::default(),
        &keyless_core::policy::verdict::Judge::new(Mode::Ask, Vec::new()),
        &page,
    );
});
