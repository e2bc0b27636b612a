//! Accepting connections for `keyless-host serve`, with deadlines a hostile client cannot stretch.
//!
//! - A request's headers must arrive within [`HEADER_TIMEOUT`]; the same clock closes a kept-alive
//!   connection that sends nothing more (hyper's header-read timeout covers both).
//! - At most [`MAX_CONNECTIONS`] connections are open (less when the file-descriptor limit is
//!   lower). At the cap, a new connection takes the place of the oldest one that has not sent a
//!   single request yet, so a flood of idle sockets cannot lock out the extension; when every
//!   connection is busy the new one is closed at once.
//! - Request bodies must arrive within [`BODY_TIMEOUT`] (see [`crate::serve`]).

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tower::ServiceExt;

/// How long a client may take to send a request's headers, or stay silent between requests.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The most connections open at once.
pub const MAX_CONNECTIONS: usize = 1024;

#[derive(Debug)]
struct Entry {
    /// Set once the connection has sent a whole request head.
    served: Arc<AtomicBool>,
    evict: Arc<Notify>,
}

/// The open connections, oldest first.
#[derive(Debug, Default)]
struct Registry {
    open: Mutex<BTreeMap<u64, Entry>>,
    next: AtomicU64,
    /// Idle connections closed at the cap so far.
    evicted: AtomicU64,
}

impl Registry {
    /// Registers a connection, making room at the cap. `None`: no room (all are busy).
    fn admit(&self, cap: usize) -> Option<(u64, Arc<AtomicBool>, Arc<Notify>)> {
        let mut open = self.open.lock().ok()?;
        if open.len() >= cap {
            let victim = open
                .iter()
                .find(|(_, e)| !e.served.load(Ordering::Relaxed))
                .map(|(id, _)| *id)?;
            if let Some(e) = open.remove(&victim) {
                e.evict.notify_one();
            }
            // A flood must not flood the log too: the 1st, 2nd, 4th, 8th… eviction is logged,
            // with the running total.
            let n = self.evicted.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    open = open.len() + 1,
                    evicted = n,
                    "connection cap reached: closing the oldest connections that sent no request"
                );
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let served = Arc::new(AtomicBool::new(false));
        let evict = Arc::new(Notify::new());
        open.insert(
            id,
            Entry {
                served: served.clone(),
                evict: evict.clone(),
            },
        );
        Some((id, served, evict))
    }

    fn leave(&self, id: u64) {
        if let Ok(mut open) = self.open.lock() {
            open.remove(&id);
        }
    }

    fn count(&self) -> usize {
        self.open.lock().map_or(0, |o| o.len())
    }
}

/// The connection cap on this machine: [`MAX_CONNECTIONS`], or less when the process may open
/// fewer files. The soft file limit is raised to the hard one first.
#[must_use]
pub fn connection_cap() -> usize {
    #[cfg(unix)]
    {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
            let have = getrlimit(Resource::RLIMIT_NOFILE).map_or(soft, |(s, _)| s);
            // Keep room for the database, pipes of running commands and the event stream.
            let room = usize::try_from(have.saturating_sub(128)).unwrap_or(MAX_CONNECTIONS);
            return room.clamp(16, MAX_CONNECTIONS);
        }
    }
    MAX_CONNECTIONS
}

/// Serves `app` on `listener` until `shutdown` resolves, then gives open connections up to five
/// seconds to finish.
///
/// # Errors
/// Never in practice: accept errors (such as running out of descriptors) are logged and retried.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let cap = connection_cap();
    let registry = Arc::new(Registry::default());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, open = registry.count(), "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some((id, served, evict)) = registry.admit(cap) else {
            // Every connection is in use: refuse this one rather than queue it without bound.
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            served.store(true, Ordering::Relaxed);
            app.clone().oneshot(req.map(axum::body::Body::new))
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .keep_alive(true);
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        let registry = registry.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = conn => {}
                () = evict.notified() => {}
            }
            registry.leave(id);
        });
    }
    drop(listener);
    // Requests in flight get a moment to answer (a cancelled batch's results); an event stream
    // a dashboard holds open never ends by itself, so it does not hold the exit longer.
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(Duration::from_millis(700)) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_evicts_the_oldest_connection_without_a_request() {
        let r = Registry::default();
        let (a, served_a, _) = r.admit(2).unwrap();
        let (_b, _, evict_b) = r.admit(2).unwrap();
        served_a.store(true, Ordering::Relaxed);
        let (_c, served_c, _) = r.admit(2).unwrap();
        // b sent nothing, so b made room; a (serving) stays.
        assert_eq!(r.count(), 2);
        assert!(r.open.lock().unwrap().contains_key(&a));
        drop(evict_b);
        served_c.store(true, Ordering::Relaxed);
        // Everyone is busy: no room.
        assert!(r.admit(2).is_none());
        r.leave(a);
        assert!(r.admit(2).is_some());
    }
}
