//! Measurement helpers: percentiles, process CPU time and resident memory from /proc.

use std::time::Duration;

use serde::Serialize;

/// A distribution in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Summary {
    pub(crate) n: usize,
    pub(crate) mean_ms: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p90_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) min_ms: f64,
    pub(crate) max_ms: f64,
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = k.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (k - lo as f64)
}

impl Summary {
    pub(crate) fn of(xs: &[Duration]) -> Summary {
        let mut ms: Vec<f64> = xs.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        let mean = if ms.is_empty() {
            0.0
        } else {
            ms.iter().sum::<f64>() / ms.len() as f64
        };
        Summary {
            n: ms.len(),
            mean_ms: round(mean, 4),
            p50_ms: round(pct(&ms, 50.0), 4),
            p90_ms: round(pct(&ms, 90.0), 4),
            p99_ms: round(pct(&ms, 99.0), 4),
            min_ms: round(ms.first().copied().unwrap_or(0.0), 4),
            max_ms: round(ms.last().copied().unwrap_or(0.0), 4),
        }
    }
}

/// CPU time of this process so far (all threads, user + system), from the kernel's
/// per-process CPU clock.
pub(crate) fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

/// Two fields of a process's `/proc/<pid>/status`, given in kB, in MiB.
fn status_mib(pid: u32, a: &str, b: &str) -> Option<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(':'))
            })
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| round(kb / 1024.0, 1))
    };
    Some((field(a)?, field(b)?))
}

/// `VmRSS` and `VmHWM` (peak) of a process, in MiB.
pub(crate) fn rss_mib(pid: u32) -> Option<(f64, f64)> {
    status_mib(pid, "VmRSS", "VmHWM")
}

/// `RssAnon` and `RssFile` of a process, in MiB: its own memory, and the pages of files
/// it maps (its code) that it has touched.
pub(crate) fn rss_parts_mib(pid: u32) -> Option<(f64, f64)> {
    status_mib(pid, "RssAnon", "RssFile")
}

/// Resets a process's peak resident set (`VmHWM`) to its resident set now (Linux's
/// `clear_refs`, value 5): a peak read afterwards is the peak since. False when the kernel
/// refused, and the peak is the process's whole life's.
pub(crate) fn reset_peak_rss(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// CPU time a process has used so far (all threads, user + system), from
/// `/proc/<pid>/stat`, in the kernel's 10 ms ticks (`USER_HZ` is 100 on Linux).
pub(crate) fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses: state is the 3rd field, utime the 14th.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 10))
}

/// Median of a list.
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    round(pct(&v, 50.0), 4)
}

/// Median, minimum, maximum and the values, as the reference reports a figure over runs.
pub(crate) fn spread(xs: &[f64]) -> serde_json::Value {
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    serde_json::json!({
        "median": median(xs),
        "min": round(if xs.is_empty() { 0.0 } else { min }, 4),
        "max": round(if xs.is_empty() { 0.0 } else { max }, 4),
        "values": xs.iter().map(|x| round(*x, 4)).collect::<Vec<_>>(),
    })
}

/// The `p`th percentile (0–100, linear between ranks) of a list, rounded to 4 digits.
pub(crate) fn percentile(xs: &[f64], p: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    round(pct(&v, p), 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reports_its_memory_by_kind() {
        let pid = std::process::id();
        let (rss, peak) = rss_mib(pid).unwrap();
        let (anon, file) = rss_parts_mib(pid).unwrap();
        assert!(rss > 0.0 && peak >= rss, "{rss} {peak}");
        assert!(anon > 0.0 && file > 0.0, "{anon} {file}");
    }

    #[test]
    fn this_process_reports_its_cpu_and_its_peak_can_be_reset() {
        let pid = std::process::id();
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {}
        assert!(cpu_of(pid).unwrap() >= Duration::from_millis(20));
        if reset_peak_rss(pid) {
            let (rss, peak) = rss_mib(pid).unwrap();
            assert!(peak - rss < 1.0, "{rss} {peak}");
        }
    }
}
