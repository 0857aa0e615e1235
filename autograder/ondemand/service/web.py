"""The service's pages behind JupyterHub's OAuth (``HubOAuthenticated``): a student sees
and submits only their own notebooks; an instructor releases hidden results.

Routes under the service's prefix (``/services/grader/``):

* ``GET  /``                          the student's submissions and the upload form;
* ``POST /submit``                    a notebook (form field ``file``, ``notebook`` =
  ``ASSIGNMENT/NOTEBOOK.ipynb``; or the raw notebook JSON with ``?notebook=...``): 202
  with the receipt, or 400/403/404/413/429 with the reason;
* ``GET  /feedback/S/A/N``            student S's feedback page of that notebook (S
  alone, and instructors, may read it: 403 for anyone else);
* ``POST /release``                   (instructors) ``assignment=A`` [``hidden=0`` to undo];
* ``GET  /oauth_callback``            JupyterHub's OAuth.

``extra_handlers`` (the LTI part plugs in here) are mounted under the same prefix.
"""

from __future__ import annotations

import json

from tornado import web

from . import pages
from .intake import Refused
from .service import GradingService

#: Bytes of a request body tornado accepts (the notebook, the form's own fields).
FORM_OVERHEAD = 64 * 1024


def _base():
    from jupyterhub.services.auth import HubOAuthenticated

    class Base(HubOAuthenticated, web.RequestHandler):
        def initialize(self, service: GradingService, prefix: str):
            self.service, self.prefix = service, prefix

        @property
        def student(self) -> str:
            return self.current_user["name"]

        def is_instructor(self) -> bool:
            return (self.current_user.get("admin") is True
                    or self.student in self.service.settings.instructors)

        def check_xsrf_cookie(self):
            # a client with a token (a script, JupyterLab's "Submit for grading") is not
            # a form a page of another site could send; a browser form carries _xsrf
            if not self.request.headers.get("Authorization"):
                super().check_xsrf_cookie()

        def refuse(self, status: int, message: str) -> None:
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"error": message}))

    return Base


def make_handlers(base):
    class Index(base):
        @web.authenticated
        def get(self):
            own = pages.own_records(self.service.settings.out, self.student)
            self.finish(pages.index_page(self.student, own, self.service.state_of(self.student),
                                         self.service.course, self.prefix,
                                         self.xsrf_token.decode(), self.is_instructor()))

    class Submit(base):
        @web.authenticated
        def post(self):
            named = self.get_argument("notebook", "")
            assignment, _, notebook = named.partition("/")
            files = self.request.files.get("file")
            data = files[0]["body"] if files else self.request.body
            try:
                receipt = self.service.submit(self.student, assignment, notebook, data)
            except Refused as exc:
                return self.refuse(exc.status, str(exc))
            self.set_status(202)
            self.finish({"student_id": receipt.student_id, "assignment": receipt.assignment,
                         "notebook": receipt.notebook, "received_at": receipt.received_at,
                         "state": "queued"})

    class Feedback(base):
        @web.authenticated
        def get(self, student: str, assignment: str, notebook: str):
            if student != self.student and not self.is_instructor():
                return self.refuse(403, "a feedback page is its student's alone")
            own = pages.own_records(self.service.settings.out, student)
            record = next((r for r in own if (r["assignment"], r["notebook"])
                           == (assignment, notebook)), None)
            if record is None:
                return self.refuse(404, "no graded notebook by that name")
            self.finish(pages.notebook_page(self.service.settings.out, record,
                                            self.service.releases.released()))

    class Release(base):
        @web.authenticated
        def post(self):
            if not self.is_instructor():
                return self.refuse(403, "only an instructor releases hidden results")
            assignment = self.get_argument("assignment")
            if assignment not in {a for a, _ in self.service.course}:
                return self.refuse(404, "no such assignment in this course")
            self.service.releases.release(assignment, self.get_argument("hidden", "1") != "0")
            self.finish({"released": sorted(self.service.releases.released())})

    return [("", Index), ("submit", Submit), (r"feedback/([^/]+)/([^/]+)/([^/]+)", Feedback),
            ("release", Release)]


def make_app(service: GradingService, prefix: str, extra_handlers=(), cookie_secret=None):
    """The tornado application; ``prefix`` is ``$JUPYTERHUB_SERVICE_PREFIX``."""
    import os

    from jupyterhub.services.auth import HubOAuthCallbackHandler

    prefix = prefix.rstrip("/") + "/"
    routes = [(prefix + path, handler, {"service": service, "prefix": prefix})
              for path, handler in make_handlers(_base())]
    routes.append((prefix + "oauth_callback", HubOAuthCallbackHandler))
    routes += [(prefix + route[0], *route[1:]) for route in extra_handlers]
    return web.Application(routes, cookie_secret=cookie_secret or os.urandom(32),
                           xsrf_cookies=True)


def max_body_size(service: GradingService) -> int:
    """What the HTTP server reads of a request: room for a notebook over the cap, so
    that the intake (not a closed connection) tells the student what the limit is."""
    return 2 * service.settings.max_bytes + FORM_OVERHEAD
