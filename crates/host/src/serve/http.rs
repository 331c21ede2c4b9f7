//! The HTTP side of `serve`: hyper's HTTP/1 server on a one-thread tokio runtime answers
//! `GET /metrics` from the last encoded exposition (so a scrape never waits for a collection,
//! and any number of scrapes at once cost one shared text), in OpenMetrics when the client asks
//! for it (Prometheus does) and in the classic text format otherwise. `GET /` says where the
//! metrics are; anything else is 404 (405 for other methods): the endpoint is read-only.
//!
//! Made for the network: a request body is never read (its `Content-Length` is not trusted, the
//! connection just is not reused), headers are capped at [`MAX_BUF`] (431 above), a client has
//! [`HEADER_TIMEOUT`] to send its headers — the first ones and every keep-alive request after
//! them — so idle and slow connections end, at most [`max_connections`] connections are open
//! at once (a new one past it closes the oldest, so a flood of idle connections cannot keep a
//! scraper out), and accept errors such as running out of file descriptors are waited out. Bytes that are not HTTP get a
//! 400 and a close. Only when the listener itself breaks does the server stop, and
//! [`Http::failure`] says why, so `serve` exits non-zero and its supervisor restarts it.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::exposition::{OPENMETRICS, TEXT};

/// The texts a scrape is answered with, replaced after each collection.
#[derive(Debug, Default)]
pub struct Texts {
    pub openmetrics: Bytes,
    pub classic: Bytes,
}

/// How long a client has to send a request's headers, from the moment the server waits for
/// them (a new connection, or the next request on a kept-alive one). A scraper sends them at
/// once; Prometheus's own scrape timeout is 10 s by default.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// The most a connection buffers (request line and headers): hyper's minimum. A scrape's
/// headers are a few hundred bytes.
pub(crate) const MAX_BUF: usize = 8 * 1024;

/// The longest wait after an accept error (out of file descriptors, of memory) before trying
/// again; the wait doubles from 10 ms up to this.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Consecutive accept errors of a kind that waiting does not cure after which the listener is
/// taken as broken.
const FATAL_AFTER: u32 = 1000;

/// The connections open at once: half the process's file-descriptor limit (the other half is
/// for the capture: tracefs buffers, KVM statistics fds, BPF maps), between 16 and 4096.
pub fn max_connections() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own; RLIMIT_NOFILE is a valid resource.
    #[allow(unsafe_code)]
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let soft = if ok {
        usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    (soft / 2).clamp(16, 4096)
}

/// A running server; [`Http::stop`] ends it.
pub struct Http {
    pub addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Http {
    /// Listens on `addr`, answering from `texts`.
    pub fn start(addr: SocketAddr, texts: Arc<RwLock<Texts>>) -> Result<Http, String> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the HTTP server: {e}"))?;
        let (shutdown, stopped) = watch::channel(false);
        let failure = Arc::new(Mutex::new(None));
        let failed = failure.clone();
        let thread = std::thread::Builder::new()
            .name("virtlens-http".into())
            .spawn(move || {
                let why = runtime.block_on(run(listener, texts, stopped));
                if let (Err(why), Ok(mut slot)) = (why, failed.lock()) {
                    *slot = Some(why);
                }
            })
            .map_err(|e| format!("cannot start the HTTP server: {e}"))?;
        Ok(Http {
            addr,
            shutdown,
            thread: Some(thread),
            failure,
        })
    }

    /// Why the server stopped answering on its own, once it has (the listener broke).
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Stops answering and waits for the server's thread.
    pub fn stop(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts until told to stop or the listener breaks; open connections end with the runtime.
async fn run(
    listener: std::net::TcpListener,
    texts: Arc<RwLock<Texts>>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let listener =
        tokio::net::TcpListener::from_std(listener).map_err(|e| format!("the listener: {e}"))?;
    let limit = max_connections();
    // The open connections, oldest first (ids only grow).
    let open: Arc<Mutex<BTreeMap<u64, AbortHandle>>> = Arc::default();
    let mut next_id = 0u64;
    let mut backoff = Duration::from_millis(10);
    let mut hard_errors = 0u32;
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => return Ok(()),
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = Duration::from_millis(10);
                hard_errors = 0;
                stream
            }
            Err(e) if passing(&e) => continue,
            Err(e) => {
                // Out of file descriptors or memory: the pending connection stays in the
                // backlog; wait for connections to end instead of spinning on the error.
                if !waitable(&e) {
                    hard_errors += 1;
                    if hard_errors >= FATAL_AFTER {
                        return Err(format!(
                            "the listener on {} keeps failing: {e}",
                            listener
                                .local_addr()
                                .map_or_else(|_| "?".to_string(), |a| a.to_string())
                        ));
                    }
                }
                tokio::select! {
                    _ = stop.changed() => return Ok(()),
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let id = next_id;
        next_id += 1;
        let texts = texts.clone();
        let done = open.clone();
        let task = tokio::spawn(async move {
            let service = service_fn(move |req| {
                let texts = texts.clone();
                async move { Ok::<_, Infallible>(answer(&req, &texts)) }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(MAX_BUF)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Ok(mut open) = done.lock() {
                open.remove(&id);
            }
        });
        if let Ok(mut open) = open.lock() {
            open.insert(id, task.abort_handle());
            // Full: the oldest connection goes (an idle or slow one, most likely: a scrape is
            // answered within milliseconds), so that a flood cannot keep scrapers out.
            while open.len() > limit {
                if let Some((_, oldest)) = open.pop_first() {
                    oldest.abort();
                }
            }
        }
    }
}

/// Errors of one connection that was gone before it was accepted: accept the next.
fn passing(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted
    ) || e.raw_os_error() == Some(libc::EPROTO)
}

/// Errors that pass when other connections end: out of file descriptors or memory.
fn waitable(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, body: impl Into<Bytes>, kind: &'static str) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

fn answer(req: &Request<Incoming>, texts: &RwLock<Texts>) -> Reply {
    const PLAIN: &str = "text/plain; charset=utf-8";
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    match (get, req.uri().path()) {
        (true, "/metrics") => {
            let open = req.headers().get_all(ACCEPT).iter().any(|v| {
                v.to_str()
                    .is_ok_and(|v| v.contains("application/openmetrics-text"))
            });
            let (body, kind) = match texts.read() {
                Ok(t) if open => (t.openmetrics.clone(), OPENMETRICS),
                Ok(t) => (t.classic.clone(), TEXT),
                Err(_) => (Bytes::new(), TEXT),
            };
            reply(StatusCode::OK, body, kind)
        }
        (true, "/") => reply(
            StatusCode::OK,
            "virtlens exporter: metrics at /metrics\n",
            PLAIN,
        ),
        (true, _) => reply(
            StatusCode::NOT_FOUND,
            "not found: metrics are at /metrics\n",
            PLAIN,
        ),
        (false, _) => {
            let mut r = reply(
                StatusCode::METHOD_NOT_ALLOWED,
                "read-only: only GET is answered\n",
                PLAIN,
            );
            r.headers_mut()
                .insert(hyper::header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        }
    }
}
