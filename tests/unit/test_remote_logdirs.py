"""Remote logdirs (fsspec URLs) that cannot be read fail fast, saying why and what to do.

No test here touches the network: fsspec's memory:// filesystem stands for a working store, and
fake filesystems registered for the test raise what gcsfs, s3fs, aiohttp, google-auth and
botocore raise (lookalike classes, matched by name, since those packages may be absent).
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
from typing import ClassVar

import pytest

import xprof_widgets as xw
from xprof_widgets.profile import locate

fsspec = pytest.importorskip("fsspec")
from fsspec.asyn import AsyncFileSystem
from fsspec.registry import _registry, known_implementations
from fsspec.spec import AbstractFileSystem

pytestmark = pytest.mark.decoding

URL = "gs://my-bucket/logs"


# ---- lookalikes of the exceptions the real filesystems raise -----------------------------------
class ClientConnectorDNSError(OSError):
    """aiohttp's, when the host name does not resolve."""


class RefreshError(Exception):
    """google-auth's, when a token cannot be refreshed."""


class DefaultCredentialsError(Exception):
    """google-auth's, when no credentials are found."""


class HttpError(Exception):
    """gcsfs's, with the HTTP status as `code`."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class ClientError(Exception):
    """botocore's, with the service's answer as `response`."""

    def __init__(self, code: str, status: int):
        super().__init__(f"An error occurred ({code}) when calling the ListObjectsV2 operation")
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


class NoCredentialsError(Exception):
    """botocore's, when no AWS credentials are configured."""


def _wrapped_dns_error() -> Exception:
    try:
        raise ClientConnectorDNSError("Cannot connect to host storage.googleapis.com:443 "
                                      "ssl:default [Name or service not known]")
    except OSError as inner:
        try:
            raise RuntimeError("list failed") from inner
        except RuntimeError as outer:
            return outer


def _filesystem(error: Exception | None = None, on_init: bool = False):
    class Failing(AbstractFileSystem):
        cachable = False
        options: ClassVar[dict] = {}

        def __init__(self, **options):
            if on_init:
                raise error
            type(self).options = options
            super().__init__()

        def info(self, path, **kwargs):
            raise error

        def ls(self, path, detail=True, **kwargs):
            raise error

    return Failing


@pytest.fixture
def register(monkeypatch):
    """register(protocol, class): the class serves protocol:// for this test only; the DNS check
    and the Google credentials lookup are stubbed (they would touch this machine's network)."""
    monkeypatch.setattr(locate, "_check_resolves", lambda url, host: None)
    monkeypatch.setattr(locate, "_gcs_options", lambda url: {})

    def register(protocol: str, cls: type) -> None:
        monkeypatch.setitem(_registry, protocol, cls)

    return register


@pytest.mark.parametrize("error, message", [
    (ClientConnectorDNSError("Cannot connect to host storage.googleapis.com:443 ssl:default "
                             "[Name or service not known]"),
     (r"cannot reach the storage service \(ClientConnectorDNSError: Cannot connect to host "
     r"storage\.googleapis\.com.*no network connection.*gcloud storage cp -r")),
    (_wrapped_dns_error(), r"cannot reach the storage service \(ClientConnectorDNSError"),
    (socket.gaierror(-2, "Name or service not known"), "cannot reach the storage service"),
    (ConnectionRefusedError(111, "Connection refused"), "cannot reach the storage service"),
    (RefreshError("invalid_grant: Token has been expired or revoked."),
     (r"the storage service refused the request for lack of valid credentials "
      r"\(RefreshError: invalid_grant.*from google\.colab import auth; "
     r"auth\.authenticate_user\(\).*gcloud auth application-default login.*"
     r"GOOGLE_APPLICATION_CREDENTIALS")),
    (HttpError(401, "Anonymous caller does not have storage.objects.list access to the Google "
                    "Cloud Storage bucket."),
     (r"the storage service refused the request for lack of valid credentials \(HttpError: "
     r"Anonymous")),
    (HttpError(403, "me@x.com does not have storage.objects.list access"),
     (r"permission denied \(HttpError: me@x\.com.*storage\.objects\.list and storage\.objects\.get"
     r" on gs://my-bucket.*Storage Object Viewer")),
    (OSError("Forbidden: my-bucket/logs\nno access"), r"permission denied \(OSError: Forbidden"),
    (PermissionError("denied"), r"permission denied \(PermissionError: denied\)"),
    (HttpError(404, "The specified bucket does not exist."),
     (r"no such bucket or path \(HttpError: The specified bucket does not exist\.\).*"
     r"gcloud storage ls gs://my-bucket/")),
    (ValueError("something odd"), r"cannot be read \(ValueError: something odd\)"),
])
def test_gcs_failures_name_the_url_the_cause_and_the_fix(register, error, message):
    register("gs", _filesystem(error))
    with pytest.raises(xw.ProfileError, match=rf"^gs://my-bucket/logs: {message}"):
        xw.open_profile(URL)


def test_a_missing_bucket_or_path_is_named(register):
    register("gs", _filesystem(FileNotFoundError("my-bucket/logs")))
    with pytest.raises(xw.ProfileError, match=r"^gs://my-bucket/logs: no such bucket or path\. "
                                              r"Check the bucket name and the path \(e\.g\. "
                                              r"`gcloud storage ls gs://my-bucket/`\)"):
        xw.open_profile(URL)


def test_credentials_failing_while_the_filesystem_starts(register):
    register("gs", _filesystem(DefaultCredentialsError("Your default credentials were not found"),
                               on_init=True))
    with pytest.raises(xw.ProfileError, match=r"^gs://my-bucket/logs: the storage service refused"
                                              r".*DefaultCredentialsError.*authenticate_user"):
        xw.open_profile(URL)


@pytest.mark.parametrize("error, message", [
    (ClientError("AccessDenied", 403), (r"permission denied \(ClientError: An error occurred "
                                       r"\(AccessDenied\)")),
    (NoCredentialsError("Unable to locate credentials"),
     r"the storage service refused the request for lack of valid credentials.*aws configure"),
    (ClientError("NoSuchBucket", 404), r"no such bucket or path.*aws s3 ls s3://b/"),
])
def test_s3_failures_say_what_to_do(register, error, message):
    register("s3", _filesystem(error))
    with pytest.raises(xw.ProfileError, match=rf"^s3://b/logs: {message}"):
        xw.open_profile("s3://b/logs")


def test_a_store_that_does_not_answer_is_given_up_on(register, monkeypatch):
    class Silent(AsyncFileSystem):
        cachable = False

        async def _info(self, path, **kwargs):
            await asyncio.sleep(60)

    register("gs", Silent)
    monkeypatch.setattr(locate, "REMOTE_TIMEOUT_S", 1.0)
    with pytest.raises(xw.ProfileError, match=r"^gs://my-bucket/logs: no answer from the storage "
                                              r"service within 1 s.*network is down"):
        xw.open_profile(URL)


def test_a_host_name_that_does_not_resolve_fails_at_once(monkeypatch):
    monkeypatch.setitem(_registry, "gs", _filesystem(AssertionError("must not be reached")))
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "STORAGE_EMULATOR_HOST"):
        monkeypatch.delenv(proxy, raising=False)
    asked = []

    def getaddrinfo(host, port, *args, **kwargs):
        asked.append(host)
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(locate.socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(locate, "_DNS_OK", set())
    with pytest.raises(xw.ProfileError, match=r"^gs://my-bucket/logs: cannot reach "
                                              r"storage\.googleapis\.com \(the DNS lookup of "
                                              r"storage\.googleapis\.com failed.*Name or service"):
        xw.open_profile(URL)
    assert asked == ["storage.googleapis.com"]


def test_a_dns_lookup_that_hangs_is_cut_short(monkeypatch):
    monkeypatch.setitem(_registry, "gs", _filesystem(AssertionError("must not be reached")))
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "STORAGE_EMULATOR_HOST"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setattr(locate.socket, "getaddrinfo", lambda *a, **k: time.sleep(5))
    monkeypatch.setattr(locate, "_DNS_OK", set())
    monkeypatch.setattr(locate, "DNS_TIMEOUT_S", 0.2)
    with pytest.raises(xw.ProfileError, match=r"did not answer within 0\.2 s"):
        xw.open_profile(URL)


def test_without_google_credentials_the_bucket_is_read_anonymously(monkeypatch, tmp_path):
    google_auth = pytest.importorskip("google.auth")
    from google.auth.exceptions import DefaultCredentialsError as RealError

    def no_credentials(*args, **kwargs):
        raise RealError("Your default credentials were not found.")

    monkeypatch.setattr(google_auth, "default", no_credentials)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no gcsfs token cache there
    monkeypatch.setattr(locate, "_check_resolves", lambda url, host: None)
    fake = _filesystem(HttpError(401, "Anonymous caller does not have storage.objects.get"))
    monkeypatch.setitem(_registry, "gs", fake)
    with pytest.raises(xw.ProfileError, match=r"^gs://my-bucket/logs: no credentials were found, "
                                              r"so the bucket was read anonymously, and the "
                                              r"storage service refused.*authenticate_user"):
        xw.open_profile(URL)
    assert fake.options == {"token": "anon"}


def test_a_named_key_file_that_does_not_work_is_reported(monkeypatch, tmp_path):
    pytest.importorskip("google.auth")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing-key.json"))
    monkeypatch.setattr(locate, "_check_resolves", lambda url, host: None)
    monkeypatch.setitem(_registry, "gs", _filesystem(AssertionError("must not be reached")))
    with pytest.raises(xw.ProfileError, match=r"^gs://my-bucket/logs: .*credentials.*"
                                              r"missing-key\.json.*GOOGLE_APPLICATION_CREDENTIALS"):
        xw.open_profile(URL)


def test_a_missing_filesystem_package_names_what_to_install(monkeypatch):
    monkeypatch.delitem(_registry, "gs", raising=False)
    monkeypatch.setitem(known_implementations, "gs", {
        "class": "no_such_package_xyz.GCSFileSystem",
        "err": "Please install gcsfs to access Google Storage"})
    with pytest.raises(xw.ProfileError, match=r"^gs://my-bucket/logs: reading gs:// URLs needs a "
                                              r"package.*Please install gcsfs.*`pip install "
                                              r"gcsfs`"):
        xw.open_profile(URL)


def test_an_unknown_scheme_is_named():
    with pytest.raises(xw.ProfileError, match=r"^nosuchscheme://x/y: fsspec has no filesystem for "
                                              r"nosuchscheme:// URLs"):
        xw.open_profile("nosuchscheme://x/y")


def test_a_memory_store_with_rank_traces_found_by_content(tpu_path):
    data = (tpu_path.parent / "torch_tiny_mlp.pt.trace.json.gz").read_bytes()
    fs = fsspec.filesystem("memory")
    fs.pipe("/hta/rank-0.json.gz", data)
    fs.pipe("/hta/rank-1.json.gz", data)
    fs.pipe("/hta/config.json", b'{"world_size": 2}')
    try:
        profile = xw.open_profile("memory://hta")
        assert profile.hosts == ["rank 0", "rank 1"]  # ranks by name (profile/ranks.py)
        assert profile.n_events == 2 * 479
    finally:
        fs.rm("/hta", recursive=True)


def test_a_memory_store_without_profiles_says_so():
    fs = fsspec.filesystem("memory")
    fs.pipe("/cfg/config.json", b'{"world_size": 2}')
    fs.pipe("/cfg/notes.txt.gz", gzip.compress(b"hello"))
    try:
        with pytest.raises(xw.ProfileError, match=r"memory://cfg: no profile found.*config\.json: "
                                                  r"JSON but not a Chrome trace"):
            xw.open_profile("memory://cfg")
    finally:
        fs.rm("/cfg", recursive=True)
