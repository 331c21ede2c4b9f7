//! Tests of one suite run as threads of one process (each crate has one test binary), so a test
//! that must not overlap with some others says so here:
//!
//! - [`shared`]: the test does something the [`exclusive`] ones must not see meanwhile (runs a
//!   micro-VM or a virtlens process, captures, loads the machine). Tests that share overlap with
//!   one another.
//! - [`exclusive`]: the test needs the machine to itself among the tests that take either
//!   guard: it compares exit counts that a busy host moves, crowds the CPUs, counts this
//!   process's vCPU threads, or looks at what a killed virtlens left before another virtlens
//!   run removes it.
//! - [`in_own_process`]: the test's assertions are about the whole process (its file
//!   descriptors, its threads): it runs again alone, in a process of its own.
//!
//! The guards are one lock for the whole process (a read-write lock: shared readers, one
//! exclusive writer), not poisoned by a test that failed while holding it, and re-entrant: a
//! thread that holds the machine gets one more guard of the same hold when it asks again (a test
//! that took [`exclusive`] and calls a helper that takes [`shared`] keeps its exclusive hold),
//! and the hold ends with the last of them, whatever the order they are dropped in. A guard
//! stays in its thread: a thread a test starts takes its own.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::process::{Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static MACHINE: RwLock<()> = RwLock::new(());

/// What this thread holds of [`MACHINE`] (kept for its drop, which releases it).
#[allow(dead_code)]
enum Hold {
    Shared(RwLockReadGuard<'static, ()>),
    Exclusive(RwLockWriteGuard<'static, ()>),
}

thread_local! {
    /// This thread's hold and how many of its [`Guard`]s are alive; the hold ends with the last.
    static HELD: RefCell<(Option<Hold>, usize)> = const { RefCell::new((None, 0)) };
}

/// A hold on the machine, released when the last guard of its thread is dropped (in any order).
#[must_use = "the hold ends when the guard is dropped"]
#[derive(Debug)]
pub struct Guard(PhantomData<*const ()>);

impl Drop for Guard {
    fn drop(&mut self) {
        let released = HELD.with_borrow_mut(|(held, n)| {
            *n -= 1;
            if *n == 0 { held.take() } else { None }
        });
        drop(released);
    }
}

/// `Some(guard)` when this thread holds the machine already (and exclusively, if `exclusive`).
#[track_caller]
fn again(exclusive: bool) -> Option<Guard> {
    HELD.with_borrow_mut(|(held, n)| {
        match held {
            None => return None,
            Some(Hold::Shared(_)) if exclusive => {
                panic!("exclusive() in a test that holds shared(): take exclusive() first")
            }
            Some(_) => *n += 1,
        }
        Some(Guard(PhantomData))
    })
}

fn hold(h: Hold) -> Guard {
    HELD.with_borrow_mut(|(held, n)| {
        *held = Some(h);
        *n = 1;
    });
    Guard(PhantomData)
}

/// Holds the machine together with the other tests that share it; waits while a test holds it
/// exclusively.
pub fn shared() -> Guard {
    again(false).unwrap_or_else(|| {
        hold(Hold::Shared(
            MACHINE.read().unwrap_or_else(|e| e.into_inner()),
        ))
    })
}

/// Holds the machine alone: waits until no test holds it, and keeps every test that asks for
/// [`shared`] or [`exclusive`] waiting until the guard is dropped.
#[track_caller]
pub fn exclusive() -> Guard {
    again(true).unwrap_or_else(|| {
        hold(Hold::Exclusive(
            MACHINE.write().unwrap_or_else(|e| e.into_inner()),
        ))
    })
}

/// Whether no test holds the machine now (shared or exclusive); it does not wait.
pub fn is_free() -> bool {
    MACHINE.try_write().is_ok()
}

/// Set in the process [`in_own_process`] starts: the name of the test it runs.
const ALONE: &str = "VIRTLENS_TEST_ALONE";

/// Whether the calling test runs its body here. A test whose assertions are about the whole
/// process starts with `if !virtlens_testkit::in_own_process() { return; }` (after its
/// [`require`](crate::require)). In the suite's process this runs the same test again alone in
/// a new process of the same test binary (`--exact NAME --test-threads=1`), fails if it failed
/// there (or did not run), and returns false; in that new process it returns true.
#[track_caller]
pub fn in_own_process() -> bool {
    let thread = std::thread::current();
    let Some(name) = thread.name().filter(|n| *n != "main") else {
        // The test runs on the harness's main thread: one test at a time already.
        return true;
    };
    if std::env::var_os(ALONE).is_some_and(|v| v == name) {
        return true;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => panic!("{name}: the test binary: {e}"),
    };
    let out = match Command::new(&exe)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(ALONE, name)
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("{name}: running {} again: {e}", exe.display()),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        out.status.success() && stdout.contains(" 1 passed"),
        "{name} in a process of its own: {}\n{stdout}{stderr}",
        out.status
    );
    false
}
