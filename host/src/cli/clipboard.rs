//! The clipboard, for `run --interactive`: the prompt and each results message copied with the
//! first clipboard program this machine has, started by the launcher.

use std::io::Write;
use std::path::Path;

/// Copies `text` to the clipboard with the first clipboard program this machine has (from a
/// PATH folder the model cannot write); whether it did.
pub(super) fn copy_to_clipboard(text: &str, workspace: &Path) -> bool {
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some();
    let x11 = std::env::var_os("DISPLAY").is_some();
    let candidates: &[(&str, &[&str], bool)] = &[
        ("wl-copy", &[], wayland),
        ("xclip", &["-selection", "clipboard"], x11),
        ("xsel", &["--clipboard", "--input"], x11),
        ("pbcopy", &[], cfg!(target_os = "macos")),
    ];
    for (name, args, usable) in candidates {
        if !usable {
            continue;
        }
        let launcher = crate::launch::Launcher::new(Some(workspace));
        let Ok(mut command) = launcher.start(name, crate::launch::Purpose::Desktop) else {
            continue;
        };
        let child = command
            .args(*args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut c) = child {
            if let Some(mut stdin) = c.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
            if c.wait().is_ok_and(|s| s.success()) {
                return true;
            }
        }
    }
    false
}
