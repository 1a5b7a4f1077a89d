"""SigV4 signing (llmcore.cloud.aws): the signature checked by an independent computation."""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import quote, urlsplit

import pytest

from llmcore.cloud.aws import CREDENTIAL_CHAIN, SigV4Signer, resolve_region
from llmcore.errors import CloudSetupError, MissingCredentialsError

URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1:0/invoke"
BODY = '{"max_tokens":5,"messages":[{"role":"user","content":"héllo"}]}'.encode()
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _signature(method, url, headers, body, *, date, region, secret, service="bedrock"):
    """SigV4 from its published definition (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html)."""
    parts = urlsplit(url)
    signed = {k.lower(): v.strip() for k, v in headers.items()}
    signed["host"] = parts.netloc
    signed["x-amz-date"] = date
    names = sorted(signed)
    canonical = "\n".join(
        [
            method,
            quote(parts.path, safe="/~"),  # botocore encodes the path as sent once more
            parts.query,
            "".join(f"{n}:{signed[n]}\n" for n in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("AWS4" + secret).encode()
    for part in (date[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(), ";".join(names), scope


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """No AWS credentials or region anywhere, and no instance-metadata look-up (no network)."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    return tmp_path


def test_the_signature_is_sigv4_of_the_exact_body(no_aws):
    signer = SigV4Signer(region="us-east-1", access_key="AKIDEXAMPLE", secret_key=SECRET)
    headers = {"content-type": "application/json", "accept": "application/json"}
    added = signer.sign("POST", URL, headers, BODY)
    assert set(added) == {"authorization", "x-amz-date"}
    date = added["x-amz-date"]
    expected, names, scope = _signature(
        "POST", URL, headers, BODY, date=date, region="us-east-1", secret=SECRET
    )
    assert names == "accept;content-type;host;x-amz-date"
    assert added["authorization"] == (
        f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{scope}, SignedHeaders={names}, Signature={expected}"
    )
    other, _, _ = _signature(
        "POST", URL, headers, BODY + b" ", date=date, region="us-east-1", secret=SECRET
    )
    assert other != expected  # the body's bytes are what is signed


def test_temporary_credentials_add_the_session_token(no_aws):
    signer = SigV4Signer(
        region="eu-west-3", access_key="ASIAX", secret_key=SECRET, session_token="tok/en"
    )
    added = signer.sign("POST", URL.replace("us-east-1", "eu-west-3"), {}, BODY)
    assert added["x-amz-security-token"] == "tok/en"
    assert "SignedHeaders=host;x-amz-date;x-amz-security-token," in added["authorization"]
    assert "/eu-west-3/bedrock/aws4_request" in added["authorization"]


def test_the_chain_reads_the_environment_and_region(no_aws, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    signer = SigV4Signer()
    assert signer.region == "ap-south-1"
    added = signer.sign("POST", URL, {}, BODY)
    expected, _, _ = _signature(
        "POST", URL, {}, BODY, date=added["x-amz-date"], region="ap-south-1", secret=SECRET
    )
    assert added["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAENV/")
    assert added["authorization"].endswith(f"Signature={expected}")


def test_the_chain_reads_a_profile_of_the_shared_files(no_aws, monkeypatch):
    (no_aws / "credentials").write_text(
        f"[work]\naws_access_key_id = AKIAFILE\naws_secret_access_key = {SECRET}\n"
    )
    (no_aws / "config").write_text("[profile work]\nregion = ca-central-1\n")
    monkeypatch.setenv("AWS_PROFILE", "work")
    signer = SigV4Signer()
    assert signer.region == "ca-central-1"
    assert "Credential=AKIAFILE/" in signer.sign("POST", URL, {}, BODY)["authorization"]


def test_no_credentials_is_a_typed_error_naming_the_chain(no_aws):
    signer = SigV4Signer(region="us-east-1")
    with pytest.raises(MissingCredentialsError) as info:
        signer.sign("POST", URL, {}, BODY)
    for step in CREDENTIAL_CHAIN:
        assert step in info.value.message
    assert info.value.location == "AWS credential chain"


def test_half_explicit_keys_are_refused_and_no_secret_is_shown(no_aws):
    with pytest.raises(MissingCredentialsError, match="both access_key and secret_key") as info:
        SigV4Signer(region="us-east-1", secret_key=SECRET).sign("POST", URL, {}, BODY)
    assert SECRET not in str(info.value)
    signer = SigV4Signer(
        region="us-east-1", access_key="AKID", secret_key=SECRET, session_token="t0k"
    )
    signer.sign("POST", URL, {}, BODY)
    assert repr(signer) == "SigV4Signer(region='us-east-1', service='bedrock')"
    assert SECRET not in repr(signer) and "t0k" not in repr(signer)


def test_the_region_comes_from_the_argument_then_the_environment(no_aws):
    assert resolve_region("us-west-2", environ={"AWS_REGION": "x"}) == "us-west-2"
    assert (
        resolve_region(environ={"AWS_REGION": "eu-north-1", "AWS_DEFAULT_REGION": "y"})
        == "eu-north-1"
    )
    assert resolve_region(environ={"AWS_DEFAULT_REGION": "sa-east-1"}) == "sa-east-1"
    with pytest.raises(CloudSetupError, match="no AWS region: pass region= or set AWS_REGION"):
        resolve_region(environ={})
    with pytest.raises(CloudSetupError, match="no AWS region"):
        SigV4Signer(access_key="a", secret_key="b")


def test_nothing_secret_reaches_the_logs(no_aws, caplog):
    import logging

    caplog.set_level(logging.DEBUG)
    signer = SigV4Signer(
        region="us-east-1", access_key="AKID", secret_key=SECRET, session_token="sess-tok"
    )
    signer.sign("POST", URL, {}, BODY)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "sess-tok" not in text and SECRET not in text
    assert not logging.getLogger("botocore.auth").disabled  # switched back on after signing
