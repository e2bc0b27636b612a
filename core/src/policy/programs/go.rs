//! `go`: `build` and `vet` with options on the known-safe list are Build; an option that runs
//! another program (`-toolexec`, `-exec`, `-vettool`, `-ldflags` naming a linker) or replaces
//! sources (`-overlay`) is Risky. `test`, `run`, `generate`, `fmt` run the project's code
//! (Execute). `version`, `doc`, `help`, `list`, `env` and `mod graph/verify/why` only read; `env
//! -w`/`-u` changes settings, and anything else installs or changes modules (Risky).

use super::super::lexer::Word;
use super::super::{rated, Rated, Tier};
use super::common::{texts, Call, Names};

pub(super) const NAMES: Names = &[&["go"]];

pub(super) fn rate(c: &Call) -> Rated {
    rate_go(c.args())
}

fn rate_go(words: &[Word]) -> Rated {
    let a = texts(words);
    let sub = a.first().copied().unwrap_or("");
    let rest = &words[1.min(words.len())..];
    const BUILD: &[&str] = &[
        "-o=",
        "-v",
        "-x",
        "-a",
        "-n",
        "-race",
        "-msan",
        "-asan",
        "-cover",
        "-coverpkg=",
        "-covermode=",
        "-tags=",
        "-trimpath",
        "-buildvcs=*",
        "-buildvcs",
        "-mod=",
        "-modcacherw",
        "-modfile=",
        "-pgo=",
        "-p=",
        "-work",
        "-buildmode=",
        "-compiler=",
        "-gcflags=",
        "-asmflags=",
        "-installsuffix=",
        "-linkshared",
        "-json",
        "-C=",
    ];
    const RISKY: &[(&str, &str)] = &[
        (
            "-toolexec*",
            "runs every compiler tool under another program",
        ),
        ("-exec*", "runs the built program under another program"),
        ("-vettool*", "runs another program as the vet tool"),
        ("-ldflags*", "can name an external linker to run"),
        ("-overlay*", "replaces source files with others"),
    ];
    match sub {
        "build" | "vet" => {
            // Go's flags are single-dash long words; check them whole.
            for w in rest {
                let t = w.text.as_str();
                if !t.starts_with('-') {
                    continue;
                }
                let name = t.split('=').next().unwrap_or(t);
                if let Some((_, why)) = RISKY
                    .iter()
                    .find(|(p, _)| name.starts_with(p.trim_end_matches('*')))
                {
                    return rated(Tier::Risky, format!("go {sub} {name}: {why}"));
                }
                if !BUILD
                    .iter()
                    .any(|o| o.trim_end_matches('=').trim_end_matches('*') == name)
                {
                    return rated(
                        Tier::Execute,
                        format!("go {sub}: the option {name} is not on keyless's known-safe list"),
                    );
                }
            }
            rated(Tier::Build, format!("go {sub} builds"))
        }
        "test" | "run" | "generate" | "fmt" => {
            rated(Tier::Execute, format!("go {sub} runs the project's code"))
        }
        "version" | "doc" | "help" | "list" => {
            if rest
                .iter()
                .any(|w| w.text.starts_with("-toolexec") || w.text.starts_with("-exec"))
            {
                rated(
                    Tier::Risky,
                    format!("go {sub} -toolexec runs another program"),
                )
            } else {
                rated(Tier::ReadOnly, format!("go {sub} only reads"))
            }
        }
        "env" => {
            if a.iter().any(|x| *x == "-w" || *x == "-u") {
                rated(Tier::Risky, "go env -w changes settings")
            } else {
                rated(Tier::ReadOnly, "go env only reads")
            }
        }
        "mod"
            if a.get(1)
                .is_some_and(|x| matches!(*x, "graph" | "verify" | "why")) =>
        {
            rated(Tier::ReadOnly, "go mod graph/verify/why only reads")
        }
        _ => rated(Tier::Risky, format!("go {sub} installs or changes modules")),
    }
}
