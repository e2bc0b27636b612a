//! Reading `keyless-host serve`'s start-up banner: one reader for the integration tests and the
//! benchmarks, so a new banner line cannot break one of them unnoticed.

use std::io::BufRead;

/// What the banner tells a client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Banner {
    pub port: u16,
    pub code: String,
    pub token: String,
    pub dashboard: Option<String>,
}

/// Reads banner lines until `Press Ctrl-C`.
///
/// # Panics
/// When serve exits before its banner ends, or a line is malformed.
pub fn read_banner(reader: &mut impl BufRead) -> Banner {
    let mut b = Banner::default();
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).expect("banner") > 0,
            "serve exited before its banner ended"
        );
        let line = line.trim_end();
        if let Some(addr) = line
            .strip_prefix("keyless-host ")
            .and_then(|l| l.split(" listening on http://127.0.0.1:").nth(1))
        {
            b.port = addr.trim().parse().expect("port");
        } else if let Some(c) = line.strip_prefix("pairing code: ") {
            b.code = c.split_whitespace().next().expect("code").to_string();
        } else if let Some(t) = line.strip_prefix("local token: ") {
            b.token = t.split_whitespace().next().expect("token").to_string();
        } else if let Some(d) = line.strip_prefix("dashboard: http") {
            b.dashboard = Some(format!("http{d}"));
        } else if line.starts_with("Press Ctrl-C") {
            assert!(
                b.port != 0 && !b.token.is_empty(),
                "incomplete banner: {b:?}"
            );
            return b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_of_the_banner() {
        let text = "keyless-host 0.1.0 listening on http://127.0.0.1:4242\nworkspace: /w\npairing code: ABCD-EFGH   (enter it)\nlocal token: 00ff   (for scripts)\nsandbox: enforced\ndashboard: http://127.0.0.1:4242/?token=00ff\nplayground: http://127.0.0.1:4242/playground/\nPress Ctrl-C to stop.\n";
        let b = read_banner(&mut text.as_bytes());
        assert_eq!(b.port, 4242);
        assert_eq!(b.code, "ABCD-EFGH");
        assert_eq!(b.token, "00ff");
        assert_eq!(
            b.dashboard.as_deref(),
            Some("http://127.0.0.1:4242/?token=00ff")
        );
    }
}
