//! `cd`, `pushd`, `popd`, `chdir`: moving within the workspace is ReadOnly; leaving it is
//! Execute, because the commands after it then run, and find their programs and configuration,
//! somewhere else.

use super::super::{rated, Context, Rated, Tier};
use super::common::{within_workspace, Call, Names};

pub(super) const NAMES: Names = &[&["cd", "pushd", "popd", "chdir"]];

pub(super) fn rate(c: &Call) -> Rated {
    rate_cd(c.name, &c.texts(), c.ctx)
}

/// `cd DIR`: harmless inside the workspace; leaving it changes where the next commands run.
fn rate_cd(name: &str, a: &[&str], ctx: &Context) -> Rated {
    let dirs: Vec<&str> = a
        .iter()
        .copied()
        .filter(|x| !x.starts_with('-') || *x == "-")
        .collect();
    match (name, dirs.as_slice()) {
        ("cd" | "pushd" | "chdir", [d])
            if within_workspace(d)
                && super::super::reads::outside_path(
                    d,
                    false,
                    d.contains(['*', '?', '[']),
                    ctx,
                )
                .is_none() =>
        {
            rated(Tier::ReadOnly, format!("{name} moves within the workspace"))
        }
        _ => rated(
            Tier::Execute,
            format!("{name} leaves the workspace (the next commands run elsewhere)"),
        ),
    }
}
