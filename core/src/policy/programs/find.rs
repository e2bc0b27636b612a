//! `find`: only the tests and actions on its known-safe list are ReadOnly; another is Execute.
//! `-exec`, `-execdir`, `-ok` and `-okdir` run a program (Risky, and as bad as that program),
//! `-delete` deletes, and `-fprint`, `-fprint0`, `-fprintf` and `-fls` write a file (Risky).

use super::super::{rated, Rated, Tier, MAX_DEPTH};
use super::common::{texts, to_words, Call, Names};

pub(super) const NAMES: Names = &[&["find"]];

pub(super) fn rate(c: &Call) -> Rated {
    let depth = c.depth;
    // The tests, actions and options that take no value; those that take one are WITH_VALUE.
    const FLAGS: &[&str] = &[
        "-empty",
        "-print",
        "-print0",
        "-ls",
        "-prune",
        "-o",
        "-or",
        "-a",
        "-and",
        "-not",
        "!",
        "(",
        ")",
        "-nouser",
        "-nogroup",
        "-readable",
        "-writable",
        "-executable",
        "-quit",
        "-true",
        "-false",
        "-depth",
        "-d",
        "-xdev",
        "-mount",
        "-follow",
        "-daystart",
        "-noleaf",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        ",",
        "-L",
        "-H",
        "-P",
        "-O0",
        "-O1",
        "-O2",
        "-O3",
        "--help",
        "--version",
    ];
    const WITH_VALUE: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-type",
        "-xtype",
        "-size",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-newer",
        "-anewer",
        "-cnewer",
        "-maxdepth",
        "-mindepth",
        "-printf",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-perm",
        "-links",
        "-inum",
        "-samefile",
        "-lname",
        "-ilname",
        "-regextype",
        "-used",
        "-fstype",
        "-context",
        "-D",
    ];
    let a = texts(c.words);
    let mut i = 1;
    let mut unknown: Option<&str> = None;
    while i < a.len() {
        let x = a[i];
        match x {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = a[i + 1..]
                    .iter()
                    .position(|y| *y == ";" || *y == "+")
                    .map_or(a.len(), |p| i + 1 + p);
                let base = rated(Tier::Risky, format!("find {x} runs another program"));
                if end == i + 1 || depth >= MAX_DEPTH {
                    return base;
                }
                let inner = c.inner_words(&to_words(&a[i + 1..end]));
                return if inner.0 > Tier::Risky {
                    (inner.0, format!("find {x} runs: {}", inner.1))
                } else {
                    base
                };
            }
            "-delete" => return rated(Tier::Risky, "find -delete deletes files"),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                return rated(Tier::Risky, format!("find {x} writes a file"))
            }
            x if x.starts_with('-') || matches!(x, "!" | "(" | ")" | ",") => {
                if !FLAGS.contains(&x) && !WITH_VALUE.contains(&x) && unknown.is_none() {
                    unknown = Some(x);
                }
                if WITH_VALUE.contains(&x) {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    match unknown {
        Some(x) => rated(
            Tier::Execute,
            format!("find: {x} is not on keyless's known-safe list"),
        ),
        None => rated(Tier::ReadOnly, "find only lists files"),
    }
}
