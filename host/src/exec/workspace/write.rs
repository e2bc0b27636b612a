//! How the workspace writes: in place under a lease when the file may not be replaced, else a
//! new file renamed over the old; keyless's temp names and their journal; reading within a limit.
#![allow(clippy::disallowed_methods)]

use super::*;

pub(super) fn changed_on_disk(t: &Target) -> Failure {
    Failure::new(
        Code::FileChanged,
        format!("{} changed on disk while the command ran (another program wrote it); nothing was written. Read it again, then retry.", t.rel),
    )
}

/// What [`write_in_place`] did.
pub(super) enum InPlace {
    /// The new bytes are in the file.
    Written,
    /// The file no longer holds the bytes the edit was made from; nothing was written.
    Changed,
    /// Another program holds the file open for writing; nothing was written.
    Writer,
    /// Writing failed (a full disk); the old bytes were put back.
    Failed(io::Error),
    /// Not done here (no such file, a hard link, no lease on this system, only readers have it
    /// open): write a temp file and rename it over the target.
    Rename,
}

/// How long [`write_in_place`] waits for other programs to close the file: tries, and the pause
/// between them.
pub(super) const LEASE_TRIES: u32 = 100;
pub(super) const LEASE_PAUSE: std::time::Duration = std::time::Duration::from_micros(500);

/// Edits an existing file in place under a write lease, so that a program appending to it
/// concurrently never writes into a replaced copy: while the lease is held no other descriptor
/// is open on the file and any program opening it waits, so the check that the file still holds
/// `want` and the write are one step for everyone else. A file with more than one name is never
/// written in place (the other name may be outside the workspace).
///
/// `journal` runs after the check and before the first byte is written: it records what is
/// about to be written, so a write a kill cuts short is finished at the next start
/// ([`Workspace::recover_in_place`]). When it fails, nothing is written.
pub(super) fn write_in_place(
    d: &Dir,
    t: &Target,
    bytes: &[u8],
    want: &[u8],
    journal: &dyn Fn() -> io::Result<()>,
) -> InPlace {
    use crate::exec::lease::{self, Lease};
    let mut o = OpenOptions::new();
    o.read(true).write(true).follow(FollowSymlinks::No);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        o.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    let Ok(mut f) = d.open_with(&t.name, &o) else {
        return InPlace::Rename;
    };
    let single = f.metadata().is_ok_and(|m| {
        #[cfg(unix)]
        let one = {
            use cap_std::fs::MetadataExt as _;
            m.nlink() == 1
        };
        #[cfg(not(unix))]
        let one = false;
        m.is_file() && one
    });
    if !single {
        return InPlace::Rename;
    }
    let mut granted = Lease::Busy;
    for _ in 0..LEASE_TRIES {
        granted = lease::take(&f, true);
        if granted != Lease::Busy {
            break;
        }
        std::thread::sleep(LEASE_PAUSE);
    }
    match granted {
        Lease::Held => {}
        Lease::Unsupported => return InPlace::Rename,
        Lease::Busy => {
            // Readers only (a `tail -f`) lose nothing to a rename; a writer would.
            drop(f);
            let Ok(r) = d.open_with(&t.name, &nofollow_read()) else {
                return InPlace::Rename;
            };
            return match lease::take(&r, false) {
                Lease::Busy => InPlace::Writer,
                Lease::Held | Lease::Unsupported => {
                    lease::release(&r);
                    InPlace::Rename
                }
            };
        }
    }
    let mut now = Vec::new();
    let put = |f: &mut cap_std::fs::File, b: &[u8]| -> io::Result<()> {
        f.seek(io::SeekFrom::Start(0))?;
        f.write_all(b)?;
        f.set_len(b.len() as u64)?;
        f.sync_data()
    };
    let done = if f.read_to_end(&mut now).is_err() {
        InPlace::Rename
    } else if now != want {
        InPlace::Changed
    } else if let Err(e) = journal() {
        InPlace::Failed(e)
    } else {
        match put(&mut f, bytes) {
            Ok(()) => InPlace::Written,
            Err(e) => {
                // A full disk mid-write: put back what was there (it is shorter or the same
                // length as what was being written, so it fits in the blocks already held).
                let _ = put(&mut f, want);
                InPlace::Failed(e)
            }
        }
    };
    lease::release(&f);
    done
}

/// Temp files carry this in their name: `.NAME.keyless-PID-N.tmp`.
pub const TEMP_PATTERN: &str = "*.keyless-*.tmp";
/// Temp files written beside their target are listed here until they are renamed.
pub(super) const JOURNAL: &str = "tmp-journal";

pub(super) fn temp_name(name: &str) -> String {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.keyless-{}-{n}.tmp", std::process::id())
}

pub(super) fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(".keyless-") && name.ends_with(".tmp")
}

pub(super) fn join_rel(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

pub(super) fn done_path(done: &[String], seg: &str) -> String {
    join_rel(&done.join("/"), seg)
}

/// A target's bytes, opened without following a symlink; `None` when it holds more than `max`.
pub(super) fn read_in(d: &Dir, t: &Target, max: u64) -> Result<Option<Vec<u8>>, Failure> {
    let f = match d.open_with(&t.name, &nofollow_read()) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Failure::new(
                Code::FileNotFound,
                format!("{} does not exist", t.rel),
            ))
        }
        Err(e) => return Err(Failure::io("cannot read", &t.rel, &e)),
    };
    // What was opened is what is judged: a folder, FIFO, socket or device is refused, and a
    // file swapped in after a check cannot slip past one.
    let meta = f
        .metadata()
        .map_err(|e| Failure::io("cannot read", &t.rel, &e))?;
    if meta.is_dir() {
        return Err(Failure::new(
            Code::FileIo,
            format!("{} is a folder, not a file", t.rel),
        ));
    }
    if !meta.is_file() {
        return Err(Failure::new(
            Code::FileIo,
            format!("{} is not a regular file (a FIFO, socket or device)", t.rel),
        ));
    }
    if meta.len() > max {
        return Ok(None);
    }
    let mut buf = Vec::new();
    f.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| Failure::io("cannot read", &t.rel, &e))?;
    // It may have grown since it was measured.
    Ok((buf.len() as u64 <= max).then_some(buf))
}

/// Creates `name` in `d` (it must not exist), writes and flushes it.
pub(super) fn write_new(
    d: &Dir,
    name: &str,
    bytes: &[u8],
    perms: Option<cap_std::fs::Permissions>,
) -> io::Result<()> {
    write_new_then(d, name, bytes, perms, true)
}

/// [`write_new`], flushed to the disk or not (`sync`): a caller writing many files flushes them
/// all at once after.
pub(super) fn write_new_then(
    d: &Dir,
    name: &str,
    bytes: &[u8],
    perms: Option<cap_std::fs::Permissions>,
    sync: bool,
) -> io::Result<()> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true).follow(FollowSymlinks::No);
    let result = (|| {
        let mut f = d.open_with(name, &o)?;
        f.write_all(bytes)?;
        if let Some(p) = perms {
            f.set_permissions(p)?;
        }
        if sync {
            f.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = d.remove_file(name);
    }
    result
}

/// Writes a file keyless owns outside the workspace (pairing, approvals) atomically: a temp file
/// in the same folder, flushed, then renamed over the target. Parents must exist.
///
/// # Errors
/// Any I/O failure; the target is then untouched and the temp file removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        // A bare file name is in the current folder.
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no parent folder",
            ))
        }
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let d = Dir::open_ambient_dir(dir, cap_std::ambient_authority())?;
    write_atomic_in(&d, &name, bytes)
}

/// Writes `name` in the folder `d` atomically (a temp file flushed, then renamed over it); a
/// symlink named `name` is replaced, never followed.
///
/// # Errors
/// Any I/O failure; the target is then untouched and the temp file removed.
pub fn write_atomic_in(d: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    let perms = d
        .symlink_metadata(name)
        .ok()
        .filter(cap_std::fs::Metadata::is_file)
        .map(|m| m.permissions());
    let tmp = temp_name(name);
    write_new(d, &tmp, bytes, perms)?;
    d.rename(&tmp, d, name).inspect_err(|_| {
        let _ = d.remove_file(&tmp);
    })?;
    if let Ok(f) = d.open(".") {
        let _ = f.sync_all();
    }
    Ok(())
}

/// Whether `now` is what an in-place write of `new` over `old` leaves when it is cut short: the
/// first `j` bytes of `new` over `old` (`new[..j] ++ old[j..]`, before the file is cut to its new
/// length), or a prefix of `new` longer than `old`. A file someone changed otherwise is not.
pub(super) fn cut_short(now: &[u8], old: &[u8], new: &[u8]) -> bool {
    if now.len() > old.len() {
        return new.starts_with(now);
    }
    if now.len() != old.len() {
        return false;
    }
    // The bytes `now` shares with `new` from the start, and from where on it is `old` again.
    let same_as_new = now.iter().zip(new).take_while(|(a, b)| a == b).count();
    let old_from = now.len()
        - now
            .iter()
            .rev()
            .zip(old.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
    old_from <= same_as_new
}

#[cfg(test)]
mod tests {
    use super::cut_short;

    #[test]
    fn a_write_cut_short_is_told_from_an_edit() {
        // new longer than old: cut inside old's length, at its end, and past it.
        assert!(cut_short(b"bbaa", b"aaaa", b"bbbbbb"));
        assert!(cut_short(b"bbbb", b"aaaa", b"bbbbbb"));
        assert!(cut_short(b"bbbbb", b"aaaa", b"bbbbbb"));
        // new shorter than old: written whole but not yet cut to its length.
        assert!(cut_short(b"bbaaaa", b"aaaaaa", b"bb"));
        // Anything else is someone's edit.
        assert!(!cut_short(b"abab", b"aaaa", b"bbbbbb"));
        assert!(!cut_short(b"xxxx", b"aaaa", b"bbbbbb"));
        assert!(!cut_short(b"bbbbbbb", b"aaaa", b"bbbbbb"));
        assert!(!cut_short(b"aaa", b"aaaa", b"bbbbbb"));
    }
}
