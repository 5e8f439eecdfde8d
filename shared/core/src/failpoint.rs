//! Fault injection points (D-39): named places where a test can make a port fail.
//!
//! A point is compiled in only when the crate that names it is built with its own
//! `failpoints` feature (the `fail` crate's points, off in every shipped build). A test
//! arms one with `fail::cfg(name, "return")` (or a count, `"1*return"`); unarmed, a point
//! costs one map lookup.

/// Whether the named point is armed to fire now: `fault!("store.commit.before")`. The
/// name may be any `&str` expression (it is evaluated only in builds with the point).
/// Without the calling crate's `failpoints` feature this is `false` at compile time.
#[macro_export]
macro_rules! fault {
    ($name:expr) => {{
        #[cfg(feature = "failpoints")]
        let fired = ::fail::eval($name, |_| ()).is_some();
        #[cfg(not(feature = "failpoints"))]
        let fired = false;
        fired
    }};
}

/// The argument an armed point carries (`"return(250)"` gives `Some("250")`), or `None`
/// when it is not armed or carries none; always `None` without the `failpoints` feature.
#[macro_export]
macro_rules! fault_arg {
    ($name:expr) => {{
        #[cfg(feature = "failpoints")]
        let arg: Option<String> = ::fail::eval($name, |arg| arg).flatten();
        #[cfg(not(feature = "failpoints"))]
        let arg: Option<String> = None;
        arg
    }};
}

/// What an injected fault says, naming its point: logs show it, and tests check that no
/// user ever sees it.
pub fn injected(point: &str) -> String {
    format!("injected fault at {point}")
}

/// A store's injected fault: unavailable, as a write that could not be made (or whose
/// answer was lost) is.
pub fn store_fault(point: &str) -> crate::ports::store::StoreError {
    crate::ports::store::StoreError::Unavailable(injected(point))
}

/// Awaits one store write between its two points, `<point>.before` (nothing is written)
/// and `<point>.after` (written, but the caller hears of a failure, as when an answer is
/// lost on the way back): `store_write!("store.commit", commit(...))`.
#[macro_export]
macro_rules! store_write {
    ($point:literal, $write:expr) => {{
        if $crate::fault!(concat!($point, ".before")) {
            Err($crate::failpoint::store_fault(concat!($point, ".before")))
        } else {
            let written = $write.await;
            if written.is_ok() && $crate::fault!(concat!($point, ".after")) {
                Err($crate::failpoint::store_fault(concat!($point, ".after")))
            } else {
                written
            }
        }
    }};
}
