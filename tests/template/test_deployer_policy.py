"""docs/iam/deployer-policy.json covers what CloudFormation does for template.yaml, and docs/deploy.md counts it right.

CloudFormation creates, reads, updates and deletes each resource with the credentials of whoever deploys (no
service role), calling the actions its resource handler lists as ``handlers.<verb>.permissions`` in the resource
type's registry schema (cfn-lint ships the schemas). Every such action of every resource type the stack deploys,
after SAM's expansion of its serverless resources, is allowed by the policy, or is listed in :data:`NOT_USED` with
the property it serves that the template does not set. docs/deploy.md's table of what the stack creates states the
resource counts of the smallest deployment and of every optional part on, as computed here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from typing import Any

import cfnlint
import pytest

from tests.template.variants import VARIANTS, load_template, resolve

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "docs" / "iam" / "deployer-policy.json"
SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas" / "resources"
#: An inline policy of an IAM role holds at most 10,240 characters (whitespace not counted).
INLINE_ROLE_POLICY_LIMIT = 10_240

#: Handler actions the policy leaves out: each serves a property or feature this template does not use.
NOT_USED: dict[str, str] = {
    "iam:AttachRolePolicy": "the roles have no managed policies (ManagedPolicyArns), only their own inline ones",
    "iam:PutRolePermissionsBoundary": "the template sets no permissions boundary",
    "iam:DeleteRolePermissionsBoundary": "the template sets no permissions boundary",
    "iam:CreateServiceLinkedRole": "no organisation trail, table replica or auto scaling",
    "organizations:DescribeOrganization": "the created trail is no organisation trail",
    "organizations:ListAWSServiceAccessForOrganization": "the created trail is no organisation trail",
    "dynamodb:AssociateTableReplica": "the state table has no replicas",
    "dynamodb:CreateTableReplica": "the state table has no replicas",
    "dynamodb:ImportTable": "the state table is not imported from S3",
    "dynamodb:DescribeImport": "the state table is not imported from S3",
    "dynamodb:BatchWriteItem": "item actions of an import or replica; the deployer never touches items",
    "dynamodb:PutItem": "item actions of an import or replica; the deployer never touches items",
    "dynamodb:GetItem": "item actions of an import or replica; the deployer never touches items",
    "dynamodb:UpdateItem": "item actions of an import or replica; the deployer never touches items",
    "dynamodb:DeleteItem": "item actions of an import or replica; the deployer never touches items",
    "dynamodb:Query": "item actions of an import or replica; the deployer never touches items",
    "dynamodb:Scan": "item actions of an import or replica; the deployer never touches items",
    "dynamodb:PutResourcePolicy": "the state table has no resource policy",
    "dynamodb:DeleteResourcePolicy": "the state table has no resource policy",
    "dynamodb:EnableKinesisStreamingDestination": "no Kinesis streaming destination",
    "dynamodb:DisableKinesisStreamingDestination": "no Kinesis streaming destination",
    "dynamodb:UpdateKinesisStreamingDestination": "no Kinesis streaming destination",
    "kinesis:DescribeStream": "no Kinesis streaming destination",
    "kinesis:PutRecords": "no Kinesis streaming destination",
    "s3:GetObjectMetadata": "the state table is not imported from S3",
    "logs:CreateLogStream": "import logs of a table imported from S3",
    "logs:PutLogEvents": "import logs of a table imported from S3",
    "logs:DescribeLogStreams": "import logs of a table imported from S3",
    "logs:CreateLogDelivery": "no log delivery",
    "logs:PutResourcePolicy": "no log group resource policy",
    "logs:DeleteResourcePolicy": "no log group resource policy",
    "logs:PutDataProtectionPolicy": "no log data protection policy",
    "logs:PutIndexPolicy": "no log field index policy",
    "logs:DeleteIndexPolicy": "no log field index policy",
    "logs:PutBearerTokenAuthentication": "no bearer token authentication",
    "logs:PutLogGroupDeletionProtection": "no log group deletion protection",
    "firehose:TagDeliveryStream": "no Firehose delivery",
    "s3:REST.PUT.OBJECT": "not an IAM action (log delivery to S3)",
    "ec2:DescribeSecurityGroups": "no function runs in a VPC",
    "ec2:DescribeSubnets": "no function runs in a VPC",
    "ec2:DescribeVpcs": "no function runs in a VPC",
    "ec2:DescribeNetworkInterfaces": "no function runs in a VPC",
    "elasticfilesystem:DescribeMountTargets": "no function mounts a file system",
    "s3files:ListMountTargets": "no function mounts a file system",
    "lambda:GetCodeSigningConfig": "no code signing",
    "lambda:PutFunctionCodeSigningConfig": "no code signing",
    "lambda:DeleteFunctionCodeSigningConfig": "no code signing",
    "lambda:PassCapacityProvider": "no Lambda capacity provider",
    "kms:ScheduleKeyDeletion": "the key is retained (DeletionPolicy: Retain)",
    "s3:PutAccelerateConfiguration": "a bucket property the template does not set",
    "s3:PutAnalyticsConfiguration": "a bucket property the template does not set",
    "s3:DeleteBucketAnalyticsConfiguration": "a bucket property the template does not set",
    "s3:PutBucketAbac": "a bucket property the template does not set",
    "s3:PutBucketAcl": "a bucket property the template does not set",
    "s3:PutBucketCORS": "a bucket property the template does not set",
    "s3:DeleteBucketCors": "a bucket property the template does not set",
    "s3:PutBucketLogging": "a bucket property the template does not set",
    "s3:PutBucketObjectLockConfiguration": "a bucket property the template does not set",
    "s3:PutObjectLockConfiguration": "a bucket property the template does not set",
    "s3:PutBucketReplication": "a bucket property the template does not set",
    "s3:PutReplicationConfiguration": "a bucket property the template does not set",
    "s3:DeleteBucketReplication": "a bucket property the template does not set",
    "s3:PutBucketWebsite": "a bucket property the template does not set",
    "s3:DeleteBucketWebsite": "a bucket property the template does not set",
    "s3:PutIntelligentTieringConfiguration": "a bucket property the template does not set",
    "s3:PutInventoryConfiguration": "a bucket property the template does not set",
    "s3:PutMetricsConfiguration": "a bucket property the template does not set",
    "s3:DeleteBucketMetricsConfiguration": "a bucket property the template does not set",
    "s3:CreateBucketMetadataTableConfiguration": "a bucket property the template does not set",
    "s3:DeleteBucketMetadataTableConfiguration": "a bucket property the template does not set",
    "s3:UpdateBucketMetadataAnnotationTableConfiguration": "a bucket property the template does not set",
    "s3:UpdateBucketMetadataInventoryTableConfiguration": "a bucket property the template does not set",
    "s3:UpdateBucketMetadataJournalTableConfiguration": "a bucket property the template does not set",
}
#: Services whose handler actions are all for features the template does not use (S3 Tables of a bucket).
NOT_USED_SERVICES = {"s3tables": "a bucket's S3 Tables configuration, which the template does not set"}
#: The handler verbs a deployment, an update and a deletion of the stack call.
VERBS = ("create", "read", "update", "delete")


def sam_expanded(stack: Mapping[str, Any]) -> Counter[str]:
    """The resource types CloudFormation deploys for ``stack`` (one variant), after SAM's transform: a function is a
    Lambda function, each SQS or stream event a mapping, each schedule a rule and a permission to invoke, each SNS
    event a subscription and a permission; a layer is a Lambda layer version."""
    types: Counter[str] = Counter()
    for resource in stack["Resources"].values():
        kind = resource["Type"]
        if kind == "AWS::Serverless::LayerVersion":
            types["AWS::Lambda::LayerVersion"] += 1
        elif kind == "AWS::Serverless::Function":
            types["AWS::Lambda::Function"] += 1
            for event in resource["Properties"].get("Events", {}).values():
                expansion = {
                    "SQS": ["AWS::Lambda::EventSourceMapping"],
                    "DynamoDB": ["AWS::Lambda::EventSourceMapping"],
                    "Schedule": ["AWS::Events::Rule", "AWS::Lambda::Permission"],
                    "SNS": ["AWS::SNS::Subscription", "AWS::Lambda::Permission"],
                }[event["Type"]]
                types.update(expansion)
        else:
            assert not kind.startswith("AWS::Serverless::"), f"add SAM's expansion of {kind}"
            types[kind] += 1
    return types


@cache
def _handler_actions() -> dict[str, frozenset[str]]:
    """Every resource type's handler actions (create, read, update, delete) from the registry schemas."""
    out: dict[str, frozenset[str]] = {}
    for path in SCHEMAS.glob("*.json"):
        schema = json.loads(path.read_text())
        handlers = schema.get("handlers", {})
        out[schema["typeName"]] = frozenset(
            action for verb in VERBS for action in handlers.get(verb, {}).get("permissions", [])
        )
    return out


def _allowed(policy: Mapping[str, Any], action: str) -> bool:
    """Whether an Allow statement names ``action`` (IAM matches action names without regard to case)."""
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if statement["Effect"] == "Allow" and any(fnmatchcase(action.lower(), a.lower()) for a in actions):
            return True
    return False


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    return dict(json.loads(POLICY.read_text()))


@pytest.fixture(scope="module")
def deployed_types() -> Counter[str]:
    template = load_template()
    types: Counter[str] = Counter()
    for overrides in VARIANTS.values():
        types |= sam_expanded(resolve(template, overrides))
    return types


def test_the_policy_is_a_valid_policy_document(policy: dict[str, Any]) -> None:
    assert policy["Version"] == "2012-10-17"
    sids = [s["Sid"] for s in policy["Statement"]]
    assert len(sids) == len(set(sids)) and all(re.fullmatch(r"[A-Za-z0-9]+", sid) for sid in sids)
    for statement in policy["Statement"]:
        assert statement["Effect"] == "Allow" and statement["Resource"]
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all(re.fullmatch(r"[a-z0-9-]+:[A-Za-z]+\*?", a) for a in actions), statement["Sid"]
        assert not any(a.endswith(":*") for a in actions), f"{statement['Sid']}: a whole service"
    assert len(json.dumps(policy, separators=(",", ":"))) <= INLINE_ROLE_POLICY_LIMIT


def test_the_policy_allows_every_handler_action_of_every_deployed_type(
    policy: dict[str, Any], deployed_types: Counter[str]
) -> None:
    handlers = _handler_actions()
    missing = sorted(
        f"{kind}: {action}"
        for kind in deployed_types
        for action in handlers[kind]
        if action.split(":")[0].lower() not in NOT_USED_SERVICES
        and action not in NOT_USED
        and not _allowed(policy, action)
    )
    assert not missing, f"allow in docs/iam/deployer-policy.json, or say in NOT_USED why not: {missing}"


def test_every_action_left_out_belongs_to_a_deployed_type(deployed_types: Counter[str]) -> None:
    """NOT_USED names no action that no deployed type's handler lists (a stale entry)."""
    handlers = _handler_actions()
    listed = set().union(*(handlers[kind] for kind in deployed_types))
    assert not set(NOT_USED) - listed, sorted(set(NOT_USED) - listed)


def _documented_counts() -> dict[str, tuple[int, int]]:
    """docs/deploy.md's table of what the stack creates: type -> (smallest deployment, every part on)."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    start = text.index("\n| resource type |")
    rows = text[start + 1 : text.index("\n\n", start)].splitlines()[2:]
    counts = {}
    for row in rows:
        cells = [c.strip().strip("`*") for c in row.strip("|").split("|")]
        counts[cells[0]] = (int(cells[1]), int(cells[2]))
    return counts


def test_the_deploy_page_counts_what_the_stack_creates() -> None:
    template = load_template()
    smallest = sam_expanded(resolve(template, VARIANTS["existing-bucket"]))
    everything = sam_expanded(resolve(template, VARIANTS["all-features"]))
    documented = _documented_counts()
    total = documented.pop("total")
    assert documented == {kind: (smallest[kind], everything[kind]) for kind in everything}
    assert total == (smallest.total(), everything.total())
