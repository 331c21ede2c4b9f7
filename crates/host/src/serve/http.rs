//! The HTTP side of `serve`: a tiny_http server whose worker threads answer `GET /metrics`
//! from the last encoded exposition (so a scrape never waits for a collection, and any number
//! of scrapes at once cost one shared text), in OpenMetrics when the client asks for it
//! (Prometheus does) and in the classic text format otherwise. `GET /` says where the metrics
//! are; anything else is 404 (405 for other methods): the endpoint is read-only.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, Server};

use super::exposition::{OPENMETRICS, TEXT};

/// The texts a scrape is answered with, replaced after each collection.
#[derive(Debug, Default)]
pub struct Texts {
    pub openmetrics: Arc<String>,
    pub classic: Arc<String>,
}

/// A running server; [`Http::stop`] ends its threads.
pub struct Http {
    server: Arc<Server>,
    workers: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    pub addr: SocketAddr,
}

/// How long a worker waits for a request before looking at the stop flag.
const POLL: Duration = Duration::from_millis(100);

impl Http {
    /// Listens on `addr` with `workers` threads answering from `texts`.
    pub fn start(
        addr: SocketAddr,
        workers: usize,
        texts: Arc<RwLock<Texts>>,
    ) -> Result<Http, String> {
        let server = Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| format!("cannot listen on {addr}: not an IP socket"))?;
        let server = Arc::new(server);
        let stop = Arc::new(AtomicBool::new(false));
        let workers = (0..workers.max(1))
            .map(|_| {
                let (server, texts, stop) = (server.clone(), texts.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(Some(req)) = server.recv_timeout(POLL) {
                            answer(req, &texts);
                        }
                    }
                })
            })
            .collect();
        Ok(Http {
            server,
            workers,
            stop,
            addr,
        })
    }

    /// Stops answering and joins the workers.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.server.unblock();
        for w in self.workers {
            let _ = w.join();
        }
    }
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn answer(req: Request, texts: &RwLock<Texts>) {
    let path = req.url().split('?').next().unwrap_or("").to_string();
    let response = match (req.method(), path.as_str()) {
        (Method::Get | Method::Head, "/metrics") => {
            let open = req.headers().iter().any(|h| {
                h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
            });
            let (body, kind) = match texts.read() {
                Ok(t) if open => (t.openmetrics.clone(), OPENMETRICS),
                Ok(t) => (t.classic.clone(), TEXT),
                Err(_) => (Arc::new(String::new()), TEXT),
            };
            // With its length, not chunked: the text is whole already.
            let r = Response::from_string(body.as_str()).with_chunked_threshold(usize::MAX);
            match header("Content-Type", kind) {
                Some(h) => r.with_header(h),
                None => r,
            }
        }
        (Method::Get | Method::Head, "/") => {
            Response::from_string("virtlens exporter: metrics at /metrics\n")
        }
        (Method::Get | Method::Head, _) => {
            Response::from_string("not found: metrics are at /metrics\n").with_status_code(404)
        }
        _ => Response::from_string("read-only: only GET is answered\n").with_status_code(405),
    };
    let _ = req.respond(response);
}
