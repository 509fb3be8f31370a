//! GetTelemetrySubscriptions and PushTelemetry (KIP-714), answered by the broker's own
//! telemetry receiver (`crate::telemetry`): pushed metrics end up on `/metrics`.

use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::clock::now_ms;
use crate::error::Error;
use crate::log::compression;
use crate::telemetry::subscription::ClientInfo;
use crate::telemetry::{otlp, Push, ACCEPTED_COMPRESSION};

/// Who the client is, for subscription matching (Kafka's `ClientMetricsInstanceMetadata`).
fn client_info(ctx: &Ctx<'_>) -> ClientInfo {
    ClientInfo {
        client_id: ctx.client_id.clone(),
        software_name: ctx.client_software.as_ref().map(|(n, _)| n.to_string()),
        software_version: ctx.client_software.as_ref().map(|(_, v)| v.to_string()),
        source_address: ctx.host.clone(),
        source_port: None,
    }
}

pub async fn get_subscriptions(ctx: &Ctx<'_>, req: GetTelemetrySubscriptionsRequest) -> GetTelemetrySubscriptionsResponse {
    let now = now_ms();
    let t = &ctx.broker.telemetry;
    t.maybe_expire(now);
    match t.get_subscriptions(req.client_instance_id, &client_info(ctx), now) {
        Ok(g) => GetTelemetrySubscriptionsResponse::default()
            .with_client_instance_id(g.instance_id)
            .with_subscription_id(g.subscription_id)
            .with_accepted_compression_types(ACCEPTED_COMPRESSION.to_vec())
            .with_push_interval_ms(g.push_interval_ms)
            .with_telemetry_max_bytes(t.max_bytes.min(i32::MAX as usize) as i32)
            // Cumulative sums: the latest pushed value of a counter is its total, which is
            // what a Prometheus counter shows (Kafka's own receiver asks for deltas).
            .with_delta_temporality(false)
            .with_requested_metrics(g.metrics.into_iter().map(sb).collect()),
        Err(e) => GetTelemetrySubscriptionsResponse::default().with_error_code(e.code()),
    }
}

/// Decompresses and decodes an accepted push, and keeps its values.
fn export(ctx: &Ctx<'_>, req: &PushTelemetryRequest) -> Result<(), Error> {
    let t = &ctx.broker.telemetry;
    let payload = compression::decompress(req.compression_type as i16, &req.metrics, t.max_bytes).map_err(|e| {
        if compression::is_too_large(&e) {
            Error::TelemetryTooLarge(format!("Telemetry request decompresses to more than {} bytes", t.max_bytes))
        } else {
            Error::InvalidRecord(e.to_string())
        }
    })?;
    let points = otlp::decode(&payload).map_err(Error::InvalidRecord)?;
    t.exported.record(req.client_instance_id, &ctx.client_id, points);
    Ok(())
}

pub async fn push(ctx: &Ctx<'_>, req: PushTelemetryRequest) -> PushTelemetryResponse {
    let now = now_ms();
    let t = &ctx.broker.telemetry;
    t.maybe_expire(now);
    let p = Push {
        instance_id: req.client_instance_id,
        subscription_id: req.subscription_id,
        terminating: req.terminating,
        compression: req.compression_type,
        payload_len: req.metrics.len(),
    };
    let result = t.check_push(&p, &client_info(ctx), now).and_then(|()| {
        if req.metrics.is_empty() {
            return Ok(());
        }
        export(ctx, &req).inspect_err(|e| {
            tracing::debug!(client_instance_id = %req.client_instance_id, error = %e, "pushed telemetry not exported");
            t.export_failed(req.client_instance_id, e);
        })
    });
    match result {
        Ok(()) => PushTelemetryResponse::default(),
        Err(e) => PushTelemetryResponse::default().with_error_code(e.code()),
    }
}
