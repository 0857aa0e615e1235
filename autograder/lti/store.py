"""The tool's folder: key, registered platforms, line items, pending grades.

Everything the tool keeps lives in one folder (``--tool-dir``, default
``$AUTOGRADER_LTI_DIR`` or ``lti-tool``): ``tool-key.pem`` (the RS256 private key, made
once, mode 0600), ``platforms.json`` (one entry per issuer), ``contexts.json`` (the service
URLs a launch told the tool), ``lineitems.json`` and ``pending.jsonl``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK

#: Where the tool keeps its state unless told otherwise.
DEFAULT_DIR = "lti-tool"
ENV_DIR = "AUTOGRADER_LTI_DIR"
KEY_FILE = "tool-key.pem"
#: The largest JSON file of the tool's folder read (a bigger one is refused).
MAX_JSON_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Platform:
    """One LMS registered with the tool (the fields of its "add a tool" form)."""
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    deployment_ids: tuple[str, ...] = field(default_factory=tuple)

    def tool_conf(self, private_key: str) -> dict:
        """This platform as pylti1p3's ``ToolConfDict`` item."""
        return {"default": True, "client_id": self.client_id,
                "auth_login_url": self.auth_login_url, "auth_token_url": self.auth_token_url,
                "key_set_url": self.key_set_url, "key_set": None,
                "private_key_file": None, "public_key_file": None,
                "deployment_ids": list(self.deployment_ids)}


@dataclass(frozen=True)
class ToolHome:
    """The tool's folder."""
    root: Path

    @classmethod
    def at(cls, folder: str | os.PathLike | None) -> "ToolHome":
        return cls(Path(folder or os.environ.get(ENV_DIR) or DEFAULT_DIR))

    def path(self, name: str) -> Path:
        return self.root / name

    # -- the key ---------------------------------------------------------------------
    def private_key(self) -> str:
        """The tool's PEM private key, made (mode 0600) on first use and kept."""
        path = self.path(KEY_FILE)
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
        if path.stat().st_mode & 0o077:
            raise ValueError(f"{path}: the tool's private key must be readable by its owner "
                             "only (chmod 600)")
        return path.read_text(encoding="ascii")

    def public_pem(self) -> str:
        return JWK.from_pem(self.private_key().encode("ascii")).public().export_to_pem().decode()

    def public_jwk(self) -> dict:
        jwk = JWK.from_pem(self.private_key().encode("ascii"))
        public = json.loads(jwk.export_public())
        return {**public, "kid": jwk.thumbprint(), "alg": "RS256", "use": "sig"}

    def jwks(self) -> dict:
        """The tool's JWKS (what its JWKS URL serves)."""
        return {"keys": [self.public_jwk()]}

    # -- JSON state ------------------------------------------------------------------
    def read_json(self, name: str, default):
        path = self.path(name)
        if not path.exists():
            return default
        if path.stat().st_size > MAX_JSON_BYTES:
            raise ValueError(f"{path}: larger than {MAX_JSON_BYTES} bytes")
        return json.loads(path.read_text(encoding="utf-8"))

    def write_json(self, name: str, data) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.path(name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(self.path(name))

    # -- platforms -------------------------------------------------------------------
    def platforms(self) -> dict[str, Platform]:
        return {iss: Platform(**{**p, "deployment_ids": tuple(p["deployment_ids"])})
                for iss, p in self.read_json("platforms.json", {}).items()}

    def register(self, platform: Platform) -> None:
        """Add (or replace) a platform; the deployment ids of an earlier one are kept."""
        known = self.platforms()
        old = known.get(platform.issuer)
        ids = tuple(dict.fromkeys((old.deployment_ids if old else ()) + platform.deployment_ids))
        known[platform.issuer] = Platform(**{**asdict(platform), "deployment_ids": ids})
        self.write_json("platforms.json", {iss: {**asdict(p), "deployment_ids": list(p.deployment_ids)}
                                           for iss, p in known.items()})

    def platform(self, issuer: str | None) -> Platform:
        known = self.platforms()
        if issuer is None and len(known) == 1:
            return next(iter(known.values()))
        if issuer not in known:
            raise ValueError(f"no platform {issuer!r} is registered (lti register); known: "
                             f"{', '.join(sorted(known)) or 'none'}")
        return known[issuer]

    def tool_conf(self):
        """Every registered platform as pylti1p3's ``ToolConfDict``, with the tool's key."""
        from pylti1p3.tool_config import ToolConfDict

        key = self.private_key()
        conf = ToolConfDict({iss: [p.tool_conf(key)] for iss, p in self.platforms().items()})
        public = self.public_pem()
        for iss, p in self.platforms().items():
            conf.set_private_key(iss, key, client_id=p.client_id)
            conf.set_public_key(iss, public, client_id=p.client_id)
        return conf
