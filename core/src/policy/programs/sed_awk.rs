//! `sed` and `awk`: their scripts are code, so the script is read too. A script that only
//! prints is ReadOnly. A sed script with `w`, `W`, `e` or the `e`/`w` flags of `s`, or an awk
//! program with `system`, a pipe, a redirection, `getline`, `@load` or `@include`, runs commands
//! or reads and writes files: Risky. So are `sed -i` (edits in place), `sed -f` and `awk -f`
//! (a script file keyless does not read). An option or script command not on the known-safe list
//! is Execute.

use super::super::{rated, Rated, Tier};
use super::common::{Call, Names};

pub(super) const NAMES: Names = &[&["sed", "gsed", "awk", "gawk", "mawk", "nawk"]];

pub(super) fn rate(c: &Call) -> Rated {
    let a = c.texts();
    match c.name {
        "sed" | "gsed" => rate_sed(&a),
        _ => rate_awk(&a),
    }
}

/// sed: known options, and a script without the commands that write files or run programs.
fn rate_sed(args: &[&str]) -> Rated {
    let mut scripts: Vec<&str> = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    let mut options_done = false;
    let mut sandbox = false;
    while i < args.len() {
        let x = args[i];
        i += 1;
        if options_done || !x.starts_with('-') || x == "-" {
            if !explicit && scripts.is_empty() {
                scripts.push(x);
            }
            continue;
        }
        if x == "--" {
            options_done = true;
            continue;
        }
        if x.starts_with("--") {
            let (name, value) = x.split_once('=').map_or((x, None), |(n, v)| (n, Some(v)));
            match name {
                "--expression" => {
                    let s = value.or_else(|| {
                        i += 1;
                        args.get(i - 1).copied()
                    });
                    scripts.extend(s);
                    explicit = true;
                }
                "--quiet" | "--silent" | "--regexp-extended" | "--posix" | "--null-data"
                | "--zero-terminated" | "--separate" | "--unbuffered" | "--debug" | "--help"
                | "--version" => {}
                "--sandbox" => sandbox = true,
                "--line-length" => {
                    if value.is_none() {
                        i += 1;
                    }
                }
                n if "--in-place".starts_with(n) && n.len() >= 4 => {
                    return rated(Tier::Risky, "sed --in-place edits files")
                }
                n if "--file".starts_with(n) && n.len() >= 4 => {
                    return rated(Tier::Risky, "sed -f runs a script file")
                }
                _ => {
                    return rated(
                        Tier::Execute,
                        format!("sed: the option {x} is not on keyless's known-safe list"),
                    )
                }
            }
            continue;
        }
        for (k, c) in x[1..].char_indices() {
            match c {
                'n' | 'E' | 'r' | 's' | 'u' | 'z' => {}
                'i' => return rated(Tier::Risky, "sed -i edits files in place"),
                'f' => return rated(Tier::Risky, "sed -f runs a script file"),
                'e' => {
                    let rest = &x[1 + k + 1..];
                    if rest.is_empty() {
                        scripts.extend(args.get(i).copied());
                        i += 1;
                    } else {
                        scripts.push(rest);
                    }
                    explicit = true;
                    break;
                }
                'l' => {
                    if x[1 + k + 1..].is_empty() {
                        i += 1;
                    }
                    break;
                }
                _ => {
                    return rated(
                        Tier::Execute,
                        format!("sed: the option {x} is not on keyless's known-safe list"),
                    )
                }
            }
        }
    }
    for script in &scripts {
        match sed_script(script) {
            SedScript::Safe => {}
            SedScript::Writes if !sandbox => {
                return rated(
                    Tier::Risky,
                    "the sed script writes files or runs commands (w, W, e, or the s///e and s///w flags)",
                )
            }
            SedScript::Writes => {}
            SedScript::Unknown(c) => {
                return rated(
                    Tier::Execute,
                    format!("sed: the script command {c:?} is not on keyless's known-safe list"),
                )
            }
        }
    }
    rated(Tier::ReadOnly, "sed only prints")
}

/// What a sed script is: only commands on the known-safe list, or one that writes files or runs
/// commands, or one with a command keyless does not list.
#[derive(Debug, PartialEq, Eq)]
enum SedScript {
    Safe,
    Writes,
    Unknown(char),
}

/// Checks a sed script against the known-safe commands: addresses, `p P d D s y = q Q l n N a i
/// c { } !`; `s` with the flags `g p i I m M` and numbers. `w`, `W`, `e` and the `e`/`w` flags of
/// `s` write files or run commands; anything else is not on the list.
fn sed_script(script: &str) -> SedScript {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let n = chars.len();
    while i < n {
        while i < n
            && (chars[i].is_whitespace()
                || matches!(chars[i], ';' | '{' | '}' | '!' | ',' | '$' | '+' | '~')
                || chars[i].is_ascii_digit())
        {
            i += 1;
        }
        if i < n && (chars[i] == '/' || chars[i] == '\\') {
            let delim = if chars[i] == '\\' {
                i += 1;
                chars.get(i).copied().unwrap_or('/')
            } else {
                '/'
            };
            i += 1;
            while i < n && chars[i] != delim {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            while i < n && matches!(chars[i], 'I' | 'M') {
                i += 1;
            }
            continue;
        }
        if i >= n {
            break;
        }
        let cmd = chars[i];
        i += 1;
        match cmd {
            'w' | 'W' | 'e' => return SedScript::Writes,
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    return SedScript::Unknown(cmd);
                };
                i += 1;
                for _ in 0..2 {
                    while i < n && chars[i] != delim {
                        if chars[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                if cmd == 's' {
                    while i < n && !matches!(chars[i], ';' | '\n' | '}') {
                        match chars[i] {
                            'e' | 'w' | 'W' => return SedScript::Writes,
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | ' ' => {}
                            c if c.is_ascii_digit() => {}
                            c => return SedScript::Unknown(c),
                        }
                        i += 1;
                    }
                }
            }
            'a' | 'i' | 'c' => {
                // Text to insert runs to the end of the line.
                while i < n && chars[i] != '\n' {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | '=' | 'q' | 'Q' | 'l' | 'n' | 'N' => {}
            c => return SedScript::Unknown(c),
        }
    }
    SedScript::Safe
}

/// awk: `-F` and `-v` only, and a program that neither runs commands nor writes files.
fn rate_awk(args: &[&str]) -> Rated {
    let mut i = 0;
    let mut program: Option<&str> = None;
    while i < args.len() {
        let x = args[i];
        i += 1;
        if x == "--" {
            program = program.or_else(|| args.get(i).copied());
            break;
        }
        if !x.starts_with('-') || x == "-" {
            program = Some(x);
            break;
        }
        match x {
            "-F" | "-v" => i += 1,
            x if (x.starts_with("-F") || x.starts_with("-v")) && x.len() > 2 => {}
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" | "-l" | "--load" => {
                return rated(
                    Tier::Risky,
                    "awk runs a program file, an include or a loadable extension",
                )
            }
            x if x.starts_with("-f")
                || x.starts_with("-i")
                || x.starts_with("-l")
                || x.starts_with("-E") =>
            {
                return rated(
                    Tier::Risky,
                    "awk runs a program file, an include or a loadable extension",
                )
            }
            "--posix"
            | "--traditional"
            | "--lint"
            | "-P"
            | "-c"
            | "--re-interval"
            | "-r"
            | "--characters-as-bytes"
            | "-b"
            | "--sandbox"
            | "-S"
            | "--help"
            | "--version" => {}
            _ => {
                return rated(
                    Tier::Execute,
                    format!("awk: the option {x} is not on keyless's known-safe list"),
                )
            }
        }
    }
    let script = program.unwrap_or("");
    if script.contains("system")
        || script.contains('>')
        || script.contains('|')
        || script.contains("getline")
        || script.contains("@load")
        || script.contains("@include")
    {
        rated(
            Tier::Risky,
            "the awk program can run commands, read or write files (system, |, >, getline, @load)",
        )
    } else {
        rated(Tier::ReadOnly, "awk only reads")
    }
}
