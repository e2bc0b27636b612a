// The dashboard's local token: `keyless-host serve` prints it in the dashboard's URL (?token=),
// the page keeps it in sessionStorage for this tab and removes it from the address bar. The
// dashboard and the piece editor (same origin, same tab) share it.
const TOKEN_KEY = "keyless-dashboard-token";

export function takeToken(): string {
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get("token");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search);
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}
