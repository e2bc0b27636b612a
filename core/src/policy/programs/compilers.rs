//! C and C++ compiler drivers (`gcc`, `clang`, `cc`, …) and `zig`: compiling with options on the
//! known-safe list is Build. An option that runs another program or loads code into the compiler
//! (`-wrapper`, `-B`, plugins, specs files, `@file`) is Risky; another option is Execute.
//! `zig build` runs the project's build (Build); `zig run`/`test` run code, and other `zig`
//! subcommands are not on the list (Execute).

use super::super::args::{Operands, Spec};
use super::super::known::{CC, CC_RISKY};
use super::super::{rated, Rated, Tier};
use super::common::{rate_known, Call, Names};

pub(super) const NAMES: Names = &[
    &[
        "gcc", "g++", "cc", "c++", "clang", "clang++", "gfortran", "tcc",
    ],
    &["zig"],
];

/// A C compiler driver's arguments.
const CC_SPEC: Spec = Spec {
    opts: CC,
    risky: CC_RISKY,
    operands: Operands::Any,
};

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    let args = c.args();
    let a = c.texts();
    if name != "zig" {
        return rate_known(name, Tier::Build, "compiles", &CC_SPEC, args);
    }
    if a.first().is_some_and(|x| matches!(*x, "run" | "test")) {
        rated(Tier::Execute, "zig run/test runs code")
    } else if a.first() == Some(&"cc") || a.first() == Some(&"c++") {
        rate_known(name, Tier::Build, "compiles", &CC_SPEC, &args[1..])
    } else if a.first() == Some(&"build") {
        rated(Tier::Build, "zig build runs the project's build")
    } else {
        rated(
            Tier::Execute,
            format!(
                "zig {} is not on the known-safe list",
                a.first().unwrap_or(&"")
            ),
        )
    }
}
