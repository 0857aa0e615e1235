"""The course's members (LTI Names and Role Provisioning Services) as a roster CSV.

The roster has the columns ``collect --roster`` and ``export --roster`` read, with the
LMS's user id as ``student_id``, so that submissions, grades and the late policy match
students by the LMS's own ids. Only learners are listed unless ``everyone``.
"""

from __future__ import annotations

from pathlib import Path

from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from autograder import safe_text
from autograder.lti.ags import TimeoutSession
from autograder.lti.store import Platform, ToolHome

SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
COLUMNS = ["student_id", "name", "email", "sid", "lms"]
#: The longest name or email kept from the platform's answer.
MAX_FIELD = 200


def members(home: ToolHome, platform: Platform, memberships_url: str) -> list[dict]:
    registration = home.tool_conf().find_registration_by_issuer(platform.issuer)
    connector = ServiceConnector(registration, requests_session=TimeoutSession())
    nrps = NamesRolesProvisioningService(connector, {"context_memberships_url": memberships_url})
    return nrps.get_members()


def is_learner(member: dict) -> bool:
    return any(str(role).rsplit("#", 1)[-1].rsplit("/", 1)[-1] == "Learner"
               for role in member.get("roles", []))


def roster_rows(found: list[dict], everyone: bool = False) -> list[dict]:
    rows = {}
    for m in found:
        if not m.get("user_id") or (m.get("status", "Active") != "Active"):
            continue
        if everyone or is_learner(m):
            rows[str(m["user_id"])] = {
                "student_id": str(m["user_id"])[:MAX_FIELD],
                "name": str(m.get("name") or "")[:MAX_FIELD],
                "email": str(m.get("email") or "")[:MAX_FIELD],
                "sid": str(m.get("lis_person_sourcedid") or "")[:MAX_FIELD], "lms": "lti"}
    return [rows[k] for k in sorted(rows)]


def write_roster(rows: list[dict], dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
