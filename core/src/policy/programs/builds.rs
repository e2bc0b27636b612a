//! Build systems: they run the project's own build description, which is code.
//!
//! - `make` (`just`, `rake`, `tox`, …) runs the project's recipes: Execute, even with `-n`,
//!   which still runs `$(shell …)` and `+` recipes.
//! - `cmake` configures or builds (Build); `-P`/`-E` run a script or command and `--install`
//!   copies files into the install prefix (Risky).
//! - `ninja`, `meson`, `msbuild`, `bazel`, … build (Build); `test`, `run` or `install` are
//!   Execute.
//! - `mvn`, `gradle` (and their wrappers): compile/package goals only are Build; tests and runs
//!   are Execute; `deploy`/`publish` are Risky.
//! - `dotnet`: building is Build, running or testing Execute, printing information ReadOnly;
//!   anything else installs or changes the project (Risky).

use super::super::{rated, Rated, Tier};
use super::common::{has_flag, Call, Names};

/// Task runners that run the project's recipes.
const RECIPES: &[&str] = &[
    "make", "gmake", "nmake", "just", "task", "rake", "invoke", "nox", "tox",
];

/// Build tools whose `test`, `run` and `install` targets run or install things.
const BUILDERS: &[&str] = &[
    "ninja",
    "meson",
    "msbuild",
    "xcodebuild",
    "bazel",
    "bazelisk",
    "buck",
    "buck2",
    "scons",
];

pub(super) const NAMES: Names = &[
    RECIPES,
    BUILDERS,
    &["cmake", "dotnet", "mvn", "mvnw", "gradle", "gradlew"],
];

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    let a = c.texts();
    match name {
        "dotnet" => rate_dotnet(&a),
        "cmake" => rate_cmake(&a),
        "mvn" | "mvnw" | "gradle" | "gradlew" => rate_jvm_build(name, &a),
        s if RECIPES.contains(&s) => {
            if has_flag(&a, 'n', &["--dry-run", "--just-print", "--recon"]) {
                rated(
                    Tier::Execute,
                    format!("{name} -n still runs $(shell …) and + recipes"),
                )
            } else {
                rated(Tier::Execute, format!("{name} runs the project's recipes"))
            }
        }
        _ => {
            if a.iter().any(|x| matches!(*x, "test" | "run" | "install")) {
                rated(
                    Tier::Execute,
                    format!("{name} runs tests, programs or installs"),
                )
            } else {
                rated(Tier::Build, format!("{name} builds"))
            }
        }
    }
}

fn rate_dotnet(args: &[&str]) -> Rated {
    let sub = args.first().copied().unwrap_or("");
    match sub {
        "build" | "restore" | "clean" | "msbuild" | "pack" | "publish" | "build-server" => {
            rated(Tier::Build, format!("dotnet {sub} builds"))
        }
        "test" | "run" | "watch" | "vstest" | "format" | "ef" => rated(
            Tier::Execute,
            format!("dotnet {sub} runs the project's code"),
        ),
        "--version" | "--info" | "--list-sdks" | "--list-runtimes" | "-h" | "--help" | "help"
        | "" => rated(Tier::ReadOnly, "dotnet only prints information"),
        "list" if args.iter().any(|a| *a == "package" || *a == "reference") => {
            rated(Tier::ReadOnly, "dotnet list only reads")
        }
        "sln" if args.get(1) == Some(&"list") => {
            rated(Tier::ReadOnly, "dotnet sln list only reads")
        }
        _ => rated(
            Tier::Risky,
            format!("dotnet {sub} installs or changes the project"),
        ),
    }
}

fn rate_cmake(a: &[&str]) -> Rated {
    if a.first() == Some(&"-P") || a.contains(&"-E") {
        return rated(Tier::Risky, "cmake -P/-E runs a script or command");
    }
    if a.iter()
        .any(|x| *x == "--install" || x.starts_with("--install"))
    {
        return rated(
            Tier::Risky,
            "cmake --install copies files into the install prefix",
        );
    }
    rated(Tier::Build, "cmake configures or builds")
}

fn rate_jvm_build(prog: &str, a: &[&str]) -> Rated {
    if a.iter().any(|x| {
        matches!(
            *x,
            "test" | "verify" | "run" | "bootRun" | "exec:java" | "check" | "integration-test"
        )
    }) {
        rated(Tier::Execute, format!("{prog} runs tests or the program"))
    } else if a
        .iter()
        .any(|x| matches!(*x, "deploy" | "publish" | "release:perform"))
    {
        rated(Tier::Risky, format!("{prog} publishes artifacts"))
    } else if a.iter().all(|x| {
        matches!(
            *x,
            "compile"
                | "clean"
                | "build"
                | "assemble"
                | "package"
                | "install"
                | "jar"
                | "classes"
                | "-q"
                | "--quiet"
                | "-DskipTests"
                | "-x"
                | "test-compile"
                | "--offline"
                | "-o"
        )
    }) {
        rated(Tier::Build, format!("{prog} builds"))
    } else {
        rated(Tier::Execute, format!("{prog} runs project tasks"))
    }
}
