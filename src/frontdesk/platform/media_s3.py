"""The media store on an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Ceph...).

One bucket per deployment, one key prefix per tenant (``<tenant>/<xx>/<hash>.<ext>``, the same
keys as the local store). Signed URLs are S3 presigned GETs: a platform or a vision model fetches
the object from the bucket directly, and the bucket refuses the link once it expires or if any
part of it was changed. boto3 is synchronous: every call runs in a worker thread on one shared
low-level client (boto3 documents those as thread-safe; sessions and resources are not).

Objects are written with the type their bytes have (``media_types``), and a file of no accepted
type as ``application/octet-stream`` with ``Content-Disposition: attachment``; a presigned link to
a key whose extension is not an accepted type (an ``.svg`` an earlier release stored) asks the
bucket to answer it the same way. The bucket's origin is not ours, but nothing customer-sent
should render as a page there either.

boto3 is the optional ``s3`` extra, imported only when this store is built, so an install without
it still runs the local store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from frontdesk.errors import ConfigError, NotFoundError
from frontdesk.platform.ids import TenantId
from frontdesk.platform.media import KEY_PATTERN, StoredMedia, media_key
from frontdesk.platform.media_types import NEUTRAL, attachment, content_type, inline, stored_type, type_for_extension

if TYPE_CHECKING:
    from frontdesk.settings import Settings

MISSING_EXTRA = "media_store = 's3' needs the s3 extra: pip install 'frontdesk[s3]'"
# SigV4 presigned URLs cannot live longer than seven days.
MAX_URL_TTL_S = 7 * 24 * 3600
_MISSING_OBJECT = frozenset({"NoSuchKey", "NotFound", "404"})
_MISSING_BUCKET = frozenset({"NoSuchBucket"})
_REFUSED = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "Forbidden"})


class S3Client(Protocol):
    """The four calls we make on a botocore S3 client (typed here: boto3 ships no annotations)."""

    def put_object(self, **kwargs: Any) -> Mapping[str, Any]: ...

    def get_object(self, **kwargs: Any) -> Mapping[str, Any]: ...

    def head_bucket(self, **kwargs: Any) -> Mapping[str, Any]: ...

    def generate_presigned_url(self, ClientMethod: str, Params: Mapping[str, Any], ExpiresIn: int) -> str: ...


class S3MediaStore:
    """Media objects in ``bucket``; ``client`` is a botocore S3 client (``from_settings`` builds one)."""

    def __init__(self, client: S3Client, bucket: str, *, url_ttl_s: float = 3600, endpoint: str | None = None) -> None:
        _check_url_ttl(url_ttl_s)
        self._client = client
        self._bucket = bucket
        self._url_ttl_s = url_ttl_s
        self._where = f"bucket {bucket!r} at {masked_url(endpoint) if endpoint else 'AWS S3'}"

    @classmethod
    def from_settings(cls, settings: Settings) -> S3MediaStore:
        if not settings.s3_bucket:
            raise ConfigError("media_store = 's3' needs s3_bucket (the deployment's media bucket)")
        if (settings.s3_access_key_id is None) != (settings.s3_secret_access_key is None):
            raise ConfigError("set both s3_access_key_id and s3_secret_access_key, or neither (the AWS default chain)")
        _check_url_ttl(settings.media_url_ttl_s)  # before building a client: the cheap mistakes first
        return cls(
            s3_client(
                settings.s3_endpoint_url,
                settings.s3_region,
                settings.s3_access_key_id,
                settings.s3_secret_access_key,
            ),
            settings.s3_bucket,
            url_ttl_s=settings.media_url_ttl_s,
            endpoint=settings.s3_endpoint_url,
        )

    def __repr__(self) -> str:
        return f"S3MediaStore({self._where})"  # never the credentials or the endpoint's userinfo

    async def put(self, tenant_id: TenantId, data: bytes, mime_type: str) -> StoredMedia:
        key = media_key(tenant_id, data, mime_type)
        served = content_type(data)  # application/octet-stream unless an accepted image or audio type
        download = {} if inline(served) else {"ContentDisposition": _download(key)}
        # Content-addressed: writing the same bytes again is harmless, so no HEAD round trip first.
        await self._call(
            self._client.put_object, Bucket=self._bucket, Key=key, Body=data, ContentType=served, **download
        )
        return StoredMedia(key, stored_type(data, mime_type), len(data))

    async def get(self, key: str) -> tuple[bytes, str]:
        if not KEY_PATTERN.fullmatch(key):
            raise NotFoundError(f"no media {key!r}")
        response = await self._call(self._client.get_object, Bucket=self._bucket, Key=key)
        data: bytes = await asyncio.to_thread(_read_body, response["Body"])
        return data, content_type(data)  # never the object's ContentType: an older release set it as declared

    def signed_url(self, key: str, base_url: str, ttl_s: float | None = None) -> str:
        """A presigned GET on the bucket (``base_url`` is not needed: the bucket serves it).
        Signing is a local computation, so it runs on the caller's thread."""
        if not KEY_PATTERN.fullmatch(key):
            raise NotFoundError(f"no media {key!r}")
        expires_in = int(min(self._url_ttl_s if ttl_s is None else ttl_s, MAX_URL_TTL_S))
        params: dict[str, str] = {"Bucket": self._bucket, "Key": key}
        if not inline(type_for_extension(key.rpartition(".")[2])):
            params |= {"ResponseContentType": NEUTRAL, "ResponseContentDisposition": _download(key)}
        return self._client.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)

    def verify(self, key: str, expires: int, signature: str) -> bool:
        """Always False: this store's links point at the bucket, never at our ``/media/m/`` route."""
        return False

    async def check(self) -> None:
        """The bucket exists and our credentials may use it (needs ``s3:ListBucket``)."""
        await self._call(self._client.head_bucket, Bucket=self._bucket)

    async def _call(self, method: Callable[..., Mapping[str, Any]], **params: Any) -> Mapping[str, Any]:
        # The s3 extra is present (the client exists); botocore ships no type hints.
        from botocore.exceptions import ClientError  # type: ignore[import-untyped]  # no stubs, see above

        try:
            result: Mapping[str, Any] = await asyncio.to_thread(method, **params)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _MISSING_OBJECT and "Key" in params:
                raise NotFoundError(f"no media {params['Key']!r}") from None
            if code in _MISSING_BUCKET or (code in _MISSING_OBJECT and "Key" not in params):
                raise ConfigError(f"the media {self._where} does not exist (s3_bucket)") from None
            if code in _REFUSED:
                raise ConfigError(
                    f"the media {self._where} refused our credentials ({code}): check the s3_* settings "
                    "and the permissions in docs/media.md"
                ) from None
            raise
        return result


def s3_client(endpoint_url: str | None, region: str, access_key_id: str | None, secret: str | None) -> S3Client:
    """A botocore S3 client signing with SigV4 (R2 and recent AWS regions accept nothing else)."""
    try:
        import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints; S3Client types what we use
        from botocore.config import Config  # type: ignore[import-untyped]  # same package family, same reason
    except ImportError:
        raise ConfigError(MISSING_EXTRA) from None
    config = Config(
        signature_version="s3v4",
        # Path-style (``endpoint/bucket/key``) for self-hosted endpoints: MinIO and Ceph need no
        # wildcard DNS for it. AWS keeps its default (virtual-hosted).
        s3={"addressing_style": "path"} if endpoint_url else {},
        connect_timeout=5,
        read_timeout=30,
        retries={"max_attempts": 3, "mode": "standard"},
        max_pool_connections=16,
    )
    session = boto3.session.Session()  # a private session: the default one is not thread-safe
    client: S3Client = session.client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret,
        config=config,
    )
    return client


def _check_url_ttl(url_ttl_s: float) -> None:
    if not 1 <= url_ttl_s <= MAX_URL_TTL_S:
        raise ConfigError(f"media_url_ttl_s must be between 1 and {MAX_URL_TTL_S} s with media_store = 's3'")


def masked_url(url: str) -> str:
    """``url`` without any ``user:password@`` part, for messages and logs."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    try:
        netloc = f"***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    except ValueError:  # a port that is not a number: show nothing of the authority
        netloc = "***"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _download(key: str) -> str:
    return attachment(key.rpartition("/")[2].partition(".")[0])


def _read_body(body: Any) -> bytes:
    try:
        return bytes(body.read())
    finally:
        body.close()
