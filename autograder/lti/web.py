"""The tool's HTTP side as tornado routes: OIDC login, launch, the tool's JWKS.

:func:`routes` gives the handlers to mount under a prefix (the grading service mounts them
under ``/services/grader/``; the tests serve them alone). :func:`after_grading` is the
service's hook that sends each graded record's score to the LMS.
"""

from __future__ import annotations

import html
import json

from typing import Callable

import tornado.web

from autograder.lti import launch as lti_launch
from autograder.lti.ags import Score, keep_pending, now, push
from autograder.lti.grades import feedback_link
from autograder.lti.store import ToolHome

#: The largest login or launch request body read (an id_token is a few kB).
MAX_BODY = 64 * 1024


class _Base(tornado.web.RequestHandler):
    def initialize(self, home: ToolHome, store: lti_launch.Store, prefix: str,
                   on_launch: Callable[[lti_launch.Launch], None] | None = None):
        self.home, self.store, self.prefix, self.on_launch = home, store, prefix, on_launch

    def params(self) -> dict[str, str]:
        if len(self.request.body or b"") > MAX_BODY:
            raise tornado.web.HTTPError(413)
        return {k: self.get_argument(k) for k in self.request.arguments}

    def url(self, name: str) -> str:
        return f"{self.request.protocol}://{self.request.host}{self.prefix}/lti/{name}"

    def check_xsrf_cookie(self) -> None:
        """The platform's cross-site form posts carry no XSRF token of ours: a launch is
        proven by its signed ``id_token``, its one-use nonce and the login's state
        cookie, so the grading service's XSRF check (its own forms) is not theirs."""

    def refuse(self, why: str) -> None:
        self.set_status(403)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(f"launch refused: {why}"[:500])


class LoginHandler(_Base):
    def _login(self):
        try:
            found = lti_launch.login(self.home, self.store, self.params(), self.url("launch"),
                                     secure=self.request.protocol == "https")
        except lti_launch.LaunchRefused as exc:
            return self.refuse(str(exc))
        for name, value in found.cookies.items():
            self.set_cookie(name, value, httponly=True, samesite="None",
                            secure=self.request.protocol == "https")
        self.redirect(found.location)

    get = post = _login


class LaunchHandler(_Base):
    def post(self):
        cookies = {k: v.value for k, v in self.request.cookies.items()}
        try:
            found = lti_launch.verify(self.home, self.store, self.params(), cookies,
                                      secure=self.request.protocol == "https")
        except lti_launch.LaunchRefused as exc:
            return self.refuse(str(exc))
        lti_launch.remember(self.home, found)
        if self.on_launch:
            self.on_launch(found)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(f"<!doctype html><title>Launched</title><p>Signed in as "
                    f"<b id='user'>{html.escape(found.name or found.user_id)}</b> for "
                    f"<b id='assignment'>{html.escape(found.assignment)}</b>.</p>")


class JwksHandler(_Base):
    def get(self):
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(self.home.jwks()))


def routes(home: ToolHome, prefix: str = "", store: lti_launch.Store | None = None,
           on_launch: Callable | None = None) -> list:
    """``[(pattern, handler, kwargs)]`` for ``prefix/lti/login``, ``/launch``, ``/jwks``."""
    kwargs = {"home": home, "store": store or lti_launch.Store(), "prefix": prefix.rstrip("/"),
              "on_launch": on_launch}
    base = prefix.rstrip("/")
    return [(f"{base}/lti/login", LoginHandler, kwargs),
            (f"{base}/lti/launch", LaunchHandler, kwargs),
            (f"{base}/lti/jwks", JwksHandler, kwargs)]


def after_grading(home: ToolHome, issuer: str | None = None,
                  feedback_url: str | None = None) -> Callable[[dict], None]:
    """The grading service's hook: each graded record's score to the LMS (failures stay
    pending in the tool's folder and go with the next push)."""
    def send(record: dict) -> None:
        platform = home.platform(issuer)
        contexts = home.read_json("contexts.json", {}).get(platform.issuer, {})
        urls = {c["lineitems"] for c in contexts.values() if c.get("lineitems")}
        student, assignment = str(record["student_id"]), str(record["assignment"])
        link = feedback_link(feedback_url, student, assignment) if feedback_url else ""
        score = Score(student, assignment, float(record["points"]), float(record["max_points"]),
                      f"Feedback: {link}" if link else "Graded by the course's autograder", now())
        if len(urls) == 1:
            push(home, platform, urls.pop(), [score])
        else:      # no launch (or several courses') told where: kept for `lti push`
            keep_pending(home, [score])
    return send





# -- the grading service's hooks (``python -m autograder serve``) --------------------------

#: The feedback pages' address as students reach them (the hub's public URL and the
#: service's ``feedback/`` path), for the comment that goes with each score.
FEEDBACK_URL_ENV = "AUTOGRADER_FEEDBACK_URL"


def service_routes(service) -> list:
    """``serve --extra-routes autograder.lti.web:service_routes``: the tool's login, launch
    and JWKS under the service's prefix (``/services/grader/lti/...``), the tool's folder
    from ``$AUTOGRADER_LTI_DIR``. The service prefixes each pattern itself."""
    import os

    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/grader/").rstrip("/")
    return [(pattern[len(prefix):].lstrip("/"), handler, kwargs)
            for pattern, handler, kwargs in routes(ToolHome.at(None), prefix)]


def service_after_grading(record: dict) -> None:
    """``serve --after-grading autograder.lti.web:service_after_grading``: each graded
    record's score to the LMS line item the launches named (kept pending otherwise)."""
    import os

    after_grading(ToolHome.at(None), feedback_url=os.environ.get(FEEDBACK_URL_ENV))(record)
