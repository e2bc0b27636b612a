//! Network clients: Risky, whatever the arguments.
//!
//! - downloaders (`curl`, `wget`, …): they reach the network, and what they fetch may be piped
//!   into an interpreter (that pipeline is Denied by the pipeline rules);
//! - remote shells and copies (`ssh`, `scp`, `rsync`, `nc`, …) and the clients of hosting and
//!   cloud services (`gh`, `aws`, `gcloud`, …): they change remote systems or the files they
//!   copy.

use super::super::{rated, Rated, Tier};
use super::common::{changes_things, Call, Names, DOWNLOADERS};

/// Remote shells and copies.
const REMOTE: &[&str] = &[
    "rsync", "scp", "ssh", "sftp", "ftp", "nc", "ncat", "netcat", "socat", "telnet",
];

/// The clients of hosting and cloud services.
const SERVICES: &[&str] = &[
    "gh", "hub", "aws", "gcloud", "az", "heroku", "vercel", "netlify", "fly", "firebase",
];

pub(super) const NAMES: Names = &[DOWNLOADERS, REMOTE, SERVICES];

pub(super) fn rate(c: &Call) -> Rated {
    if DOWNLOADERS.contains(&c.name) {
        rated(Tier::Risky, format!("{} reaches the network", c.name))
    } else {
        changes_things(c.name)
    }
}
