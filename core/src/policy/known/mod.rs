//! The known-safe lists: programs (and `program subcommand`s) that only read, or only build, with
//! the options proven harmless for each. Anything not here is at least Execute. An option listed
//! under `risky` runs another program or writes a file, and makes the line Risky.
//!
//! A program whose arguments are code (sed, awk, find, git, env, …) is analysed in
//! [`super::programs`] instead.
//!
//! - [`table`]: the table of known-safe programs ([`KNOWN`]);
//! - [`lists`]: the option lists that several programs share, each written once.

mod lists;
mod table;

use super::args::{Operands, Spec};
use super::Tier;

pub(crate) use lists::{CC, CC_RISKY};
pub(crate) use table::KNOWN;

/// A known-safe program.
#[derive(Debug)]
pub(crate) struct Known {
    /// The program, or `program subcommand`.
    pub name: &'static str,
    pub tier: Tier,
    /// What it does, for the reason ("only reads").
    pub does: &'static str,
    pub spec: Spec,
}

/// A ReadOnly program: it only reads.
const fn ro(
    name: &'static str,
    opts: &'static [&'static str],
    risky: &'static [(&'static str, &'static str)],
    operands: Operands,
) -> Known {
    build(name, "only reads", opts, risky, operands).at(Tier::ReadOnly)
}

/// A Build program, with what it does.
const fn build(
    name: &'static str,
    does: &'static str,
    opts: &'static [&'static str],
    risky: &'static [(&'static str, &'static str)],
    operands: Operands,
) -> Known {
    Known {
        name,
        tier: Tier::Build,
        does,
        spec: Spec {
            opts,
            risky,
            operands,
        },
    }
}

impl Known {
    const fn at(self, tier: Tier) -> Known {
        Known { tier, ..self }
    }
}

/// `a` then `b`, as one list: the options two programs share are written once, and each
/// program's own are added to them. The options within a list are distinct, so their order does
/// not matter.
const fn joined<const N: usize>(a: &[&'static str], b: &[&'static str]) -> [&'static str; N] {
    assert!(a.len() + b.len() == N);
    let mut out = [""; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - a.len()];
        i += 1;
    }
    out
}

/// The known-safe entry for a program (or `program subcommand`).
pub(crate) fn lookup(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_options_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for k in KNOWN {
            assert!(seen.insert(k.name), "{} twice", k.name);
            let mut opts = std::collections::BTreeSet::new();
            for o in k.spec.opts {
                assert!(*o == "*" || o.starts_with('-'), "{}: {o}", k.name);
                assert!(opts.insert(*o), "{}: {o} twice", k.name);
            }
        }
    }
}
