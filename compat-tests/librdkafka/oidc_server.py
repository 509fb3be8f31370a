#!/usr/bin/env python3
"""A small OAuth 2 token endpoint for librdkafka's 0126_oauthbearer_oidc, which expects one
(librdkafka's own CI starts one with trivup). Standard library and `openssl` only.

    oidc_server.py DIR PORT CLIENT_ID CLIENT_SECRET

On first use it makes, in DIR: the issuer's RSA key (issuer.key) and its JWKS (jwks.json, for
the brokers' sasl.oauthbearer.jwks.endpoint.url), and the client's RSA key for the
jwt-bearer grant (client.key, client-enc.key encrypted with the password in
client-enc.password, client.pub). It then serves on 127.0.0.1:PORT:

  POST /token    grant_type=client_credentials with HTTP Basic CLIENT_ID:CLIENT_SECRET, or
                 grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer with an RS256
                 assertion signed by the client's key (its signature, exp and sub checked)
  GET  /token    Azure IMDS style (librdkafka's metadata authentication): header
                 `Metadata: true` and the query parameters api-version, resource, client_id
  POST /expired  a well-signed token that expired an hour ago
  POST /badformat  an access_token that is not a JWT

Each answers {"access_token", "token_type", "expires_in"} with an RS256 JWT of the issuer's
key (sub: the client, iss: sluice-oidc-test), or 400/401 with an OAuth error. A scope of
`invalid_scope` is refused with invalid_scope.
"""
import base64
import http.server
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def openssl(*argv, data=None):
    return subprocess.run(["openssl", *argv], input=data, check=True, capture_output=True).stdout


def make_keys(d):
    if os.path.exists(os.path.join(d, "jwks.json")):
        return
    os.makedirs(d, exist_ok=True)
    issuer = os.path.join(d, "issuer.key")
    openssl("genrsa", "-out", issuer, "2048")
    modulus = openssl("rsa", "-in", issuer, "-noout", "-modulus").decode().strip().split("=", 1)[1]
    jwk = {"kty": "RSA", "kid": "sluice-oidc", "use": "sig", "alg": "RS256",
           "n": b64url(bytes.fromhex(modulus)), "e": b64url(b"\x01\x00\x01")}
    client = os.path.join(d, "client.key")
    openssl("genrsa", "-out", client, "2048")
    openssl("rsa", "-in", client, "-pubout", "-out", os.path.join(d, "client.pub"))
    password = "oidc-client-secret-key"
    with open(os.path.join(d, "client-enc.password"), "w") as f:
        f.write(password)
    openssl("pkcs8", "-topk8", "-in", client, "-out", os.path.join(d, "client-enc.key"),
            "-v2", "aes-256-cbc", "-passout", f"pass:{password}")
    with open(os.path.join(d, "jwks.json.tmp"), "w") as f:
        json.dump({"keys": [jwk]}, f)
    os.rename(os.path.join(d, "jwks.json.tmp"), os.path.join(d, "jwks.json"))


def issue(d, sub, lifetime, scope=None):
    """An RS256 JWT of the issuer's key."""
    now = int(time.time())
    header = {"alg": "RS256", "typ": "JWT", "kid": "sluice-oidc"}
    claims = {"sub": sub, "iat": now, "exp": now + lifetime, "iss": "sluice-oidc-test"}
    if scope:
        claims["scope"] = scope
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    sig = openssl("dgst", "-sha256", "-sign", os.path.join(d, "issuer.key"), data=signing_input.encode())
    return f"{signing_input}.{b64url(sig)}"


def assertion_subject(d, assertion):
    """The sub of a client assertion whose RS256 signature by the client's key checks out,
    and which has not expired; else None."""
    try:
        head, body, sig = assertion.split(".")
        header, claims = json.loads(unb64url(head)), json.loads(unb64url(body))
    except ValueError:
        return None
    if header.get("alg") != "RS256" or claims.get("exp", 0) < time.time() or not claims.get("sub"):
        return None
    with tempfile.NamedTemporaryFile() as f:
        f.write(unb64url(sig))
        f.flush()
        ok = subprocess.run(["openssl", "dgst", "-sha256", "-verify", os.path.join(d, "client.pub"),
                             "-signature", f.name], input=f"{head}.{body}".encode(),
                            capture_output=True).returncode == 0
    return claims["sub"] if ok else None


def handler(d, client_id, client_secret):
    basic = "Basic " + base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def refuse(self, code, error, why):
            self.answer(code, {"error": error, "error_description": why})

        def token(self, sub, scope=None, lifetime=3600):
            self.answer(200, {"access_token": issue(d, sub, lifetime, scope), "token_type": "bearer",
                              "expires_in": lifetime})

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query))
            if url.path != "/token":
                return self.refuse(404, "not_found", url.path)
            if self.headers.get("Metadata") != "true":
                return self.refuse(400, "invalid_request", "the Metadata: true header is required")
            missing = [k for k in ("api-version", "resource", "client_id") if not q.get(k)]
            if missing:
                return self.refuse(400, "invalid_request", f"missing {', '.join(missing)}")
            self.token(q["client_id"])

        def do_POST(self):
            url = urllib.parse.urlsplit(self.path)
            n = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(n).decode()))
            scope = form.get("scope")
            if scope == "invalid_scope":
                return self.refuse(400, "invalid_scope", "scope not allowed")
            if url.path == "/badformat":
                return self.answer(200, {"access_token": "not-a-jwt", "token_type": "bearer", "expires_in": 3600})
            if url.path == "/expired":
                return self.token(client_id, scope, lifetime=-3600)
            if url.path != "/token":
                return self.refuse(404, "not_found", url.path)
            grant = form.get("grant_type")
            if grant == "client_credentials":
                if self.headers.get("Authorization") != basic:
                    return self.refuse(401, "invalid_client", "wrong client id or secret")
                return self.token(client_id, scope)
            if grant == JWT_BEARER:
                sub = assertion_subject(d, form.get("assertion", ""))
                if sub is None:
                    return self.refuse(400, "invalid_grant", "assertion not signed by the client's key, or expired")
                return self.token(sub, scope)
            self.refuse(400, "unsupported_grant_type", str(grant))

        def log_message(self, fmt, *args):
            sys.stderr.write("oidc: " + fmt % args + "\n")

    return Handler


def main():
    d, port, client_id, client_secret = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    make_keys(d)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler(d, client_id, client_secret))
    print(f"oidc: serving on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
