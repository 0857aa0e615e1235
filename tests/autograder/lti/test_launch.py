"""Launches from a real LTI 1.3 platform (lti1p3platform, on loopback): the tool's OIDC
login, the verified ``id_token``, and every forged ``id_token`` refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import HTTP_DEADLINE
from platform_app import CLIENT_ID


def test_register_makes_one_private_key_of_mode_0600(loopback):
    assert loopback.register().returncode == 0
    key = loopback.home.path("tool-key.pem")
    first = key.read_bytes()
    assert key.stat().st_mode & 0o777 == 0o600
    assert loopback.register().returncode == 0
    assert key.read_bytes() == first          # made once, kept


def test_tool_jwks_is_served_and_signs_its_assertions(loopback):
    loopback.register()
    served = requests.get(f"{loopback.tool.url}/lti/jwks", timeout=HTTP_DEADLINE).json()
    assert served == loopback.home.jwks()
    assert served["keys"][0]["kty"] == "RSA" and "d" not in served["keys"][0]


def test_two_students_launch_as_themselves_into_their_assignment(loopback):
    loopback.register()
    for user, name in (("lms-user-ada", "Ada Lovelace"), ("lms-user-alan", "Alan Turing")):
        page = loopback.launch(user, assignment="02_softmax")
        assert page.status_code == 200, page.text
        assert f"<b id='user'>{name}</b>" in page.text
        assert "<b id='assignment'>02_softmax</b>" in page.text
    contexts = loopback.home.read_json("contexts.json", {})
    assert contexts[loopback.platform.issuer]["course-101"]["lineitems"] == \
        f"{loopback.platform.url}/lineitems"


def test_launch_without_custom_parameter_maps_to_the_resource_link(loopback):
    loopback.register()
    page = loopback.launch("lms-user-ada")
    assert "<b id='assignment'>link-1</b>" in page.text


def _other_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _forge(loopback, claims: dict, key: str | None = None, **header) -> str:
    kid = jwt.get_unverified_header(loopback_token(loopback, claims))["kid"]
    return jwt.encode(claims, key or loopback.platform.private_key, algorithm="RS256",
                      headers={"kid": kid, **header})


def loopback_token(loopback, claims):     # the kid the platform's JWKS serves
    return jwt.encode(claims, loopback.platform.private_key, algorithm="RS256",
                      headers={"kid": loopback.platform.registration().get_kid()})


FORGERIES = {
    "wrong key": lambda lb, c: _forge(lb, c, key=_other_key()),
    "wrong audience": lambda lb, c: _forge(lb, {**c, "aud": "another-tool", "azp": "another-tool"}),
    "expired": lambda lb, c: _forge(lb, {**c, "iat": int(time.time()) - 7200,
                                         "exp": int(time.time()) - 3600}),
    "wrong deployment": lambda lb, c: _forge(lb, {
        **c, "https://purl.imsglobal.org/spec/lti/claim/deployment_id": "not-registered"}),
    "wrong issuer": lambda lb, c: _forge(lb, {**c, "iss": "https://lms.invalid"}),
    "another nonce": lambda lb, c: _forge(lb, {**c, "nonce": "made-up-nonce"}),
    "another user, same signature": lambda lb, c: _swap_body(
        _forge(lb, c), {**c, "sub": "lms-user-prof"}),
    "alg none": lambda lb, c: jwt.encode({**c}, None, algorithm="none"),
    "HS256 keyed with the platform's public key": lambda lb, c: (
        _hs256(c, lb.platform.public_key, jwt.get_unverified_header(_forge(lb, c))["kid"])),
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _swap_body(token: str, claims: dict) -> str:
    head, _, sig = token.split(".")
    return f"{head}.{_b64(json.dumps(claims).encode())}.{sig}"


def _hs256(claims, public_pem: str, kid: str) -> str:
    head = _b64(json.dumps({"alg": "HS256", "kid": kid, "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims).encode())
    sig = hmac.new(public_pem.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(sig)}"


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_forged_id_token_is_refused(loopback, forgery):
    loopback.register()
    browser, fields, _ = loopback.start_launch("lms-user-ada", "02_softmax")
    claims = jwt.decode(fields["id_token"], options={"verify_signature": False})
    assert claims["aud"] == CLIENT_ID
    forged = FORGERIES[forgery](loopback, claims)
    page = loopback.post_launch(browser, {**fields, "id_token": forged})
    assert page.status_code == 403, (forgery, page.text)
    assert "launch refused" in page.text
    # the real token of the same login still goes through: the refusal was the forgery's
    assert loopback.post_launch(browser, fields).status_code == 200


def test_replayed_id_token_is_refused(loopback):
    loopback.register()
    browser, fields, _ = loopback.start_launch("lms-user-ada", "02_softmax")
    assert loopback.post_launch(browser, fields).status_code == 200
    again = loopback.post_launch(browser, fields)
    assert again.status_code == 403 and "launch refused" in again.text


def test_lti_serve_serves_the_tools_jwks(tmp_path):
    import socket
    import subprocess
    import sys

    from autograder import REPO_ROOT
    from autograder.lti.store import ToolHome

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = ToolHome.at(tmp_path / "tool")
    server = subprocess.Popen([sys.executable, "-m", "autograder", "lti", "serve", "--tool-dir",
                               str(home.root), "--port", str(port), "--prefix", "/services/grader"],
                              cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert "lti serve: the tool on" in server.stdout.readline()
        served = requests.get(f"http://127.0.0.1:{port}/services/grader/lti/jwks",
                              timeout=HTTP_DEADLINE).json()
        assert served == home.jwks()
    finally:
        server.terminate()
        server.wait(HTTP_DEADLINE)


def test_launch_without_the_logins_state_cookie_is_refused(loopback):
    """A launch posted from another browser (a cross-site forgery of a real token)."""
    loopback.register()
    _, fields, _ = loopback.start_launch("lms-user-ada", "02_softmax")
    page = requests.post(f"{loopback.tool.url}/lti/launch", data=fields, timeout=HTTP_DEADLINE)
    assert page.status_code == 403 and "launch refused" in page.text


def test_login_from_an_unregistered_platform_is_refused(loopback):
    page = requests.get(f"{loopback.platform.url}/launch/lms-user-ada",  # never registered
                        timeout=HTTP_DEADLINE)
    assert page.status_code == 403 and "launch refused" in page.text
    assert page.url.startswith(f"{loopback.tool.url}/lti/login")
