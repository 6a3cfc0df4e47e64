"""The tests' local S3 answers byte ranges as S3 does, without copying the whole object.

The million-chunk benchmark keeps LanceDB's vectors on this server; LanceDB reads its data
files in small ranges. A server that copies a 1.5 GB object to answer each 64 KB read is
not a stand-in for S3 (index training there never finished), so the stand-in is checked.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from tests.s3_server import FAKE_KEY_ID, FAKE_SECRET, REGION, S3Server

SIZE = 48 * 1024 * 1024


Stored = tuple[Any, str, bytes]


def _get(stored: Stored, spec: str | None) -> tuple[int, str | None, bytes]:
    from botocore.exceptions import ClientError

    client, bucket, _ = stored
    try:
        answer = client.get_object(Bucket=bucket, Key="file.lance",
                                   **({"Range": spec} if spec else {}))
    except ClientError as error:
        return int(error.response["ResponseMetadata"]["HTTPStatusCode"]), None, b""
    return (int(answer["ResponseMetadata"]["HTTPStatusCode"]), answer.get("ContentRange"),
            answer["Body"].read())


@pytest.fixture(scope="module")
def stored(s3_server: S3Server) -> Stored:
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server.endpoint, region_name=REGION,
                          aws_access_key_id=FAKE_KEY_ID, aws_secret_access_key=FAKE_SECRET)
    bucket = s3_server.new_bucket()
    body = (bytes(range(251)) * (SIZE // 251 + 1))[:SIZE]
    client.put_object(Bucket=bucket, Key="file.lance", Body=body)
    return client, bucket, body


@pytest.mark.parametrize(
    ("spec", "cut"),
    [
        ("bytes=0-99", slice(0, 100)),
        ("bytes=1000000-1065535", slice(1_000_000, 1_065_536)),
        ("bytes=-4096", slice(SIZE - 4096, SIZE)),
        (f"bytes={SIZE - 10}-", slice(SIZE - 10, SIZE)),
        (f"bytes={SIZE - 10}-{SIZE + 500}", slice(SIZE - 10, SIZE)),
    ],
)
def test_a_range_answers_exactly_its_bytes(stored: Stored, spec: str, cut: slice) -> None:
    body = stored[2]
    status, content_range, got = _get(stored, spec)
    assert status == 206
    assert got == body[cut]
    assert content_range == f"bytes {cut.start}-{cut.stop - 1}/{SIZE}"


def test_whole_reads_and_bad_ranges_behave_as_s3(stored: Stored) -> None:
    body = stored[2]
    assert _get(stored, None)[::2] == (200, body)
    assert _get(stored, "bytes=0-9,20-29")[::2] == (200, body)  # several ranges: all of it
    assert _get(stored, f"bytes={SIZE + 5}-")[0] == 416


def test_a_small_range_does_not_copy_the_whole_object(stored: Stored) -> None:
    _get(stored, "bytes=0-99")  # whatever the client loads on a first call, loaded here
    tracemalloc.start()
    try:
        status, _, got = _get(stored, "bytes=5000-5099")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (status, len(got)) == (206, 100)
    assert peak < SIZE // 2, f"a 100-byte range held {peak:,} bytes at its peak"
