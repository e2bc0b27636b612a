//! Archivers and compressors (`tar`, `zip`, `unzip`, `gzip`, `gunzip`, `bzip2`, `xz`, `7z`):
//! Risky, whatever the arguments. They write and overwrite files, an archive can hold paths that
//! land outside the workspace, and `tar` runs programs of its own (`--to-command`,
//! `--use-compress-program`, checkpoint actions).

use super::super::Rated;
use super::common::{changes_things, Call, Names};

pub(super) const NAMES: Names = &[&["tar", "zip", "unzip", "gzip", "gunzip", "bzip2", "xz", "7z"]];

pub(super) fn rate(c: &Call) -> Rated {
    changes_things(c.name)
}
