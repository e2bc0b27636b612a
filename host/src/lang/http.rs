//! The `http(s)://ORIGIN` tool of `.as` programs: `get` and `post` on paths of that origin only,
//! and only for an origin the user allows in keyless.json's `Programs.Http` (a trust key: from a
//! workspace file only once the user approved it). Redirects are followed by hand, never off the
//! origin; a timeout and a 4 MiB answer cap. A name that resolves to a loopback, link-local or
//! unspecified address is refused unless the allowed origin names that address (or
//! `localhost`) itself: a program cannot reach the machine's own services or a cloud metadata
//! service through a name, whatever its DNS answers (the check is made on the addresses the
//! connection uses, so a DNS answer that changes between a check and the connection cannot
//! slip through).

use keyless_core::lang::interp::EffectError;
use keyless_core::Code;
use serde_json::{json, Value};

fn refuse(msg: impl Into<String>) -> EffectError {
    EffectError::new(Code::AsToolRefused, msg)
}

/// The agent for one allowed origin: its timeout (the call's `timeout`, in milliseconds), no
/// redirect followed by itself (each is checked against the origin), and a resolver that refuses
/// loopback, link-local and unspecified addresses unless the origin names such an address (or
/// `localhost`) itself, so a name cannot lead a program to the machine's own services or a
/// cloud metadata service, whatever its DNS answers.
fn http_agent(origin: &str, args: &Value) -> Result<ureq::Agent, EffectError> {
    let timeout = args
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(30_000)
        .clamp(1, 120_000);
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_millis(timeout)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build();
    let host = origin
        .split_once("://")
        .map_or("", |(_, h)| h)
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or_else(
            || origin.split_once("://").map_or("", |(_, h)| h),
            |(h, _)| h,
        );
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let named_internal = host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(internal);
    Ok(ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        OutwardResolver {
            inner: ureq::unversioned::resolver::DefaultResolver::default(),
            named_internal,
        },
    ))
}

/// Loopback, link-local, unspecified, the shared address space of carriers and clouds
/// (100.64.0.0/10: Alibaba's metadata service) and IPv6 unique-local addresses (fc00::/7: AWS's
/// IPv6 metadata service), with their IPv4-in-IPv6 forms. Private LAN ranges are not here: a
/// company's API by name is a program's business.
fn internal(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || (a == 100 && (64..128).contains(&b))
        }
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || v6.to_ipv4_mapped().is_some_and(|v4| internal(v4.into()))
        }
    }
}

/// DNS, then a refusal of internal addresses ([`internal`]) for a name that does not say it is
/// internal.
#[derive(Debug)]
struct OutwardResolver<R> {
    inner: R,
    named_internal: bool,
}

impl<R: ureq::unversioned::resolver::Resolver> ureq::unversioned::resolver::Resolver
    for OutwardResolver<R>
{
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.inner.resolve(uri, config, timeout)?;
        if !self.named_internal && addrs.iter().any(|a| internal(a.ip())) {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{} resolves to a loopback or link-local address; keyless reaches such an address only when Programs.Http names it (or localhost) itself",
                    uri.host().unwrap_or("")
                ),
            )));
        }
        Ok(addrs)
    }
}

/// The most bytes of an HTTP answer read, and the redirects followed (within the origin only).
const MAX_HTTP_BODY: u64 = 4 << 20;
const MAX_REDIRECTS: usize = 5;

/// `Http.get` / `Http.post` of an `http(s)://ORIGIN` import: `url` is a path on that origin (an
/// absolute URL, or a redirect elsewhere, is refused), `headers` an object of strings, `body` JSON
/// (post), `timeout` in milliseconds (default 30,000, at most 120,000). The answer: `{ status,
/// body }`, the body parsed when it is JSON, at most 4 MiB.
pub(super) fn call(
    origin: &str,
    method: &str,
    args: &Value,
    allowed: &[String],
) -> Result<Value, EffectError> {
    if !matches!(method, "get" | "post") {
        return Err(refuse(format!("{origin} has get and post, not {method}")));
    }
    let origin = origin.trim_end_matches('/');
    let normal = keyless_core::keyless_json::http_origin(origin).map_err(refuse)?;
    if !allowed.contains(&normal) {
        return Err(refuse(format!(
            "{normal} is not in keyless.json's Programs.Http: a program reaches only the origins you allow (add it to your own keyless.json, or approve the workspace's with `keyless-host config --approve`); nothing was sent"
        )));
    }
    let agent = http_agent(&normal, args)?;
    let path = super::arg_str(args, "url").unwrap_or("/");
    let same_origin = |p: &str| -> Result<String, EffectError> {
        if let Some(rest) = p.strip_prefix(origin) {
            if rest.is_empty() || rest.starts_with('/') || rest.starts_with('?') {
                return Ok(format!("{origin}{rest}"));
            }
        }
        if p.starts_with('/') && !p.starts_with("//") {
            return Ok(format!("{origin}{p}"));
        }
        Err(refuse(format!(
            "{p} is not on {origin}: requests stay on the imported origin"
        )))
    };
    let mut url = same_origin(path)?;
    let headers: Vec<(String, String)> = args
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let mut post = method == "post";
    for _ in 0..=MAX_REDIRECTS {
        let result = if post {
            let mut r = agent.post(&url).header("content-type", "application/json");
            for (k, v) in &headers {
                r = r.header(k, v);
            }
            r.send(args.get("body").cloned().unwrap_or(Value::Null).to_string())
        } else {
            let mut r = agent.get(&url);
            for (k, v) in &headers {
                r = r.header(k, v);
            }
            r.call()
        };
        let response =
            result.map_err(|e| EffectError::new(Code::AsEffect, format!("{url}: {e}")))?;
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            let location = response
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| refuse(format!("{url}: redirect without a location")))?
                .to_string();
            url = same_origin(&location)?;
            // 303 (and, as browsers do, 301/302) turn a post into a get.
            if matches!(status, 301..=303) {
                post = false;
            }
            continue;
        }
        let json = response
            .headers()
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.contains("json"));
        let text = response
            .into_body()
            .with_config()
            .limit(MAX_HTTP_BODY)
            .read_to_string()
            .map_err(|e| EffectError::new(Code::AsEffect, format!("{url}: {e}")))?;
        let body = if json {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        } else {
            Value::String(text)
        };
        return Ok(json!({ "status": status, "body": body }));
    }
    Err(refuse(format!(
        "{url}: more than {MAX_REDIRECTS} redirects"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};

    /// A resolver that answers every name with one address.
    #[derive(Debug)]
    struct Fixed(std::net::SocketAddr);

    impl Resolver for Fixed {
        fn resolve(
            &self,
            _uri: &ureq::http::Uri,
            _config: &ureq::config::Config,
            _timeout: ureq::unversioned::transport::NextTimeout,
        ) -> Result<ResolvedSocketAddrs, ureq::Error> {
            let mut v = self.empty();
            v.push(self.0);
            Ok(v)
        }
    }

    fn resolve(addr: &str, named_internal: bool) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let r = OutwardResolver {
            inner: Fixed(addr.parse().expect("addr")),
            named_internal,
        };
        let uri: ureq::http::Uri = "http://api.example.com/x".parse().expect("uri");
        let config = ureq::config::Config::default();
        r.resolve(
            &uri,
            &config,
            ureq::unversioned::transport::NextTimeout::default(),
        )
    }

    #[test]
    fn a_name_that_leads_inside_the_machine_is_refused() {
        for inside in [
            "127.0.0.1:80",
            "127.3.4.5:80",
            "169.254.169.254:80",
            "0.0.0.0:80",
            "[::1]:80",
            "[fe80::1]:80",
            "[::ffff:127.0.0.1]:80",
            "[::ffff:169.254.169.254]:80",
            "100.100.100.200:80",
            "[fd00:ec2::254]:80",
        ] {
            assert!(resolve(inside, false).is_err(), "{inside}");
            assert!(resolve(inside, true).is_ok(), "{inside} named itself");
        }
        assert!(resolve("93.184.215.14:443", false).is_ok());
    }
}
