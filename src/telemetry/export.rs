//! The latest value of every pushed series, rendered in the OpenMetrics text format (the
//! rest of `/metrics` is OpenMetrics) with
//! `client_instance_id` and `client_id` labels. Bounded at [`MAX_SERIES`] series: a push
//! that would go past it keeps the series it already had and drops its new ones.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use parking_lot::Mutex;
use uuid::Uuid;

use super::otlp::{Kind, Point};

/// Most series kept over all client instances.
pub const MAX_SERIES: usize = 10_000;
/// Every exported name starts so.
const PREFIX: &str = "kafka_client_";

/// A series' identity: its exported name and its labels besides the client's.
type Key = (String, Vec<(String, String)>);

struct Client {
    client_id: String,
    series: BTreeMap<Key, (Kind, f64)>,
}

/// The exported series of every client instance.
#[derive(Default)]
pub struct Series {
    clients: Mutex<HashMap<Uuid, Client>>,
}

/// A Prometheus name: `[a-zA-Z_:][a-zA-Z0-9_:]*`, every other character an underscore.
fn sanitize(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// The exported family name: prefixed and sanitized; a counter's samples add `_total`, so
/// a counter's name loses a `_total` of its own.
fn name(metric: &str, kind: Kind) -> String {
    let base = format!("{PREFIX}{}", sanitize(metric.strip_prefix("org.apache.kafka.").unwrap_or(metric)));
    match kind {
        Kind::Counter => base.strip_suffix("_total").map(str::to_string).unwrap_or(base),
        Kind::Gauge => base,
    }
}

/// A value as OpenMetrics writes numbers.
fn number(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".into(),
        v if v == f64::INFINITY => "+Inf".into(),
        v if v == f64::NEG_INFINITY => "-Inf".into(),
        v => v.to_string(),
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Series {
    /// Replaces the latest values of `instance`'s series with those of its new push.
    pub fn record(&self, instance: Uuid, client_id: &str, points: Vec<Point>) {
        let mut clients = self.clients.lock();
        let others: usize = clients.iter().filter(|(id, _)| **id != instance).map(|(_, c)| c.series.len()).sum();
        let c = clients.entry(instance).or_insert_with(|| Client { client_id: client_id.to_string(), series: BTreeMap::new() });
        for p in points {
            let mut labels: Vec<(String, String)> = p.attributes.iter().map(|(k, v)| (sanitize(k), v.clone())).collect();
            labels.retain(|(k, _)| !k.is_empty() && k != "client_instance_id" && k != "client_id");
            labels.sort();
            // OpenMetrics refuses a label named twice (two attributes may sanitize alike).
            labels.dedup_by(|a, b| a.0 == b.0);
            let key = (name(&p.metric, p.kind), labels);
            if !c.series.contains_key(&key) && others + c.series.len() >= MAX_SERIES {
                continue;
            }
            c.series.insert(key, (p.kind, p.value));
        }
    }

    /// Drops an instance's series (it expired).
    pub fn forget(&self, instance: Uuid) {
        self.clients.lock().remove(&instance);
    }

    /// How many series are kept.
    pub fn len(&self) -> usize {
        self.clients.lock().values().map(|c| c.series.len()).sum()
    }

    /// Is nothing kept?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every series in the text format, grouped by name with one TYPE line each.
    pub fn render(&self, out: &mut String) {
        let clients = self.clients.lock();
        let mut by_name: BTreeMap<&str, (Kind, Vec<String>)> = BTreeMap::new();
        for (id, c) in clients.iter() {
            for ((n, labels), (kind, v)) in &c.series {
                let mut l = format!("client_instance_id=\"{id}\",client_id=\"{}\"", escape(&c.client_id));
                for (k, val) in labels {
                    let _ = write!(l, ",{k}=\"{}\"", escape(val));
                }
                let suffix = if *kind == Kind::Counter { "_total" } else { "" };
                by_name.entry(n).or_insert((*kind, Vec::new())).1.push(format!("{n}{suffix}{{{l}}} {}", number(*v)));
            }
        }
        for (n, (kind, lines)) in by_name {
            let t = if kind == Kind::Counter { "counter" } else { "gauge" };
            let _ = writeln!(out, "# HELP {n} Pushed by clients (KIP-714).\n# TYPE {n} {t}");
            for line in lines {
                let _ = writeln!(out, "{line}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(metric: &str, kind: Kind, value: f64) -> Point {
        Point { metric: metric.into(), kind, value, attributes: vec![("node.id".into(), "1".into())] }
    }

    #[test]
    fn series_are_named_labelled_and_kept_latest() {
        let s = Series::default();
        let id = Uuid::from_u64_pair(1, 2);
        s.record(id, "app\"1", vec![point("org.apache.kafka.producer.record.send.total", Kind::Counter, 3.0)]);
        s.record(id, "app\"1", vec![point("org.apache.kafka.producer.record.send.total", Kind::Counter, 5.0)]);
        let mut out = String::new();
        s.render(&mut out);
        assert!(out.contains("# TYPE kafka_client_producer_record_send counter"), "{out}");
        assert!(
            out.contains(&format!(
                "kafka_client_producer_record_send_total{{client_instance_id=\"{id}\",client_id=\"app\\\"1\",node_id=\"1\"}} 5"
            )),
            "{out}"
        );
        s.forget(id);
        assert!(s.is_empty());
    }

    #[test]
    fn series_are_bounded() {
        let s = Series::default();
        for i in 0..3u64 {
            let points = (0..MAX_SERIES / 2).map(|j| point(&format!("m{j}"), Kind::Gauge, 1.0)).collect();
            s.record(Uuid::from_u64_pair(i, i), "c", points);
        }
        assert_eq!(s.len(), MAX_SERIES);
    }
}
