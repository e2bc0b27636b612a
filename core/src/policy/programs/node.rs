//! JavaScript: the package managers, the runtimes and the bundlers.
//!
//! - `npm`, `pnpm`, `yarn`, `bun`: reading subcommands (`ls`, `view`, `outdated`, `config get`,
//!   …) are ReadOnly; running the project's scripts (`test`, `run`, `start`, …) is Execute;
//!   installing, publishing or running downloaded code is Risky. An option that names a program or
//!   a configuration file (which can name one), or that points at a project outside the
//!   workspace, is Risky too: that configuration can name programs to run.
//! - `npx`, `pnpx`, `bunx` may download and run a package: Risky.
//! - `node`, `deno`, `ts-node`, `tsx` run a program (Execute); with `-e`/`-p` they run code
//!   given on the command line, and `deno install`/`upgrade`/`compile` change the system (Risky).
//! - Bundlers and build runners (`webpack`, `vite`, `turbo`, …) run the project's configuration,
//!   which is JavaScript: Execute.

use super::super::{rated, Rated, Tier};
use super::common::{has_option, option_values, within_workspace, Call, Names};

pub(super) const NAMES: Names = &[
    &["npm", "pnpm", "yarn", "bun"],
    &["npx", "pnpx", "bunx"],
    &["node", "nodejs", "deno", "ts-node", "tsx"],
    &[
        "webpack", "rollup", "vite", "parcel", "babel", "swc", "turbo", "nx",
    ],
];

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    let a = c.texts();
    match name {
        "npm" | "pnpm" | "yarn" | "bun" => rate_js_pm(name, &a),
        "npx" | "pnpx" | "bunx" => rated(
            Tier::Risky,
            format!("{name} may download and run a package"),
        ),
        "node" | "nodejs" | "deno" | "ts-node" | "tsx" => rate_node(name, &a),
        _ => rated(
            Tier::Execute,
            format!("{name} runs the project's configuration (JavaScript)"),
        ),
    }
}

fn rate_js_pm(prog: &str, args: &[&str]) -> Rated {
    // Options that name a program, or a configuration file (which can name programs to run).
    const PROGRAMS: &[&str] = &[
        "--userconfig",
        "--globalconfig",
        "--script-shell",
        "--shell",
        "--node-options",
        "--editor",
        "--browser",
        "--viewer",
        "--git",
        "--onload-script",
        "--call",
        "--rcfile",
        "--use-yarnrc",
        "--config",
    ];
    if has_option(args, PROGRAMS)
        || args
            .iter()
            .take_while(|x| **x != "--")
            .any(|x| x.starts_with("--config."))
    {
        return rated(
            Tier::Risky,
            format!("{prog}: an option names a program or a configuration file that can name one"),
        );
    }
    if option_values(args, &["--prefix", "-C", "--cwd", "--dir"])
        .iter()
        .any(|d| !within_workspace(d))
    {
        return rated(
            Tier::Risky,
            format!(
                "{prog} points at another project, whose configuration can name programs to run"
            ),
        );
    }
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        if matches!(
            args[i],
            "--prefix" | "-C" | "--cwd" | "--filter" | "-F" | "-w" | "--workspace" | "--dir"
        ) {
            i += 1;
        }
        i += 1;
    }
    let sub = args.get(i).copied();
    match sub {
        None if prog == "yarn" || prog == "bun" => {
            rated(Tier::Risky, format!("{prog} installs packages"))
        }
        None => rated(Tier::ReadOnly, format!("{prog} alone prints help")),
        Some(
            "test" | "t" | "tst" | "start" | "run" | "run-script" | "rum" | "urn" | "dev" | "serve"
            | "preview",
        ) => rated(
            Tier::Execute,
            format!("{prog} {} runs the project's scripts", sub.unwrap_or("")),
        ),
        Some("pkg") => {
            if args.get(i + 1) == Some(&"get") {
                rated(Tier::ReadOnly, format!("{prog} pkg get only reads"))
            } else {
                rated(Tier::Risky, format!("{prog} pkg changes package.json"))
            }
        }
        Some("config" | "get") => {
            if sub == Some("get") || matches!(args.get(i + 1).copied(), Some("get" | "list" | "ls"))
            {
                rated(Tier::ReadOnly, format!("{prog} config only reads"))
            } else {
                rated(Tier::Risky, format!("{prog} config changes settings"))
            }
        }
        Some(
            "ls" | "list" | "ll" | "la" | "view" | "info" | "show" | "v" | "outdated" | "why"
            | "explain" | "root" | "prefix" | "licenses" | "fund" | "query",
        ) => rated(
            Tier::ReadOnly,
            format!("{prog} {} only reads", sub.unwrap_or("")),
        ),
        Some("help") if args.len() > i + 1 => rated(
            Tier::Risky,
            format!("{prog} help TOPIC opens the manual with a viewer program (man or a browser)"),
        ),
        Some("help") => rated(Tier::ReadOnly, format!("{prog} help only prints")),
        Some("audit") if args.contains(&"fix") => {
            rated(Tier::Risky, format!("{prog} audit fix changes packages"))
        }
        Some("audit" | "doctor" | "search" | "whoami" | "ping") => rated(
            Tier::Execute,
            format!("{prog} {} contacts the registry", sub.unwrap_or("")),
        ),
        Some(s) if prog == "npm" => rated(
            Tier::Risky,
            format!("npm {s} installs, publishes, changes packages or runs downloaded code"),
        ),
        // yarn/pnpm/bun run package scripts by name, and install by other names.
        Some(
            s @ ("add" | "install" | "i" | "remove" | "rm" | "up" | "upgrade" | "update" | "dlx"
            | "exec" | "x" | "create" | "init" | "link" | "publish" | "patch" | "import"
            | "set" | "unlink" | "global"),
        ) => rated(
            Tier::Risky,
            format!("{prog} {s} changes packages or runs downloaded code"),
        ),
        Some("build") if prog == "bun" => rated(Tier::Build, "bun build bundles"),
        Some(s) => rated(
            Tier::Execute,
            format!("{prog} {s} runs a project script or file"),
        ),
    }
}

fn rate_node(prog: &str, args: &[&str]) -> Rated {
    if args.iter().any(|a| {
        matches!(*a, "-e" | "--eval" | "-p" | "--print")
            || a.starts_with("--eval=")
            || a.starts_with("--print=")
    }) || (prog == "deno" && args.first() == Some(&"eval"))
    {
        return rated(
            Tier::Risky,
            format!("{prog} -e runs code given on the command line"),
        );
    }
    if prog == "deno"
        && args
            .first()
            .is_some_and(|a| matches!(*a, "install" | "upgrade" | "compile"))
    {
        return rated(Tier::Risky, "deno install/upgrade changes the system");
    }
    if args.iter().any(|a| !a.starts_with('-')) {
        rated(Tier::Execute, format!("{prog} runs a program"))
    } else {
        rated(Tier::Execute, format!("{prog} starts an interpreter"))
    }
}
