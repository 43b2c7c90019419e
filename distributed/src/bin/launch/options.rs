//! The launcher's command line (torchrun's flags, `_` or `-` in their names, `--flag value` or
//! `--flag=value`).

use std::time::Duration;

pub const USAGE: &str = "usage: launch [--nproc-per-node N] [--nnodes N|MIN:MAX] [--node-rank R] \
                         [--master-addr ADDR] [--master-port PORT] [--max-restarts N] \
                         [--rdzv-backend static|c10d] [--rdzv-endpoint HOST[:PORT]] [--rdzv-id ID] \
                         [--rdzv-conf join_timeout=S,last_call_timeout=S] [--local-addr ADDR] [--standalone] \
                         PROGRAM [ARGS...]";

/// torchrun's default port of a c10d rendezvous endpoint given without one.
const DEFAULT_RDZV_PORT: u16 = 29400;

/// How the nodes of a job find each other.
pub enum Rdzv {
    /// Every node is told its rank and the workers' master (`--node-rank`, `--master-addr`,
    /// `--master-port`); the number of nodes is fixed.
    Static { node_rank: usize, master_addr: String, master_port: u16 },
    /// The nodes meet in a store served at the endpoint by one of their launchers, which
    /// assigns node ranks and the workers' master (Note [Elastic rendezvous] in rdzv.rs).
    C10d {
        host: String,
        port: u16,
        id: String,
        join_timeout: Duration,
        last_call: Duration,
        /// The address other nodes reach this one at (`--local-addr`); by default the one
        /// this machine reaches the endpoint from.
        local_addr: Option<String>,
    },
}

pub struct Options {
    pub nproc_per_node: usize,
    pub min_nodes: usize,
    pub max_nodes: usize,
    pub max_restarts: usize,
    pub rdzv: Rdzv,
    pub program: String,
    pub args: Vec<String>,
}

fn number(name: &str, v: &str) -> Result<usize, String> {
    v.trim().parse::<usize>().map_err(|_| format!("{name}: not a number: {v}"))
}

fn seconds(name: &str, v: &str) -> Result<Duration, String> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{name}: not a number of seconds: {v}"))
}

/// `HOST[:PORT]`, `[IPv6][:PORT]`.
fn endpoint(v: &str) -> Result<(String, u16), String> {
    let port = |p: &str| p.parse::<u16>().map_err(|_| format!("--rdzv-endpoint: not a port: {p}"));
    if let Some(rest) = v.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(|| format!("--rdzv-endpoint: no closing ]: {v}"))?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host.to_string(), port(p)?)),
            None if after.is_empty() => Ok((host.to_string(), DEFAULT_RDZV_PORT)),
            None => Err(format!("--rdzv-endpoint: not HOST[:PORT]: {v}")),
        };
    }
    match v.rsplit_once(':') {
        Some((host, p)) if !host.contains(':') => Ok((host.to_string(), port(p)?)),
        _ => Ok((v.to_string(), DEFAULT_RDZV_PORT)),
    }
}

pub fn parse(mut argv: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut nproc_per_node = 1;
    let (mut min_nodes, mut max_nodes) = (1, 1);
    let mut node_rank: Option<usize> = None;
    let mut master_addr: Option<String> = None;
    let mut master_port: Option<u16> = None;
    let mut max_restarts = 0;
    let mut backend = String::from("static");
    let mut rdzv_endpoint: Option<String> = None;
    let mut rdzv_id = String::from("none");
    let (mut join_timeout, mut last_call) = (Duration::from_secs(600), Duration::from_secs(30));
    let mut local_addr: Option<String> = None;
    let mut standalone = false;
    let mut program = String::new();
    let mut args = Vec::new();
    while let Some(a) = argv.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline.clone().or_else(|| argv.next()).ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.replace('_', "-").as_str() {
            "--nproc-per-node" => nproc_per_node = number(&flag, &value(&flag)?)?,
            "--nnodes" => {
                let v = value(&flag)?;
                (min_nodes, max_nodes) = match v.split_once(':') {
                    Some((lo, hi)) => (number(&flag, lo)?, number(&flag, hi)?),
                    None => (number(&flag, &v)?, number(&flag, &v)?),
                };
            }
            "--node-rank" => node_rank = Some(number(&flag, &value(&flag)?)?),
            "--master-addr" => master_addr = Some(value(&flag)?),
            "--master-port" => {
                let v = value(&flag)?;
                master_port = Some(v.parse().map_err(|_| format!("--master-port: not a port: {v}"))?);
            }
            "--max-restarts" => max_restarts = number(&flag, &value(&flag)?)?,
            "--rdzv-backend" => backend = value(&flag)?,
            "--rdzv-endpoint" => rdzv_endpoint = Some(value(&flag)?),
            "--rdzv-id" => rdzv_id = value(&flag)?,
            "--rdzv-conf" => {
                for kv in value(&flag)?.split(',').filter(|kv| !kv.is_empty()) {
                    match kv.split_once('=') {
                        Some(("join_timeout", v)) => join_timeout = seconds("join_timeout", v)?,
                        Some(("last_call_timeout", v)) => last_call = seconds("last_call_timeout", v)?,
                        _ => {
                            return Err(format!(
                                "--rdzv-conf: unknown setting {kv} (known: join_timeout=S, last_call_timeout=S)"
                            ))
                        }
                    }
                }
            }
            "--local-addr" => local_addr = Some(value(&flag)?),
            "--standalone" => standalone = true,
            "--help" | "-h" => return Err(String::new()),
            f if f.starts_with('-') => return Err(format!("unknown option {f}")),
            _ => {
                program = a;
                args = argv.collect();
                break;
            }
        }
    }
    if program.is_empty() {
        return Err("no program to launch".into());
    }
    if nproc_per_node == 0 || min_nodes == 0 || min_nodes > max_nodes {
        return Err(format!(
            "need --nproc-per-node >= 1 and --nnodes N or MIN:MAX with 1 <= MIN <= MAX (got {nproc_per_node}, \
             {min_nodes}:{max_nodes})"
        ));
    }
    if standalone {
        // torchrun's --standalone: a c10d rendezvous of this node alone, on a free local port.
        if max_nodes != 1 || rdzv_endpoint.is_some() {
            return Err("--standalone is a job of one node: it takes no --nnodes above 1 and no --rdzv-endpoint".into());
        }
        backend = "c10d".into();
        rdzv_endpoint = Some("127.0.0.1:0".into());
    }
    let rdzv = match backend.as_str() {
        "static" => {
            if min_nodes != max_nodes {
                return Err(format!("--nnodes {min_nodes}:{max_nodes}: a range of nodes needs --rdzv-backend c10d"));
            }
            let node_rank = node_rank.unwrap_or(0);
            if node_rank >= max_nodes {
                return Err(format!("need --node-rank < --nnodes (got {node_rank} and {max_nodes})"));
            }
            Rdzv::Static {
                node_rank,
                master_addr: master_addr.unwrap_or_else(|| "127.0.0.1".into()),
                master_port: master_port.unwrap_or(29500),
            }
        }
        "c10d" => {
            if node_rank.is_some() || master_addr.is_some() || master_port.is_some() {
                return Err("--node-rank, --master-addr and --master-port are for the static rendezvous: \
                            with c10d the nodes agree on them"
                    .into());
            }
            let (host, port) =
                endpoint(&rdzv_endpoint.ok_or("--rdzv-backend c10d needs --rdzv-endpoint HOST[:PORT]")?)?;
            Rdzv::C10d { host, port, id: rdzv_id, join_timeout, last_call, local_addr }
        }
        other => return Err(format!("--rdzv-backend: {other} is not static or c10d")),
    };
    Ok(Options { nproc_per_node, min_nodes, max_nodes, max_restarts, rdzv, program, args })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Options, String> {
        parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn flags_and_their_checks() {
        let o = args("--nproc_per_node=3 --max-restarts 2 prog a b").unwrap();
        assert_eq!((o.nproc_per_node, o.max_restarts, o.program.as_str()), (3, 2, "prog"));
        assert_eq!(o.args, ["a", "b"]);
        assert!(matches!(o.rdzv, Rdzv::Static { node_rank: 0, master_port: 29500, .. }));

        let o =
            args("--nnodes 1:4 --rdzv-backend=c10d --rdzv-endpoint [::1] --rdzv-conf last_call_timeout=0.5 p").unwrap();
        assert_eq!((o.min_nodes, o.max_nodes), (1, 4));
        match o.rdzv {
            Rdzv::C10d { host, port, id, last_call, join_timeout, .. } => {
                assert_eq!((host.as_str(), port, id.as_str()), ("::1", 29400, "none"));
                assert_eq!((last_call, join_timeout), (Duration::from_millis(500), Duration::from_secs(600)));
            }
            Rdzv::Static { .. } => panic!("c10d expected"),
        }
        let o = args("--standalone p").unwrap();
        assert!(matches!(o.rdzv, Rdzv::C10d { port: 0, .. }));

        for (bad, says) in [
            ("--nnodes 1:2 p", "needs --rdzv-backend c10d"),
            ("--nnodes 3:2 p", "1 <= MIN <= MAX"),
            ("--rdzv-backend c10d p", "needs --rdzv-endpoint"),
            ("--rdzv-backend c10d --rdzv-endpoint h:1 --node-rank 1 p", "static rendezvous"),
            ("--rdzv-backend etcd p", "etcd is not static or c10d"),
            ("--rdzv-conf close_timeout=1 p", "unknown setting"),
            ("--nnodes 2 --node-rank 2 p", "--node-rank < --nnodes"),
            ("--standalone --nnodes 2 p", "one node"),
            ("--max-restarts x p", "not a number"),
        ] {
            let err = args(bad).err().unwrap_or_else(|| panic!("{bad} parsed"));
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
