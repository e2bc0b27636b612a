//! When a thread has grown long enough that keyless suggests continuing in a new chat.
//!
//! Invariant: the suggestion never stops or changes the loop; it is shown once when the thread
//! passes the adapter's `long_thread_chars`, and again only after it grew by half that much more.

/// Whether to suggest a new chat now: `chars` is everything sent and read in this chat so far,
/// `suggested_at` the size at the last suggestion (0: none yet), `limit` the adapter's
/// `long_thread_chars` (0: never).
#[must_use]
pub fn suggest_new_chat(chars: u64, suggested_at: u64, limit: u32) -> bool {
    let limit = u64::from(limit);
    limit > 0
        && chars >= limit
        && (suggested_at == 0 || chars >= suggested_at.saturating_add((limit / 2).max(1)))
}

#[cfg(test)]
mod tests {
    use super::suggest_new_chat;

    #[test]
    fn a_long_thread_is_suggested_once_then_after_half_as_much_again() {
        assert!(!suggest_new_chat(99_999, 0, 100_000));
        assert!(suggest_new_chat(100_000, 0, 100_000));
        // Suggested at 120,000: quiet until 170,000.
        assert!(!suggest_new_chat(169_999, 120_000, 100_000));
        assert!(suggest_new_chat(170_000, 120_000, 100_000));
        // An adapter without a size never suggests.
        assert!(!suggest_new_chat(u64::MAX, 0, 0));
        assert!(suggest_new_chat(u64::MAX, u64::MAX - 1, 2));
        assert!(!suggest_new_chat(u64::MAX - 1, u64::MAX - 1, 4));
        // A mark of 1 (a user's override) still waits for the thread to grow between two.
        assert!(suggest_new_chat(10, 0, 1));
        assert!(!suggest_new_chat(10, 10, 1));
        assert!(suggest_new_chat(11, 10, 1));
    }
}
