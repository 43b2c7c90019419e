//! `key_averages()` and its `table()`, in PyTorch's layout (`torch/autograd/profiler_util.py`,
//! `_build_table`): every cell right-aligned and followed by two spaces, the name column as
//! wide as the longest name plus 4 (at most 55, longer names cut to 52 characters and `...`),
//! the other columns 12 wide, input shapes at most 80.

use std::collections::HashMap;
use std::fmt::Write;

use c10::record_function::RecordScope;

use super::Profile;

/// The statistics of one group of events (PyTorch's `FunctionEventAvg`). Times are in
/// microseconds, memory in bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct EventAverages {
    /// The events' name (`ProfilerStep#N` is shown as `ProfilerStep*`).
    pub key: String,
    /// How many events.
    pub count: u64,
    /// Their total duration.
    pub cpu_time_total: f64,
    /// Their total duration less the time of the events nested in them.
    pub self_cpu_time_total: f64,
    /// Device-kernel time of the events and what is nested in them.
    pub device_time_total: f64,
    /// Device-kernel time launched by the events themselves.
    pub self_device_time_total: f64,
    /// Bytes allocated minus freed on the CPU during the events (nested events included).
    pub cpu_memory_usage: i64,
    /// The same, less what nested events account for.
    pub self_cpu_memory_usage: i64,
    /// Bytes allocated minus freed on devices during the events (nested events included).
    pub device_memory_usage: i64,
    /// The same, less what nested events account for.
    pub self_device_memory_usage: i64,
    /// The input shapes the group was formed by (`key_averages_by_input_shape`), else empty.
    pub input_shapes: String,
    /// Whether the group holds user ranges (optimizer steps, batches, `record_function`).
    pub is_user_annotation: bool,
}

impl EventAverages {
    /// Average duration (`CPU time avg`).
    pub fn cpu_time(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.cpu_time_total / self.count as f64
        }
    }

    /// Average device time (`CUDA time avg`).
    pub fn device_time(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.device_time_total / self.count as f64
        }
    }

    /// The value `table` sorts by for a PyTorch `sort_by` name, or `None` for an unknown name.
    fn sort_value(&self, by: &str) -> Option<f64> {
        Some(match by {
            "cpu_time_total" => self.cpu_time_total,
            "self_cpu_time_total" => self.self_cpu_time_total,
            "cpu_time" => self.cpu_time(),
            "cuda_time_total" | "device_time_total" => self.device_time_total,
            "self_cuda_time_total" | "self_device_time_total" => self.self_device_time_total,
            "cuda_time" | "device_time" => self.device_time(),
            "count" => self.count as f64,
            "cpu_memory_usage" => self.cpu_memory_usage as f64,
            "self_cpu_memory_usage" => self.self_cpu_memory_usage as f64,
            "cuda_memory_usage" | "device_memory_usage" => self.device_memory_usage as f64,
            "self_cuda_memory_usage" | "self_device_memory_usage" => self.self_device_memory_usage as f64,
            _ => return None,
        })
    }
}

/// The groups of a profile (PyTorch's `EventList` of averages), in order of first appearance.
#[derive(Debug, Clone, Default)]
pub struct KeyAverages {
    /// The groups.
    pub rows: Vec<EventAverages>,
    /// Whether memory was profiled (the memory columns are shown).
    pub profile_memory: bool,
    /// Whether grouped by input shape (the `Input Shapes` column is shown).
    pub by_input_shape: bool,
}

pub(super) fn key_averages(p: &Profile, by_shape: bool) -> KeyAverages {
    let mut rows: Vec<EventAverages> = Vec::new();
    let mut index: HashMap<(String, bool, String), usize> = HashMap::new();
    // Inclusive memory and device time of each event: its own plus its children's (children
    // start later, so a reverse pass sees every child before its parent).
    let n = p.events.len();
    let (mut cpu_mem, mut dev_mem, mut dev_ns) = (vec![0i64; n], vec![0i64; n], vec![0u64; n]);
    let self_dev_ns = |i: usize| -> u64 { p.events[i].kernels.iter().map(|&k| p.kernel_ns(k)).sum() };
    for i in (0..n).rev() {
        let e = &p.events[i];
        cpu_mem[i] += e.self_cpu_memory;
        dev_mem[i] += e.self_device_memory;
        dev_ns[i] += self_dev_ns(i);
        if let Some(parent) = e.parent {
            cpu_mem[parent] += cpu_mem[i];
            dev_mem[parent] += dev_mem[i];
            dev_ns[parent] += dev_ns[i];
        }
    }
    let mut add = |key: String, user: bool, shapes: String, f: &mut dyn FnMut(&mut EventAverages)| {
        let k = (key, user, shapes);
        let i = *index.entry(k.clone()).or_insert_with(|| {
            rows.push(EventAverages {
                key: k.0.clone(),
                count: 0,
                cpu_time_total: 0.0,
                self_cpu_time_total: 0.0,
                device_time_total: 0.0,
                self_device_time_total: 0.0,
                cpu_memory_usage: 0,
                self_cpu_memory_usage: 0,
                device_memory_usage: 0,
                self_device_memory_usage: 0,
                input_shapes: k.2.clone(),
                is_user_annotation: k.1,
            });
            rows.len() - 1
        });
        f(&mut rows[i]);
    };
    for (i, e) in p.events.iter().enumerate() {
        let user = matches!(e.scope, RecordScope::UserScope | RecordScope::Optimizer | RecordScope::DataLoader);
        let key = match e.name.strip_prefix("ProfilerStep#") {
            Some(_) => "ProfilerStep*".to_string(),
            None => e.name.clone(),
        };
        let shapes = if by_shape { e.input_shapes_string() } else { String::new() };
        let dur = e.duration_us();
        let children: f64 = e.children.iter().map(|&c| p.events[c].duration_us()).sum();
        let self_dev = self_dev_ns(i);
        let dev_total = dev_ns[i] as f64 / 1000.0;
        add(key, user, shapes, &mut |r| {
            r.count += 1;
            r.cpu_time_total += dur;
            r.self_cpu_time_total += (dur - children).max(0.0);
            r.device_time_total += dev_total;
            r.self_device_time_total += self_dev as f64 / 1000.0;
            r.cpu_memory_usage += cpu_mem[i];
            r.self_cpu_memory_usage += e.self_cpu_memory;
            r.device_memory_usage += dev_mem[i];
            r.self_device_memory_usage += e.self_device_memory;
        });
    }
    // Allocator events outside every range are zero-length `[memory]` events, as PyTorch shows.
    for m in p.memory.iter().filter(|m| m.event_index.is_none()) {
        let shapes = if by_shape { "[]".to_string() } else { String::new() };
        let (cpu, dev) = if m.event.device.is_cpu() { (m.event.bytes, 0) } else { (0, m.event.bytes) };
        add("[memory]".into(), false, shapes, &mut |r| {
            r.count += 1;
            r.cpu_memory_usage += cpu;
            r.self_cpu_memory_usage += cpu;
            r.device_memory_usage += dev;
            r.self_device_memory_usage += dev;
        });
    }
    let profile_memory = !p.memory.is_empty();
    KeyAverages { rows, profile_memory, by_input_shape: by_shape }
}

/// PyTorch's `_format_time`: microseconds as `us`, `ms` or `s` with three decimals.
pub fn format_time(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.3}s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.3}ms", us / 1e3)
    } else {
        format!("{us:.3}us")
    }
}

/// PyTorch's `_format_time_share`: a percentage with two decimals, `NaN` of a zero total.
pub fn format_share(us: f64, total: f64) -> String {
    if total == 0.0 {
        "NaN".into()
    } else {
        format!("{:.2}%", us * 100.0 / total)
    }
}

/// PyTorch's `_format_memory`: bytes in `B`, or `KB`/`MB`/`GB` (1024-based) with two decimals.
pub fn format_memory(bytes: i64) -> String {
    const KB: f64 = 1024.0;
    let (b, a) = (bytes as f64, (bytes as f64).abs());
    if a >= KB * KB * KB {
        format!("{:.2} GB", b / (KB * KB * KB))
    } else if a >= KB * KB {
        format!("{:.2} MB", b / (KB * KB))
    } else if a >= KB {
        format!("{:.2} KB", b / KB)
    } else {
        format!("{bytes} B")
    }
}

impl KeyAverages {
    /// The group named `key` (the first, when grouped by shape).
    pub fn get(&self, key: &str) -> Option<&EventAverages> {
        self.rows.iter().find(|r| r.key == key)
    }

    /// `table(sort_by, row_limit)` with PyTorch's columns: Name, Self CPU %, Self CPU,
    /// CPU total %, CPU total, CPU time avg, the CUDA columns when device kernels were
    /// recorded, CPU Mem and Self CPU Mem (and CUDA Mem, Self CUDA Mem) when memory was
    /// profiled, # of Calls, and Input Shapes when grouped by shape; then `Self CPU time
    /// total`. `sort_by` takes PyTorch's names (`cpu_time_total`, `self_cpu_memory_usage`,
    /// `cuda_time_total`, `count`, ...); an unknown name keeps the groups' order, and a
    /// `row_limit` of 0 prints every row.
    pub fn table(&self, sort_by: &str, row_limit: usize) -> String {
        let mut rows: Vec<&EventAverages> = self.rows.iter().collect();
        if rows.first().and_then(|r| r.sort_value(sort_by)).is_some() {
            // Descending and stable, as Python's sorted(reverse=True).
            rows.sort_by(|a, b| {
                let (x, y) = (a.sort_value(sort_by).unwrap_or(0.0), b.sort_value(sort_by).unwrap_or(0.0));
                y.partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal)
            });
        }
        if row_limit > 0 {
            rows.truncate(row_limit);
        }
        let self_cpu_total: f64 = self.rows.iter().map(|r| r.self_cpu_time_total).sum();
        let self_dev_total: f64 = self.rows.iter().map(|r| r.self_device_time_total).sum();
        let has_device = self.rows.iter().any(|r| r.device_time_total > 0.0);
        let device_mem = self.rows.iter().any(|r| r.device_memory_usage != 0);

        let name_width = self.rows.iter().map(|r| r.key.len()).max().unwrap_or(0).saturating_add(4).min(55);
        let shapes_width = self.rows.iter().map(|r| r.input_shapes.len()).max().unwrap_or(0).saturating_add(4).min(80);
        let mut headers: Vec<(&str, usize)> = vec![("Name", name_width)];
        for h in ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"] {
            headers.push((h, 12));
        }
        if has_device {
            for h in ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"] {
                headers.push((h, 12));
            }
        }
        if self.profile_memory {
            headers.push(("CPU Mem", 12));
            headers.push(("Self CPU Mem", 12));
            if device_mem {
                headers.push(("CUDA Mem", 12));
                headers.push(("Self CUDA Mem", 12));
            }
        }
        headers.push(("# of Calls", 12));
        if self.by_input_shape {
            headers.push(("Input Shapes", shapes_width));
        }

        let line = |cells: &[String]| -> String {
            let mut s = String::new();
            for (c, (_, w)) in cells.iter().zip(&headers) {
                let _ = write!(s, "{c:>w$}  ");
            }
            s.push('\n');
            s
        };
        let sep: String = headers.iter().map(|(_, w)| "-".repeat(*w) + "  ").collect::<String>() + "\n";
        let mut out = String::new();
        out.push_str(&sep);
        out.push_str(&line(&headers.iter().map(|(h, _)| h.to_string()).collect::<Vec<_>>()));
        out.push_str(&sep);
        for r in rows {
            let name = if r.key.chars().count() >= 52 { cut(&r.key, 52) } else { r.key.clone() };
            let mut cells = vec![
                name,
                format_share(r.self_cpu_time_total, self_cpu_total),
                format_time(r.self_cpu_time_total),
                format_share(r.cpu_time_total, self_cpu_total),
                format_time(r.cpu_time_total),
                format_time(r.cpu_time()),
            ];
            if has_device {
                cells.push(format_time(r.self_device_time_total));
                cells.push(format_share(r.self_device_time_total, self_dev_total));
                cells.push(format_time(r.device_time_total));
                cells.push(format_time(r.device_time()));
            }
            if self.profile_memory {
                cells.push(format_memory(r.cpu_memory_usage));
                cells.push(format_memory(r.self_cpu_memory_usage));
                if device_mem {
                    cells.push(format_memory(r.device_memory_usage));
                    cells.push(format_memory(r.self_device_memory_usage));
                }
            }
            cells.push(r.count.to_string());
            if self.by_input_shape {
                cells.push(r.input_shapes.chars().take(shapes_width).collect());
            }
            out.push_str(&line(&cells));
        }
        out.push_str(&sep);
        let _ = writeln!(out, "Self CPU time total: {}", format_time(self_cpu_total));
        if has_device {
            let _ = writeln!(out, "Self CUDA time total: {}", format_time(self_dev_total));
        }
        out
    }
}

/// The first `n` characters of `s` and `...`.
fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect::<String>() + "..."
}
