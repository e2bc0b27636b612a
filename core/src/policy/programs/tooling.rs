//! Test runners, formatters and linters.
//!
//! - Test runners (`pytest`, `jest`, `vitest`, …) run the project's tests: Execute.
//! - Formatters (`prettier`, `black`, `rustfmt`, …) may rewrite sources and load the project's
//!   plugins: Execute; with a check-only option and no writing one they only check (Build).
//! - Linters and analysers (`ruff`, `mypy`, `shellcheck`, …) only analyse (Build); `--fix` or
//!   `format` rewrites sources (Execute).

use super::super::{rated, Rated, Tier};
use super::common::{Call, Names};

const TEST_RUNNERS: &[&str] = &[
    "pytest",
    "py.test",
    "jest",
    "vitest",
    "mocha",
    "ava",
    "tap",
    "karma",
    "cypress",
    "playwright",
    "phpunit",
    "rspec",
    "ctest",
    "nextest",
    "behave",
    "nose2",
    "unittest",
];

const FORMATTERS: &[&str] = &[
    "eslint",
    "prettier",
    "stylelint",
    "biome",
    "black",
    "isort",
    "rustfmt",
    "gofmt",
    "clang-format",
    "autopep8",
    "yapf",
    "standard",
    "rubocop",
    "swiftformat",
    "ktlint",
];

const LINTERS: &[&str] = &[
    "ruff",
    "mypy",
    "pyright",
    "flake8",
    "pylint",
    "shellcheck",
    "hadolint",
    "tflint",
    "clippy-driver",
    "golangci-lint",
    "staticcheck",
    "cppcheck",
    "clang-tidy",
];

pub(super) const NAMES: Names = &[TEST_RUNNERS, FORMATTERS, LINTERS];

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    let a = c.texts();
    if TEST_RUNNERS.contains(&name) {
        return rated(Tier::Execute, format!("{name} runs tests"));
    }
    if FORMATTERS.contains(&name) {
        let checking = a.iter().any(|x| {
            matches!(
                *x,
                "--check" | "-l" | "--list-different" | "--diff" | "-d" | "--dry-run"
            )
        });
        let writing = a.iter().any(|x| {
            matches!(
                *x,
                "--write" | "-w" | "--fix" | "-i" | "--in-place" | "-a" | "--autocorrect"
            )
        });
        return if checking && !writing {
            rated(Tier::Build, format!("{name} only checks"))
        } else {
            rated(
                Tier::Execute,
                format!("{name} runs the project's tooling and may rewrite sources"),
            )
        };
    }
    if a.iter().any(|x| *x == "--fix" || *x == "format") {
        rated(Tier::Execute, format!("{name} rewrites sources"))
    } else {
        rated(Tier::Build, format!("{name} only analyses"))
    }
}
