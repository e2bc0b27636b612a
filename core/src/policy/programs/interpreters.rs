//! Other language runtimes (`ruby`, `perl`, `php`, `lua`, `java`, …): running a program or
//! starting an interpreter is Execute; `-e` (`-E`, and `php -r`) runs code given on the command
//! line, which keyless does not read: Risky. `java -version` only prints its version (ReadOnly).

use super::super::{rated, Rated, Tier};
use super::common::{has_flag, Call, Names};

pub(super) const NAMES: Names = &[
    &[
        "ruby",
        "perl",
        "php",
        "lua",
        "rscript",
        "julia",
        "groovy",
        "scala",
        "kotlin",
        "elixir",
        "erl",
        "ghci",
        "runghc",
        "racket",
        "guile",
        "tclsh",
        "osascript",
    ],
    &["java"],
];

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    let a = c.texts();
    if name == "java" {
        return if a.iter().any(|x| *x == "--version" || *x == "-version") {
            rated(Tier::ReadOnly, "java -version only prints its version")
        } else {
            rated(Tier::Execute, "java runs a program")
        };
    }
    if has_flag(&a, 'e', &["--eval"])
        || has_flag(&a, 'E', &[])
        || (name == "php" && has_flag(&a, 'r', &[]))
    {
        rated(
            Tier::Risky,
            format!("{name} -e runs code given on the command line"),
        )
    } else if a.iter().any(|x| !x.starts_with('-')) {
        rated(Tier::Execute, format!("{name} runs a program"))
    } else {
        rated(Tier::Execute, format!("{name} starts an interpreter"))
    }
}
