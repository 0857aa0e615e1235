"""``python -m autograder lti register|config|serve|push`` and ``roster --lti``.

Exit status 0 when done, 1 when some grade stayed pending (the platform did not take it:
it is kept and the next ``push`` retries it), 2 when the command could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from autograder import safe_text
from autograder.lti.store import Platform, ToolHome


def _tool_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tool-dir", metavar="DIR",
                   help="the tool's folder: key, platforms, line items, pending grades "
                        "(default: $AUTOGRADER_LTI_DIR, else lti-tool/)")


def _context(home: ToolHome, platform: Platform, service: str, given: str | None) -> str:
    """A service URL: the one given, else the one the course's launches told the tool."""
    if given:
        return given
    seen = {c[service] for c in home.read_json("contexts.json", {}).get(platform.issuer, {}).values()
            if c.get(service)}
    if len(seen) != 1:
        raise ValueError(f"give the platform's {service} URL (--{service}): "
                         f"{'no launch told it yet' if not seen else 'launches of several courses told different ones'}")
    return seen.pop()


def cmd_register(args) -> int:
    home = ToolHome.at(args.tool_dir)
    home.register(Platform(args.issuer, args.client_id, args.auth_login_url,
                           args.auth_token_url, args.key_set_url, tuple(args.deployment_id)))
    home.private_key()
    print(f"lti register: {safe_text.terminal(args.issuer)} registered in {home.root}")
    return 0


def tool_config(home: ToolHome, base_url: str) -> dict:
    """What the LMS's "add an LTI 1.3 tool" form asks for."""
    base = base_url.rstrip("/")
    return {"title": "Transformers from the dot product up (autograder)",
            "target_link_uri": f"{base}/lti/launch", "oidc_initiation_url": f"{base}/lti/login",
            "redirect_uris": [f"{base}/lti/launch"], "public_jwk_url": f"{base}/lti/jwks",
            "public_jwk": home.public_jwk(),
            "scopes": ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                       "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
                       "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                       "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"],
            "custom_fields": {"assignment": "the assignment's name, e.g. 02_softmax"}}


def cmd_config(args) -> int:
    print(json.dumps(tool_config(ToolHome.at(args.tool_dir), args.base_url), indent=2))
    return 0


def cmd_push(args) -> int:
    from autograder.lti.ags import push
    from autograder.lti.grades import scores_of

    home = ToolHome.at(args.tool_dir)
    platform = home.platform(args.issuer)
    lineitems = _context(home, platform, "lineitems", args.lineitems)
    report = push(home, platform, lineitems,
                  scores_of(Path(args.out), args.feedback_url, args.assignments))
    for score, why in report.pending:
        print(f"lti push: pending {safe_text.terminal(score.user_id)} "
              f"{safe_text.terminal(score.assignment)}: {safe_text.terminal(why)[:300]}",
              file=sys.stderr)
    print(f"lti push: {len(report.delivered)} score(s) delivered, {len(report.pending)} "
          f"pending (kept in {home.path('pending.jsonl')}; the next push retries them)")
    return 1 if report.pending else 0


def cmd_serve(args) -> int:
    """The tool's routes on their own (without the grading service of the hub)."""
    import asyncio

    import tornado.web

    from autograder.lti.web import routes

    async def serve():
        app = tornado.web.Application(routes(ToolHome.at(args.tool_dir), args.prefix))
        app.listen(args.port, args.ip)
        print(f"lti serve: the tool on http://{args.ip}:{args.port}{args.prefix}/lti/ "
              "(put it behind HTTPS for an LMS)", flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())
    return 0


def cmd_roster(args) -> int:
    from autograder.lti.nrps import members, roster_rows, write_roster

    if not args.lti:
        print("roster: give --lti (the course's members from a registered LTI platform)",
              file=sys.stderr)
        return 2
    home = ToolHome.at(args.tool_dir)
    platform = home.platform(args.issuer)
    roster = roster_rows(members(home, platform,
                                 _context(home, platform, "memberships", args.memberships)),
                         args.everyone)
    for user in roster.refused:
        print(f"roster: left out the member {user!r}: an id that cannot name a student's "
              "folder", file=sys.stderr)
    write_roster(list(roster.rows), Path(args.dest))
    print(f"roster: {len(roster.rows)} member(s) written to {args.dest}")
    return 0 if roster.rows else 1


def add_parsers(sub) -> None:
    """The ``lti`` and ``roster`` commands, on the command line's subparsers."""
    lti = sub.add_parser("lti", help="the course as an LTI 1.3 tool of an LMS (docs/lti.md)")
    actions = lti.add_subparsers(dest="lti_action", required=True)
    p = actions.add_parser("register", help="register a platform (an LMS)")
    p.add_argument("--issuer", required=True)
    p.add_argument("--client-id", required=True)
    p.add_argument("--auth-login-url", required=True, help="the platform's OIDC auth URL")
    p.add_argument("--auth-token-url", required=True, help="the platform's token URL")
    p.add_argument("--key-set-url", required=True, help="the platform's JWKS URL")
    p.add_argument("--deployment-id", action="append", default=[], required=True,
                   help="a deployment id (repeatable)")
    _tool_dir(p)
    p.set_defaults(func=cmd_register)
    p = actions.add_parser("config", help="the tool's URLs and JWKS for the LMS's form")
    p.add_argument("--base-url", required=True, help="where the tool is served, e.g. "
                   "https://hub.example.edu/services/grader")
    _tool_dir(p)
    p.set_defaults(func=cmd_config)
    p = actions.add_parser("serve", help="serve the tool's login, launch and JWKS alone")
    p.add_argument("--ip", default="127.0.0.1", help="the address (default: %(default)s)")
    p.add_argument("--port", type=int, default=8890, help="the port (default: %(default)s)")
    p.add_argument("--prefix", default="", help="a path before /lti/ (e.g. /services/grader)")
    _tool_dir(p)
    p.set_defaults(func=cmd_serve)
    p = actions.add_parser("push", help="send every grade of a grading output to the LMS")
    p.add_argument("out", help="a grading output folder")
    p.add_argument("--issuer", help="the platform (default: the only one registered)")
    p.add_argument("--lineitems", help="the course's line items URL (default: the launches')")
    p.add_argument("--feedback-url", help="base URL of the feedback pages, for the comment")
    p.add_argument("--assignments", nargs="+", help="only these assignments")
    _tool_dir(p)
    p.set_defaults(func=cmd_push)

    p = sub.add_parser("roster", help="the course's members as a roster CSV (--roster)")
    p.add_argument("--lti", action="store_true", help="read them from the LMS (LTI NRPS)")
    p.add_argument("--dest", required=True, help="the roster CSV to write")
    p.add_argument("--issuer", help="the platform (default: the only one registered)")
    p.add_argument("--memberships", help="the course's memberships URL (default: the launches')")
    p.add_argument("--everyone", action="store_true", help="instructors too, not only learners")
    _tool_dir(p)
    p.set_defaults(func=cmd_roster)
