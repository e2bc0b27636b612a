//! The file commands, with the seed's semantics and codes.

use super::workspace::{write_atomic, BatchBackup, Workspace};
use super::Failure;
use keyless_core::message::{cap_output, verified_line, Outcome, VERIFIED_DIR};
use keyless_core::textfile::{apply_edit, dominant, editorconfig_eol, file_content, Eol, TextFile};
use keyless_core::Code;
use std::fs;
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

fn ok_verified(rel: &str, abs: &Path) -> Result<Outcome, Failure> {
    let bytes = fs::read(abs).map_err(|e| Failure::io("cannot re-read", rel, &e))?;
    Ok(Outcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: Some(verified_line(rel, &bytes)),
        output: None,
    })
}

fn read_existing_file(rel: &str, abs: &Path) -> Result<Vec<u8>, Failure> {
    match fs::metadata(abs) {
        Ok(m) if m.is_dir() => Err(Failure::new(
            Code::FileIo,
            format!("{rel} is a folder, not a file"),
        )),
        Ok(_) => fs::read(abs).map_err(|e| Failure::io("cannot read", rel, &e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Failure::new(
            Code::FileNotFound,
            format!("{rel} does not exist"),
        )),
        Err(e) => Err(Failure::io("cannot read", rel, &e)),
    }
}

fn ensure_parent(rel: &str, abs: &Path) -> Result<(), Failure> {
    if let Some(p) = abs.parent() {
        fs::create_dir_all(p).map_err(|e| Failure::io("cannot create the folder for", rel, &e))?;
    }
    Ok(())
}

/// The line ending for a new file: .editorconfig `end_of_line` → .gitattributes `eol` (libgit2)
/// → the dominant ending of sibling text files → the platform.
#[must_use]
pub fn new_file_eol(ws: &Workspace, rel: &str, abs: &Path) -> Eol {
    editorconfig_for(ws, abs)
        .or_else(|| gitattributes_eol(ws, rel))
        .or_else(|| sibling_eol(abs))
        .unwrap_or_else(Eol::platform)
}

fn editorconfig_for(ws: &Workspace, abs: &Path) -> Option<Eol> {
    // Nearest folder last: collect upward until root = true or the workspace root.
    let mut found: Vec<(String, String)> = Vec::new();
    let mut dir = abs.parent();
    while let Some(d) = dir {
        if !d.starts_with(ws.root()) {
            break;
        }
        if let Ok(text) = fs::read_to_string(d.join(".editorconfig")) {
            let rel = abs
                .strip_prefix(d)
                .map(|r| r.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let root = editorconfig_eol(&text, &rel).1;
            found.push((text, rel));
            if root {
                break;
            }
        }
        if d == ws.root() {
            break;
        }
        dir = d.parent();
    }
    found.iter().rev().fold(None, |acc, (text, rel)| {
        editorconfig_eol(text, rel).0.or(acc)
    })
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

fn sibling_eol(abs: &Path) -> Option<Eol> {
    let dir = abs.parent()?;
    let (mut crlf, mut lf) = (0, 0);
    for entry in fs::read_dir(dir).ok()?.filter_map(Result::ok).take(50) {
        let p = entry.path();
        if p == abs || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let mut buf = Vec::new();
        if fs::File::open(&p)
            .and_then(|f| f.take(256 * 1024).read_to_end(&mut buf))
            .is_err()
        {
            continue;
        }
        if let Some(t) = std::str::from_utf8(&buf).ok().filter(|s| !s.contains('\0')) {
            let (c, l) = keyless_core::textfile::count_endings(t);
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

pub fn newfile(ctx: &mut FileCtx<'_>, rel: &str, payload: &str) -> Result<Outcome, Failure> {
    let abs = ctx.ws.resolve(rel)?;
    if fs::symlink_metadata(&abs).is_ok() {
        return Err(Failure::new(
            Code::FileAlreadyExists,
            format!("{rel} already exists; use updatefile or editfile to change it"),
        ));
    }
    ensure_parent(rel, &abs)?;
    let eol = new_file_eol(ctx.ws, rel, &abs);
    let bytes = TextFile::encode(&file_content(payload), false, eol);
    ctx.backup.created(rel)?;
    write_atomic(&abs, &bytes).map_err(|e| Failure::io("cannot write", rel, &e))?;
    ok_verified(rel, &abs)
}

pub fn updatefile(ctx: &mut FileCtx<'_>, rel: &str, payload: &str) -> Result<Outcome, Failure> {
    let abs = ctx.ws.resolve(rel)?;
    let old = read_existing_file(rel, &abs)?;
    let (bom, eol) = match TextFile::decode(&old) {
        Some(t) => (t.bom, t.eol),
        None => (false, None),
    };
    let eol = eol.unwrap_or_else(|| new_file_eol(ctx.ws, rel, &abs));
    let bytes = TextFile::encode(&file_content(payload), bom, eol);
    ctx.backup.save(rel, &abs)?;
    write_atomic(&abs, &bytes).map_err(|e| Failure::io("cannot write", rel, &e))?;
    ok_verified(rel, &abs)
}

pub fn editfile(
    ctx: &mut FileCtx<'_>,
    rel: &str,
    find: &str,
    replace: &str,
) -> Result<Outcome, Failure> {
    let abs = ctx.ws.resolve(rel)?;
    let old = read_existing_file(rel, &abs)?;
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
        .unwrap_or_else(|| new_file_eol(ctx.ws, rel, &abs));
    let bytes = TextFile::encode(&edited, file.bom, eol);
    ctx.backup.save(rel, &abs)?;
    write_atomic(&abs, &bytes).map_err(|e| Failure::io("cannot write", rel, &e))?;
    ok_verified(rel, &abs)
}

pub fn deletefile(ctx: &mut FileCtx<'_>, rel: &str) -> Result<Outcome, Failure> {
    let abs = ctx.ws.resolve(rel)?;
    read_existing_file(rel, &abs)?;
    ctx.backup.save(rel, &abs)?;
    fs::remove_file(&abs).map_err(|e| Failure::io("cannot delete", rel, &e))?;
    Ok(Outcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: Some(format!("verified: {rel} deleted (backed up)")),
        output: None,
    })
}

pub fn movefile(ctx: &mut FileCtx<'_>, rel: &str, to: &str) -> Result<Outcome, Failure> {
    let src = ctx.ws.resolve(rel)?;
    let dest = ctx.ws.resolve(to)?;
    read_existing_file(rel, &src)?;
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(Failure::new(
            Code::FileAlreadyExists,
            format!("{to} already exists; movefile never overwrites"),
        ));
    }
    ensure_parent(to, &dest)?;
    ctx.backup.save(rel, &src)?;
    ctx.backup.created(to)?;
    if fs::rename(&src, &dest).is_err() {
        // Another filesystem: copy atomically, then remove the source.
        let bytes = fs::read(&src).map_err(|e| Failure::io("cannot read", rel, &e))?;
        write_atomic(&dest, &bytes).map_err(|e| Failure::io("cannot write", to, &e))?;
        fs::remove_file(&src).map_err(|e| Failure::io("cannot remove", rel, &e))?;
    }
    ok_verified(to, &dest)
}

pub fn readfile(ctx: &FileCtx<'_>, rel: &str) -> Result<Outcome, Failure> {
    let abs = ctx.ws.resolve(rel)?;
    let meta = match fs::metadata(&abs) {
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
    let mut buf = Vec::new();
    fs::File::open(&abs)
        .and_then(|f| f.take(MAX_READ_BYTES).read_to_end(&mut buf))
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
    Ok(Outcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: None,
        output: Some(cap_output(&text, ctx.max_output_chars)),
    })
}

pub fn mkdir(ctx: &FileCtx<'_>, rel: &str) -> Result<Outcome, Failure> {
    let abs = ctx.ws.resolve(rel)?;
    if abs.is_file() {
        return Err(Failure::new(
            Code::FileAlreadyExists,
            format!("{rel} exists and is a file"),
        ));
    }
    fs::create_dir_all(&abs).map_err(|e| Failure::io("cannot create", rel, &e))?;
    Ok(Outcome::Ok {
        exit_code: None,
        duration_ms: None,
        verified: Some(VERIFIED_DIR.to_string()),
        output: None,
    })
}
