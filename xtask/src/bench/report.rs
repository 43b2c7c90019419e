//! Presenting results: the table (terminal and `BENCHMARKS.md`), the `--json` lines, the
//! machine description and the rewrite of the recorded section of `BENCHMARKS.md`.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::stats::Summary;

/// Marks the start of the section `--record` rewrites.
pub const BEGIN_MARKER: &str = "<!-- bench:begin -->";
/// Marks its end.
pub const END_MARKER: &str = "<!-- bench:end -->";

/// One measured (workload, threads) pair.
pub struct Row {
    /// Workload id.
    pub id: &'static str,
    /// Thread count.
    pub threads: usize,
    /// What one iteration is.
    pub unit_per_iter: &'static str,
    /// Our measurement, or the error that stopped it.
    pub ours: Result<Summary, String>,
    /// PyTorch's median seconds per iteration, if it ran.
    pub pytorch_median_s: Option<f64>,
}

impl Row {
    /// Ours / PyTorch, when both exist.
    pub fn ratio(&self) -> Option<f64> {
        match (&self.ours, self.pytorch_median_s) {
            (Ok(s), Some(p)) if p > 0.0 => Some(s.median_s / p),
            _ => None,
        }
    }
}

/// A duration in seconds with three significant digits in ns, µs, ms or s.
pub fn format_seconds(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return format!("{s}");
    }
    let (v, unit) = if s < 1e-6 {
        (s * 1e9, "ns")
    } else if s < 1e-3 {
        (s * 1e6, "µs")
    } else if s < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    // Rounding can carry into the next unit's range (999.96 ns -> "1000 ns"); that is fine.
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// A ratio with at least two significant digits (`0.16`, `0.016`, `12.5`).
pub fn format_ratio(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The results as a Markdown table, columns padded so it also reads well in a terminal.
pub fn render_table(rows: &[Row]) -> String {
    let header = ["workload", "threads", "ours (median)", "ours p10–p90", "PyTorch (median)", "ours / PyTorch"];
    let mut cells: Vec<[String; 6]> = Vec::with_capacity(rows.len());
    for r in rows {
        let (median, spread) = match &r.ours {
            Ok(s) => (format_seconds(s.median_s), format!("{} – {}", format_seconds(s.p10_s), format_seconds(s.p90_s))),
            Err(e) => (format!("error: {e}"), String::new()),
        };
        cells.push([
            r.id.to_string(),
            r.threads.to_string(),
            median,
            spread,
            r.pytorch_median_s.map_or_else(|| "n/a".to_string(), format_seconds),
            r.ratio().map_or_else(|| "n/a".to_string(), format_ratio),
        ]);
    }
    let mut width = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |vals: &[String]| {
        let padded: Vec<String> =
            vals.iter().zip(&width).map(|(v, &w)| format!("{v}{}", " ".repeat(w - v.chars().count()))).collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(&header.map(String::from));
    out += &line(&width.map(|w| "-".repeat(w)));
    for row in &cells {
        out += &line(row);
    }
    out
}

/// One `--json` line. Field order is the output's key order.
#[derive(Serialize)]
struct JsonLine<'a> {
    workload: &'a str,
    threads: usize,
    median_s: Option<f64>,
    unit_per_iter: &'a str,
    pytorch_median_s: Option<f64>,
}

/// The `--json` line of a row: `{"workload", "threads", "median_s", "unit_per_iter",
/// "pytorch_median_s"}`; `median_s` is `null` if our run failed, `pytorch_median_s` if PyTorch
/// did not run.
pub fn json_line(r: &Row) -> String {
    let j = JsonLine {
        workload: r.id,
        threads: r.threads,
        median_s: r.ours.as_ref().ok().map(|s| s.median_s),
        unit_per_iter: r.unit_per_iter,
        pytorch_median_s: r.pytorch_median_s,
    };
    serde_json::to_string(&j).expect("plain struct serialises")
}

/// The civil date (year, month, day) of a count of days since 1970-01-01 (proleptic Gregorian;
/// Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// `MemTotal` of a `/proc/meminfo` text, in GiB.
pub fn mem_total_gib(meminfo: &str) -> Option<f64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// What the numbers were measured on, as Markdown bullets.
pub fn machine_description(torch_version: Option<&str>) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let cpu = cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = mem_total_gib(&meminfo).map_or_else(|| "unknown".into(), |g| format!("{g:.1} GiB"));
    let rustc = Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(|| "unknown".into(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let mut s =
        format!("- date: {}\n- CPU: {cpu}\n- cores available: {cores}\n- memory: {mem}\n- rustc: {rustc}\n", today());
    match torch_version {
        Some(v) => s += &format!("- PyTorch: {v} (from Python)\n"),
        None => s += "- PyTorch: not installed (column n/a)\n",
    }
    s
}

/// Replaces what lies between the markers of `doc` with `section`; `None` if the markers are
/// missing or out of order.
pub fn replace_between_markers(doc: &str, section: &str) -> Option<String> {
    let b = doc.find(BEGIN_MARKER)? + BEGIN_MARKER.len();
    let e = b + doc[b..].find(END_MARKER)?;
    Some(format!("{}\n{}{}", &doc[..b], section, &doc[e..]))
}

/// Rewrites the recorded section of the file at `path`.
pub fn record(path: &Path, section: &str) -> Result<(), String> {
    let doc = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let new = replace_between_markers(&doc, section)
        .ok_or_else(|| format!("{} lacks the markers {BEGIN_MARKER} / {END_MARKER}", path.display()))?;
    std::fs::write(path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(median_s: f64) -> Summary {
        Summary { median_s, p10_s: median_s * 0.9, p90_s: median_s * 1.2, min_s: median_s * 0.8, samples: 10, batch: 1 }
    }

    fn row(ours: Result<Summary, String>, pytorch_median_s: Option<f64>) -> Row {
        Row { id: "W1.add1", threads: 1, unit_per_iter: "add of two 1-element f32 tensors", ours, pytorch_median_s }
    }

    #[test]
    fn json_line_has_exactly_the_documented_keys() {
        let line = json_line(&row(Ok(summary(1.5e-7)), Some(1.1e-6)));
        assert_eq!(
            line,
            r#"{"workload":"W1.add1","threads":1,"median_s":1.5e-7,"unit_per_iter":"add of two 1-element f32 tensors","pytorch_median_s":1.1e-6}"#
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["median_s", "pytorch_median_s", "threads", "unit_per_iter", "workload"]);
    }

    #[test]
    fn json_line_nulls() {
        let line = json_line(&row(Err("no kernel".into()), None));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(v["median_s"].is_null());
        assert!(v["pytorch_median_s"].is_null());
        assert_eq!(v["threads"], 1);
    }

    #[test]
    fn seconds_pick_a_readable_unit() {
        assert_eq!(format_seconds(1.84e-7), "184 ns");
        assert_eq!(format_seconds(1.1e-6), "1.10 µs");
        assert_eq!(format_seconds(4.43e-2), "44.3 ms");
        assert_eq!(format_seconds(2.32e-4), "232 µs");
        assert_eq!(format_seconds(1.94), "1.94 s");
        assert_eq!(format_seconds(5e-9), "5.00 ns");
    }

    #[test]
    fn ratios_keep_two_digits() {
        assert_eq!(format_ratio(0.1636), "0.16");
        assert_eq!(format_ratio(0.0163), "0.016");
        assert_eq!(format_ratio(1.0), "1.00");
        assert_eq!(format_ratio(12.46), "12.5");
    }

    #[test]
    fn table_shows_ratio_and_missing_reference() {
        let t = render_table(&[row(Ok(summary(2e-7)), Some(1e-6)), row(Ok(summary(2e-7)), None)]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("| workload"));
        assert!(lines[1].starts_with("| ---"));
        assert!(lines[2].contains("200 ns") && lines[2].contains("1.00 µs") && lines[2].contains("0.20"));
        assert!(lines[3].contains("n/a"));
        // Columns are aligned.
        let bars = |l: &str| {
            l.char_indices().filter(|&(_, c)| c == '|').map(|(i, _)| l[..i].chars().count()).collect::<Vec<_>>()
        };
        assert_eq!(bars(lines[0]), bars(lines[2]));
        assert_eq!(bars(lines[2]), bars(lines[3]));
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn proc_parsing() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14 96-Core Processor\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 9R14 96-Core Processor"));
        assert_eq!(mem_total_gib("MemTotal:       25165824 kB\nMemFree: 1 kB\n"), Some(24.0));
        assert_eq!(cpu_model(""), None);
    }

    #[test]
    fn markers_are_replaced_in_place() {
        let doc = format!("head\n{BEGIN_MARKER}\nold\n{END_MARKER}\ntail\n");
        let new = replace_between_markers(&doc, "new\n").unwrap();
        assert_eq!(new, format!("head\n{BEGIN_MARKER}\nnew\n{END_MARKER}\ntail\n"));
        // Idempotent.
        assert_eq!(replace_between_markers(&new, "new\n").unwrap(), new);
        assert_eq!(replace_between_markers("no markers", "x"), None);
        assert_eq!(replace_between_markers(&format!("{END_MARKER}{BEGIN_MARKER}"), "x"), None);
    }
}
