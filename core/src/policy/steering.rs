//! Programs that obey files in the workspace. A toolchain file, a build tool's options file or a
//! package manager's config can make a program run something the model wrote (`rust-toolchain.toml`
//! with `path = …`, `.mvn/jvm.config` with `-XX:OnError=…`, `.cargo/config.toml` with
//! `build.rustc-wrapper`, `.npmrc` with `script-shell`, `.yarnrc.yml` with `yarnPath`). While such a
//! file exists anywhere in the workspace (the model can write it), or the line names one, the
//! program is never ReadOnly or Build: it is at least Execute.
//!
//! The host finds the files ([`is_steering_file`]) and hands them to the policy in its
//! [`super::Context`]; every view is given the same list.

/// Programs and the workspace files that steer them (paths relative to the folder they run in,
/// or any folder above it: a match is by path suffix).
const TABLE: &[(&[&str], &[&str])] = &[
    // rustup's proxies read the toolchain file and run the toolchain it names (`path = …`).
    (
        &[
            "cargo",
            "rustc",
            "rustup",
            "rustdoc",
            "rustfmt",
            "cargo-fmt",
            "cargo-clippy",
            "clippy-driver",
            "rust-analyzer",
            "rust-gdb",
            "rust-lldb",
        ],
        &["rust-toolchain", "rust-toolchain.toml"],
    ),
    // build.rustc-wrapper, target runners, aliases, [env].
    (&["cargo"], &[".cargo/config", ".cargo/config.toml"]),
    // JVM options (-XX:OnError runs a command), Maven options and extensions, the wrapper's
    // download location.
    (
        &["mvn", "mvnw", "mvnd"],
        &[
            ".mvn/jvm.config",
            ".mvn/maven.config",
            ".mvn/extensions.xml",
            ".mvn/wrapper/maven-wrapper.properties",
        ],
    ),
    (
        &["gradle", "gradlew"],
        &[
            "gradle.properties",
            "gradle/wrapper/gradle-wrapper.properties",
        ],
    ),
    // node-options, script-shell, yarnPath, pnpm hooks.
    (
        &["npm", "npx", "pnpm", "pnpx", "yarn", "yarnpkg", "corepack"],
        &[".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs"],
    ),
    // Version managers' shims pick the program from these (a version can be a path).
    (
        &[
            "node",
            "nodejs",
            "npm",
            "npx",
            "yarn",
            "pnpm",
            "corepack",
            "python",
            "python3",
            "pip",
            "pip3",
            "ruby",
            "gem",
            "bundle",
            "go",
            "java",
            "javac",
            "mvn",
            "gradle",
            "cargo",
            "rustc",
            "terraform",
            "deno",
            "bun",
            "dotnet",
            "php",
            "perl",
            "lua",
            "elixir",
            "erl",
            "kubectl",
        ],
        &[".tool-versions", "mise.toml", ".mise.toml", ".rtx.toml"],
    ),
    (
        &["node", "nodejs", "npm", "npx"],
        &[".nvmrc", ".node-version"],
    ),
    (
        &[
            "python", "python3", "pip", "pip3", "pipx", "uv", "poetry", "pipenv", "pdm",
        ],
        &[
            ".python-version",
            "pyvenv.cfg",
            "pip.conf",
            "uv.toml",
            "poetry.toml",
        ],
    ),
    (&["go", "gofmt"], &["go.work", "go.env"]),
    (&["terraform", "tofu"], &[".terraformrc", "terraform.rc"]),
    (&["bundle", "bundler", "rake", "rails"], &[".bundle/config"]),
    (&["direnv"], &[".envrc", ".env"]),
    (&["make", "gmake"], &["Makefile", "makefile", "GNUmakefile"]),
    (
        &["dotnet", "msbuild"],
        &[
            "global.json",
            "NuGet.Config",
            "nuget.config",
            "Directory.Build.props",
            "Directory.Build.targets",
        ],
    ),
    // Linters and formatters whose configuration is code, or loads plugins.
    (
        &["eslint"],
        &[
            "eslint.config.js",
            "eslint.config.mjs",
            "eslint.config.cjs",
            "eslint.config.ts",
            ".eslintrc.js",
            ".eslintrc.cjs",
        ],
    ),
    (
        &["prettier"],
        &[
            "prettier.config.js",
            "prettier.config.mjs",
            "prettier.config.cjs",
            ".prettierrc",
            ".prettierrc.js",
            ".prettierrc.cjs",
            ".prettierrc.mjs",
            ".prettierrc.json",
            ".prettierrc.yaml",
            ".prettierrc.yml",
            ".prettierrc.toml",
        ],
    ),
    (
        &["mypy", "dmypy"],
        &["mypy.ini", ".mypy.ini", "setup.cfg", "pyproject.toml"],
    ),
    (
        &["pylint"],
        &[".pylintrc", "pylintrc", "setup.cfg", "pyproject.toml"],
    ),
    (&["flake8"], &[".flake8", "setup.cfg", "tox.ini"]),
    (
        &["stylelint"],
        &["stylelint.config.js", ".stylelintrc", ".stylelintrc.js"],
    ),
    (&["babel"], &["babel.config.js", ".babelrc.js"]),
];

/// Whether `a` ends with the path `suffix` on a segment boundary (`sub/.cargo/config.toml` ends
/// with `.cargo/config.toml`).
fn ends_with_path(a: &str, suffix: &str) -> bool {
    a == suffix
        || a.strip_suffix(suffix)
            .is_some_and(|head| head.ends_with('/'))
}

/// Whether a file name (the last segment of a path) is one a steering file may have: the quick
/// test a scan of a whole workspace asks before [`is_steering_file`].
#[must_use]
pub fn is_steering_name(name: &str) -> bool {
    NAMES.binary_search(&name).is_ok()
}

/// The last segments of the table's files, sorted (the host asks about every entry of the
/// workspace).
static NAMES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    let mut v: Vec<&'static str> = TABLE
        .iter()
        .flat_map(|(_, files)| files.iter().filter_map(|f| f.rsplit('/').next()))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
});

/// Whether a workspace-relative path is a file that steers a program (the host looks for these
/// in every folder of the workspace).
#[must_use]
pub fn is_steering_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if !is_steering_name(name) {
        return false;
    }
    TABLE.iter().any(|(_, files)| {
        files.iter().any(|f| {
            // The last segment first: most files of a workspace are not named like any of these.
            f.rsplit('/').next() == Some(name) && ends_with_path(rel, f)
        })
    })
}

/// Why `program` is at least Execute here, if it is: a file that steers it exists in the
/// workspace (`present`), or the command line names one (`words`).
/// With `unknown` (the host's list was cut short), a program any file can steer is judged as
/// steered.
pub(crate) fn steered(
    program: &str,
    words: &[&str],
    present: &[String],
    unknown: bool,
) -> Option<String> {
    if unknown
        && TABLE
            .iter()
            .any(|(programs, _)| programs.contains(&program))
    {
        return Some(format!(
            "{program} obeys files the model can write, and the workspace holds more of them than keyless could list (it cannot tell whether one steers this run)"
        ));
    }
    for (programs, files) in TABLE {
        if !programs.contains(&program) {
            continue;
        }
        for f in *files {
            if let Some(p) = present.iter().find(|p| ends_with_path(p, f)) {
                return Some(format!(
                    "{program} obeys {p}, a workspace file the model can write (it can make {program} run anything)"
                ));
            }
            if let Some(w) = words.iter().find(|w| {
                let w = w.split_once('=').map_or(**w, |(_, v)| v);
                ends_with_path(w.trim_start_matches("./"), f)
            }) {
                return Some(format!(
                    "{program} is given {w}, a file that can make it run anything"
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_steer_their_programs_only() {
        let present = vec!["sub/.cargo/config.toml".to_string()];
        assert!(steered("cargo", &["--version"], &present, false).is_some());
        assert!(steered("rustc", &["--version"], &present, false).is_none());
        assert!(steered(
            "cargo",
            &["--version"],
            &["x.cargo/config.toml".into()],
            false
        )
        .is_none());
        assert!(steered("mvn", &["-s", ".mvn/maven.config"], &[], false).is_some());
        assert!(steered("mvn", &["--settings=./.mvn/maven.config"], &[], false).is_some());
        assert!(steered("cargo", &["--version"], &[], true).is_some());
        assert!(steered("ls", &[], &[], true).is_none());
        assert!(is_steering_file("rust-toolchain.toml"));
        assert!(is_steering_file("a/b/.npmrc"));
        assert!(!is_steering_file("a/b/npmrc"));
    }
}
