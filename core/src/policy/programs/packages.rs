//! System and language package managers that install globally (`apt`, `brew`, `winget`, `gem`,
//! `conda`, `rustup`, `nvm`, …): Risky, whatever the arguments. They change what is installed
//! for the whole user or machine, and run the packages' install scripts.

use super::super::{rated, Rated, Tier};
use super::common::{Call, Names};

pub(super) const NAMES: Names = &[&[
    "apt",
    "apt-get",
    "yum",
    "dnf",
    "pacman",
    "apk",
    "brew",
    "port",
    "choco",
    "winget",
    "scoop",
    "snap",
    "flatpak",
    "zypper",
    "emerge",
    "nix-env",
    "pipx",
    "gem",
    "composer",
    "conda",
    "mamba",
    "nvm",
    "rustup",
    "sdkmanager",
]];

pub(super) fn rate(c: &Call) -> Rated {
    rated(
        Tier::Risky,
        format!("{} installs or changes packages", c.name),
    )
}
