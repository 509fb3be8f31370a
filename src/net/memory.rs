//! Giving memory back to the system after a connection storm.
//!
//! glibc's malloc keeps freed memory in its arenas (one per thread that allocated, up to
//! 8 per core), so a broker that served thousands of connections would keep that RSS after
//! they closed. Once many connections have gone, the accept loop asks malloc to return
//! what it holds free.

/// Closes since the last trim (from the peak down to now) that make a trim worth its cost;
/// a trim walks every arena, a few milliseconds on a large heap.
const CLOSES_WORTH_A_TRIM: usize = 256;

/// Whether to trim now, given the most connections open since the last check and now.
pub(crate) fn worth_trimming(peak: usize, open: usize) -> bool {
    peak.saturating_sub(open) >= CLOSES_WORTH_A_TRIM && open <= peak / 2
}

/// Returns free heap memory to the system (glibc only; elsewhere nothing to do).
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks malloc's own free lists; it takes the arenas' locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_only_after_many_closes_that_halved_the_count() {
        assert!(worth_trimming(8000, 0));
        assert!(worth_trimming(1000, 500));
        assert!(!worth_trimming(1000, 501), "more than half still open");
        assert!(!worth_trimming(200, 0), "too few closes to be worth a trim");
        assert!(!worth_trimming(0, 0));
    }
}
