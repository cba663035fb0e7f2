"""How to reach one Prometheus: its URL, credentials, TLS files and the header and query-parameter maps,
each read from its settings field with every problem reported (:mod:`autoscaler.prometheus.settings` reads
the rest and assembles them).

Secrets never appear in a repr or in an error message: a problem names the field, never its value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from autoscaler.values.fields import Obj, type_name

REDACTED = "<redacted>"
# prometheus.followRedirects. A redirect's answer is another server's, and following it re-sends the
# credentials: by default none is followed (the query fails, naming the Location); ``sameOrigin`` follows
# one to the same scheme, host and port (a proxy that moved the API under another path), and a redirect
# to any other origin fails the query even then.
FOLLOW_NEVER = "never"
FOLLOW_SAME_ORIGIN = "sameOrigin"
FOLLOW_REDIRECTS = (FOLLOW_NEVER, FOLLOW_SAME_ORIGIN)

# RFC 9110 token characters for header names.
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


@dataclass(frozen=True, slots=True)
class SecretRef:
    """A key of a Kubernetes Secret (``{namespace, name, key}``): a credential the service reads through the API
    (and again every minute, and at once after a 401), never held in the settings."""

    namespace: str
    name: str
    key: str

    def __str__(self) -> str:
        return f"Secret {self.namespace}/{self.name} (key {self.key})"


@dataclass(frozen=True, slots=True)
class BasicAuth:
    username: str
    password: str = field(default="", repr=False)
    # Where the password is read from instead (re-read when the file changes, as bearerTokenFile is).
    password_file: str | None = None
    password_secret: SecretRef | None = None  # or from this key of a Secret, read through the API
    username_secret: SecretRef | None = None  # the username read from a Secret instead (KEDA's basic auth)

    @property
    def static(self) -> bool:
        """Whether the Authorization header is known from the settings alone (nothing read from a file or Secret)."""
        return self.password_file is None and self.password_secret is None and self.username_secret is None

    def __repr__(self) -> str:
        user = f"username_secret={self.username_secret!r}" if self.username_secret else f"username={self.username!r}"
        if self.password_file is not None:
            return f"BasicAuth({user}, password_file={self.password_file!r})"
        if self.password_secret is not None:
            return f"BasicAuth({user}, password_secret={self.password_secret!r})"
        return f"BasicAuth({user}, password={REDACTED!r})"


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")


def read_secret_ref(obj: Obj | None) -> SecretRef | None:
    """``{namespace, name, key}`` of a Secret (``bearerTokenSecret``, ``basicAuth.passwordSecret``)."""
    if obj is None:
        return None
    namespace = obj.string("namespace", required=True, non_empty=True)
    name = obj.string("name", required=True, non_empty=True)
    key = obj.string("key", required=True, non_empty=True)
    valid = True
    for field_name, value, pattern, what in (
        ("namespace", namespace, _DNS1123_LABEL, "a namespace name (a DNS-1123 label)"),
        ("name", name, _DNS1123_SUBDOMAIN, "a Secret's name (a DNS-1123 subdomain)"),
        ("key", key, _SECRET_KEY, "a Secret's key (letters, digits, '-', '_', '.')"),
    ):
        if value is not None and not pattern.match(value):
            obj.error(field_name, f"must be {what}, not {value!r}")
            valid = False
    obj.finish()
    if namespace is None or name is None or key is None or not valid:
        return None
    return SecretRef(namespace, name, key)


def read_url(obj: Obj) -> str | None:
    """``url``: http(s) with a host, no credentials, query or fragment; without its trailing slash."""
    raw = obj.raw("url", required=True)
    if raw is None:
        return None
    if not isinstance(raw, str):
        obj.error("url", f"must be a string, not {type_name(raw)}")
        return None
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        obj.error("url", "must be an http:// or https:// URL")
        return None
    if parts.username is not None or parts.password is not None:
        # Never echo the URL: it holds the credentials.
        obj.error("url", "Forbidden: credentials in the URL; use basicAuth or bearerTokenFile")
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        obj.error("url", f"must be an http:// or https:// URL with a host, not {raw!r}")
        return None
    if parts.query or parts.fragment:
        obj.error("url", "must not have a query or fragment (use queryParameters)")
        return None
    return raw.rstrip("/")


def read_secret_string(obj: Obj, key: str) -> str | None:
    """A non-empty string that is a secret (a problem names ``key``, never the value)."""
    value = obj.raw(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        obj.error(key, f"must be a non-empty string, not {type_name(value)}")
        return None
    return value


def read_basic_auth(obj: Obj | None) -> BasicAuth | None:
    """``basicAuth``: a username (or the Secret's key it is read from, ``usernameSecret``) and one of a password
    (which may be empty, as upstream allows), the file it is read from (``passwordFile``) or the Secret's key it
    is read from (``passwordSecret``)."""
    if obj is None:
        return None
    username_secret = read_secret_ref(obj.obj("usernameSecret"))
    username = obj.string("username", required=not obj.has("usernameSecret"), non_empty=True)
    if username is not None and obj.has("usernameSecret"):
        obj.error("usernameSecret", "Forbidden: set either username or usernameSecret, not both")
    password_file = obj.string("passwordFile", non_empty=True)
    password_secret = read_secret_ref(obj.obj("passwordSecret"))
    password = obj.raw("password")
    if password is None and password_file is None and not obj.has("passwordSecret"):
        obj.error("password", "Required value: the password, or passwordFile or passwordSecret (where it is read)")
    if password is not None and not isinstance(password, str):
        obj.error("password", f"must be a string, not {type_name(password)}")
        password = None
    if sum(x is not None for x in (password, password_file)) + obj.has("passwordSecret") > 1:
        obj.error("passwordFile", "Forbidden: set one of password, passwordFile and passwordSecret")
        password = None
    obj.finish()
    if (username is None) == (username_secret is None) or (
        password is None and password_file is None and password_secret is None
    ):
        return None
    return BasicAuth(
        username=username or "",
        password=password or "",
        password_file=password_file,
        password_secret=password_secret,
        username_secret=username_secret,
    )


def read_string_map(obj: Obj, key: str, *, header_names: bool) -> dict[str, str] | None:
    """A map of strings (``headers``, ``queryParameters``), whose values may be secrets: no problem repeats
    a value."""
    view = obj.obj(key)
    if view is None:
        return None
    result: dict[str, str] = {}
    for name, value in view.value.items():
        view.mark_known(name)
        name_text = str(name)
        if header_names and not HEADER_NAME.match(name_text):
            view.error(name_text, "must be a valid HTTP header name")
            continue
        if not isinstance(value, str):
            view.error(name_text, f"must be a string, not {type_name(value)}")
            continue
        if "\n" in value or "\r" in value:
            # The value itself stays out of the message: it may be a secret.
            view.error(name_text, "must not contain line breaks")
            continue
        result[name_text] = value
    view.finish()
    return result


def read_tls(obj: Obj | None) -> dict[str, Any]:
    """``tls``: the CA, client certificate and key files (a certificate needs its key) and insecureSkipVerify."""
    if obj is None:
        return {}
    result: dict[str, Any] = {
        "caFile": obj.string("caFile", non_empty=True),
        "certFile": obj.string("certFile", non_empty=True),
        "keyFile": obj.string("keyFile", non_empty=True),
        "insecureSkipVerify": obj.boolean("insecureSkipVerify", default=False),
    }
    if (result["certFile"] is None) != (result["keyFile"] is None):
        missing = "keyFile" if result["certFile"] is not None else "certFile"
        obj.error(missing, "Required value: a client certificate needs both certFile and keyFile")
    obj.finish()
    return result


def read_secret_map(obj: Obj, key: str) -> dict[str, SecretRef] | None:
    """``headerSecrets``: header names, each with the Secret key its value is read from."""
    view = obj.obj(key)
    if view is None:
        return None
    result: dict[str, SecretRef] = {}
    for name, value in view.value.items():
        view.mark_known(name)
        name_text = str(name)
        if not HEADER_NAME.match(name_text):
            view.error(name_text, "must be a valid HTTP header name")
            continue
        ref = read_secret_ref(Obj.of(value, f"{view.at(name_text)}", view.errors))
        if ref is not None:
            result[name_text] = ref
    view.finish()
    return result
