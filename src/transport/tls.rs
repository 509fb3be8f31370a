//! TLS contexts from Kafka's `ssl.*` keys (with `listener.name.<l>.` overrides): the
//! keystore (PEM file or inline, PKCS12), the truststore, `ssl.client.auth`, protocols and
//! cipher suites, for the server side of a listener and the client side of a broker's own
//! connections.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::principal::PrincipalMapper;
use crate::config::listeners::for_listener;
use crate::config::BrokerConfig;

/// A TLS setting that cannot be used; the message names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("listener {listener}: {why}")]
pub struct TlsError {
    listener: String,
    why: String,
}

/// What `ssl.client.auth` asks of clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// A listener's server side: the acceptor and how certificates become principals.
pub struct ServerTls {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub mapper: PrincipalMapper,
    pub client_auth: ClientAuth,
}

/// Reads the `ssl.*` keys of one listener.
struct Keys<'a> {
    cfg: &'a BrokerConfig,
    listener: &'a str,
}

impl Keys<'_> {
    fn get(&self, key: &str) -> String {
        for_listener(self.cfg, self.listener, key)
    }

    fn opt(&self, key: &str) -> Option<String> {
        Some(self.get(key)).filter(|v| !v.trim().is_empty())
    }

    fn err(&self, why: impl Into<String>) -> TlsError {
        TlsError { listener: self.listener.to_string(), why: why.into() }
    }

    fn read(&self, key: &str, path: &str) -> Result<Vec<u8>, TlsError> {
        std::fs::read(path).map_err(|e| self.err(format!("{key} {path}: {e}")))
    }

    /// The store type, with JKS files sniffed: Java reads a PKCS12 file under the JKS type
    /// too, and a real JKS store is refused with what to do about it.
    fn store_type(&self, type_key: &str, location_key: &str, bytes: Option<&[u8]>) -> Result<String, TlsError> {
        let t = self.get(type_key).trim().to_ascii_uppercase();
        if t != "JKS" {
            return Ok(t);
        }
        match bytes {
            Some([0xfe, 0xed, 0xfe, 0xed, ..]) => {
                let path = self.get(location_key);
                Err(self.err(format!(
                    "{location_key} {path} is a JKS store, which Sluice cannot read (no maintained Rust crate reads JKS); convert it with \
                     `keytool -importkeystore -srckeystore {path} -destkeystore {path}.p12 -deststoretype PKCS12` and set {type_key}=PKCS12, or use PEM"
                )))
            }
            Some(b) if b.first() == Some(&0x30) => Ok("PKCS12".into()),
            Some(_) => Err(self.err(format!("{location_key} is neither a JKS nor a PKCS12 store; set {type_key} (PEM or PKCS12)"))),
            None => Err(self.err(format!("{type_key}=JKS (Kafka's default) cannot hold inline PEM; set {type_key}=PEM"))),
        }
    }

    /// The key and chain this side presents, if any is configured.
    fn keystore(&self) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, TlsError> {
        let location = self.opt("ssl.keystore.location");
        let inline_key = self.opt("ssl.keystore.key");
        let bytes = match &location {
            Some(p) => Some(self.read("ssl.keystore.location", p)?),
            None if inline_key.is_some() => None,
            None => return Ok(None),
        };
        match self.store_type("ssl.keystore.type", "ssl.keystore.location", bytes.as_deref())?.as_str() {
            "PEM" => {
                let (key_pem, chain_pem) = match (&bytes, inline_key) {
                    (Some(b), _) => (b.clone(), b.clone()),
                    (None, Some(k)) => {
                        let chain = self
                            .opt("ssl.keystore.certificate.chain")
                            .ok_or_else(|| self.err("ssl.keystore.key needs ssl.keystore.certificate.chain"))?;
                        (k.into_bytes(), chain.into_bytes())
                    }
                    (None, None) => return Ok(None),
                };
                let chain = pem_certs(&chain_pem).map_err(|e| self.err(format!("keystore certificates: {e}")))?;
                if chain.is_empty() {
                    return Err(self.err("the PEM keystore holds no certificate"));
                }
                let key = self.pem_key(&key_pem)?;
                Ok(Some((chain, key)))
            }
            "PKCS12" => {
                let password = self.get("ssl.keystore.password");
                let b = bytes.ok_or_else(|| self.err("ssl.keystore.type=PKCS12 needs ssl.keystore.location"))?;
                let store = p12_keystore::KeyStore::from_pkcs12(&b, &password, p12_keystore::Pkcs12ImportPolicy::Relaxed).map_err(|e| {
                    self.err(format!("ssl.keystore.location: cannot open the PKCS12 store (wrong ssl.keystore.password?): {e}"))
                })?;
                let (_, chain) = store.private_key_chain().ok_or_else(|| self.err("the PKCS12 keystore holds no private key"))?;
                let certs: Vec<CertificateDer<'static>> = chain.certs().iter().map(|c| CertificateDer::from(c.as_der().to_vec())).collect();
                if certs.is_empty() {
                    return Err(self.err("the PKCS12 keystore's key has no certificate"));
                }
                Ok(Some((certs, PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec())))))
            }
            other => Err(self.err(format!("ssl.keystore.type '{other}' is not PEM or PKCS12"))),
        }
    }

    /// The private key of a PEM keystore: plain, or PKCS#8-encrypted with `ssl.key.password`.
    fn pem_key(&self, pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
        let text = String::from_utf8_lossy(pem);
        if let Some(start) = text.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            let end_tag = "-----END ENCRYPTED PRIVATE KEY-----";
            let end =
                text[start..].find(end_tag).map(|e| start + e + end_tag.len()).ok_or_else(|| self.err("unterminated encrypted key"))?;
            let (_, der) = pem_rfc7468::decode_vec(text[start..end].as_bytes()).map_err(|e| self.err(format!("encrypted key: {e}")))?;
            let password = self.opt("ssl.key.password").ok_or_else(|| self.err("the PEM key is encrypted: set ssl.key.password"))?;
            let info = pkcs8::EncryptedPrivateKeyInfoRef::try_from(der.as_slice()).map_err(|e| self.err(format!("encrypted key: {e}")))?;
            let doc =
                info.decrypt(password.as_bytes()).map_err(|e| self.err(format!("cannot decrypt the key with ssl.key.password: {e}")))?;
            return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(doc.as_bytes().to_vec())));
        }
        PrivateKeyDer::from_pem_slice(pem).map_err(|e| self.err(format!("no private key in the PEM keystore: {e}")))
    }

    /// The certificates trusted, if a truststore is configured.
    fn truststore(&self) -> Result<Option<RootCertStore>, TlsError> {
        let location = self.opt("ssl.truststore.location");
        let inline = self.opt("ssl.truststore.certificates");
        let bytes = match &location {
            Some(p) => Some(self.read("ssl.truststore.location", p)?),
            None if inline.is_some() => None,
            None => return Ok(None),
        };
        let certs = match self.store_type("ssl.truststore.type", "ssl.truststore.location", bytes.as_deref())?.as_str() {
            "PEM" => {
                let pem = bytes.or(inline.map(String::into_bytes)).unwrap_or_default();
                pem_certs(&pem).map_err(|e| self.err(format!("truststore: {e}")))?
            }
            "PKCS12" => {
                let b = bytes.ok_or_else(|| self.err("ssl.truststore.type=PKCS12 needs ssl.truststore.location"))?;
                let store =
                    p12_keystore::KeyStore::from_pkcs12(&b, &self.get("ssl.truststore.password"), p12_keystore::Pkcs12ImportPolicy::Raw)
                        .map_err(|e| {
                            self.err(format!("ssl.truststore.location: cannot open the PKCS12 store (wrong ssl.truststore.password?): {e}"))
                        })?;
                let mut out = Vec::new();
                for (_, entry) in store.entries() {
                    match entry {
                        p12_keystore::KeyStoreEntry::Certificate(c) => out.push(CertificateDer::from(c.as_der().to_vec())),
                        p12_keystore::KeyStoreEntry::PrivateKeyChain(k) => {
                            out.extend(k.certs().iter().map(|c| CertificateDer::from(c.as_der().to_vec())))
                        }
                        _ => {}
                    }
                }
                out
            }
            other => return Err(self.err(format!("ssl.truststore.type '{other}' is not PEM or PKCS12"))),
        };
        let mut roots = RootCertStore::empty();
        for c in certs {
            roots.add(c).map_err(|e| self.err(format!("truststore certificate: {e}")))?;
        }
        if roots.is_empty() {
            return Err(self.err("the truststore holds no certificate"));
        }
        Ok(Some(roots))
    }

    /// The crypto provider limited to `ssl.cipher.suites`, and the versions of `ssl.enabled.protocols`.
    fn provider(&self) -> Result<(Arc<CryptoProvider>, Vec<&'static rustls::SupportedProtocolVersion>), TlsError> {
        let mut versions = Vec::new();
        for p in self.get("ssl.enabled.protocols").split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p {
                "TLSv1.2" => versions.push(&rustls::version::TLS12),
                "TLSv1.3" => versions.push(&rustls::version::TLS13),
                other => return Err(self.err(format!("ssl.enabled.protocols: rustls does not do {other}; use TLSv1.2 and/or TLSv1.3"))),
            }
        }
        if versions.is_empty() {
            return Err(self.err("ssl.enabled.protocols is empty"));
        }
        let protocol = self.get("ssl.protocol");
        if !matches!(protocol.trim(), "TLS" | "TLSv1.2" | "TLSv1.3") {
            return Err(self.err(format!("ssl.protocol: rustls does not do {protocol}; use TLSv1.2 or TLSv1.3")));
        }
        let mut provider = rustls::crypto::ring::default_provider();
        let wanted: Vec<String> =
            self.get("ssl.cipher.suites").split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        if !wanted.is_empty() {
            let name = |s: &rustls::SupportedCipherSuite| iana_name(s.suite());
            if let Some(w) = wanted.iter().find(|w| !provider.cipher_suites.iter().any(|s| &name(s) == *w)) {
                let known: Vec<String> = provider.cipher_suites.iter().map(name).collect();
                return Err(self.err(format!("ssl.cipher.suites: rustls cannot do {w}; it can do {}", known.join(","))));
            }
            provider.cipher_suites.retain(|s| wanted.contains(&name(s)));
        }
        Ok((Arc::new(provider), versions))
    }

    fn client_auth(&self) -> Result<ClientAuth, TlsError> {
        match self.get("ssl.client.auth").trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "requested" => Ok(ClientAuth::Requested),
            "required" => Ok(ClientAuth::Required),
            other => Err(self.err(format!("ssl.client.auth '{other}' is not none, requested or required"))),
        }
    }
}

/// IANA's name of a suite, as Java and Kafka write them.
fn iana_name(s: rustls::CipherSuite) -> String {
    let n = format!("{s:?}");
    match n.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => n,
    }
}

fn pem_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, rustls::pki_types::pem::Error> {
    CertificateDer::pem_slice_iter(pem).collect()
}

/// The server side of the TLS listener `listener`.
pub fn server(cfg: &BrokerConfig, listener: &str) -> Result<ServerTls, TlsError> {
    let k = Keys { cfg, listener };
    let (chain, key) =
        k.keystore()?.ok_or_else(|| k.err("an SSL listener needs a keystore: set ssl.keystore.location (or ssl.keystore.key)"))?;
    let (provider, versions) = k.provider()?;
    let client_auth = k.client_auth()?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| k.err(format!("ssl.cipher.suites/ssl.enabled.protocols: {e}")))?;
    let builder = match (client_auth, k.truststore()?) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => return Err(k.err("ssl.client.auth needs a truststore (ssl.truststore.location or ssl.truststore.certificates)")),
        (auth, Some(roots)) => {
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = if auth == ClientAuth::Requested { v.allow_unauthenticated() } else { v };
            builder.with_client_cert_verifier(v.build().map_err(|e| k.err(format!("client verifier: {e}")))?)
        }
    };
    let mut config =
        builder.with_single_cert(chain, key).map_err(|e| k.err(format!("the keystore's key does not fit its certificate: {e}")))?;
    // Kafka's clients send no session tickets back; a cache only costs memory per connection.
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(256);
    let mapper = PrincipalMapper::parse(&k.get("ssl.principal.mapping.rules")).map_err(|e| k.err(e.to_string()))?;
    Ok(ServerTls { acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)), mapper, client_auth })
}

/// The client side for this broker's connections to `listener` on other nodes: trusting
/// the truststore, presenting the keystore (for `ssl.client.auth` there), and checking
/// host names unless `ssl.endpoint.identification.algorithm` is empty.
pub fn client(cfg: &BrokerConfig, listener: &str) -> Result<rustls::ClientConfig, TlsError> {
    let k = Keys { cfg, listener };
    let (provider, versions) = k.provider()?;
    let roots = Arc::new(
        k.truststore()?
            .ok_or_else(|| k.err("TLS to other nodes needs a truststore (ssl.truststore.location or ssl.truststore.certificates)"))?,
    );
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| k.err(format!("ssl.cipher.suites/ssl.enabled.protocols: {e}")))?;
    let builder = match k.get("ssl.endpoint.identification.algorithm").trim().to_ascii_lowercase().as_str() {
        "https" => builder.with_root_certificates(roots),
        "" => {
            let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| k.err(format!("server verifier: {e}")))?;
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyName(inner)))
        }
        other => return Err(k.err(format!("ssl.endpoint.identification.algorithm '{other}' is not https or empty"))),
    };
    match k.keystore()? {
        Some((chain, key)) => {
            builder.with_client_auth_cert(chain, key).map_err(|e| k.err(format!("the keystore's key does not fit its certificate: {e}")))
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

/// Checks the chain as usual but not the host name (`ssl.endpoint.identification.algorithm=`).
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(m, c, d)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(m, c, d)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
