"""The one fake Lambda context of the tests: what handlers, the runtime and Powertools read of the real one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@dataclass
class FakeLambdaContext:
    """A Lambda context for invoking a handler directly (``FakeLambdaContext.aws_request_id`` is the request id)."""

    function_name: str = "ddb-traffic-auditor-function"
    region: str = "us-east-1"
    account: str = "123456789012"
    remaining_ms: int = 300_000
    aws_request_id: str = "5f1c7e1a-0000-4000-8000-000000000001"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "2026/12/01/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def lambda_context(function_name: str = "ddb-traffic-auditor-function", **fields: str | int) -> LambdaContext:
    """A :class:`FakeLambdaContext` typed as Powertools' ``LambdaContext``."""
    return cast("LambdaContext", FakeLambdaContext(function_name, **fields))  # type: ignore[arg-type]
