//! Connection caps with Kafka's semantics (`ConnectionQuotas` in Kafka's socket server):
//! - `max.connections`: at the limit the acceptor waits until a connection closes; the
//!   connections waiting meanwhile sit in the listen backlog, neither served nor refused.
//! - `max.connections.per.ip` and `max.connections.per.ip.overrides`: a connection from an
//!   address that already has its maximum is closed right after accept (Kafka's
//!   TooManyConnectionsException).

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{parse_ip_overrides, BrokerConfig};

/// The connection limits of a broker, parsed and checked once at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `max.connections`: connections open at once, over all addresses.
    pub max: u32,
    /// `max.connections.per.ip`: connections from one address with no override.
    pub per_ip: u32,
    /// `max.connections.per.ip.overrides`, with host names resolved to their addresses.
    pub overrides: HashMap<IpAddr, u32>,
}

impl ConnectionLimits {
    /// Reads the three keys; a value the broker cannot apply is an error to stop startup with.
    pub fn from_config(cfg: &BrokerConfig) -> Result<ConnectionLimits, String> {
        let count = |key: &str| -> Result<u32, String> {
            let v = cfg.get(key);
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n <= i32::MAX as u32)
                .ok_or_else(|| format!("invalid value '{v}' for {key}: want 0..=2147483647"))
        };
        let max = count("max.connections")?;
        let per_ip = count("max.connections.per.ip")?;
        let mut overrides = HashMap::new();
        for (host, n) in parse_ip_overrides(&cfg.get("max.connections.per.ip.overrides"))? {
            for ip in resolve(&host)? {
                overrides.insert(ip, n);
            }
        }
        // Kafka's rule: a default of zero only makes sense as "only the listed addresses".
        if per_ip == 0 && overrides.is_empty() {
            return Err("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides is set".into());
        }
        Ok(ConnectionLimits { max, per_ip, overrides })
    }

    /// Kafka's defaults: no limits to speak of (Int.MaxValue each).
    pub fn unlimited() -> ConnectionLimits {
        ConnectionLimits { max: i32::MAX as u32, per_ip: i32::MAX as u32, overrides: HashMap::new() }
    }

    /// The most connections `ip` may have open.
    pub fn max_for(&self, ip: IpAddr) -> u32 {
        self.overrides.get(&ip.to_canonical()).copied().unwrap_or(self.per_ip)
    }
}

fn resolve(host: &str) -> Result<Vec<IpAddr>, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![ip.to_canonical()]);
    }
    // Kafka resolves override host names once, when its socket server starts; so does Sluice.
    let addrs = (host, 0).to_socket_addrs().map_err(|e| format!("max.connections.per.ip.overrides: cannot resolve {host}: {e}"))?;
    Ok(addrs.map(|a| a.ip().to_canonical()).collect())
}

/// The live counts behind the limits, shared by the accept loop and the connection tasks.
pub(crate) struct Quotas {
    limits: ConnectionLimits,
    slots: Arc<Semaphore>,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    /// The most open at once since [`Quotas::take_peak`] last ran.
    peak: usize,
    by_ip: HashMap<IpAddr, u32>,
}

/// A broker-wide slot, taken before a connection is accepted.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
}

/// An admitted connection's place in the counts; dropping it (the connection task ending,
/// by return, panic or abort) gives the place back.
pub(crate) struct Admitted {
    _slot: Slot,
    quotas: Arc<Quotas>,
    ip: IpAddr,
}

impl Quotas {
    /// Counts for `limits`, with nothing open.
    pub(crate) fn new(limits: ConnectionLimits) -> Arc<Quotas> {
        let slots = Arc::new(Semaphore::new(limits.max as usize));
        Arc::new(Quotas { limits, slots, open: Mutex::new(Open::default()) })
    }

    /// Waits until fewer than `max.connections` are open. Cancel-safe.
    pub(crate) async fn wait_for_slot(&self) -> Slot {
        Slot { _permit: self.slots.clone().acquire_owned().await.expect("the semaphore is never closed") }
    }

    /// Counts a connection from `ip` in, or hands back its address's limit when that is reached.
    pub(crate) fn admit(self: &Arc<Self>, slot: Slot, ip: IpAddr) -> Result<Admitted, u32> {
        let ip = ip.to_canonical();
        let max = self.limits.max_for(ip);
        let mut open = self.open.lock();
        let n = open.by_ip.entry(ip).or_insert(0);
        if *n >= max {
            if *n == 0 {
                open.by_ip.remove(&ip);
            }
            return Err(max);
        }
        *n += 1;
        open.total += 1;
        open.peak = open.peak.max(open.total);
        Ok(Admitted { _slot: slot, quotas: self.clone(), ip })
    }

    /// Connections open now.
    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.open.lock().total
    }

    /// The most connections open at once since the last call, and those open now.
    pub(crate) fn take_peak(&self) -> (usize, usize) {
        let mut open = self.open.lock();
        let total = open.total;
        let peak = std::mem::replace(&mut open.peak, total);
        (peak, open.total)
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.quotas.open.lock();
        open.total -= 1;
        if let Some(n) = open.by_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limits(max: u32, per_ip: u32, overrides: &[(&str, u32)]) -> ConnectionLimits {
        ConnectionLimits { max, per_ip, overrides: overrides.iter().map(|(h, n)| (h.parse().unwrap(), *n)).collect() }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[tokio::test]
    async fn an_address_over_its_limit_is_refused_until_one_of_its_connections_closes() {
        let q = Quotas::new(limits(100, 2, &[("10.0.0.9", 3)]));
        let a1 = q.admit(q.wait_for_slot().await, ip("10.0.0.1")).unwrap();
        let _a2 = q.admit(q.wait_for_slot().await, ip("10.0.0.1")).unwrap();
        assert_eq!(q.admit(q.wait_for_slot().await, ip("10.0.0.1")).err(), Some(2));
        let _b: Vec<Admitted> =
            (0..3).map(|_| q.admit(Slot { _permit: q.slots.clone().try_acquire_owned().unwrap() }, ip("10.0.0.9")).unwrap()).collect();
        assert_eq!(q.admit(q.wait_for_slot().await, ip("10.0.0.9")).err(), Some(3), "the override applies");
        // An IPv4-mapped IPv6 peer (a dual-stack listener) is the same address.
        assert_eq!(q.admit(q.wait_for_slot().await, ip("::ffff:10.0.0.1")).err(), Some(2));
        assert_eq!(q.open(), 5);
        drop(a1);
        assert_eq!(q.open(), 4);
        let _c = q.admit(q.wait_for_slot().await, ip("10.0.0.1")).expect("a close frees the address's slot");
        assert_eq!(q.take_peak(), (5, 5));
        drop(_b);
        assert_eq!(q.take_peak(), (5, 2), "the peak is the most since the last look");
        assert_eq!(q.take_peak(), (2, 2));
    }

    #[tokio::test]
    async fn at_max_connections_the_next_slot_waits_for_a_close() {
        let q = Quotas::new(limits(2, 10, &[]));
        let a = q.admit(q.wait_for_slot().await, ip("10.0.0.1")).unwrap();
        let _b = q.admit(q.wait_for_slot().await, ip("10.0.0.2")).unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(50), q.wait_for_slot()).await.is_err(), "a third slot was given");
        let waiting = tokio::spawn({
            let q = q.clone();
            async move { q.wait_for_slot().await }
        });
        drop(a);
        let slot = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("no slot after a close").unwrap();
        assert!(q.admit(slot, ip("10.0.0.3")).is_ok());
    }

    #[tokio::test]
    async fn a_refused_connection_gives_its_slot_back() {
        let q = Quotas::new(limits(1, 0, &[("10.0.0.1", 1)]));
        assert_eq!(q.admit(q.wait_for_slot().await, ip("10.0.0.2")).err(), Some(0));
        let ok = tokio::time::timeout(Duration::from_millis(500), q.wait_for_slot()).await.expect("the refused connection kept its slot");
        let _admitted = q.admit(ok, ip("10.0.0.1")).expect("10.0.0.1 has an override of 1");
        assert_eq!(q.open(), 1);
    }

    fn cfg(kv: &[(&str, &str)]) -> Result<ConnectionLimits, String> {
        let mut c = BrokerConfig::default();
        for (k, v) in kv {
            c.set_static(k, v)?;
        }
        ConnectionLimits::from_config(&c)
    }

    #[test]
    fn limits_are_read_with_kafkas_defaults_and_rules() {
        assert_eq!(cfg(&[]).unwrap(), ConnectionLimits::unlimited());
        let l =
            cfg(&[("max.connections", "3"), ("max.connections.per.ip", "0"), ("max.connections.per.ip.overrides", "127.0.0.1:7, [::1]:2")])
                .unwrap();
        assert_eq!((l.max, l.per_ip, l.max_for(ip("127.0.0.1")), l.max_for(ip("::1")), l.max_for(ip("10.1.1.1"))), (3, 0, 7, 2, 0));
        assert!(cfg(&[("max.connections.per.ip", "0")]).unwrap_err().contains("max.connections.per.ip.overrides"));
        assert!(
            cfg(&[("max.connections.per.ip.overrides", "localhost:4")]).unwrap().max_for(ip("127.0.0.1")) == 4,
            "host names are resolved"
        );
        assert!(cfg(&[("max.connections.per.ip.overrides", "no-such-host.invalid:4")]).unwrap_err().contains("no-such-host.invalid"));
    }
}
