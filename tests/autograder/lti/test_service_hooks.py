"""The LTI tool inside the JupyterHub grading service (issues 39 and 40): the service's
``--extra-routes`` and ``--after-grading`` hooks take the tool's routes and score hook,
and its XSRF check (the service's own forms) does not refuse the platform's launch.

The service's own tornado application (``make_app``) serving the tool's routes; the
score hook, configured by name, against a real platform on loopback is in
tests/autograder/lti/test_grades.py.
"""

from __future__ import annotations


from autograder.lti import web as lti_web

PREFIX = "/services/grader/"


def test_the_tools_routes_mount_under_the_service_prefix(monkeypatch, tmp_path):
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", PREFIX)
    monkeypatch.setenv("AUTOGRADER_LTI_DIR", str(tmp_path / "tool"))
    from autograder.ondemand.service.web import make_app

    app = make_app(object(), PREFIX, lti_web.service_routes(None))
    patterns = {rule.matcher.regex.pattern for rule in app.wildcard_router.rules}
    for name in ("login", "launch", "jwks"):
        assert f"{PREFIX}lti/{name}$" in patterns, patterns
    # the tool's own addresses (the launch URL it gives the platform) carry the prefix
    [(_, _, kwargs), *_] = lti_web.service_routes(None)
    assert kwargs["prefix"] == PREFIX.rstrip("/")


def test_a_launch_post_is_not_refused_by_the_services_xsrf_check():
    """tornado refuses any POST without its XSRF token when the application asks for it
    (the service does); the platform's form post has none."""
    handler = lti_web.LaunchHandler.__new__(lti_web.LaunchHandler)
    assert handler.check_xsrf_cookie() is None          # no HTTPError 403
