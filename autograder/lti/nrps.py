"""The course's members (LTI Names and Role Provisioning Services) as a roster CSV.

The roster has the columns ``collect --roster`` and ``export --roster`` read, with the
LMS's user id as ``student_id``, so that submissions, grades and the late policy match
students by the LMS's own ids. Only learners are listed unless ``everyone``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from autograder import safe_text
from autograder.intake.collect import safe_id
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


@dataclass(frozen=True)
class Roster:
    rows: tuple[dict, ...]
    refused: tuple[str, ...]     # user ids that cannot name a student's folder (escaped)


def _text(value) -> str:
    return safe_text.shorten(safe_text.terminal(value or ""), MAX_FIELD)


def roster_rows(found: list[dict], everyone: bool = False) -> Roster:
    """The active learners (everyone: all members), one row each. The LMS's user id is the
    student id, so it must be one ``collect`` would keep as it is (a folder name): others
    are left out and named in ``refused``."""
    rows, refused = {}, []
    for m in found:
        if m.get("status", "Active") != "Active" or not (everyone or is_learner(m)):
            continue
        user = str(m.get("user_id") or "")
        if not user or safe_id(user) != user:
            refused.append(_text(user))
            continue
        rows[user] = {"student_id": user, "name": _text(m.get("name")),
                      "email": _text(m.get("email")),
                      "sid": _text(m.get("lis_person_sourcedid")), "lms": "lti"}
    return Roster(tuple(rows[k] for k in sorted(rows)), tuple(refused))


def write_roster(rows: list[dict], dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
