// The manifest Firefox reads, from the one in extension/manifest.json. Firefox's MV3 differs from
// Chrome's only here:
// - the background is an event page (`background.scripts`, an ES module), not a service worker;
// - the add-on's id is fixed in `browser_specific_settings.gecko` (Chrome derives it from `key`,
//   which Firefox does not read), with the oldest Firefox it runs on and what it collects (nothing);
// - the options page is `options_ui`, opened in a tab;
// - Chrome's own keys (`key`, `minimum_chrome_version`) are left out.

/** The keyless add-on's id in Firefox (keyless_host::native::FIREFOX_ID). */
export const FIREFOX_ID = "keyless@keyless.dev";
/**
 * The oldest Firefox keyless runs on: 142, the first that reads `data_collection_permissions` on
 * desktop and on Android alike (web-ext lint warns below it); ESR 153 is the current ESR.
 */
export const FIREFOX_MIN = "142.0";

export function firefoxManifest(chrome) {
  const { key: _key, minimum_chrome_version: _min, background, options_page, ...rest } = chrome;
  return {
    ...rest,
    background: { scripts: [background.service_worker], type: background.type },
    ...(options_page ? { options_ui: { page: options_page, open_in_tab: true } } : {}),
    browser_specific_settings: {
      gecko: {
        id: FIREFOX_ID,
        strict_min_version: FIREFOX_MIN,
        data_collection_permissions: { required: ["none"] },
      },
    },
  };
}
