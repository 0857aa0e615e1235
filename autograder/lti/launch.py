"""OIDC login initiation and the verified launch, with pylti1p3 behind small adapters.

pylti1p3 has adapters for Django and Flask, not tornado nor the command line: the classes
here give it a request's parameters, a cookie jar and a session store. The store is the
tool's own: each nonce the login made may be used by one launch only (a replayed
``id_token`` is refused), and every launch is checked by pylti1p3 against the platform's
JWKS: signature (RS256), issuer, audience (the client id), expiry, nonce and deployment id.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Mapping

from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.session import SessionService

from autograder.lti.store import ToolHome

CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
RESOURCE_LINK = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
#: How long a login's state and nonce wait for their launch (seconds).
LOGIN_LIFETIME = 600


class LaunchRefused(Exception):
    """A launch (or login) the tool does not accept; the message says why."""


@dataclass(frozen=True)
class Launch:
    """A verified launch: who, from which platform and course, for which assignment."""
    issuer: str
    user_id: str             # the LMS's ``sub``
    name: str
    email: str
    roles: tuple[str, ...]
    assignment: str          # custom ``assignment`` parameter, else the resource link id
    resource_link_id: str
    context_id: str
    lineitems_url: str
    memberships_url: str


class Store(LaunchDataStorage):
    """States and nonces of logins in progress, in memory, each valid once and for a while."""

    def __init__(self, lifetime: int = LOGIN_LIFETIME):
        super().__init__()
        self._values: dict[str, tuple[float, object]] = {}
        self._lock = threading.Lock()
        self.lifetime = lifetime

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str):
        with self._lock:
            expires, value = self._values.get(key, (0.0, None))
            return value if expires > time.time() else None

    def set_value(self, key: str, value, exp=None) -> None:
        with self._lock:
            self._values[key] = (time.time() + min(exp or self.lifetime, self.lifetime), value)

    def check_value(self, key: str) -> bool:
        return self.get_value(key) is not None

    def take(self, key: str) -> bool:
        """True once for a live key, which is then gone (a nonce is used by one launch)."""
        with self._lock:
            expires, _ = self._values.pop(key, (0.0, None))
            return expires > time.time()


class _Session(SessionService):
    """pylti1p3's session on the tool's store; a nonce is used up by :meth:`use_nonce`,
    once the whole launch is verified (a forged token does not burn the real one's)."""

    def __init__(self, store: Store):
        self.data_storage = store

    def use_nonce(self, nonce: str) -> bool:
        return self.data_storage.take(self._get_key("nonce", nonce))


class Params(Request):
    """A request as pylti1p3 reads it: its parameters (GET or POST)."""

    def __init__(self, params: Mapping[str, str], secure: bool = True):
        self._params = dict(params)
        self._secure = secure

    @property
    def session(self):
        return {}

    def is_secure(self) -> bool:
        return self._secure

    def get_param(self, key: str) -> str:
        return self._params.get(key)


class Cookies(CookieService):
    """Cookies read from the request and the ones to set on the response."""

    def __init__(self, sent: Mapping[str, str] | None = None):
        self.sent = dict(sent or {})
        self.to_set: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str):
        return self.sent.get(self._name(name))

    def set_cookie(self, name, value, exp=3600):
        self.to_set[self._name(name)] = str(value)


class _Redirect(Redirect):
    def __init__(self, location: str):
        self._location = location

    def do_redirect(self):
        return self._location

    def do_js_redirect(self):
        return self._location

    def set_redirect_url(self, location: str):
        self._location = location

    def get_redirect_url(self) -> str:
        return self._location


class _Login(OIDCLogin):
    def get_redirect(self, url: str):
        return _Redirect(url)


class _MessageLaunch(MessageLaunch):
    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)


@dataclass(frozen=True)
class LoginRedirect:
    """Where the login sends the browser, and the cookies it sets (the state)."""
    location: str
    cookies: dict


def login(home: ToolHome, store: Store, params: Mapping[str, str], launch_url: str,
          secure: bool = True) -> LoginRedirect:
    """OIDC login initiation: the platform's ``iss``/``login_hint``/... to the redirect to
    its authorization endpoint (with a fresh state and nonce)."""
    cookies = Cookies()
    oidc = _Login(Params(params, secure), home.tool_conf(), _Session(store), cookies)
    try:
        location = oidc.disable_check_cookies().redirect(launch_url)
    except LtiException as exc:
        raise LaunchRefused(str(exc)) from exc
    except Exception as exc:   # e.g. an issuer never registered: a refusal, never a crash
        raise LaunchRefused(f"invalid login: {type(exc).__name__}: {exc}") from exc
    return LoginRedirect(location, cookies.to_set)


def verify(home: ToolHome, store: Store, params: Mapping[str, str],
           cookies: Mapping[str, str] | None = None, secure: bool = True) -> Launch:
    """The launch (``id_token`` and ``state`` posted by the platform), verified."""
    request = Params(params, secure)
    session = _Session(store)
    message = _MessageLaunch(request, home.tool_conf(), session, Cookies(cookies))
    try:
        # PyJWT checks signature and expiry; pylti1p3 the audience against the client id
        body = message.validate().get_launch_data()
        if not session.use_nonce(str(body.get("nonce"))):
            raise LaunchRefused("the nonce was used already (a replayed launch)")
    except LaunchRefused:
        raise
    except LtiException as exc:
        raise LaunchRefused(str(exc)) from exc
    except Exception as exc:   # a malformed token is a refusal too, never a crash
        raise LaunchRefused(f"invalid launch: {type(exc).__name__}: {exc}") from exc
    return launch_of(body)


def launch_of(body: Mapping) -> Launch:
    link = body.get(RESOURCE_LINK) or {}
    custom = body.get(CUSTOM) or {}
    ags = body.get(AGS) or {}
    return Launch(issuer=str(body["iss"]), user_id=str(body["sub"]),
                  name=str(body.get("name", "")), email=str(body.get("email", "")),
                  roles=tuple(body.get("https://purl.imsglobal.org/spec/lti/claim/roles", [])),
                  assignment=str(custom.get("assignment") or link.get("id", "")),
                  resource_link_id=str(link.get("id", "")),
                  context_id=str((body.get(CONTEXT) or {}).get("id", "")),
                  lineitems_url=str(ags.get("lineitems", "")),
                  memberships_url=str((body.get(NRPS) or {}).get("context_memberships_url", "")))


def remember(home: ToolHome, launch: Launch) -> None:
    """Keep the service URLs a launch gave, so that ``lti push`` and ``roster --lti``
    reach this course without a launch of their own."""
    contexts = home.read_json("contexts.json", {})
    contexts.setdefault(launch.issuer, {})[launch.context_id] = {
        "lineitems": launch.lineitems_url, "memberships": launch.memberships_url}
    home.write_json("contexts.json", contexts)
