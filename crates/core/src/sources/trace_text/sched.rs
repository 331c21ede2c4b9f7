//! The scheduler's events as trace text prints them, for the timeline's running / ready /
//! sleeping strips of the vCPU threads (include/trace/events/sched.h `TP_printk`, and the
//! shorter form of libtraceevent's sched plugins that perf script and trace-cmd print):
//!
//! | event | text |
//! |---|---|
//! | `sched_switch` | `prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s next_pid=%d next_prio=%d` |
//! | | plugin: `%s:%d [%d] %s ==> %s:%d [%d]` (comm:pid [prio] state) |
//! | `sched_wakeup`, `sched_wakeup_new` | `comm=%s pid=%d prio=%d target_cpu=%03d` (older: `success=%d` before it) |
//! | | plugin: `%s:%d [%d] success=%d CPU:%03d` |
//!
//! A comm may hold spaces (`CPU 0/KVM`): fields are found by their names, from the right.

use super::fields::dec32;
use crate::events::EventKind;

/// `sched_switch`'s text as an event; `None` when it has neither shape.
pub(super) fn switch(text: &str) -> Option<EventKind<'static>> {
    let (prev, next) = text.split_once(" ==> ")?;
    if let Some(at) = prev.rfind(" prev_state=") {
        let state = &prev[at + 12..];
        let prev_tid = dec32(&prev[prev.rfind(" prev_pid=")? + 10..])?;
        let next_tid = dec32(&next[next.rfind(" next_pid=")? + 10..])?;
        return Some(EventKind::SchedSwitch {
            prev: prev_tid,
            prev_runnable: runnable(state),
            next: next_tid,
        });
    }
    let (task, state) = prev.trim_end().rsplit_once(' ')?;
    Some(EventKind::SchedSwitch {
        prev: plugin_pid(task)?,
        prev_runnable: runnable(state),
        next: plugin_pid(next)?,
    })
}

/// `sched_wakeup`'s (or `sched_wakeup_new`'s) text as an event.
pub(super) fn wakeup<'a>(name: &'a str, text: &str) -> Option<EventKind<'a>> {
    let tid = match text.rfind(" pid=") {
        Some(at) => dec32(&text[at + 5..])?,
        None => plugin_pid(text)?,
    };
    Some(EventKind::SchedWakeup { name, tid })
}

/// `R` and `R+` (preempted) leave the thread runnable; every other state (`S`, `D`, `T`, …)
/// has it blocked. The kernel prints `R+` since 4.14 and `R` before.
fn runnable(state: &str) -> bool {
    matches!(state.trim(), "R" | "R+")
}

/// The pid of the plugins' `comm:pid [prio]`.
fn plugin_pid(task: &str) -> Option<u32> {
    let task = match task.rfind(" [") {
        Some(i) => &task[..i],
        None => task.trim_end(),
    };
    let (_, pid) = task.rsplit_once(':')?;
    dec32(pid).filter(|_| pid.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_of_both_events() {
        let sw = |prev, prev_runnable, next| {
            Some(EventKind::SchedSwitch {
                prev,
                prev_runnable,
                next,
            })
        };
        assert_eq!(
            switch(
                "prev_comm=CPU 0/KVM prev_pid=4242 prev_prio=120 prev_state=R+ ==> \
                 next_comm=swapper/3 next_pid=0 next_prio=120"
            ),
            sw(4242, true, 0)
        );
        assert_eq!(
            switch(
                "prev_comm=kworker/1:1 prev_pid=77 prev_prio=120 prev_state=S ==> \
                 next_comm=CPU 1/KVM next_pid=4243 next_prio=120"
            ),
            sw(77, false, 4243)
        );
        assert_eq!(
            switch("CPU 0/KVM:4242 [120] D ==> swapper/0:0 [120]"),
            sw(4242, false, 0)
        );
        assert_eq!(
            wakeup(
                "sched_wakeup",
                "comm=CPU 0/KVM pid=4242 prio=120 target_cpu=003"
            ),
            Some(EventKind::SchedWakeup {
                name: "sched_wakeup",
                tid: 4242
            })
        );
        assert_eq!(
            wakeup("sched_wakeup", "CPU 0/KVM:4242 [120] success=1 CPU:003"),
            Some(EventKind::SchedWakeup {
                name: "sched_wakeup",
                tid: 4242
            })
        );
        assert_eq!(switch("prev_comm=a prev_pid=x ==> b"), None);
        assert_eq!(wakeup("sched_wakeup", "nothing here"), None);
    }
}
