"""Web Push interoperability: what Herald sends, read by an independent implementation.

Against `herald serve --demo` (HERALD_URL) and its Web Push simulator (control API at
SIM_CONTROL), with the demo's generated browser subscriptions (WEBPUSH_KEYS: the
webpush_subscription_keys.json of its credentials, what the browsers keep):

1. registers a web client of app demo-web subscribed as one of those browsers;
2. sends it a notification with a random marker through the send API;
3. takes the encrypted body Herald posted from the simulator's /requests, and decrypts it
   with PyPI's http_ece (aes128gcm, RFC 8291/8188) and the browser's private key;
4. verifies the VAPID authorization with the cryptography package: an ES256 JWT whose
   signature holds under the `k` Herald sends, which is the app's webPushVapidPublicKey;
   `aud` the endpoint's origin, `exp` within 24 hours, `sub` the app's subject.

Prints PASS or FAIL per check; exits 1 on any FAIL.
"""

import base64
import json
import os
import secrets
import sys
import time
import urllib.parse

import http_ece
import requests
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

URL = os.environ["HERALD_URL"]
CONTROL = os.environ["SIM_CONTROL"]
KEYS = json.load(open(os.environ["WEBPUSH_KEYS"]))
SUBSCRIPTIONS = json.load(open(os.environ["WEBPUSH_SUBSCRIPTIONS"]))
TENANT = "demo"
failures = 0


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def check(name, ok, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures += 1


def api(method, path, token, body=None):
    r = requests.request(method, URL + path, json=body, headers={"authorization": f"Bearer {token}"}, timeout=30)
    if r.status_code >= 300:
        raise SystemExit(f"{method} {path}: {r.status_code} {r.text}")
    return r.json() if r.content else None


token = requests.post(
    f"{URL}/auth/realms/{TENANT}/protocol/openid-connect/token",
    data={"grant_type": "password", "username": "admin", "password": "demo-password"},
    timeout=30,
).json()["access_token"]
app = api("GET", f"/v1/tenants/{TENANT}/apps/demo-web", token)["pushNotificationConfig"]

# A browser of the simulator (not the dead one), as a client of demo-web.
sub, keys = SUBSCRIPTIONS[1], KEYS[1]
assert sub["endpoint"] == keys["endpoint"]
client = api("POST", f"/v1/tenants/{TENANT}/clients", token, {"appName": "demo-web", "platform": "web"})
cid = client["astClientId"]
api("PUT", f"/v1/tenants/{TENANT}/users/interop/clients/{cid}", token, {})
api("PUT", f"/v1/tenants/{TENANT}/clients/{cid}/pushtoken", token,
    {"appName": "demo-web", "pushProvider": "WEB", "pushToken": json.dumps(sub)})

marker = secrets.token_hex(8)
sent = api("POST", f"/v1/tenants/{TENANT}/push_notification/send", token, {
    "category": "chat",
    "recipient": {"tenantId": TENANT, "userId": "interop", "astClientId": cid},
    "payload": {"message": {"title": "Interop", "body": f"marker {marker} é✓", "priority": "LOW", "timeToLive": 60},
                "customData": {"n": 7}},
})
check("send accepted", sent[0]["isSuccessful"] is True, sent)

path = urllib.parse.urlparse(sub["endpoint"]).path
recorded = None
for _ in range(50):
    reqs = requests.get(f"{CONTROL}/requests", params={"provider": "webpush", "limit": 1000}, timeout=30).json()["requests"]
    mine = [r for r in reqs if r["path"] == path and r["status"] == 201]
    if mine:
        recorded = mine[-1]
        break
    time.sleep(0.1)
check("the simulator accepted the message", recorded is not None)
if recorded is None:
    sys.exit(1)

# 3. Decryption by http_ece with the browser's private key.
body = b64url(recorded["body"])
private = ec.derive_private_key(int.from_bytes(b64url(keys["privateKey"]), "big"), ec.SECP256R1())
plain = http_ece.decrypt(body, private_key=private, auth_secret=b64url(keys["auth"]), version="aes128gcm")
message = json.loads(plain.decode("utf-8"))
check("http_ece decrypts Herald's aes128gcm body", message.get("body") == f"marker {marker} é✓", message)
check("the plaintext carries the notification",
      message.get("title") == "Interop" and message.get("data") == {"n": 7}
      and message.get("notificationId") == sent[0]["notificationId"], message)
check("the simulator's own decryption agrees", json.loads(recorded["plaintext"]) == message, recorded["plaintext"])
check("one record of at most 4096 bytes", len(body) <= 4096 and body[16:20] == (4096).to_bytes(4, "big"), len(body))
h = recorded["headers"]
check("headers", h.get("content-encoding") == "aes128gcm" and h.get("ttl") == "60" and h.get("urgency") == "low", h)

# 4. The VAPID authorization (RFC 8292), verified with cryptography.
scheme, _, params = h["authorization"].partition(" ")
fields = dict(p.strip().split("=", 1) for p in params.split(","))
check("vapid scheme", scheme == "vapid" and set(fields) == {"t", "k"}, h["authorization"][:40])
check("k is the app's webPushVapidPublicKey", fields["k"] == app["webPushVapidPublicKey"], fields["k"])
header_b64, claims_b64, sig_b64 = fields["t"].split(".")
jose = json.loads(b64url(header_b64))
claims = json.loads(b64url(claims_b64))
check("ES256 JWT", jose.get("alg") == "ES256", jose)
public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url(fields["k"]))
raw = b64url(sig_b64)
signature = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
try:
    public.verify(signature, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    verified = True
except Exception as e:  # noqa: BLE001 - any failure is the check's failure
    verified = repr(e)
check("the JWT's signature verifies under k", verified is True, verified)
origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlparse(sub["endpoint"]))
check("aud is the endpoint's origin", claims.get("aud") == origin, claims)
now = time.time()
check("exp within 24 hours", now < claims.get("exp", 0) <= now + 24 * 3600, claims)
check("sub is the app's subject", claims.get("sub") == app["webPushSubject"], claims)

sys.exit(1 if failures else 0)
