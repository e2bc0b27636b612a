//! File leases (Linux `F_SETLEASE`): the kernel's proof that no other program has a file open,
//! and a promise that any program opening it waits until keyless is done.
//!
//! [`super::workspace::Workspace::write`] uses a write lease to edit a file in place when another
//! program may be appending to it: a rename would leave that program writing into the replaced
//! file, and what it wrote would be lost. The lease is taken on a descriptor opened for reading
//! and writing; it is granted only when no other descriptor is open on the file, and while it is
//! held every other `open` of the file blocks (the kernel sends keyless `SIGIO`, which is caught
//! and ignored). A read lease is granted only when nobody has the file open for writing.
//!
//! nix and rustix do not wrap `F_SETLEASE`, so this module calls `fcntl` itself: the only
//! `unsafe` in the host, with integer arguments on a descriptor it borrows.
#![allow(unsafe_code)]

use std::os::fd::AsRawFd;

/// What asking for a lease gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Granted; released when the guard is dropped or the descriptor closed.
    Held,
    /// Another program has the file open (for a write lease) or open for writing (a read lease).
    Busy,
    /// This filesystem, kernel or user cannot take leases here.
    Unsupported,
}

/// Asks for a write lease (`write`) or a read lease on `f`.
pub fn take(f: &impl AsRawFd, write: bool) -> Lease {
    #[cfg(target_os = "linux")]
    {
        catch_sigio();
        let kind = if write {
            nix::libc::F_WRLCK
        } else {
            nix::libc::F_RDLCK
        };
        // SAFETY: fcntl(F_SETLEASE) reads no memory; the descriptor is borrowed for the call.
        let r = unsafe { nix::libc::fcntl(f.as_raw_fd(), nix::libc::F_SETLEASE, kind) };
        if r == 0 {
            return Lease::Held;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(nix::libc::EAGAIN | nix::libc::EBUSY) => Lease::Busy,
            _ => Lease::Unsupported,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (f, write);
        Lease::Unsupported
    }
}

/// Gives a lease back (closing the descriptor does too).
pub fn release(f: &impl AsRawFd) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as in `take`.
        let _ =
            unsafe { nix::libc::fcntl(f.as_raw_fd(), nix::libc::F_SETLEASE, nix::libc::F_UNLCK) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = f;
}

/// A program opening a leased file makes the kernel send the holder `SIGIO`, whose default
/// action ends the process: a handler that only sets a flag is installed once. (A handler, not
/// `SIG_IGN`: handlers are reset in the commands keyless starts, an ignored signal would not be.)
#[cfg(target_os = "linux")]
fn catch_sigio() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let _ = signal_hook::flag::register(signal_hook::consts::SIGIO, flag);
    });
}
