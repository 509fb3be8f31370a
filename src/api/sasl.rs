//! SaslHandshake and SaslAuthenticate outside a SASL exchange: on a connection that needs
//! no authentication, or one already authenticated. Kafka's request handlers answer both
//! with ILLEGAL_SASL_STATE; the exchange itself runs in `auth::sasl` before requests get here.

use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::error::Error;

pub async fn handshake(_ctx: &Ctx<'_>, _req: SaslHandshakeRequest) -> SaslHandshakeResponse {
    let e = Error::IllegalSaslState("SaslHandshake is not expected on this connection".into());
    SaslHandshakeResponse::default().with_error_code(e.code())
}

pub async fn authenticate(_ctx: &Ctx<'_>, _req: SaslAuthenticateRequest) -> SaslAuthenticateResponse {
    let e = Error::IllegalSaslState("SaslAuthenticate request received after successful authentication".into());
    SaslAuthenticateResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())))
}
