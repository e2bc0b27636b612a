// Where Chrome and Firefox differ for the extension's code, decided here once; everything else
// calls the same `chrome.*` APIs in both (Firefox provides the `chrome` namespace, with promises,
// in MV3). The manifests differ too: extension/firefox.mjs.

/** This extension's own origin, as its requests carry it: `chrome-extension://ID/` in Chrome,
 * `moz-extension://UUID/` in Firefox (a UUID chosen per profile at install). */
export function ownOrigin(): string {
  return chrome.runtime.getURL("/");
}

/** The id a pairing is bound to: the host of the extension's own origin (Chrome's extension id;
 * Firefox's internal UUID, not its add-on id, which requests do not carry). */
export function pairingId(): string {
  return new URL(ownOrigin()).host;
}

/** Whether a native-messaging failure means the host is not registered: Chrome says "Specified
 * native messaging host not found.", Firefox "No such native application dev.keyless.host". */
export function nativeHostMissing(error: string): boolean {
  return /not found|no such native application/i.test(error);
}

/**
 * A `paste` event carrying `text` as text/plain, for the page's editor to read. Chrome takes the
 * data as a `DataTransfer` in `clipboardData`; Firefox ignores that one and makes the event's own
 * from the older `dataType` and `data` members. Which one this browser honours is tried, not
 * guessed from its name.
 */
export function pasteEvent(text: string): ClipboardEvent {
  const data = new DataTransfer();
  data.setData("text/plain", text);
  const standard = new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
  if (standard.clipboardData?.getData("text/plain") === text) return standard;
  const older = { dataType: "text/plain", data: text, bubbles: true, cancelable: true } as ClipboardEventInit;
  return new ClipboardEvent("paste", older);
}
