"""An LTI 1.3 platform for the tests: lti1p3platform's messages and services behind
FastAPI, served by uvicorn on 127.0.0.1 (a free port), with an in-memory course.

It plays the LMS: it starts a student's launch (OIDC login initiation to the tool), answers
the tool's authorization request with a signed ``id_token`` in an auto-posting form, issues
access tokens for the tool's signed client assertion, and serves the course's line items,
scores, results and memberships. ``down = True`` makes its services answer 503.
"""

from __future__ import annotations

import html
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as LtiRequest
from lti1p3platform.service_connector import (AssignmentsGradesService,
                                              NamesRoleProvisioningService)
from lti1p3platform.membership import Context
from lti1p3platform.score import UpdateScoreStatus

CLIENT_ID = "course-tool-client"
DEPLOYMENT_ID = "deployment-1"
CONTEXT_ID = "course-101"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


def make_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@dataclass
class Member:
    user_id: str
    name: str
    email: str
    roles: list[str]


@dataclass
class Course:
    """What the platform stores: members, line items and their scores."""
    members: dict[str, Member] = field(default_factory=dict)
    lineitems: dict[str, dict] = field(default_factory=dict)
    scores: dict[str, dict[str, dict]] = field(default_factory=dict)   # item -> user -> score
    posts: list[dict] = field(default_factory=list)                     # every score posted


class _Request(LtiRequest):
    def build_metadata(self, request: dict) -> dict:
        return request


async def form_of(request: Request) -> dict:
    """A url-encoded form body (parsed here: no multipart library needed)."""
    if "form-urlencoded" not in request.headers.get("content-type", ""):
        return {}
    return dict(parse_qsl((await request.body()).decode("utf-8")))


async def as_lti(request: Request) -> _Request:
    form = await form_of(request)
    body = await request.body()
    data = json.loads(body) if body and "json" in request.headers.get("content-type", "") else None
    return _Request({"method": request.method, "form_data": form,
                     "get_data": dict(request.query_params), "headers": request.headers,
                     "content_type": request.headers.get("content-type"),
                     "path": request.url.path, "json": data})


class LoopbackPlatform:
    """The platform, its keys, its course, and its server."""

    def __init__(self, tool_base: str):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.issuer = self.url
        self.private_key, self.public_key = make_key()
        self.tool_base = tool_base
        self.course = Course()
        self.down = False
        self.app = self._app()
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)

    # -- the registration of the tool on this platform -------------------------------
    def registration(self) -> Registration:
        return (Registration().set_iss(self.issuer).set_client_id(CLIENT_ID)
                .set_deployment_id(DEPLOYMENT_ID)
                .set_oidc_login_url(f"{self.tool_base}/lti/login")
                .set_launch_url(f"{self.tool_base}/lti/launch")
                .set_platform_public_key(self.public_key)
                .set_platform_private_key(self.private_key)
                .set_tool_key_set_url(f"{self.tool_base}/lti/jwks"))

    def config(self) -> LTI1P3PlatformConfAbstract:
        registration = self.registration()

        class Conf(LTI1P3PlatformConfAbstract):
            def init_platform_config(self, **kwargs):
                pass

            def get_registration_by_params(self, **kwargs):
                return registration

        conf = Conf()
        conf.get_registration()
        return conf

    # -- the server --------------------------------------------------------------------
    def start(self, deadline: float = 30.0) -> "LoopbackPlatform":
        self.thread.start()
        end = time.monotonic() + deadline
        while not self.server.started:
            if time.monotonic() > end:
                raise RuntimeError(f"the platform did not start in {deadline} s")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def add_member(self, user_id: str, name: str, email: str, roles: list[str]) -> None:
        self.course.members[user_id] = Member(user_id, name, email, roles)

    def _app(self) -> FastAPI:
        app = FastAPI()
        platform = self

        @app.get("/jwks")
        def jwks():
            return {"keys": platform.registration().get_jwks()}

        @app.get("/launch/{user_id}")
        def start_launch(user_id: str, resource_link: str = "link-1", assignment: str = ""):
            login = _OIDCLogin(None, platform.config())
            login.set_lti_message_hint(resource_link=resource_link, assignment=assignment)
            return login.initiate_login(user_id)

        @app.get("/authorize")
        async def authorize(request: Request):
            lti_request = await as_lti(request)
            launch = _Launch(lti_request, platform.config())
            params = dict(request.query_params)
            member = platform.course.members[params["login_hint"]]
            link, _, assignment = params.get("lti_message_hint", "link-1|").partition("|")
            launch.set_user_data(member.user_id, member.roles, member.name, member.email)
            launch.set_resource_link_claim(link, title=assignment or link)
            launch.set_launch_context_claim(CONTEXT_ID, context_title="Course 101")
            if assignment:
                launch.set_custom_parameters_claim({"assignment": assignment})
            launch.set_ags(f"{platform.url}/lineitems", allow_creating_lineitems=True)
            launch.set_nrps(f"{platform.url}/memberships")
            return launch.lti_launch()

        @app.post("/token")
        async def token(request: Request):
            data = await form_of(request)
            try:
                return platform.config().get_access_token(data)
            except Exception as exc:   # what the tool gets back when its assertion is wrong
                return JSONResponse({"error": "invalid_client", "why": str(exc)}, 400)

        def answer(response):
            return JSONResponse(response.result, response.code, media_type=response.media_type)

        async def ags(request: Request, lineitem: str | None = None):
            if platform.down:
                return None
            return _Ags(await as_lti(request), platform.config(), f"{platform.url}/lineitems",
                        f"{platform.url}/lineitems/{lineitem}" if lineitem else None,
                        course=platform.course, base=platform.url)

        @app.api_route("/lineitems", methods=["GET", "POST"])
        async def lineitems(request: Request):
            service = await ags(request)
            if service is None:
                return JSONResponse({"error": "down"}, 503)
            if request.method == "POST":
                return answer(service.handle_resp(service.handle_create_lineitem))
            page = service.handle_resp(service.handle_get_lineitems)
            if page.code == 200:      # the container is the JSON array of the line items
                page.result = page.result["content"]
            return answer(page)

        @app.get("/lineitems/{item}")
        async def lineitem(item: str, request: Request):
            service = await ags(request, item)
            if service is None:
                return JSONResponse({"error": "down"}, 503)
            return answer(service.handle_resp(service.handle_get_lineitem, line_item_id=item))

        @app.post("/lineitems/{item}/scores")
        async def scores(item: str, request: Request):
            service = await ags(request, item)
            if service is None:
                return JSONResponse({"error": "down"}, 503)
            return answer(service.handle_resp(service.handle_update_score, line_item_id=item))

        @app.get("/memberships")
        async def memberships(request: Request):
            service = _Nrps(await as_lti(request), platform.config(),
                            f"{platform.url}/memberships", course=platform.course)
            return answer(service.handle_resp(service.handle_get_members))

        return app


class _OIDCLogin(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs):
        self._lti_message_hint = "|".join(str(v) for v in kwargs.values())

    def get_lti_message_hint(self):
        return self._lti_message_hint

    def get_redirect(self, url: str):
        return RedirectResponse(url, 302)


class _Launch(LTIAdvantageMessageLaunchAbstract):
    def get_preflight_response(self):
        return self._request.get_data

    def render_launch_form(self, launch_data, **kwargs):
        fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(str(v))}">'
                         for k, v in launch_data.items() if k != "launch_url")
        return HTMLResponse(
            f'<form id="launch" method="post" action="{html.escape(launch_data["launch_url"])}">'
            f"{fields}</form><script>document.getElementById('launch').submit()</script>")


class _Ags(AssignmentsGradesService):
    def __init__(self, *args, course: Course, base: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.course, self.base = course, base

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None,
                       resource_id=None, tag=None, **_):
        items = [i for i in self.course.lineitems.values()
                 if (tag is None or i.get("tag") == tag)
                 and (resource_link_id is None or i.get("resourceLinkId") == resource_link_id)
                 and (resource_id is None or i.get("resourceId") == resource_id)]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id: str):
        from lti1p3platform.exceptions import LineItemNotFoundException
        key = line_item_id.rstrip("/").rsplit("/", 1)[-1]
        if key not in self.course.lineitems:
            raise LineItemNotFoundException
        return self.course.lineitems[key]

    def create_lineitem(self, creation_data):
        key = str(len(self.course.lineitems) + 1)
        item = {**creation_data, "id": f"{self.base}/lineitems/{key}"}
        self.course.lineitems[key] = item
        return item

    def update_lineitem(self, update_data):
        raise NotImplementedError

    def delete_lineitem(self, line_item_id):
        raise NotImplementedError

    def update_score(self, line_item_id: str, score):
        item = self.find_lineitem(line_item_id)["id"]
        self.course.posts.append({"lineitem": item, **score})
        self.course.scores.setdefault(item, {})[score["userId"]] = score
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id, page=1, limit=None, user_id=None):
        raise NotImplementedError


class _Nrps(NamesRoleProvisioningService):
    def __init__(self, *args, course: Course, **kwargs):
        super().__init__(*args, **kwargs)
        self.course = course

    def get_member_data_page(self, page=1, limit=None, role=None, since=None, **_):
        members = [{"user_id": m.user_id, "name": m.name, "email": m.email, "roles": m.roles,
                    "status": "Active"} for m in self.course.members.values()]
        return {"content": members, "has_next": False, "next": None}

    def get_context_by_id(self):
        return Context(id=CONTEXT_ID, label="C101", title="Course 101")
