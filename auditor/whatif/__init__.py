"""The hot-partition what-if (``ddb-audit what-if``) and the load-test profile export."""

from auditor.whatif.limits import LimitItem, ResourceCapacity, WhatIfConfig, WhatIfResult, what_if

__all__ = ["LimitItem", "ResourceCapacity", "WhatIfConfig", "WhatIfResult", "what_if"]
