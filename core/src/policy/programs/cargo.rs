//! Rust: `cargo` and `rustc` (`rustup` installs toolchains and is rated with the package
//! managers).
//!
//! - `cargo build`/`check`/`clippy`/`doc`/… with options on the known-safe list are Build;
//!   `test`/`run`/`bench` and the plugins that run code are Execute; the reading subcommands
//!   (`tree`, `metadata`, …) are ReadOnly; `cargo fmt` rewrites sources (Execute) unless
//!   `--check`; anything else installs, publishes or changes the project (Risky).
//! - `--config`, `-C` and a `--manifest-path` outside the workspace bring in configuration that
//!   can name programs to run: Risky. `-Z` options are not on the list: Execute.
//! - `rustc` compiles (Build); a `-C` codegen option that links or loads another program
//!   (`linker`, `llvm-args`, `passes`, `profile-use`) or `@file` options are Risky; `-Z` and other
//!   `-C` options are Execute.

use super::super::args::{Operands, Spec};
use super::super::lexer::Word;
use super::super::{rated, Rated, Tier};
use super::common::{has_option, option_values, rate_known, texts, within_workspace, Call, Names};

pub(super) const NAMES: Names = &[&["cargo", "rustc"]];

pub(super) fn rate(c: &Call) -> Rated {
    match c.name {
        "rustc" => rate_rustc(&c.texts()),
        _ => rate_cargo(c.args()),
    }
}

fn rate_cargo(words: &[Word]) -> Rated {
    let a = texts(words);
    let mut i = 0;
    while i < a.len() && a[i].starts_with('-') {
        match a[i] {
            "--config" => return rated(Tier::Risky, "cargo --config can name programs to run"),
            x if x.starts_with("--config=") => {
                return rated(Tier::Risky, "cargo --config can name programs to run")
            }
            "-Z" => {
                return rated(
                    Tier::Execute,
                    "cargo -Z options are not on the known-safe list",
                )
            }
            "-C" => {
                return rated(
                    Tier::Risky,
                    "cargo -C runs in another folder, with its configuration",
                )
            }
            "-q" | "--quiet" | "-v" | "-vv" | "--verbose" | "--locked" | "--frozen"
            | "--offline" => {}
            "--color" => i += 1,
            x if x.starts_with("--color=") => {}
            "--version" | "-V" => {
                return rated(Tier::ReadOnly, "cargo --version only prints its version")
            }
            "--list" | "--help" | "-h" => return rated(Tier::ReadOnly, "cargo only prints help"),
            x => {
                return rated(
                    Tier::Execute,
                    format!("cargo: the option {x} is not on keyless's known-safe list"),
                )
            }
        }
        i += 1;
    }
    let Some(mut sub) = a.get(i).copied() else {
        return rated(Tier::ReadOnly, "cargo alone prints help");
    };
    if sub.starts_with('+') {
        i += 1;
        sub = a.get(i).copied().unwrap_or("");
    }
    let rest = &words[(i + 1).min(words.len())..];
    let rest_texts = texts(rest);
    if has_option(&rest_texts, &["--config"]) {
        return rated(Tier::Risky, "cargo --config can name programs to run");
    }
    if option_values(&rest_texts, &["--manifest-path"])
        .iter()
        .any(|p| !within_workspace(p))
    {
        return rated(
            Tier::Risky,
            "cargo --manifest-path points at another project, whose configuration can name programs to run",
        );
    }
    const BUILD_OPTS: &[&str] = &[
        "-p=",
        "--package=",
        "--workspace",
        "--all",
        "--exclude=",
        "--lib",
        "--bins",
        "--bin=",
        "--examples",
        "--example=",
        "--tests",
        "--test=",
        "--benches",
        "--bench=",
        "--all-targets",
        "-r",
        "--release",
        "--profile=",
        "-F=",
        "--features=",
        "--all-features",
        "--no-default-features",
        "--target=",
        "--target-dir=",
        "-j=",
        "--jobs=",
        "--keep-going",
        "--locked",
        "--frozen",
        "--offline",
        "-q",
        "--quiet",
        "-v",
        "-vv",
        "--verbose",
        "--color=",
        "--message-format=",
        "--manifest-path=",
        "--timings=?",
        "--future-incompat-report",
        "--ignore-rust-version",
        "--no-deps",
        "--document-private-items",
        "--all-targets",
        "--doc",
        "-D*",
        "-W*",
        "-A*",
        "--check",
        "--allow-dirty",
        "--allow-staged",
        "--no-verify",
        "--list",
        "--help",
        "-h",
        "--dry-run",
        "--tests",
        "--lib",
        "--unit-graph",
        "--build-plan",
        "--",
        "-Dwarnings",
    ];
    const READ_OPTS: &[&str] = &[
        "--*", "-p=", "-e=", "-i=", "-d", "-q", "-v", "-h", "-V", "-F=", "-Z*",
    ];
    let build_spec = Spec {
        opts: BUILD_OPTS,
        risky: &[("--open", "opens a browser")],
        operands: Operands::Any,
    };
    match sub {
        "build" | "b" | "check" | "c" | "clippy" | "doc" | "d" | "clean" | "fetch"
        | "generate-lockfile" | "package" => {
            if sub == "clippy" && rest.iter().any(|w| w.text == "--fix") {
                return rated(Tier::Execute, "cargo clippy --fix rewrites sources");
            }
            let r = rate_known(
                &format!("cargo {sub}"),
                Tier::Build,
                "builds",
                &build_spec,
                rest,
            );
            if r.1.contains("--open") {
                return rated(Tier::Risky, "cargo doc --open starts a browser");
            }
            r
        }
        "fmt" => {
            if rest.iter().any(|w| w.text == "--check") {
                rated(Tier::Build, "cargo fmt --check only checks")
            } else {
                rated(Tier::Execute, "cargo fmt rewrites sources")
            }
        }
        "test" | "t" | "run" | "r" | "bench" | "nextest" | "xtask" | "miri" | "fix"
        | "llvm-cov" | "tarpaulin" => rated(
            Tier::Execute,
            format!("cargo {sub} runs the project's code"),
        ),
        "tree" | "metadata" | "version" | "pkgid" | "locate-project" | "verify-project"
        | "help" | "read-manifest" => {
            let spec = Spec {
                opts: READ_OPTS,
                risky: &[],
                operands: Operands::Any,
            };
            rate_known(
                &format!("cargo {sub}"),
                Tier::ReadOnly,
                "only reads",
                &spec,
                rest,
            )
        }
        "search" | "info" | "outdated" | "audit" | "deny" => rated(
            Tier::Execute,
            format!("cargo {sub} contacts a registry or runs a plugin"),
        ),
        _ => rated(
            Tier::Risky,
            format!("cargo {sub} installs, publishes or changes the project"),
        ),
    }
}

fn rate_rustc(a: &[&str]) -> Rated {
    const CODEGEN_OK: &[&str] = &[
        "opt-level",
        "debuginfo",
        "codegen-units",
        "lto",
        "target-cpu",
        "target-feature",
        "panic",
        "incremental",
        "overflow-checks",
        "debug-assertions",
        "strip",
        "relocation-model",
        "code-model",
        "embed-bitcode",
        "prefer-dynamic",
        "rpath",
        "force-frame-pointers",
        "split-debuginfo",
        "symbol-mangling-version",
        "metadata",
        "extra-filename",
        "instrument-coverage",
        "link-dead-code",
    ];
    let mut i = 0;
    while i < a.len() {
        let x = a[i];
        i += 1;
        let codegen = if x == "-C" || x == "--codegen" {
            i += 1;
            a.get(i - 1).copied()
        } else {
            x.strip_prefix("-C")
                .or_else(|| x.strip_prefix("--codegen="))
        };
        if let Some(cg) = codegen {
            let key = cg.split('=').next().unwrap_or("");
            if CODEGEN_OK.contains(&key) {
                continue;
            }
            if key.starts_with("link")
                || key == "llvm-args"
                || key == "passes"
                || key == "profile-use"
            {
                return rated(
                    Tier::Risky,
                    format!("rustc -C {key} runs or loads another program"),
                );
            }
            return rated(
                Tier::Execute,
                format!("rustc: -C {key} is not on keyless's known-safe list"),
            );
        }
        if x == "-Z" || x.starts_with("-Z") {
            return rated(
                Tier::Execute,
                "rustc -Z options are not on the known-safe list",
            );
        }
        if x.starts_with('@') {
            return rated(Tier::Risky, "rustc @file reads more options from a file");
        }
    }
    rated(Tier::Build, "rustc compiles")
}
