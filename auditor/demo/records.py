"""The CloudTrail records of the demo and benchmark generator: their envelope, identities and request parameters.

Records follow only the shapes of the AWS samples; BatchGetItem/BatchWriteItem, which have no sample, use the API
shape, camel-cased (inferred). :class:`RecordFactory` builds one record from an identity (:class:`Principal`), an
operation and its ``requestParameters``, with the seeded RNG. The shapes are in docs/demo.md.
"""

from __future__ import annotations

import base64
import hashlib
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

#: One CloudTrail record, as parsed JSON.
Record = dict[str, Any]

DEFAULT_ACCOUNT: Final = "111122223333"
DEFAULT_REGION: Final = "us-east-1"
#: A fixed default start (a Monday morning, UTC); the generator never reads the clock.
DEFAULT_START: Final = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)

EVENT_SOURCE: Final = "dynamodb.amazonaws.com"
EVENT_VERSION: Final = "1.08"

PTEE: Final = "ProvisionedThroughputExceededException"
PTEE_MESSAGE: Final = (
    "The level of configured provisioned throughput for the table was exceeded. "
    "Consider increasing your provisioning level with the UpdateTable API."
)
THROTTLING: Final = "ThrottlingException"
#: What on-demand tables answer when a partition is over its limit (seen in public SDK error reports).
THROTTLING_MESSAGE: Final = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
VALIDATION: Final = "ValidationException"
ITEM_SIZE_MESSAGE: Final = "Item size has exceeded the maximum allowed size"
ITEM_SIZE_UPDATE_MESSAGE: Final = "Item size to update has exceeded the maximum allowed size"
CONDITIONAL_FAILED: Final = "ConditionalCheckFailedException"
CONDITIONAL_FAILED_MESSAGE: Final = "The conditional request failed"
TXN_CANCELED: Final = "TransactionCanceledException"
TXN_CANCELED_MESSAGE: Final = (
    "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]"
)
REDACTED: Final = "***(Redacted)"

#: An error a call fails with: (errorCode, errorMessage).
Error = tuple[str, str]

PTEE_ERROR: Final[Error] = (PTEE, PTEE_MESSAGE)
THROTTLING_ERROR: Final[Error] = (THROTTLING, THROTTLING_MESSAGE)
ITEM_SIZE_ERROR: Final[Error] = (VALIDATION, ITEM_SIZE_MESSAGE)
ITEM_SIZE_UPDATE_ERROR: Final[Error] = (VALIDATION, ITEM_SIZE_UPDATE_MESSAGE)
CONDITIONAL_FAILED_ERROR: Final[Error] = (CONDITIONAL_FAILED, CONDITIONAL_FAILED_MESSAGE)
TXN_CANCELED_ERROR: Final[Error] = (TXN_CANCELED, TXN_CANCELED_MESSAGE)

_UPPER_ALNUM: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
ALNUM: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_REQUEST_ID_SUFFIX: Final = "VV4KQNSO5AEMVJF66Q9ASUAAJG"

# ---------------------------------------------------------------------------------------------------------------
# User agents and TLS (realistic strings of current SDKs)
# ---------------------------------------------------------------------------------------------------------------


UA_BOTO3: Final = (
    "Boto3/1.34.0 md/Botocore#1.34.0 ua/2.0 os/linux#5.10 lang/python#3.12.1 cfg/retry-mode#legacy Botocore/1.34.0"
)
UA_BOTO3_LAMBDA: Final = (
    "Boto3/1.34.84 md/Botocore#1.34.84 ua/2.0 os/linux#5.10.216-225.855.amzn2.x86_64 md/arch#x86_64 "
    "lang/python#3.12.3 md/pyimpl#CPython exec-env/AWS_Lambda_python3.12 cfg/retry-mode#legacy Botocore/1.34.84"
)
UA_JAVA: Final = (
    "aws-sdk-java/2.25.10 Linux/5.10.219-208.866.amzn2.x86_64 OpenJDK_64-Bit_Server_VM/17.0.11+9-LTS "
    "Java/17.0.11 vendor/Amazon.com_Inc. io/sync http/Apache cfg/retry-mode/legacy"
)
UA_NODE: Final = (
    "aws-sdk-js/3.540.0 ua/2.0 os/linux#5.10.214-223.810.amzn2.x86_64 lang/js md/nodejs#20.12.2 "
    "api/dynamodb#3.540.0 exec-env/AWS_Lambda_nodejs20.x"
)
UA_GO: Final = "aws-sdk-go-v2/1.26.1 os/linux lang/go#1.22.2 md/GOOS#linux md/GOARCH#amd64 api/dynamodb#1.31.1"
UA_CLI: Final = (
    "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/macos#23.4.0 md/arch#arm64 lang/python#3.11.8 "
    "md/pyimpl#CPython cfg/retry-mode#standard md/installer#source md/prompt#off md/command#dynamodb.scan"
)

TLS13: Final = ("TLSv1.3", "TLS_AES_128_GCM_SHA256")
TLS12: Final = ("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256")


# ---------------------------------------------------------------------------------------------------------------
# Identities and the record factory
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Principal:
    kind: str  # "AssumedRole" or "IAMUser"
    name: str  # role or user name
    unique_id: str  # AROA... or AIDA...
    sessions: tuple[str, ...]  # session names (roles)
    user_agent: str
    source_ips: tuple[str, ...]
    tls: tuple[str, str]


def rand_str(rng: random.Random, alphabet: str, k: int) -> str:
    return "".join(rng.choices(alphabet, k=k))


def _uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def iso_time(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def private_ips(rng: random.Random, n: int, net: int) -> list[str]:
    return [f"10.{net}.{rng.randrange(0, 16)}.{rng.randrange(2, 254)}" for _ in range(n)]


class RecordFactory:
    """Builds records. Holds the seeded RNG and the per-session credentials (rotated hourly, like STS)."""

    __slots__ = ("_creds", "_last_iso", "_last_sec", "_rotated", "account", "region", "rng")

    def __init__(self, rng: random.Random, account: str, region: str) -> None:
        self.rng = rng
        self.account = account
        self.region = region
        self._creds: dict[tuple[str, int], tuple[float, str]] = {}  # (principal, session) -> (offset, key id)
        self._rotated: dict[tuple[str, int], tuple[str, str]] = {}  # (key id, hour) -> (key id, creationDate)
        self._last_sec = -1
        self._last_iso = ""

    # -- principals -------------------------------------------------------------------------------------------

    def role(
        self,
        name: str,
        sessions: Sequence[str],
        user_agent: str,
        source_ips: Sequence[str],
        tls: tuple[str, str] = TLS13,
    ) -> Principal:
        uid = "AROA" + rand_str(self.rng, _UPPER_ALNUM, 17)
        return Principal("AssumedRole", name, uid, tuple(sessions), user_agent, tuple(source_ips), tls)

    def user(self, name: str, user_agent: str, source_ip: str) -> Principal:
        uid = "AIDA" + rand_str(self.rng, _UPPER_ALNUM, 17)
        return Principal("IAMUser", name, uid, ("",), user_agent, (source_ip,), TLS13)

    def _credentials(self, p: Principal, session: int, ts: float) -> tuple[str, str]:
        """(accessKeyId, creationDate) of the credentials in use at ``ts``."""
        cached = self._creds.get((p.name, session))
        if cached is None:
            prefix = "AKIA" if p.kind == "IAMUser" else "ASIA"
            cached = (self.rng.uniform(0.0, 3600.0), prefix + rand_str(self.rng, _UPPER_ALNUM, 16))
            self._creds[(p.name, session)] = cached
        offset, key_id = cached
        if p.kind == "IAMUser":
            return key_id, ""  # a long-term access key
        period = int((ts - offset) // 3600.0)
        rotated = self._rotated.get((key_id, period))
        if rotated is None:
            # A new STS session every hour: a new key id, derived from the period (no RNG draw, no hash()).
            h = hashlib.blake2b(f"{key_id}:{period}".encode(), digest_size=16).digest()
            rotated = (key_id[:4] + "".join(_UPPER_ALNUM[b % 36] for b in h), iso_time(period * 3600.0 + offset))
            if len(self._rotated) > 4096:
                self._rotated.clear()
            self._rotated[(key_id, period)] = rotated
        return rotated

    def identity(self, p: Principal, session: int, ts: float) -> dict[str, Any]:
        account = self.account
        key_id, created = self._credentials(p, session, ts)
        if p.kind == "IAMUser":
            return {
                "type": "IAMUser",
                "principalId": p.unique_id,
                "arn": f"arn:aws:iam::{account}:user/{p.name}",
                "accountId": account,
                "accessKeyId": key_id,
                "userName": p.name,
            }
        session_name = p.sessions[session]
        return {
            "type": "AssumedRole",
            "principalId": f"{p.unique_id}:{session_name}",
            "arn": f"arn:aws:sts::{account}:assumed-role/{p.name}/{session_name}",
            "accountId": account,
            "accessKeyId": key_id,
            "sessionContext": {
                "sessionIssuer": {
                    "type": "Role",
                    "principalId": p.unique_id,
                    "arn": f"arn:aws:iam::{account}:role/{p.name}",
                    "accountId": account,
                    "userName": p.name,
                },
                "attributes": {"creationDate": created, "mfaAuthenticated": "false"},
            },
        }

    # -- ids and times ----------------------------------------------------------------------------------------

    def event_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def request_id(self) -> str:
        # DynamoDB request ids are base32hex (0-9, A-V): 26 random characters and a per-endpoint suffix.
        return base64.b32hexencode(self.rng.getrandbits(136).to_bytes(17, "big"))[:26].decode() + _REQUEST_ID_SUFFIX

    def event_time(self, ts: float) -> str:
        sec = int(ts)
        if sec != self._last_sec:
            self._last_sec = sec
            self._last_iso = iso_time(sec)
        return self._last_iso

    def uuid(self) -> str:
        return _uuid4(self.rng)

    # -- the record -------------------------------------------------------------------------------------------

    def record(
        self,
        ts: float,
        p: Principal,
        event_name: str,
        params: dict[str, Any],
        tables: Sequence[str],
        read_only: bool,
        error: Error | None = None,
        session: int | None = None,
    ) -> Record:
        rng = self.rng
        if session is None:
            session = rng.randrange(len(p.sessions)) if len(p.sessions) > 1 else 0
        account = self.account
        region = self.region
        rec: Record = {
            "eventVersion": EVENT_VERSION,
            "userIdentity": self.identity(p, session, ts),
            "eventTime": self.event_time(ts),
            "eventSource": EVENT_SOURCE,
            "eventName": event_name,
            "awsRegion": region,
            "sourceIPAddress": p.source_ips[session % len(p.source_ips)],
            "userAgent": p.user_agent,
        }
        if error is not None:
            rec["errorCode"] = error[0]
            rec["errorMessage"] = error[1]
        rec["requestParameters"] = params
        rec["responseElements"] = None
        rec["requestID"] = self.request_id()
        rec["eventID"] = self.event_id()
        rec["readOnly"] = read_only
        rec["resources"] = [
            {
                "accountId": account,
                "type": "AWS::DynamoDB::Table",
                "ARN": f"arn:aws:dynamodb:{region}:{account}:table/{t}",
            }
            for t in tables
        ]
        rec["eventType"] = "AwsApiCall"
        rec["apiVersion"] = "2012-08-10"
        rec["managementEvent"] = False
        rec["recipientAccountId"] = account
        rec["eventCategory"] = "Data"
        rec["tlsDetails"] = {
            "tlsVersion": p.tls[0],
            "cipherSuite": p.tls[1],
            "clientProvidedHostHeader": f"dynamodb.{region}.amazonaws.com",
        }
        return rec


# ---------------------------------------------------------------------------------------------------------------
# requestParameters builders (the shapes of the AWS samples)
# ---------------------------------------------------------------------------------------------------------------


def get_item_params(
    table: str, key: dict[str, Any], *, consistent: bool = False, projection: str | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key}
    if consistent:
        params["consistentRead"] = True
    if projection is not None:
        params["projectionExpression"] = projection
    return params


def put_item_params(
    table: str, key: dict[str, Any], names: Sequence[str], condition: str | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key, "item": list(names)}
    if condition is not None:
        params["conditionExpression"] = condition
    params["returnConsumedCapacity"] = "TOTAL"
    return params


def update_item_params(
    table: str,
    key: dict[str, Any],
    expression: str,
    names: dict[str, str] | None = None,
    condition: str | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key, "updateExpression": expression}
    if names:
        params["expressionAttributeNames"] = dict(names)
    if condition is not None:
        params["conditionExpression"] = condition
    params["returnConsumedCapacity"] = "TOTAL"
    return params


def delete_item_params(table: str, key: dict[str, Any], condition: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table, "key": key}
    if condition is not None:
        params["conditionExpression"] = condition
    return params


def query_params(
    table: str,
    condition: str,
    *,
    index: str | None = None,
    names: dict[str, str] | None = None,
    limit: int | None = None,
    forward: bool | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"tableName": table}
    if index is not None:
        params["indexName"] = index
    params["keyConditionExpression"] = condition
    if names:
        params["expressionAttributeNames"] = dict(names)
    if limit is not None:
        params["limit"] = limit
    if forward is not None:
        params["scanIndexForward"] = forward
    return params
