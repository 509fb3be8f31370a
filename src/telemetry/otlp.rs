//! Just enough of OTLP's protobuf `MetricsData` (opentelemetry-proto `metrics/v1`) to read
//! the gauges and sums a client pushes: metric names, number data points and their
//! attributes. Hand-decoded, so no protobuf code generator or crate tree comes along.
//!
//! ```text
//! MetricsData      { repeated ResourceMetrics resource_metrics = 1; }
//! ResourceMetrics  { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; }
//! ScopeMetrics     { InstrumentationScope scope = 1; repeated Metric metrics = 2; }
//! Metric           { string name = 1; Gauge gauge = 5; Sum sum = 7; (histograms 9, 10, 11 skipped) }
//! Gauge            { repeated NumberDataPoint data_points = 1; }
//! Sum              { repeated NumberDataPoint data_points = 1; int32 temporality = 2; bool is_monotonic = 3; }
//! NumberDataPoint  { fixed64 time_unix_nano = 3; double as_double = 4; sfixed64 as_int = 6; repeated KeyValue attributes = 7; }
//! KeyValue         { string key = 1; AnyValue value = 2; }
//! AnyValue         { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
//! ```

/// Most data points read from one payload; the rest of a larger payload is refused.
pub const MAX_POINTS: usize = 10_000;

/// What a series is, for the exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// A monotonic sum (cumulative, as the subscription asks).
    Counter,
}

/// One number data point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub metric: String,
    pub kind: Kind,
    pub value: f64,
    pub attributes: Vec<(String, String)>,
}

/// Why a payload does not decode.
pub type DecodeError = String;

/// One protobuf field: its number and value.
enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32,
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut out = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.buf.split_first().ok_or("truncated varint")?;
            self.buf = rest;
            out |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.buf.len() {
            return Err(format!("field of {n} bytes with {} left", self.buf.len()));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next field, or None at the end.
    fn field(&mut self) -> Result<Option<(u64, Value<'a>)>, DecodeError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let v = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => Value::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"))),
            2 => {
                let n = self.varint()?;
                Value::Bytes(self.take(usize::try_from(n).map_err(|_| "length overflows")?)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed32
            }
            t => return Err(format!("wire type {t} is not supported")),
        };
        Ok(Some((key >> 3, v)))
    }
}

/// Calls `f` with each length-delimited field numbered `want` of `buf`.
fn each<'a>(buf: &'a [u8], want: u64, mut f: impl FnMut(&'a [u8]) -> Result<(), DecodeError>) -> Result<(), DecodeError> {
    let mut r = Reader { buf };
    while let Some((n, v)) = r.field()? {
        if n == want {
            match v {
                Value::Bytes(b) => f(b)?,
                _ => return Err(format!("field {n} is not length-delimited")),
            }
        }
    }
    Ok(())
}

fn utf8(b: &[u8]) -> Result<String, DecodeError> {
    String::from_utf8(b.to_vec()).map_err(|_| "a string is not UTF-8".into())
}

fn any_value(buf: &[u8]) -> Result<String, DecodeError> {
    let mut r = Reader { buf };
    let mut out = String::new();
    while let Some((n, v)) = r.field()? {
        out = match (n, v) {
            (1, Value::Bytes(b)) => utf8(b)?,
            (2, Value::Varint(x)) => (x != 0).to_string(),
            (3, Value::Varint(x)) => (x as i64).to_string(),
            (4, Value::Fixed64(x)) => f64::from_bits(x).to_string(),
            _ => continue,
        };
    }
    Ok(out)
}

fn key_value(buf: &[u8]) -> Result<(String, String), DecodeError> {
    let mut r = Reader { buf };
    let (mut k, mut v) = (String::new(), String::new());
    while let Some((n, val)) = r.field()? {
        match (n, val) {
            (1, Value::Bytes(b)) => k = utf8(b)?,
            (2, Value::Bytes(b)) => v = any_value(b)?,
            _ => {}
        }
    }
    Ok((k, v))
}

fn data_point(buf: &[u8], metric: &str, kind: Kind) -> Result<Option<Point>, DecodeError> {
    let mut r = Reader { buf };
    let mut value = None;
    let mut attributes = Vec::new();
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (4, Value::Fixed64(x)) => value = Some(f64::from_bits(x)),
            (6, Value::Fixed64(x)) => value = Some(x as i64 as f64),
            (7, Value::Bytes(b)) => attributes.push(key_value(b)?),
            _ => {}
        }
    }
    Ok(value.map(|value| Point { metric: metric.to_string(), kind, value, attributes }))
}

fn metric(buf: &[u8], out: &mut Vec<Point>) -> Result<(), DecodeError> {
    let mut r = Reader { buf };
    let mut name = String::new();
    let mut data: Vec<(Kind, &[u8])> = Vec::new();
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Value::Bytes(b)) => name = utf8(b)?,
            (5, Value::Bytes(b)) => data.push((Kind::Gauge, b)),
            (7, Value::Bytes(b)) => {
                // A non-monotonic sum goes up and down: a gauge.
                let monotonic = {
                    let mut s = Reader { buf: b };
                    let mut m = false;
                    while let Some((n, v)) = s.field()? {
                        if let (3, Value::Varint(x)) = (n, v) {
                            m = x != 0;
                        }
                    }
                    m
                };
                data.push((if monotonic { Kind::Counter } else { Kind::Gauge }, b));
            }
            _ => {}
        }
    }
    for (kind, body) in data {
        each(body, 1, |p| {
            if out.len() >= MAX_POINTS {
                return Err(format!("more than {MAX_POINTS} data points"));
            }
            out.extend(data_point(p, &name, kind)?);
            Ok(())
        })?;
    }
    Ok(())
}

/// The number data points of a `MetricsData` payload.
pub fn decode(payload: &[u8]) -> Result<Vec<Point>, DecodeError> {
    let mut out = Vec::new();
    each(payload, 1, |rm| each(rm, 2, |sm| each(sm, 2, |m| metric(m, &mut out))))?;
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn bytes(field: u64, b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3 | 2, &mut out);
        varint(b.len() as u64, &mut out);
        out.extend_from_slice(b);
        out
    }

    /// A `MetricsData` with one gauge and one monotonic sum, as a client would push.
    pub(crate) fn sample() -> Vec<u8> {
        let attr = bytes(7, &[bytes(1, b"topic"), bytes(2, &bytes(1, b"t1"))].concat());
        let mut point = vec![4 << 3 | 1];
        point.extend(2.5f64.to_bits().to_le_bytes());
        point.extend(attr);
        let gauge = [bytes(1, b"org.apache.kafka.producer.record.queue.time.avg"), bytes(5, &bytes(1, &point))].concat();
        let mut count = vec![6 << 3 | 1];
        count.extend(7i64.to_le_bytes());
        let sum_body = [bytes(1, &count), vec![3 << 3, 1]].concat();
        let sum = [bytes(1, b"org.apache.kafka.producer.record.send.total"), bytes(7, &sum_body)].concat();
        let scope = [bytes(2, &gauge), bytes(2, &sum)].concat();
        bytes(1, &bytes(2, &scope))
    }

    #[test]
    fn gauges_and_sums_decode_with_their_attributes() {
        let points = decode(&sample()).unwrap();
        assert_eq!(points.len(), 2);
        assert_eq!(points[0].value, 2.5);
        assert_eq!(points[0].attributes, vec![("topic".to_string(), "t1".to_string())]);
        assert_eq!((points[1].kind, points[1].value), (Kind::Counter, 7.0));
    }

    #[test]
    fn malformed_payloads_are_errors_not_panics() {
        let good = sample();
        for cut in 0..good.len() {
            let _ = decode(&good[..cut]);
        }
        assert!(decode(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err(), "a length past the end");
        assert!(decode(&[0x0b]).is_err(), "wire type 3");
        assert!(decode(b"not protobuf at all").is_err());
    }
}
