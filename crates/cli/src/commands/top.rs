//! `virtlens top [--vm …] [--interval S] [--once] [--json] [--no-bpf]`: per-VM rates of exit
//! reasons and events (counted in the kernel with BPF where it can be had, else from the trace
//! buffer), and per VM and vCPU the ready % (runnable, not running) of its threads, refreshed in
//! place on a terminal (`q` quits; the terminal mode is restored on every exit), one screen (or
//! JSON object) per interval in pipes; `--once` prints one interval and exits.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use virtlens_core::decode::Decoder;
use virtlens_core::render::TopScreen;
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
    let opts = options(&a.live)?;
    let signals = StopSignals::install().context("installing the signal handlers")?;
    // Counted in the kernel where BPF can be had, else from the trace buffer (the notes say).
    let (mut live, mut notes) = Source::start(&opts, Limits::default(), !a.no_bpf)?;
    let mut sched =
        Sampler::for_selection(opts.pid, opts.vm.as_deref()).map_err(|e| anyhow::anyhow!(e))?;
    if let Some(fd) = ready_fd {
        fd.signal();
    }
    let screen = !a.once && !a.json && std::io::stdout().is_terminal();
    let term = if screen { RawTerminal::enter() } else { None };
    let decoder = Decoder::builtin();
    let started = Instant::now();
    let result = (|| -> anyhow::Result<()> {
        let mut first = true;
        loop {
            let until = Instant::now() + interval;
            let mut quit = false;
            while Instant::now() < until && !signals.stopped() {
                live.poll()?;
                sched.poll();
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
            let (mut iv, _) = live.take()?;
            iv.profile
                .warnings
                .extend(std::mem::take(&mut notes).into_iter().map(|message| {
                    virtlens_core::profile::Note {
                        line: None,
                        message,
                    }
                }));
            iv.profile.sched = Some(sched.close_interval());
            let view = top_view(&iv, &decoder, started.elapsed().as_secs_f64());
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
    let stopped = live.stop();
    result?;
    stopped?;
    Ok(ExitCode::SUCCESS)
}
