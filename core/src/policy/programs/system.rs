//! The machine itself: its power, disks, services, processes, users, firewall, scheduled jobs,
//! containers and infrastructure.
//!
//! - Denied: shutting down or rebooting (`shutdown`, `init 0`, `systemctl poweroff`, …),
//!   formatting or partitioning a disk (`mkfs`, `mkfs.*`, `fdisk`, `diskpart`, …) and `dd` onto a
//!   device: they can destroy the machine or its disks, and nothing undoes them.
//! - `systemctl`: ReadOnly for the reporting subcommands (`status`, `show`, `list-units`, …);
//!   otherwise Risky (it changes system services).
//! - `dd` onto a file, and everything else here (mounting, killing processes, users, firewall,
//!   cron, containers, Kubernetes, Terraform, …): Risky, whatever the arguments.

use super::super::{rated, Rated, Tier};
use super::common::{changes_things, unknown_program, Call, Names};

/// Programs that can destroy the machine or its disks.
const DESTROYS: &[&str] = &[
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "stop-computer",
    "restart-computer",
    "format",
    "format-volume",
    "clear-disk",
    "diskpart",
    "fdisk",
    "sfdisk",
    "parted",
    "wipefs",
    "mkswap",
    "mkfs",
    "cryptsetup",
];

/// Processes, mounts, users, the firewall and scheduled jobs.
const ADMIN: &[&str] = &[
    "mount", "umount", "kill", "killall", "pkill", "taskkill", "crontab", "at", "useradd",
    "userdel", "usermod", "passwd", "visudo", "iptables", "ufw",
];

/// Containers and infrastructure.
const INFRA: &[&str] = &[
    "docker",
    "podman",
    "kubectl",
    "helm",
    "terraform",
    "ansible",
    "ansible-playbook",
    "vagrant",
];

/// `mkfs.*` stands for every program whose name begins with `mkfs.`.
pub(super) const NAMES: Names = &[
    DESTROYS,
    &["mkfs.*", "init", "telinit", "systemctl", "dd"],
    ADMIN,
    INFRA,
];

pub(super) fn rate(c: &Call) -> Rated {
    let name = c.name;
    let a = c.texts();
    match name {
        s if DESTROYS.contains(&s) => rated(
            Tier::Denied,
            format!("{name} can destroy the machine or its disks"),
        ),
        p if p.starts_with("mkfs.") => rated(Tier::Denied, format!("{name} formats a disk")),
        "init" | "telinit" => {
            if a.first().is_some_and(|x| matches!(*x, "0" | "6")) {
                rated(Tier::Denied, "init 0/6 shuts the machine down")
            } else {
                unknown_program(name)
            }
        }
        "systemctl" => rate_systemctl(&a),
        "dd" => {
            if a.iter()
                .any(|x| x.starts_with("of=/dev/") && !x.starts_with("of=/dev/null"))
            {
                rated(Tier::Denied, "dd writes to a device")
            } else {
                rated(Tier::Risky, "dd writes data")
            }
        }
        _ => changes_things(name),
    }
}

fn rate_systemctl(a: &[&str]) -> Rated {
    if a.iter().any(|x| {
        matches!(
            *x,
            "poweroff"
                | "reboot"
                | "halt"
                | "kexec"
                | "suspend"
                | "hibernate"
                | "rescue"
                | "emergency"
        )
    }) {
        rated(
            Tier::Denied,
            "systemctl power actions shut the machine down",
        )
    } else if a.iter().filter(|x| !x.starts_with('-')).take(1).all(|x| {
        matches!(
            *x,
            "status"
                | "list-units"
                | "is-active"
                | "show"
                | "cat"
                | "list-unit-files"
                | "is-enabled"
        )
    }) && !a.is_empty()
    {
        rated(Tier::ReadOnly, "systemctl only reports")
    } else {
        rated(Tier::Risky, "systemctl changes system services")
    }
}
