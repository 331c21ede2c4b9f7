//! `virtlens top [--vm …] [--interval S] [--once] [--json] [--no-bpf]`: per-VM rates of exit
//! reasons and events (counted in the kernel with BPF where it can be had, else from the trace
//! buffer), and per VM and vCPU the ready % (runnable, not running) of its threads, refreshed in
//! place on a terminal (`q` quits; the terminal mode is restored on every exit), one screen (or
//! JSON object) per interval in pipes; `--once` prints one interval and exits.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use virtlens_core::decode::Decoder;
use virtlens_core::render::TopScreen;
use virtlens_core::render::TopView;
use virtlens_host::Sampler;
use virtlens_host::bpf::Limits;
use virtlens_host::bpf::Source;
use virtlens_host::capture::RawTerminal;
use virtlens_host::capture::{ReadyFd, StopSignals, top_view};

use super::record::options;
use crate::args::TopArgs;
use crate::output;

/// How often the capture is read and keys are looked at while waiting.
const SLICE: Duration = Duration::from_millis(50);

pub fn run(a: &TopArgs) -> anyhow::Result<ExitCode> {
    let ready_fd = a.live.ready_fd.map(ReadyFd::take).transpose()?;
    let interval = Duration::from_secs_f64(a.interval);
    let signals = StopSignals::install().context("installing the signal handlers")?;
    let mut watch = Watch::start(a)?;
    if let Some(fd) = ready_fd {
        fd.signal();
    }
    let screen = !a.once && !a.json && std::io::stdout().is_terminal();
    let term = if screen { RawTerminal::enter() } else { None };
    let result = (|| -> anyhow::Result<()> {
        let mut first = true;
        loop {
            let until = Instant::now() + interval;
            let mut quit = false;
            while Instant::now() < until && !signals.stopped() {
                watch.poll()?;
                let slice = SLICE.min(until.saturating_duration_since(Instant::now()));
                match &term {
                    Some(t) => {
                        if let Some(b'q' | b'Q') = t.key(slice) {
                            quit = true;
                            break;
                        }
                    }
                    None => std::thread::sleep(slice),
                }
            }
            if quit || (signals.stopped() && !first) {
                return Ok(());
            }
            let view = watch.interval()?;
            let shown = TopScreen {
                view: &view,
                rows: a.rows,
            };
            if a.json {
                output::try_print(&output::rendered(&shown, true))?;
            } else {
                let text = output::rendered(&shown, false);
                if screen {
                    output::try_print(&format!("\x1b[H\x1b[2J{text}(q quits)\n"))?;
                } else {
                    let sep = if first { "" } else { "\n" };
                    output::try_print(&format!("{sep}{text}"))?;
                }
            }
            first = false;
            if a.once || signals.stopped() {
                return Ok(());
            }
        }
    })();
    drop(term);
    let stopped = watch.stop();
    result?;
    stopped?;
    Ok(ExitCode::SUCCESS)
}

/// `top --once` without a terminal or signals: one interval of `--interval` seconds (ended
/// early when `stop` is set), as `top --once --json` prints it.
pub fn snapshot(a: &TopArgs, stop: &AtomicBool) -> anyhow::Result<String> {
    let until = Instant::now() + Duration::from_secs_f64(a.interval);
    let mut watch = Watch::start(a)?;
    let result = (|| -> anyhow::Result<String> {
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            watch.poll()?;
            std::thread::sleep(SLICE.min(until.saturating_duration_since(Instant::now())));
        }
        let view = watch.interval()?;
        Ok(output::rendered(
            &TopScreen {
                view: &view,
                rows: a.rows,
            },
            true,
        ))
    })();
    let stopped = watch.stop();
    let json = result?;
    stopped?;
    Ok(json)
}

/// A running watch: the exits counted (in the kernel with BPF where it can be had, else from
/// the trace buffer; the notes say) and the vCPU threads' states sampled.
struct Watch {
    live: Source,
    notes: Vec<String>,
    sched: Sampler,
    decoder: Decoder,
    started: Instant,
}

impl Watch {
    fn start(a: &TopArgs) -> anyhow::Result<Watch> {
        let opts = options(&a.live)?;
        let (live, notes) = Source::start(&opts, Limits::default(), !a.no_bpf)?;
        let sched =
            Sampler::for_selection(opts.pid, opts.vm.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
        Ok(Watch {
            live,
            notes,
            sched,
            decoder: Decoder::builtin(),
            started: Instant::now(),
        })
    }

    fn poll(&mut self) -> anyhow::Result<()> {
        self.live.poll()?;
        self.sched.poll();
        Ok(())
    }

    /// The view of the interval that ends now (the start's notes go with the first one).
    fn interval(&mut self) -> anyhow::Result<TopView> {
        let (mut iv, _) = self.live.take()?;
        iv.profile
            .warnings
            .extend(std::mem::take(&mut self.notes).into_iter().map(|message| {
                virtlens_core::profile::Note {
                    line: None,
                    message,
                }
            }));
        iv.profile
            .warnings
            .extend(
                self.sched
                    .notes()
                    .into_iter()
                    .map(|message| virtlens_core::profile::Note {
                        line: None,
                        message,
                    }),
            );
        iv.profile.sched = Some(self.sched.close_interval());
        Ok(top_view(
            &iv,
            &self.decoder,
            self.started.elapsed().as_secs_f64(),
        ))
    }

    fn stop(self) -> anyhow::Result<()> {
        Ok(self.live.stop()?)
    }
}
