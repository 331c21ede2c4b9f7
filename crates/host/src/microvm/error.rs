//! Why a micro-VM could not be built or run: every variant says which step failed and, for a
//! guest that misbehaved, where it was.

use std::time::Duration;

/// The error type of [`super::MicroVm`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A KVM ioctl (or the open of /dev/kvm) failed.
    #[error("{op} failed: {source}")]
    Kvm {
        op: &'static str,
        #[source]
        source: kvm_ioctls::Error,
    },
    /// Guest memory could not be mapped, or a load did not fit into it.
    #[error("guest memory: {0}")]
    Memory(String),
    /// A guest program could not be assembled.
    #[error("guest assembly: {0}")]
    Assemble(String),
    /// The watchdog could not be set up (signal handler, thread).
    #[error("watchdog set-up: {0}")]
    Watchdog(String),
    /// One `KVM_RUN` did not return within the watchdog time: the guest hangs (e.g. a VMCALL
    /// on a PVM host spins in the kernel forever).
    #[error("guest hung: KVM_RUN did not return within {limit:?} (guest rip {rip:#x})")]
    Hung { limit: Duration, rip: u64 },
    /// The guest took an exception; its stub reported the vector and where it happened
    /// (`cs:ip` from the exception frame, and the error code for vectors that push one).
    #[error("guest exception #{vector} ({}) at {cs:#06x}:{ip:#x}{}", exception_name(*.vector),
        error_code.map(|c| format!(" (error code {c:#x})")).unwrap_or_default())]
    GuestException {
        vector: u8,
        cs: u16,
        ip: u64,
        error_code: Option<u64>,
    },
    /// The guest shut down (a triple fault).
    #[error("guest shut down (triple fault) at rip {rip:#x}")]
    Shutdown { rip: u64 },
    /// KVM_EXIT_INTERNAL_ERROR, with the suberror (1 = emulation failure) and its data words.
    #[error("KVM internal error: suberror {suberror}, data {data:#x?} (guest rip {rip:#x})")]
    Internal {
        suberror: u32,
        data: Vec<u64>,
        rip: u64,
    },
    /// KVM_EXIT_FAIL_ENTRY: the hardware refused to enter the guest.
    #[error("VM entry failed: hardware reason {reason:#x} on host CPU {cpu}")]
    FailEntry { reason: u64, cpu: u32 },
    /// This KVM does not offer what the VM was asked to have (a capability, a hypercall).
    #[error("not offered by this KVM: {0}")]
    Unsupported(String),
    /// An exit this micro-VM does not handle.
    #[error("unexpected exit {exit} (guest rip {rip:#x})")]
    UnexpectedExit { exit: String, rip: u64 },
}

impl From<iced_x86::IcedError> for Error {
    fn from(e: iced_x86::IcedError) -> Self {
        Error::Assemble(e.to_string())
    }
}

impl Error {
    /// A failed KVM operation.
    pub(crate) fn kvm(op: &'static str) -> impl FnOnce(kvm_ioctls::Error) -> Error {
        move |source| Error::Kvm { op, source }
    }
}

/// The mnemonic of an x86 exception vector (`GP` for 13), or `?` for others.
pub fn exception_name(vector: u8) -> &'static str {
    const NAMES: [&str; 22] = [
        "DE", "DB", "NMI", "BP", "OF", "BR", "UD", "NM", "DF", "CSO", "TS", "NP", "SS", "GP", "PF",
        "?", "MF", "AC", "MC", "XM", "VE", "CP",
    ];
    NAMES.get(usize::from(vector)).copied().unwrap_or("?")
}
