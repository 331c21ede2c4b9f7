//! The CPU kernel: integer search in the spirit of a chess benchmark — counting every way to
//! place N queens on an N×N board, by depth-first search over bitboards (the classic
//! bitmask backtracking). Pure ring-3 integer work with branches and a small stack: no memory
//! traffic beyond L1, no system calls, the same answer every run (checked against the known
//! counts), so in a VM it measures what the CPU gives the guest, nothing else.

use std::time::Instant;

use super::Probe;
use crate::schema::{Better, Check, Measure};

/// Board size of the benchmark.
pub(crate) const N: u32 = 12;

/// The number of solutions for boards 1..=14 (OEIS A000170).
pub const SOLUTIONS: [u64; 15] = [
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596,
];

/// Counts the placements of `n` (≤ 14) queens.
pub fn queens(n: u32) -> u64 {
    fn place(all: u32, cols: u32, d1: u32, d2: u32) -> u64 {
        if cols == all {
            return 1;
        }
        let mut free = !(cols | d1 | d2) & all;
        let mut count = 0;
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            count += place(all, cols | bit, (d1 | bit) << 1, (d2 | bit) >> 1);
        }
        count
    }
    let n = n.min(14);
    place((1u32 << n) - 1, 0, 0, 0)
}

/// Times solves of the N-queens board.
pub(super) struct Search {
    /// Solves per sample.
    reps: u32,
    got: u64,
}

impl Search {
    pub(super) fn new(quick: bool) -> Self {
        Search {
            reps: if quick { 2 } else { 8 },
            got: 0,
        }
    }
}

impl Probe for Search {
    fn measures(&self) -> Vec<Measure> {
        vec![
            Measure::new(
                "cpu.search",
                &format!("one solve of the {N}-queens count (integer depth-first search)"),
                "ms",
                Better::Lower,
                Vec::new(),
            )
            .with("kernel", format!("{N}-queens, bitboard backtracking")),
        ]
    }

    fn sample(&mut self) -> Result<Vec<f64>, String> {
        let t = Instant::now();
        let mut last = 0;
        for _ in 0..self.reps {
            last = queens(std::hint::black_box(N));
        }
        let ms = t.elapsed().as_secs_f64() * 1e3 / f64::from(self.reps);
        self.got = last;
        let want = SOLUTIONS[N as usize];
        if last != want {
            return Err(format!("the {N}-queens count came out {last}, not {want}"));
        }
        Ok(vec![ms])
    }

    fn check(&self) -> Option<Check> {
        let expected = SOLUTIONS[N as usize];
        Some(Check {
            expected,
            got: self.got,
            ok: self.got == expected,
        })
    }
}
