//! The file commands, with the seed's semantics and codes. Every one resolves its path beneath
//! the workspace handle and acts on the handle of the target's folder (see [`super::workspace`]).

use super::backup::BatchBackup;
use super::workspace::{open_read, Target, Workspace, Writable};
use super::Failure;
use keyless_core::message::{cap_output, verified_line, CommandOutcome, VERIFIED_DIR};
use keyless_core::textfile::{apply_edit, dominant, editorconfig_eol, file_content, Eol, TextFile};
use keyless_core::Code;
use std::io::{self, Read};
use std::path::Path;

/// readfile reads at most this much.
const MAX_READ_BYTES: u64 = 8 << 20;

/// What the file commands need.
#[derive(Debug)]
pub struct FileCtx<'a> {
    pub ws: &'a Workspace,
    pub backup: &'a mut BatchBackup,
    pub max_output_chars: usize,
}

fn ok_verified(ws: &Workspace, t: &Writable) -> Result<CommandOutcome, Failure> {
    let bytes = ws.read(t)?;
    Ok(CommandOutcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: Some(verified_line(&t.rel, &bytes)),
        output: None,
    })
}

/// Whether something (a file, folder or symlink) is at the target now.
fn exists(ws: &Workspace, t: &Target) -> bool {
    ws.dir_of(t)
        .is_ok_and(|d| d.symlink_metadata(&t.name).is_ok())
}

/// The line ending for a new file: .editorconfig `end_of_line` → .gitattributes `eol` (libgit2)
/// → the dominant ending of sibling text files → the platform.
#[must_use]
pub fn new_file_eol(ws: &Workspace, t: &Target) -> Eol {
    editorconfig_for(ws, t)
        .or_else(|| gitattributes_eol(ws, &t.rel))
        .or_else(|| sibling_eol(ws, t))
        .unwrap_or_else(Eol::platform)
}

/// Reads `dir/.editorconfig` through the workspace handle.
fn read_editorconfig(ws: &Workspace, dir: &str) -> Option<String> {
    let rel = if dir.is_empty() {
        ".editorconfig".to_string()
    } else {
        format!("{dir}/.editorconfig")
    };
    let t = ws.resolve(&rel).ok()?;
    String::from_utf8(ws.read(&t).ok()?).ok()
}

/// The `.editorconfig` files from the workspace root down to the file's folder (core decides
/// which sections apply and which file is the root).
fn editorconfig_for(ws: &Workspace, t: &Target) -> Option<Eol> {
    let segments: Vec<&str> = t.dir.split('/').filter(|s| !s.is_empty()).collect();
    let files: Vec<(String, String)> = (0..=segments.len())
        .filter_map(|depth| {
            let dir = segments[..depth].join("/");
            read_editorconfig(ws, &dir).map(|text| (dir, text))
        })
        .collect();
    let chain: Vec<(&str, &str)> = files
        .iter()
        .map(|(d, t)| (d.as_str(), t.as_str()))
        .collect();
    editorconfig_eol(&chain, &t.rel)
}

fn gitattributes_eol(ws: &Workspace, rel: &str) -> Option<Eol> {
    let repo = git2::Repository::open(ws.root()).ok()?;
    match repo
        .get_attr(Path::new(rel), "eol", git2::AttrCheckFlags::FILE_THEN_INDEX)
        .ok()?
    {
        Some("crlf") => Some(Eol::CrLf),
        Some("lf") => Some(Eol::Lf),
        _ => None,
    }
}

fn sibling_eol(ws: &Workspace, t: &Target) -> Option<Eol> {
    let dir = ws.dir_of(t).ok()?;
    let (mut crlf, mut lf) = (0, 0);
    for entry in dir.entries().ok()?.filter_map(Result::ok).take(50) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == t.name || !entry.file_type().is_ok_and(|ft| ft.is_file()) {
            continue;
        }
        let mut buf = Vec::new();
        if open_read(&dir, &name)
            .and_then(|f| f.take(256 * 1024).read_to_end(&mut buf))
            .is_err()
        {
            continue;
        }
        if let Some(text) = std::str::from_utf8(&buf).ok().filter(|s| !s.contains('\0')) {
            let (c, l) = keyless_core::textfile::count_endings(text);
            crlf += c;
            lf += l;
        }
    }
    match (crlf, lf) {
        (0, 0) => None,
        (c, l) if c > l => Some(Eol::CrLf),
        _ => Some(Eol::Lf),
    }
}

pub fn newfile(ctx: &mut FileCtx<'_>, rel: &str, payload: &str) -> Result<CommandOutcome, Failure> {
    let t = ctx.ws.writable(rel)?;
    if exists(ctx.ws, &t) {
        return Err(Failure::new(
            Code::FileAlreadyExists,
            format!("{rel} already exists; use updatefile or editfile to change it"),
        ));
    }
    let eol = new_file_eol(ctx.ws, &t);
    let bytes = TextFile::encode(&file_content(payload), false, eol);
    ctx.backup.created(ctx.ws, &t.rel)?;
    // Expect "nothing there" right up to the rename: a file that appears meanwhile is kept.
    ctx.ws.write(&t, &bytes, Some(&[]))?;
    ok_verified(ctx.ws, &t)
}

/// Writes bytes that came from elsewhere (an SSH download) to `rel`: a new file, or over an
/// existing one, backed up first either way so undo restores the workspace.
///
/// # Errors
/// As every write: KA_PATH_OUTSIDE, KA_FILE_IO, KA_FILE_CHANGED.
pub fn put_bytes(
    ctx: &mut FileCtx<'_>,
    rel: &str,
    bytes: &[u8],
) -> Result<CommandOutcome, Failure> {
    let t = ctx.ws.writable(rel)?;
    if exists(ctx.ws, &t) {
        let old = ctx.ws.read(&t)?;
        ctx.backup.save(ctx.ws, &t.rel, &old)?;
        ctx.ws.write(&t, bytes, Some(&old))?;
    } else {
        ctx.backup.created(ctx.ws, &t.rel)?;
        ctx.ws.write(&t, bytes, Some(&[]))?;
    }
    ok_verified(ctx.ws, &t)
}

/// The bytes of workspace file `rel` (an SSH upload's source), read beneath the workspace handle.
///
/// # Errors
/// KA_PATH_OUTSIDE, KA_FILE_NOT_FOUND, KA_FILE_IO.
pub fn read_bytes(ws: &Workspace, rel: &str) -> Result<Vec<u8>, Failure> {
    let t = ws.resolve(rel)?;
    ws.read(&t)
}

pub fn updatefile(
    ctx: &mut FileCtx<'_>,
    rel: &str,
    payload: &str,
) -> Result<CommandOutcome, Failure> {
    let t = ctx.ws.writable(rel)?;
    let old = ctx.ws.read(&t)?;
    let (bom, eol) = match TextFile::decode(&old) {
        Some(f) => (f.bom, f.eol),
        None => (false, None),
    };
    let eol = eol.unwrap_or_else(|| new_file_eol(ctx.ws, &t));
    let bytes = TextFile::encode(&file_content(payload), bom, eol);
    ctx.backup.save(ctx.ws, &t.rel, &old)?;
    ctx.ws.write(&t, &bytes, Some(&old))?;
    ok_verified(ctx.ws, &t)
}

pub fn editfile(
    ctx: &mut FileCtx<'_>,
    rel: &str,
    find: &str,
    replace: &str,
) -> Result<CommandOutcome, Failure> {
    let t = ctx.ws.writable(rel)?;
    let old = ctx.ws.read(&t)?;
    let file = TextFile::decode(&old).ok_or_else(|| {
        Failure::new(
            Code::FileIo,
            format!("{rel} is not a UTF-8 text file; editfile cannot change it"),
        )
    })?;
    let edited = apply_edit(&file.text, find, replace)
        .map_err(|miss| Failure::new(Code::FindNotUnique, miss.reason()))?;
    let eol = file
        .eol
        .or_else(|| dominant(replace))
        .unwrap_or_else(|| new_file_eol(ctx.ws, &t));
    let bytes = TextFile::encode(&edited, file.bom, eol);
    ctx.backup.save(ctx.ws, &t.rel, &old)?;
    // The file must still be what was read: another writer's lines are never overwritten.
    ctx.ws.write(&t, &bytes, Some(&old))?;
    ok_verified(ctx.ws, &t)
}

pub fn deletefile(ctx: &mut FileCtx<'_>, rel: &str) -> Result<CommandOutcome, Failure> {
    let t = ctx.ws.writable(rel)?;
    let old = ctx.ws.read(&t)?;
    ctx.backup.save(ctx.ws, &t.rel, &old)?;
    ctx.ws.remove_file(&t)?;
    Ok(CommandOutcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: Some(format!("verified: {rel} deleted (backed up)")),
        output: None,
    })
}

pub fn movefile(ctx: &mut FileCtx<'_>, rel: &str, to: &str) -> Result<CommandOutcome, Failure> {
    let src = ctx.ws.writable(rel)?;
    let dest = ctx.ws.writable(to)?;
    let old = ctx.ws.read(&src)?;
    if exists(ctx.ws, &dest) {
        return Err(Failure::new(
            Code::FileAlreadyExists,
            format!("{to} already exists; movefile never overwrites"),
        ));
    }
    ctx.backup.save(ctx.ws, &src.rel, &old)?;
    ctx.backup.created(ctx.ws, &dest.rel)?;
    ctx.ws.move_file(&src, &dest, &old)?;
    ok_verified(ctx.ws, &dest)
}

pub fn readfile(ctx: &FileCtx<'_>, rel: &str) -> Result<CommandOutcome, Failure> {
    let t = ctx.ws.resolve(rel)?;
    let dir = ctx.ws.dir_of(&t)?;
    let meta = match dir.symlink_metadata(&t.name) {
        Ok(m) if m.is_dir() => {
            return Err(Failure::new(
                Code::FileIo,
                format!("{rel} is a folder; use runcommand `ls {rel}` to list it"),
            ))
        }
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Failure::new(
                Code::FileNotFound,
                format!("{rel} does not exist"),
            ))
        }
        Err(e) => return Err(Failure::io("cannot read", rel, &e)),
    };
    let f = open_read(&dir, &t.name).map_err(|e| Failure::io("cannot read", rel, &e))?;
    // Judged on what was opened: a FIFO, socket or device (or one swapped in) is refused.
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Failure::new(
            Code::FileIo,
            format!("{rel} is not a regular file (a FIFO, socket or device)"),
        ));
    }
    let mut buf = Vec::new();
    f.take(MAX_READ_BYTES)
        .read_to_end(&mut buf)
        .map_err(|e| Failure::io("cannot read", rel, &e))?;
    let file = TextFile::decode(&buf).ok_or_else(|| {
        Failure::new(
            Code::FileIo,
            format!("{rel} is not a UTF-8 text file ({} bytes)", meta.len()),
        )
    })?;
    let mut text = file.text;
    if meta.len() > MAX_READ_BYTES {
        text.push_str(&format!(
            "\n[… file continues: {} bytes in all …]",
            meta.len()
        ));
    }
    Ok(CommandOutcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: None,
        output: Some(cap_output(&text, ctx.max_output_chars)),
    })
}

pub fn mkdir(ctx: &FileCtx<'_>, rel: &str) -> Result<CommandOutcome, Failure> {
    let t = ctx.ws.writable(rel)?;
    ctx.ws.create_dir(&t)?;
    Ok(CommandOutcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: Some(VERIFIED_DIR.to_string()),
        output: None,
    })
}
