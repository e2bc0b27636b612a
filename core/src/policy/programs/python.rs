//! Python and its package tools.
//!
//! - `python` (`python3`, `py`, `pypy`, …) runs a program or an interpreter: Execute. `-c` runs
//!   code given on the command line (Risky). `-m MODULE` runs a module, which may be loaded from
//!   the workspace (Execute), except that test runners are Execute, analysers and compilers Build,
//!   `-m pip` is rated as pip, servers are Risky, and a few printing modules are ReadOnly under
//!   `-I` (isolated mode keeps the workspace off the module path).
//! - `pip`, `uv`, `poetry`, `pipenv`, `pdm`: reading subcommands (`list`, `show`, `freeze`, …)
//!   are ReadOnly; the project tools' `run`/`test` are Execute and `build` is Build; anything
//!   else installs or changes packages (Risky). `--python` runs another interpreter and
//!   `--log`/`--report` write a file: Risky.

use super::super::lexer::Word;
use super::super::{rated, Rated, Tier};
use super::common::{has_option, texts, Call, Names};

pub(super) const NAMES: Names = &[
    &["python", "python3", "python2", "py", "pypy", "pypy3"],
    &["pip", "pip3", "uv", "poetry", "pipenv", "pdm"],
];

pub(super) fn rate(c: &Call) -> Rated {
    match c.name {
        "pip" | "pip3" | "uv" | "poetry" | "pipenv" | "pdm" => rate_pip(c.name, &c.texts()),
        _ => rate_python(c.name, c.args()),
    }
}

fn rate_python(prog: &str, words: &[Word]) -> Rated {
    let args = texts(words);
    let mut isolated = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "-c"
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a.ends_with('c')
                && a[1..].bytes().all(|b| b.is_ascii_alphabetic()))
        {
            return rated(
                Tier::Risky,
                format!("{prog} -c runs code given on the command line"),
            );
        }
        if a == "-I"
            || a == "-P"
            || (a.starts_with('-')
                && !a.starts_with("--")
                && (a.contains('I') || a.contains('P'))
                && a[1..].bytes().all(|b| b.is_ascii_alphabetic()))
        {
            isolated = true;
        }
        if a == "-m" || (a.starts_with("-m") && a.len() > 2) {
            let module = if a == "-m" {
                args.get(i + 1).copied().unwrap_or("")
            } else {
                &a[2..]
            };
            let module_args = &args[(i + 2).min(args.len())..];
            return match module {
                "pytest" | "unittest" | "nose2" | "doctest" | "tox" | "nox" | "behave" | "coverage" | "hypothesis" => {
                    rated(Tier::Execute, format!("{prog} -m {module} runs tests"))
                }
                "pip" => rate_pip("pip", module_args),
                "http.server" | "smtpd" | "ftplib" => rated(Tier::Risky, format!("{prog} -m {module} serves the network")),
                "venv" | "virtualenv" => rated(Tier::Build, format!("{prog} -m venv creates an environment")),
                "mypy" | "pyflakes" | "flake8" | "pylint" | "compileall" | "py_compile" | "pyright" | "ruff" if !module_args.contains(&"--fix") => {
                    rated(Tier::Build, format!("{prog} -m {module} only analyses or compiles"))
                }
                "json.tool" | "platform" | "sysconfig" | "this" | "tokenize" | "dis" if isolated && module_args.iter().filter(|x| !x.starts_with('-')).count() <= 1 => {
                    rated(Tier::ReadOnly, format!("{prog} -I -m {module} only prints"))
                }
                m => rated(
                    Tier::Execute,
                    format!("{prog} -m {m} runs a module, which may be loaded from the workspace (python -I -m keeps the workspace out)"),
                ),
            };
        }
        if matches!(a, "-W" | "-X" | "-Q") {
            i += 2;
            continue;
        }
        if !a.starts_with('-') {
            return rated(Tier::Execute, format!("{prog} runs a program"));
        }
        i += 1;
    }
    rated(Tier::Execute, format!("{prog} starts an interpreter"))
}

fn rate_pip(prog: &str, args: &[&str]) -> Rated {
    if has_option(args, &["--python"]) {
        return rated(
            Tier::Risky,
            format!("{prog} --python runs another interpreter"),
        );
    }
    if has_option(args, &["--log", "--log-file", "--report"]) {
        return rated(
            Tier::Risky,
            format!("{prog}: --log and --report write a file"),
        );
    }
    let sub = args.iter().copied().find(|a| !a.starts_with('-'));
    match sub {
        Some("list" | "show" | "freeze" | "check" | "help" | "inspect" | "debug") => rated(
            Tier::ReadOnly,
            format!("{prog} {} only reads", sub.unwrap_or("")),
        ),
        Some("run") if prog != "pip" => {
            rated(Tier::Execute, format!("{prog} run runs a project command"))
        }
        Some("build") if prog != "pip" => rated(Tier::Build, format!("{prog} build builds")),
        Some("test") if prog != "pip" => rated(Tier::Execute, format!("{prog} test runs tests")),
        None if args.iter().any(|a| *a == "--version" || *a == "-V") => {
            rated(Tier::ReadOnly, format!("{prog} --version"))
        }
        _ => rated(
            Tier::Risky,
            format!("{prog} {} installs or changes packages", sub.unwrap_or("")),
        ),
    }
}
