"""The instructor's grading secret, and each student's seed for the hidden cases.

The hidden cases an exercise draws from its contract (``helpers.course.draw.draw_cases``)
take a seed. The grader derives it per student and notebook from a secret only the
instructor holds::

    seed = HMAC-SHA256(secret, "hidden-cases\\0<student id>\\0<assignment>/<notebook>")

(its first 16 bytes, as an integer). So the same student graded again with the same
secret gets the same hidden inputs (``--student`` regrades, ``--resume``, shards merged),
two students get different ones, and without the secret nobody can compute any
student's: a hidden case copied from a feedback page or a classmate is not the case
the grader draws for another student (docs/threat_model.md, "Hidden cases worth
nothing once leaked").

Where the secret is (first found wins):

1. ``grade --secret-file FILE``;
2. the environment variable ``AUTOGRADER_SECRET_FILE`` (a path: the secret itself is
   never taken from the environment, which processes hand down to their children);
3. ``OUT/grading-secret.key``, the output folder's, beside ``manual_scores.json``.

A missing file is created with 32 random bytes (64 hex digits, one line), mode 0600,
on the first ``grade``. Keep it: a new secret gives every student other hidden inputs
(a right answer passes any of them; a wrong one may fail other cases). Give every shard
of a class the same file (``--secret-file``): ``merge`` refuses outputs graded with
different secrets. Each record stores a *key id* (:func:`key_id`, an HMAC of a fixed
text, which says nothing of the secret) to tell them apart.

The secret is read by the command's main process and handed, by fork, to the grading
processes, which compute the seeds. It is never written to a record, a feedback page or
an export, never put in the environment, and never sent to the sandboxed children (they
get the hidden cases' inputs, which they must call the learner's function on, not the
seed; the grading worker is a fresh interpreter started with a clean environment).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

#: The secret's file in an output folder (when no other is named).
DEFAULT_NAME = "grading-secret.key"
#: Names a secret file instead of ``OUT/grading-secret.key``.
ENV = "AUTOGRADER_SECRET_FILE"
#: Random bytes of a new secret.
SECRET_BYTES = 32


class SecretError(ValueError):
    """The secret file cannot be read or made (the message says why)."""


def location(out: Path, given: str | os.PathLike | None = None) -> Path:
    """Where the secret is: ``given`` (``--secret-file``), else ``$AUTOGRADER_SECRET_FILE``,
    else ``out/grading-secret.key``."""
    if given:
        return Path(given)
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    return Path(out) / DEFAULT_NAME


def load(path: Path, create: bool = True, warn=None) -> bytes:
    """The secret in ``path`` (its text, at least 32 hex digits or 16 other characters).
    A missing file is created (mode 0600) when ``create``; ``warn(text)`` is told when
    the file may be read by other users."""
    path = Path(path)
    if create and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # written whole under a private name, then linked in: two runs starting at once
        # (a job array's shards) both find the one complete file
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secrets.token_hex(SECRET_BYTES) + "\n")
            try:
                os.link(tmp, path)
            except FileExistsError:        # another run made it first: use that one
                pass
        finally:
            tmp.unlink(missing_ok=True)
    try:
        st = path.stat()
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SecretError(f"cannot read the grading secret {path}: {exc.strerror or exc}") \
            from None
    except UnicodeDecodeError:
        raise SecretError(f"the grading secret {path} is not text") from None
    if len(text) < 16:
        raise SecretError(f"the grading secret {path} is too short (at least 16 characters; "
                          f"delete it to have a new one made)")
    if warn is not None and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        warn(f"the grading secret {path} may be read by other users (mode "
             f"{stat.S_IMODE(st.st_mode):04o}); `chmod 600` it")
    return text.encode("utf-8")


def hidden_seed(secret: bytes, student_id: str, assignment: str, notebook: str) -> int:
    """The seed of one student's hidden cases in one notebook (128 bits)."""
    message = "\0".join(("hidden-cases", student_id, f"{assignment}/{notebook}"))
    digest = hmac.new(secret, message.encode("utf-8"), hashlib.sha256).digest()
    return int.from_bytes(digest[:16], "big")


def key_id(secret: bytes) -> str:
    """A short name of the secret for the records (16 hex digits of an HMAC of a fixed
    text: equal secrets, equal ids; nothing of the secret can be computed from it)."""
    return hmac.new(secret, b"key-id", hashlib.sha256).hexdigest()[:16]
