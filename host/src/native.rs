//! Pairing without typing a code: a native-messaging host for Chrome, Chromium, Brave and Firefox.
//!
//! `keyless-host install` registers this binary as the native-messaging host
//! `dev.keyless.host`, allowed for the keyless extension only: in Chrome by its id (fixed by the
//! public key in `extension/manifest.json`), in Firefox by its add-on id ([`FIREFOX_ID`], fixed in
//! the Firefox build's manifest). When the extension asks (`{"type":"pair"}`), Chrome starts
//! `keyless-host chrome-extension://<id>/`, Firefox `keyless-host <manifest path> <add-on id>`,
//! with the messages on stdin; the host answers with the address of the running `serve` (from
//! `serve.json` in the user's config folder) and a fresh token bound to the extension's origin.
//! Chrome names that origin itself; Firefox's is per profile (`moz-extension://<uuid>`), so the
//! extension sends it in its request, and only the keyless add-on can reach this host. The
//! one-time code stays as the fallback.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

pub use crate::dirs::HOST_NAME;
/// The keyless extension's id, fixed by the `key` in `extension/manifest.json`.
pub const EXTENSION_ID: &str = "gplahjhhbhedphhkkcaefhjjcgoeckci";
/// The keyless add-on's id in Firefox (`browser_specific_settings.gecko.id`, extension/firefox.mjs).
pub const FIREFOX_ID: &str = "keyless@keyless.dev";
/// Chrome caps a message to a native host at 4 GB and from it at 1 MB; keyless's are tiny.
const MAX_MESSAGE: u32 = 64 * 1024;

/// Where a running `serve` says it listens: `<config>/keyless/serve.json`.
#[must_use]
pub fn serve_file() -> Option<PathBuf> {
    crate::dirs::user_config_path().map(|p| p.with_file_name("serve.json"))
}

/// What `serve` records about itself while it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeInfo {
    pub port: u16,
    pub pid: u32,
    pub workspace: String,
}

/// Records the running server (mode 0600); removed again by [`forget_serve`]. Returns the
/// `serve` the file named before, when that one still answers (a serve for another workspace):
/// [`forget_serve`] gives the file back to it.
///
/// # Errors
/// When the file cannot be written.
pub fn record_serve(info: &ServeInfo) -> io::Result<Option<ServeInfo>> {
    let Some(path) = serve_file() else {
        return Ok(None);
    };
    let previous = running_serve().ok().filter(|p| p.pid != info.pid);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let json = serde_json::to_vec_pretty(info).map_err(io::Error::other)?;
    crate::exec::workspace::write_atomic(&path, &json)?;
    crate::pairing::set_private(&path)?;
    Ok(previous)
}

/// Removes `serve.json` if it still names this process; when the `serve` it replaced still
/// answers, the file names that one again (so a second serve for another folder never leaves
/// the first one unreachable for the popup and `as run`).
pub fn forget_serve(pid: u32, previous: Option<ServeInfo>) {
    if let Some(path) = serve_file() {
        let mine = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<ServeInfo>(&b).ok())
            .is_some_and(|i| i.pid == pid);
        if mine {
            let _ = std::fs::remove_file(&path);
            if let Some(p) = previous.filter(|p| answers(p.port)) {
                let _ = record_serve(&p);
            }
        }
    }
}

/// Whether something listens on 127.0.0.1:`port`.
fn answers(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        std::time::Duration::from_millis(500),
    )
    .is_ok()
}

pub use crate::dirs::browser_dirs;

/// Whether a browser whose native-messaging folder is `dir` is on this machine: its program is on
/// PATH (or, on macOS, in /Applications), or it has a profile (`Local State` beside the folder).
#[must_use]
pub fn browser_present(browser: &str, dir: &Path) -> bool {
    if dir
        .parent()
        .is_some_and(|d| d.join("Local State").is_file())
    {
        return true;
    }
    if browser.starts_with("firefox") {
        return firefox_present(browser, dir);
    }
    let programs: &[&str] = match browser {
        "chromium" => &["chromium", "chromium-browser"],
        "chrome" => &["google-chrome", "google-chrome-stable"],
        "chrome-beta" => &["google-chrome-beta"],
        "brave" => &["brave-browser", "brave"],
        _ => &[],
    };
    let apps: &[&str] = match browser {
        "chromium" => &["/Applications/Chromium.app"],
        "chrome" => &["/Applications/Google Chrome.app"],
        _ => &[],
    };
    let on_path = |p: &str| {
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|d| d.is_absolute() && d.join(p).is_file())
        })
    };
    programs.iter().any(|p| on_path(p))
        || (cfg!(target_os = "macos") && apps.iter().any(|a| Path::new(a).is_dir()))
}

/// Firefox or Firefox ESR: the program on PATH, or the profiles folder beside the
/// native-messaging folder (`~/.mozilla/firefox`).
fn firefox_present(browser: &str, dir: &Path) -> bool {
    if dir.parent().is_some_and(|d| d.join("firefox").is_dir()) {
        return true;
    }
    let programs: &[&str] = match browser {
        "firefox" => &["firefox", "firefox-esr"],
        _ => &[],
    };
    programs.iter().any(|p| {
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|d| d.is_absolute() && d.join(p).is_file())
        })
    }) || (cfg!(target_os = "macos")
        && browser == "firefox"
        && Path::new("/Applications/Firefox.app").is_dir())
}

/// The host manifest a browser reads: Chrome's names the extensions allowed by origin
/// (`allowed_origins`), Firefox's by add-on id (`allowed_extensions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostManifest {
    pub name: String,
    pub description: String,
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_extensions: Vec<String>,
}

/// Whether `browser` (a name of [`browser_dirs`]) is Firefox.
#[must_use]
pub fn is_firefox(browser: &str) -> bool {
    browser.starts_with("firefox")
}

/// The manifest for `browser`: Firefox's allows the keyless add-on, Chrome's the extension ids
/// given.
#[must_use]
pub fn manifest_for(exe: &Path, browser: &str, extension_ids: &[String]) -> HostManifest {
    let firefox = is_firefox(browser);
    HostManifest {
        name: HOST_NAME.into(),
        description:
            "keyless-host: pairs the keyless extension with the running keyless-host serve".into(),
        path: exe.display().to_string(),
        kind: "stdio".into(),
        allowed_origins: if firefox {
            Vec::new()
        } else {
            extension_ids
                .iter()
                .map(|id| format!("chrome-extension://{id}/"))
                .collect()
        },
        allowed_extensions: if firefox {
            vec![FIREFOX_ID.to_string()]
        } else {
            Vec::new()
        },
    }
}

/// Writes the manifest into each (browser, folder): Firefox's or Chrome's, by the browser; returns
/// the files written.
///
/// # Errors
/// When a folder cannot be created or a file written.
pub fn install(dirs: &[(String, PathBuf)], extension_ids: &[String]) -> io::Result<Vec<PathBuf>> {
    let exe = std::fs::canonicalize(std::env::current_exe()?)?;
    let mut written = Vec::new();
    for (browser, d) in dirs {
        let manifest = manifest_for(&exe, browser, extension_ids);
        let json = serde_json::to_vec_pretty(&manifest).map_err(io::Error::other)?;
        std::fs::create_dir_all(d)?;
        let f = d.join(format!("{HOST_NAME}.json"));
        crate::exec::workspace::write_atomic(&f, &json)?;
        written.push(f);
    }
    Ok(written)
}

/// Removes the manifest from each folder; returns the files removed.
pub fn uninstall(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .map(|d| d.join(format!("{HOST_NAME}.json")))
        .filter(|f| std::fs::remove_file(f).is_ok())
        .collect()
}

/// For `doctor`: each registered manifest, and whether it points at this binary for the keyless
/// extension.
#[must_use]
pub fn registrations() -> Vec<(String, PathBuf, Result<(), String>)> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .unwrap_or_default();
    browser_dirs()
        .into_iter()
        .map(|(b, d)| (b, d.join(format!("{HOST_NAME}.json"))))
        .filter(|(_, f)| f.is_file())
        .map(|(b, f)| {
            let check = std::fs::read(&f)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<HostManifest>(&bytes).map_err(|e| e.to_string())
                })
                .and_then(|m| {
                    let allowed = if is_firefox(b) {
                        m.allowed_extensions.iter().any(|e| e == FIREFOX_ID)
                    } else {
                        m.allowed_origins
                            .iter()
                            .any(|o| o == &format!("chrome-extension://{EXTENSION_ID}/"))
                    };
                    if Path::new(&m.path) != exe {
                        Err(format!("it starts {}, not this keyless-host", m.path))
                    } else if !allowed {
                        Err("it does not allow the keyless extension".into())
                    } else {
                        Ok(())
                    }
                });
            (b.to_string(), f, check)
        })
        .collect()
}

#[derive(Debug, Deserialize)]
struct Request {
    #[serde(rename = "type")]
    kind: String,
    /// The extension's own origin (`moz-extension://<uuid>/`): Firefox does not tell the host.
    #[serde(default)]
    origin: Option<String>,
}

/// Who started this host: Chrome names the extension's id; Firefox names only the add-on, whose
/// origin then comes with each request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    Chrome(String),
    Firefox,
}

impl Caller {
    /// The caller from the program's arguments: `chrome-extension://<id>/` (Chrome), or a
    /// manifest path and the keyless add-on's id (Firefox); `None` for anything else.
    #[must_use]
    pub fn from_args(args: &[String]) -> Option<Self> {
        match args {
            [origin] | [origin, _] if origin.starts_with("chrome-extension://") => {
                let id = origin
                    .trim_start_matches("chrome-extension://")
                    .trim_end_matches('/');
                Some(Self::Chrome(id.to_string()))
            }
            [manifest, addon]
                if addon == FIREFOX_ID
                    && Path::new(manifest).is_absolute()
                    && Path::new(manifest).file_name()
                        == Some(std::ffi::OsStr::new(&format!("{HOST_NAME}.json"))) =>
            {
                Some(Self::Firefox)
            }
            _ => None,
        }
    }
}

fn read_message(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u32::from_ne_bytes(len);
    if n > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a {n}-byte message is larger than {MAX_MESSAGE} bytes"),
        ));
    }
    let mut buf = vec![0u8; n as usize];
    r.read_exact(&mut buf)?;
    Ok(Some(buf))
}

fn write_message(w: &mut impl Write, v: &serde_json::Value) -> io::Result<()> {
    let body = v.to_string();
    let n = u32::try_from(body.len()).map_err(io::Error::other)?;
    w.write_all(&n.to_ne_bytes())?;
    w.write_all(body.as_bytes())?;
    w.flush()
}

/// The `serve` that runs now, as `serve.json` records it and it answers on its port; or why
/// there is none.
///
/// # Errors
/// A message for the user: no `serve.json`, or its server no longer answers.
pub fn running_serve() -> Result<ServeInfo, String> {
    let info = serve_file()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice::<ServeInfo>(&b).ok())
        .ok_or("keyless-host serve is not running (start it in your project with keyless-host serve, then open the popup again)")?;
    if !answers(info.port) {
        return Err(format!(
            "keyless-host serve is not answering on port {} any more (start it again)",
            info.port
        ));
    }
    Ok(info)
}

/// The answer to one request from `caller`.
fn answer(caller: &Caller, req: &[u8]) -> serde_json::Value {
    let req = match serde_json::from_slice::<Request>(req) {
        Ok(r) if r.kind == "pair" => r,
        Ok(r) => {
            return serde_json::json!({"error": format!("KA_CONFIG_INVALID unknown request \"{}\"", r.kind)})
        }
        Err(e) => return serde_json::json!({"error": format!("KA_CONFIG_INVALID {e}")}),
    };
    let extension_id = match caller {
        Caller::Chrome(id) => id.clone(),
        Caller::Firefox => {
            let id = req
                .origin
                .as_deref()
                .and_then(|o| o.strip_prefix("moz-extension://"))
                .map(|o| o.trim_end_matches('/'))
                .filter(|id| keyless_core::pairing::is_firefox_uuid(id));
            match id {
                Some(id) => id.to_string(),
                None => {
                    return serde_json::json!({"error": "KA_CONFIG_INVALID a pairing request from Firefox carries the extension's origin (moz-extension://<uuid>/)"})
                }
            }
        }
    };
    let extension_id = extension_id.as_str();
    let info = match running_serve() {
        Ok(info) => info,
        Err(why) => return serde_json::json!({ "error": format!("KA_HOST_UNREACHABLE {why}") }),
    };
    let Some(pairings) =
        crate::pairing::Pairings::default_path().map(crate::pairing::Pairings::new)
    else {
        return serde_json::json!({"error": "KA_CONFIG_VALIDATION no user config folder (set HOME or XDG_CONFIG_HOME)"});
    };
    match pairings.add(extension_id) {
        Ok(token) => serde_json::json!({
            "hostUrl": format!("http://127.0.0.1:{}", info.port),
            "token": token,
            "workspace": info.workspace,
        }),
        Err(e) => {
            serde_json::json!({"error": format!("KA_FILE_IO cannot record the pairing: {e}")})
        }
    }
}

/// The native-messaging loop, for the browser that started this host.
#[must_use]
pub fn run_host(caller: &Caller) -> std::process::ExitCode {
    if let Caller::Chrome(id) = caller {
        if !keyless_core::pairing::is_chrome_id(id) {
            eprintln!("keyless-host: chrome-extension://{id}/ is not an extension origin");
            return std::process::ExitCode::from(2);
        }
    }
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    loop {
        match read_message(&mut stdin) {
            Ok(Some(req)) => {
                if write_message(&mut stdout, &answer(caller, &req)).is_err() {
                    return std::process::ExitCode::from(1);
                }
            }
            Ok(None) => return std::process::ExitCode::SUCCESS,
            Err(e) => {
                let _ = write_message(
                    &mut stdout,
                    &serde_json::json!({"error": format!("KA_CONFIG_INVALID {e}")}),
                );
                return std::process::ExitCode::from(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_is_read_from_what_each_browser_passes() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert_eq!(
            Caller::from_args(&args(&[
                "chrome-extension://gplahjhhbhedphhkkcaefhjjcgoeckci/"
            ])),
            Some(Caller::Chrome(EXTENSION_ID.into()))
        );
        // Chrome on Windows adds a window handle; Firefox passes its manifest and the add-on id.
        assert_eq!(
            Caller::from_args(&args(&[
                "chrome-extension://gplahjhhbhedphhkkcaefhjjcgoeckci/",
                "--parent-window=0"
            ])),
            Some(Caller::Chrome(EXTENSION_ID.into()))
        );
        assert_eq!(
            Caller::from_args(&args(&[
                "/home/u/.mozilla/native-messaging-hosts/dev.keyless.host.json",
                FIREFOX_ID
            ])),
            Some(Caller::Firefox)
        );
        for other in [
            &["serve"][..],
            &["/x/dev.keyless.host.json", "other@addon"][..],
            &["notes.json", FIREFOX_ID][..],
            &["/x/other.json", FIREFOX_ID][..],
            &["mcp", "keyless@keyless.dev"][..],
            &[][..],
        ] {
            assert_eq!(Caller::from_args(&args(other)), None, "{other:?}");
        }
    }

    #[test]
    fn a_firefox_folder_gets_a_manifest_that_allows_the_keyless_add_on_only() {
        let exe = Path::new("/opt/keyless/bin/keyless-host");
        let ff = manifest_for(exe, "firefox", &[EXTENSION_ID.to_string()]);
        assert_eq!(ff.allowed_extensions, vec![FIREFOX_ID.to_string()]);
        assert!(ff.allowed_origins.is_empty());
        let json = serde_json::to_value(&ff).unwrap();
        assert!(json.get("allowed_origins").is_none(), "{json}");
        let chrome = manifest_for(exe, "chromium", &[EXTENSION_ID.to_string()]);
        assert_eq!(
            chrome.allowed_origins,
            vec![format!("chrome-extension://{EXTENSION_ID}/")]
        );
        assert!(chrome.allowed_extensions.is_empty());
        // A Chrome profile's folder is Chrome's whatever its path holds.
        assert!(!is_firefox("chrome profile"));
        assert!(is_firefox("firefox"));
    }

    #[test]
    fn a_pairing_request_from_firefox_must_carry_the_add_ons_own_origin() {
        let pair = |origin: Option<&str>| {
            let req = match origin {
                Some(o) => serde_json::json!({"type": "pair", "origin": o}),
                None => serde_json::json!({"type": "pair"}),
            };
            answer(&Caller::Firefox, req.to_string().as_bytes())
        };
        for bad in [
            None,
            Some("chrome-extension://gplahjhhbhedphhkkcaefhjjcgoeckci/"),
            Some("moz-extension://not-a-uuid/"),
            Some("https://evil.example/"),
        ] {
            let a = pair(bad);
            assert!(
                a["error"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("KA_CONFIG_INVALID"),
                "{bad:?}: {a}"
            );
        }
        // The accepted case pairs for real: tests/browser/firefox.test.mjs, in a temp home.
    }

    #[test]
    fn messages_are_framed_by_their_length() {
        let mut buf = Vec::new();
        write_message(&mut buf, &serde_json::json!({"type": "pair"})).unwrap();
        assert_eq!(&buf[..4], &15u32.to_ne_bytes());
        let got = read_message(&mut buf.as_slice()).unwrap().unwrap();
        assert_eq!(got, br#"{"type":"pair"}"#);
        assert!(read_message(&mut [0u8; 0].as_slice()).unwrap().is_none());
        let huge = (MAX_MESSAGE + 1).to_ne_bytes();
        assert!(read_message(&mut huge.as_slice()).is_err());
    }

    #[test]
    fn the_extension_id_is_the_one_its_manifest_key_gives() {
        use base64_free::decode;
        use sha2::{Digest, Sha256};
        let manifest: serde_json::Value =
            serde_json::from_str(include_str!("../../extension/manifest.json")).unwrap();
        let der = decode(manifest["key"].as_str().unwrap());
        let hash = Sha256::digest(&der);
        let id: String = hash[..16]
            .iter()
            .flat_map(|b| [b >> 4, b & 0xf])
            .map(|n| char::from(b'a' + n))
            .collect();
        assert_eq!(id, EXTENSION_ID);
    }

    /// A tiny standard base64 decoder for the test (no dependency for one test).
    mod base64_free {
        pub fn decode(s: &str) -> Vec<u8> {
            let val = |c: u8| match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                _ => 63,
            };
            let bytes: Vec<u8> = s.bytes().filter(|c| *c != b'=').map(val).collect();
            bytes
                .chunks(4)
                .flat_map(|c| {
                    let n = c
                        .iter()
                        .enumerate()
                        .fold(0u32, |acc, (i, v)| acc | (u32::from(*v) << (18 - 6 * i)));
                    let out = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
                    out.into_iter().take(c.len() - 1).collect::<Vec<u8>>()
                })
                .collect()
        }
    }
}
